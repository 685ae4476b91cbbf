"""store_at (Halide's storage placement, Halide-semantics seed Sec. 8.4): a let's
buffer allocated once per iteration of an enclosing loop, refilled at every evaluation
of the let.  The kernels must equal the interpreter (also under ASan+UBSan, where a
buffer reused too small or freed too early shows), and every placement the lowering
cannot honour is refused with the directive, the buffer and the reason."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import requires_coq

from verisched.codegen import lower
from verisched.codegen.errors import LowerError
from verisched.pybridge.coqterm import parse_program
from verisched.pybridge.interp import evaluate
from verisched.pybridge.terms import IConst, IVar, PCmp
from verisched.schedule import AnnotationRefused, Schedule, dsl
from verisched.targets.native import build, build_sanitized, run_sanitized
from verisched.targets.registry import get_target

n, m, p = IVar("n"), IVar("m"), IVar("p")
ENV = {"A": (n, m), "B": (m, p)}
# Per output element (i, k): the row of products, buffered, then summed.  The buffer
# `t` is all zero for k >= 2 (a guard around the whole row), so its fill does not
# cover it: a buffer reused from k = 1 must be zeroed again (the lowering writes the
# zeros in the guard's else branch; a fill that does not cover is zeroed by memset).
PROG = ("GEN [ i < n ] GEN [ k < p ] tlet t := |[ k <? 2 ]| GEN [ j < m ] "
        "A _[ i ] _[ j ] * B _[ j ] _[ k ] in SUM [ j < m ] t _[ j ]")
# The same with a constant-size buffer (on the stack).
PROG4 = ("GEN [ i < n ] GEN [ k < p ] tlet t := GEN [ j < 4 ] |[ j <? m ]| "
         "(A _[ i ] _[ j ] * B _[ j ] _[ k ]) in SUM [ j < 4 ] t _[ j ]")
SIZES = ({"n": 3, "m": 4, "p": 5}, {"n": 1, "m": 1, "p": 1}, {"n": 7, "m": 2, "p": 9})


@pytest.mark.parametrize("target", ["c", "openmp"])
@pytest.mark.parametrize("text", [PROG, PROG4], ids=["heap", "stack"])
def test_store_at_matches_the_interpreter_and_allocates_outside_the_inner_loop(
        text: str, target: str) -> None:
    e = parse_program(text)
    t = get_target(target)
    assume = [] if text == PROG else [PCmp("<=", m, IConst(4))]
    placed = lower(e, ENV, name="placed", parallel=t.parallel, store_at={"t": "i"},
                   assume=assume)
    plain = lower(e, ENV, name="plain", parallel=t.parallel, assume=assume)
    body = "\n".join(placed.body)
    # The allocation (or declaration) of t comes before the loop over k, inside i's.
    decl = "vs_alloc(" if text == PROG else "float t["
    assert body.index("for (int i") < body.index(decl) < body.index("for (int k"), body
    if text == PROG:
        assert body.index("for (int k") < body.rindex("free(t)"), body
    plain_body = "\n".join(plain.body)
    if text == PROG and not t.parallel:
        # Without store_at, a loop-invariant heap buffer is hoisted to the kernel's scope
        # (lets.py, kernel_slot): allocated once, before every loop, freed at the end.
        assert plain_body.index(decl) < plain_body.index("for (int i"), plain_body
        assert plain_body.rindex("free(t)") > plain_body.rindex("out["), plain_body
    else:
        # Under a parallel loop (or on the stack) it stays at its let.
        assert plain_body.index("for (int k") < plain_body.index(decl), plain_body
    kernels = build([placed, plain], t)
    exe = build_sanitized([placed], t)
    rng = np.random.default_rng(3)
    for sizes in SIZES:
        if text == PROG4 and sizes["m"] > 4:
            continue
        shapes, out = kernels["placed"].extents(sizes)
        ins = {a: rng.uniform(-1, 1, size=shapes[a]).astype(np.float32) for a in ENV}
        want = evaluate(e, {a: v.astype(np.float64) for a, v in ins.items()}, sizes,
                        np.float64)
        for name in ("placed", "plain"):
            np.testing.assert_allclose(kernels[name].call(ins, sizes), want, rtol=1e-5,
                                       atol=1e-5, err_msg=f"{name} {sizes}")
        san = run_sanitized(exe, placed, ins, sizes, out)
        np.testing.assert_allclose(san, want, rtol=1e-5, atol=1e-5)


def test_store_at_refusals_name_the_buffer_the_loop_and_why() -> None:
    e = parse_program(PROG)
    cases = [
        ({"t": "k"}, None),  # t's own loop: legal
        ({"t": "j"}, "store_at t j: no loop j encloses the let of t"),
        ({"u": "i"}, "store_at u i: the lowered program has no buffer u"),
    ]
    for places, msg in cases:
        if msg is None:
            lower(e, ENV, name="ok", store_at=places)
            continue
        with pytest.raises(LowerError, match=msg):
            lower(e, ENV, name="bad", store_at=places)
    # Extents that depend on a loop between the slot and the let.
    tri = parse_program("GEN [ i < n ] GEN [ k < p ] tlet t := GEN [ j < k + 1 ] "
                        "A _[ i ] _[ 0 ] in SUM [ j < k + 1 ] t _[ j ]")
    with pytest.raises(LowerError, match="store_at t i: the extents of t depend on k"):
        lower(tri, ENV, name="tri", store_at={"t": "i"}, assume=[PCmp("<=", IConst(1), m)])
    # A parallel loop between the slot and the let (OpenMP's fallback loop j, rule 6).
    par = parse_program("GEN [ i < n ] SUM [ r < p ] GEN [ k < p ] tlet t := GEN [ j < m ] "
                        "A _[ i ] _[ j ] in SUM [ j < m ] t _[ j ] * B _[ j ] _[ r ]")
    lower(par, ENV, name="serial", store_at={"t": "r"})
    with pytest.raises(LowerError, match="store_at t r: a loop between r and the let of t "
                                         "runs in parallel"):
        lower(par, ENV, name="par", parallel=True, store_at={"t": "r"})


@requires_coq
def test_store_at_from_python() -> None:
    nn, mm, pp = dsl.sizes("n m p")
    a, b = dsl.tensor("A", nn, mm), dsl.tensor("B", mm, pp)
    prog = dsl.program("rowdot", dsl.gen("i", nn, lambda i: dsl.gen("k", pp, lambda k: dsl.let(
        "t", dsl.gen("j", mm, lambda j: a[i, j] * b[j, k]),
        lambda t: dsl.sum("j", mm, lambda j: t[j])))), inputs=[a, b])
    with Schedule.of(prog) as s:
        with pytest.raises(AnnotationRefused, match="store_at t j: no loop j encloses"):
            s.store_at("t", "j")
        kernel = s.store_at("t", "i").compile("openmp")
        with pytest.raises(AnnotationRefused, match="target gemmini places buffers"):
            s.store_at("t", "i").compile("gemmini")
    rng = np.random.default_rng(4)
    A = rng.standard_normal((5, 3)).astype(np.float32)
    B = rng.standard_normal((3, 6)).astype(np.float32)
    np.testing.assert_allclose(kernel({"A": A, "B": B}, n=5, m=3, p=6), A @ B, rtol=1e-5,
                               atol=1e-5)


def test_store_at_command_line_argument() -> None:
    from verisched.commands.common import UsageError, store_at
    assert store_at(["buf:yo", " t : i "]) == (("buf", "yo"), ("t", "i"))
    for bad in ("buf", "buf:", ":yo", "b-f:yo"):
        with pytest.raises(UsageError, match=f"--store-at {bad}: expected BUF:LOOP"):
            store_at([bad])


def test_a_loop_invariant_buffer_is_allocated_once_not_per_iteration() -> None:
    # Issue 13: 2mm's per-row buffer was malloc'ed and freed at every row.  A heap let
    # inside loops, with extents over sizes only, is allocated in the kernel's prologue;
    # one whose extent depends on the loop (a triangle) stays at its let.
    rows = parse_program("GEN [ i < n ] tlet t := GEN [ j < m ] A _[ i ] _[ j ] * "
                         "A _[ i ] _[ j ] in SUM [ k < m ] t _[ k ]")
    tri = parse_program("GEN [ i < n ] tlet t := GEN [ j < n - i ] A _[ i + j ] _[ 0 ] in "
                        "SUM [ k < n - i ] t _[ k ]")
    env = {"A": (n, m)}
    for e, hoisted in ((rows, True), (tri, False)):
        k = lower(e, env, name="k", sizes=["n", "m"])
        body = "\n".join(k.body)
        assert body.count("vs_alloc(") == 1 and body.count("free(") == 1
        first_loop = body.index("for (int")
        assert (body.index("vs_alloc(") < first_loop) == hoisted, body
        exe = build_sanitized([k], get_target("c"))
        rng = np.random.default_rng(0)
        for sizes in ({"n": 1, "m": 1}, {"n": 5, "m": 3}, {"n": 9, "m": 7}):
            a = rng.uniform(-1, 1, size=(sizes["n"], sizes["m"])).astype(np.float32)
            want = evaluate(e, {"A": a.astype(np.float64)}, sizes, np.float64)
            _, out = build([k], get_target("c"))["k"].extents(sizes)
            got = run_sanitized(exe, k, {"A": a}, sizes, out)
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
