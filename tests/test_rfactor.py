"""Halide's rfactor (coq/Rewrites/Rfactor.v, `Schedule.rfactor`): the buffer takes in
the sums around the factored loop in their order, a guard on the chain stays a guard
of the summands, the kernels agree with numpy and the interpreter at sizes no
multiple of the factor, vectorized (every ISA this CPU has) and not, and each
refusal names its cause, before Coq for the arguments, with the session kept."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import requires_coq

from verisched.pybridge.interp import evaluate
from verisched.pybridge.terms import Gen, Let, Sum, walk
from verisched.schedule import DirectiveRefused, Schedule, ScheduleArgumentError, dsl
from verisched.targets.cpu import cpu_flags

pytestmark = requires_coq

n, m, p = dsl.sizes("n m p")
A = dsl.tensor("A", n, m)
x = dsl.tensor("x", m)
W = dsl.tensor("W", n, p, 4, m)
f = dsl.tensor("f", n)
y = dsl.tensor("y", m)
DOT = dsl.program("dot", dsl.sum("j", m, lambda j: x[j] * y[j]))

ISAS = [isa for isa, flag in (("avx2", "avx2"), ("avx512", "avx512f")) if flag in cpu_flags()]
SIZES = ((1, 1), (3, 15), (5, 16), (7, 37), (4, 100))   # 16/32 divide few of them


def matvec() -> dsl.Program:
    return dsl.program("matvec", dsl.gen("i", n, lambda i:
                                         dsl.sum("j", m, lambda j: A[i, j] * x[j])))


def check_matvec(kernel, seed: int) -> None:
    rng = np.random.default_rng(seed)
    for rows, cols in SIZES:
        a = rng.standard_normal((rows, cols)).astype(np.float32)
        v = rng.standard_normal(cols).astype(np.float32)
        np.testing.assert_allclose(kernel({"A": a, "x": v}, n=rows, m=cols),
                                   a.astype(np.float64) @ v, rtol=1e-4, atol=1e-4)


def nest(e, var: str):
    """The first loop or let binding `var` (pre-order)."""
    return next(x for x in walk(e) if isinstance(x, (Gen, Sum, Let)) and x.var == var)


@pytest.mark.parametrize("tail", ["guard", "peel"])
def test_rfactor_puts_the_lanes_inside_the_depth_and_the_kernel_matches_numpy(tail) -> None:
    with Schedule.of(matvec()) as s:
        s = s.split("j", 16, "jo", "ji", tail=tail).rfactor("ji", "u", "t")
        t = nest(s.program, "t")
        # tlet t := SUM jo GEN u .. in SUM ji t[ji]: Halide's order, u where ji was
        assert isinstance(t.value, Sum) and t.value.var == "jo"
        assert isinstance(t.value.body, Gen) and t.value.body.var == "u"
        assert isinstance(t.body, Sum) and t.body.var == "ji"
        assert "rfactor ji into u as t." in s.steps
        check_matvec(s.compile("c"), 1)


@pytest.mark.skipif(not ISAS, reason="the CPU has no AVX2")
@pytest.mark.parametrize("isa", ISAS)
@pytest.mark.parametrize("tail,width", [("guard", 1), ("peel", 1), ("guard", 2)])
def test_rfactor_then_vectorize_gives_vector_accumulators(isa, tail, width) -> None:
    lanes = {"avx2": 8, "avx512": 16}[isa] * width
    with Schedule.of(matvec()) as s:
        s = s.split("j", lanes, "jo", "ji", tail=tail).rfactor("ji", "u", "t")
        s = s.vectorize("u", isa)
        t = nest(s.program, "t")
        assert isinstance(t.value, Sum) and t.value.var == "jo"   # accumulated over jo
        check_matvec(s.compile(isa), 2)


def test_a_middle_sum_keeps_the_order_and_the_guards_of_the_chain() -> None:
    # SUM a SUM b |[a + b < p]| SUM c: rfactor b takes in a, keeps c inside u
    prog = dsl.program("s3", dsl.gen("i", n, lambda i: dsl.sum("a", p, lambda a: dsl.sum(
        "b", 4, lambda b: dsl.guard(a + b < p, dsl.sum("c", m, lambda c: W[i, a, b, c]
                                                        * x[c]))))))
    with Schedule.of(prog) as s:
        s = s.rfactor("b", "u", "acc")
        acc = nest(s.program, "acc")
        assert isinstance(acc.value, Sum) and acc.value.var == "a"
        assert isinstance(acc.value.body, Gen) and acc.value.body.var == "u"
        assert any(isinstance(e, Sum) and e.var == "c" for e in walk(acc.value.body))
        assert isinstance(acc.body, Sum) and acc.body.var == "b"
        kernel = s.compile("c")
    check_interp(prog, kernel, {"W": lambda d: (d["n"], d["p"], 4, d["m"]),
                                "x": lambda d: (d["m"],)},
                 [{"n": 1, "m": 1, "p": 1}, {"n": 2, "m": 5, "p": 7}, {"n": 3, "m": 9, "p": 3}])


def test_a_triangular_sum_stays_outside_the_buffer() -> None:
    prog = dsl.program("tri", dsl.gen("i", m, lambda i: dsl.sum("a", n, lambda a: dsl.sum(
        "b", a, lambda b: f[b] * x[i]))))
    with Schedule.of(prog) as s:
        s = s.rfactor("b", "u", "t")
        a = nest(s.program, "a")
        assert isinstance(a, Sum) and isinstance(a.body, Let) and a.body.var == "t"
        kernel = s.compile("c")
    check_interp(prog, kernel, {"f": lambda d: (d["n"],), "x": lambda d: (d["m"],)},
                 [{"n": 1, "m": 1}, {"n": 6, "m": 3}, {"n": 17, "m": 2}])


def check_interp(prog: dsl.Program, kernel, shapes, sizes) -> None:
    rng = np.random.default_rng(5)
    for d in sizes:
        ins = {k: rng.standard_normal(shape(d)).astype(np.float32) for k, shape in shapes.items()}
        want = evaluate(prog.expr, {k: v.astype(np.float64) for k, v in ins.items()}, d,
                        np.float64)
        np.testing.assert_allclose(kernel(ins, **d), want, rtol=1e-4, atol=1e-4)


def test_a_loop_not_from_0_gives_lanes_from_0() -> None:
    # decision #153: SUMR [1 <= j < m] as m - 1 lanes, lane u the term 1 + u; and a
    # lower bound that is an enclosing index (the let goes below that loop)
    shifted = dsl.program("shifted", dsl.gen("i", n, lambda i: dsl.sum(
        "j", m, lambda j: A[i, j] * x[j], lo=1)))
    with Schedule.of(shifted) as s:
        r = s.rfactor("j", "u", "t")
        t = nest(r.program, "t")
        assert isinstance(t.value, Gen) and t.value.var == "u"
        kernel = r.compile("c")
    check_interp(shifted, kernel, {"A": lambda d: (d["n"], d["m"]), "x": lambda d: (d["m"],)},
                 [{"n": 1, "m": 1}, {"n": 3, "m": 2}, {"n": 4, "m": 9}])
    tri = dsl.program("tri", dsl.sum("a", m, lambda a: dsl.sum("b", m, lambda b: x[b], lo=a)))
    with Schedule.of(tri) as s:
        r = s.rfactor("b", "u", "t")
        a = nest(r.program, "a")
        assert isinstance(a, Sum) and isinstance(a.body, Let) and a.body.var == "t"
        kernel = r.compile("c")
    check_interp(tri, kernel, {"x": lambda d: (d["m"],)}, [{"m": 1}, {"m": 5}, {"m": 17}])


def test_refusals_name_the_cause_and_the_session_survives() -> None:
    with Schedule.of(matvec()) as s:
        with pytest.raises(DirectiveRefused, match="loop i is a generation"):
            s.rfactor("i", "u", "t")
        assert s.split("j", 4, "jo", "ji").rfactor("ji", "u", "t").program is not None
    with Schedule.of(matvec()) as s:
        before = s.live.session.state
        for call, msg in [
            (lambda: s.rfactor("k", "u", "t"), r"rfactor.*loop.*no loop named 'k'"),
            (lambda: s.rfactor("j", "i", "t"), r"rfactor.*lane.*'i' already names a loop"),
            (lambda: s.rfactor("j", "u", "A"), r"rfactor.*buffer.*input or size"),
            (lambda: s.rfactor("j", "u", "u"), r"rfactor.*buffer.*'u' is also given as lane"),
            (lambda: s.rfactor("j", "u v", "t"), r"rfactor.*lane.*not an identifier"),
        ]:
            with pytest.raises(ScheduleArgumentError, match=msg):
                call()
        assert s.live.session.state == before  # Coq was not asked


def test_rfactor_of_the_outer_loop_makes_a_reduction_parallel() -> None:
    # Halide's rfactor(ro, u).parallel(u): a dot product as partial sums per chunk,
    # the chunks on threads, summed once at the end
    with Schedule.of(DOT) as s:
        s = s.split("j", 64, "jo", "ji").rfactor("jo", "u", "t")
        t = nest(s.program, "t")
        assert isinstance(t.value, Gen) and t.value.var == "u"
        assert isinstance(t.value.body, Sum) and t.value.body.var == "ji"
        check_dot(s.parallel("u").compile("openmp"), (1, 63, 64, 1000, 4097), 4, atol=1e-4)


@pytest.mark.skipif(not ISAS, reason="the CPU has no AVX2")
@pytest.mark.parametrize("isa", ISAS)
def test_two_rfactors_chunks_on_threads_lanes_in_vectors(isa) -> None:
    # Halide's parallel vectorized reduction: rfactor the chunks (parallel), then
    # each chunk's lanes (vectorized); 256 and 2 vectors divide few sizes below
    lanes = {"avx2": 8, "avx512": 16}[isa] * 2
    with Schedule.of(DOT) as s:
        s = (s.split("j", 256, "jo", "ji").rfactor("jo", "u", "t")
              .split("ji", lanes, "jio", "jii").rfactor("jii", "v", "acc"))
        acc = nest(s.program, "acc")
        assert isinstance(acc.value, Sum) and acc.value.var == "jio"
        assert isinstance(acc.value.body, Gen) and acc.value.body.var == "v"
        kernel = s.vectorize("v", isa).parallel("u").compile(f"{isa}-openmp")
    # one region, over the chunks: the lanes' loop under the depth sum forks no team
    # of its own at each depth step where the chunks are fewer than the threads
    assert [x.strip() for x in kernel.lowered.body if "#pragma" in x] == [
        "#pragma omp parallel for schedule(static)"]
    check_dot(kernel, (1, 31, 257, 5000, 100001), 6, atol=1e-3)


@pytest.mark.skipif(not ISAS, reason="the CPU has no AVX2")
@pytest.mark.parametrize("isa", ISAS)
def test_a_guard_tail_of_two_vectors_masks_only_the_last_chunk(isa) -> None:
    # Decision #150: the depth sum is split where all of a chunk's vectors are in
    # bounds; the full chunks' vector loop has a constant count and no mask (its
    # accumulators can stay in registers), the last chunk keeps the masks
    lanes = {"avx2": 8, "avx512": 16}[isa] * 2
    with Schedule.of(DOT) as s:
        s = s.split("j", lanes, "jo", "ji").rfactor("ji", "u", "t").vectorize("u", isa)
        kernel = s.compile(isa)
    body = kernel.lowered.body
    loops = [k for k, x in enumerate(body) if x.strip().startswith("for (int jo")]
    assert len(loops) == 2, "\n".join(body)
    main, tail = body[loops[0]:loops[1]], body[loops[1]:]
    assert f"jo < ((m) / {lanes})" in main[0]
    assert not any("mask" in x for x in main), "\n".join(main)
    assert any("mask" in x for x in tail)
    # no tail, a tail in the first vector, one in the second, a chunk short of one
    check_dot(kernel, (1, lanes - 1, lanes, lanes + 1, lanes + lanes // 2,
                       3 * lanes + lanes // 2 + 3, 1000, 4096), 7, atol=1e-3)


def check_dot(kernel, sizes, seed: int, atol: float) -> None:
    rng = np.random.default_rng(seed)
    for size in sizes:
        a = rng.standard_normal(size).astype(np.float32)
        b = rng.standard_normal(size).astype(np.float32)
        np.testing.assert_allclose(kernel({"x": a, "y": b}, m=size),
                                   a.astype(np.float64) @ b, rtol=1e-4, atol=atol)


V3 = dsl.tensor("V3", n, 3, 5, p)


def _chain(guard_at: str) -> dsl.Program:
    """GEN i SUM a < 3 SUM b < 5 SUM c < p V3[i,a,b,c], a guard above `guard_at`."""
    def g(at: str, cond, body):
        return dsl.guard(cond, body) if at == guard_at else body
    return dsl.program("chain", dsl.gen("i", n, lambda i: dsl.sum("a", 3, lambda a: g(
        "b", a + n > 1, dsl.sum("b", 5, lambda b: g(
            "c", b < p + 1, dsl.sum("c", p, lambda c: V3[i, a, b, c])))))))


@pytest.mark.parametrize("guard_at", ["none", "b", "c"])
@pytest.mark.parametrize("loop", ["a", "b", "c"])
def test_every_loop_of_a_chain_with_or_without_a_guard(loop, guard_at) -> None:
    prog = _chain(guard_at)
    with Schedule.of(prog) as s:
        s = s.rfactor(loop, "u", "t")
        t = nest(s.program, "t")
        outer = {"a": [], "b": ["a"], "c": ["a", "b"]}[loop]
        # the sums above the loop, in their order, then the lanes, then the ones below
        seen = [e.var for e in walk(t.value) if isinstance(e, (Gen, Sum))]
        below = [x for x in ("b", "c") if x > loop]
        assert seen == outer + ["u"] + below, seen
        kernel = s.compile("c")
    check_interp(prog, kernel, {"V3": lambda d: (d["n"], 3, 5, d["p"])},
                 [{"n": 1, "p": 1}, {"n": 2, "p": 4}, {"n": 3, "p": 7}])
