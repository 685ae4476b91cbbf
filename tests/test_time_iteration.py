"""Time iteration (`ITER`, coq/Tensor/Iter.v; issue 13 item 5): PolyBench's jacobi-1d
with its time loop in the program, unrolled and fused by proved rewrites
(coq/Examples/PolyBench/Jacobi1d.v), lowered with double buffering.

The reference is our own numpy transcription of jacobi-1d's published definition
(two arrays, B from A then A from B, T times; boundary elements kept), not the
interpreter alone; the kernels are also compared with the interpreter on the original
program, in float32 and float64, at sizes where T is odd and even and n is small."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import REPO, requires_coq

from verisched.codegen import lower
from verisched.codegen.errors import LowerError
from verisched.pybridge.coqterm import parse_program, to_coq
from verisched.pybridge.interp import evaluate
from verisched.pybridge.terms import Iter, IVar
from verisched.schedule import dsl
from verisched.targets.native import build, build_sanitized, run_sanitized
from verisched.targets.registry import get_target

JACOBI = REPO / "coq" / "Examples" / "PolyBench" / "Jacobi1d.v"
STEP = ("GEN [ i < n ] |[ (1 <=? i) && (i <? n - 1) ]| slit 1 3 * (u _[i - 1] + u _[i] + "
        "u _[i + 1]) <+> |[ i <? 1 ]| u _[i] <+> |[ n - 1 <=? i ]| u _[i]")


def jacobi_1d(a: np.ndarray, steps: int) -> np.ndarray:
    """PolyBench's jacobi-1d, transcribed: each time step computes B from A and then A
    from B over the interior; one step of ours is one of those half steps."""
    a = a.astype(np.float64).copy()
    for _ in range(steps):
        b = a.copy()
        b[1:-1] = (a[:-2] + a[1:-1] + a[2:]) / 3.0
        a = b
    return a


def _enclosing(lines: list[str], k: int) -> list[str]:
    """The block headers around line k of indented C (each the nearest line above with
    less indentation than the last)."""
    out, depth = [], len(lines[k]) - len(lines[k].lstrip())
    for line in reversed(lines[:k]):
        d = len(line) - len(line.lstrip())
        if line.strip() and d < depth:
            out.append(line)
            depth = d
    return out


def test_interpreter_and_dsl() -> None:
    e = parse_program(f"ITER [T] u := A in {STEP}")
    assert isinstance(e, Iter) and parse_program(to_coq(e)) == e
    rng = np.random.default_rng(0)
    for n, steps in ((3, 1), (10, 4), (17, 7)):
        a = rng.standard_normal(n)
        np.testing.assert_allclose(evaluate(e, {"A": a}, {"n": n, "T": steps}),
                                   jacobi_1d(a, steps), rtol=1e-12)
    n, T = dsl.sizes("n T")
    A = dsl.tensor("A", n)
    prog = dsl.program("jacobi1d", dsl.iterate(T, "u", A, lambda u: dsl.gen("i", n, lambda i:
        dsl.guard((i >= 1) & (i < n - 1), (u[i - 1] + u[i] + u[i + 1]) / 3)
        + dsl.guard(i < 1, u[i]) + dsl.guard(i >= n - 1, u[i]))))
    assert isinstance(prog.expr, Iter) and prog.sizes == ("T", "n")
    a = rng.standard_normal(9)
    np.testing.assert_allclose(evaluate(prog.expr, {"A": a}, {"n": 9, "T": 3}),
                               jacobi_1d(a, 3), rtol=1e-12)


def test_double_buffering_allocates_once_and_runs_clean_under_asan() -> None:
    two = parse_program(f"ITER [T / 2] u := ITER [T mod 2] u := A in {STEP} in "
                        f"tlet v := {STEP} in {STEP.replace('u _', 'v _')}")
    for e in (parse_program(f"ITER [T] u := A in {STEP}"), two):
        k = lower(e, {"A": (IVar("n"),)}, name="jac", sizes=["n", "T"], dtype="float64")
        # no buffer (the two states, the unrolled step's v) is allocated in a time loop
        for n_line, line in enumerate(k.body):
            if "vs_alloc(" in line:
                assert not any(h.lstrip().startswith("for (int t")
                               for h in _enclosing(k.body, n_line)), "\n".join(k.body)
        t = get_target("c")
        kern, exe = build([k], t)["jac"], build_sanitized([k], t)
        for n, steps in ((1, 1), (3, 2), (10, 5), (17, 4)):
            a = np.random.default_rng(n).standard_normal(n)
            want = evaluate(e, {"A": a}, {"n": n, "T": steps}, np.float64)
            np.testing.assert_allclose(kern.call({"A": a}, {"n": n, "T": steps}), want,
                                       rtol=1e-12)
            _, out = kern.extents({"n": n, "T": steps})
            np.testing.assert_allclose(run_sanitized(exe, k, {"A": a}, {"n": n, "T": steps},
                                                     out), want, rtol=1e-12)
            if n >= 3:
                np.testing.assert_allclose(want, jacobi_1d(a, steps), rtol=1e-12)


def test_a_step_that_changes_the_extent_is_refused() -> None:
    grow = parse_program("ITER [T] u := A in GEN [ i < n + 1 ] u _[i]")
    with pytest.raises(LowerError, match="keep the state's extents"):
        lower(grow, {"A": (IVar("n"),)}, name="grow", sizes=["n", "T"])


@requires_coq
def test_jacobi_1d_derivation_unrolls_and_fuses_and_matches_polybench() -> None:
    from verisched import pipeline

    derived = pipeline.load(JACOBI, "jacobi1d_fused")
    assert derived.safety_gap is None
    assert isinstance(derived.expr, Iter)
    for dt, tol in (("float64", 1e-12), ("float32", 1e-5)):
        checked = pipeline.check(derived, dtype=dt)
        k = pipeline.build(pipeline.render(pipeline.lower(checked, "c")))["jacobi1d_fused"]
        for n, steps in ((3, 1), (3, 2), (10, 5), (33, 8)):
            a = np.random.default_rng(n + steps).standard_normal(n).astype(dt)
            np.testing.assert_allclose(k({"A": a}, n=n, T=steps), jacobi_1d(a, steps),
                                       rtol=tol, atol=tol)
            np.testing.assert_allclose(
                k({"A": a}, n=n, T=steps),
                evaluate(derived.original, {"A": a.astype(np.float64)}, {"n": n, "T": steps}),
                rtol=tol, atol=tol)
