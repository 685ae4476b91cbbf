"""`vectorize` of a SUM (coq/Targets/Vectorize.v, decision #151): Halide's vectorized
reduction.  The sum becomes a sum over vectors of each vector's lanes added by
`reduce_add` (a horizontal add, specified in coq/Targets/AVX.v), the full vectors
unmasked and the last one masked; after `rfactor`, the final sum of the lanes.  The
kernels agree with numpy and with the interpreter on the derived program at lengths
no multiple of the width, on every ISA this CPU has, and under ASan/UBSan; a SUM of
rows is refused with its reason and the session kept."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import requires_coq

from verisched.pipeline import get_target, lower
from verisched.pybridge.interp import evaluate
from verisched.pybridge.terms import IConst, Instr, Sum, TAdd, walk
from verisched.schedule import DirectiveRefused, Schedule, ScheduleArgumentError, dsl
from verisched.targets.cpu import cpu_flags
from verisched.targets.native import build_sanitized, run_sanitized

pytestmark = requires_coq

ISAS = [isa for isa, flag in (("avx2", "avx2"), ("avx512", "avx512f")) if flag in cpu_flags()]
LANES = {"avx2": 8, "avx512": 16}
C_SUM = {"avx2": "vs_hsum8(", "avx512": "vs_hsum16("}
needs_avx = pytest.mark.skipif(not ISAS, reason="the CPU has no AVX2")

n, m = dsl.sizes("n m")
A, x, y = dsl.tensor("A", n, m), dsl.tensor("x", m), dsl.tensor("y", m)
DOT = dsl.program("dot", dsl.sum("j", m, lambda j: x[j] * y[j]))
MATVEC = dsl.program("matvec", dsl.gen("i", n, lambda i:
                                       dsl.sum("j", m, lambda j: A[i, j] * x[j])))


def reductions(e) -> list[str]:
    return [x.name for x in walk(e) if isinstance(x, Instr) and x.name.endswith("reduce_add")]


def want_dot(ins: dict) -> np.ndarray:
    return ins["x"].astype(np.float64) @ ins["y"]


@needs_avx
@pytest.mark.parametrize("isa", ISAS)
def test_a_dot_product_vectorized_as_it_stands(isa) -> None:
    # no rfactor: a horizontal add per vector, the full vectors then the masked one
    w = LANES[isa]
    with Schedule.of(DOT) as s:
        s = s.vectorize("j", isa)
        assert isinstance(s.program, TAdd)
        assert reductions(s.program) == [f"{isa}_reduce_add"] * 2
        kernel = s.compile(isa)
        prog = s.program
    assert any(C_SUM[isa] in line for line in kernel.lowered.body)
    rng = np.random.default_rng(3)
    for size in (1, w - 1, w, w + 1, 3 * w + 5, 1000):
        ins = {k: rng.standard_normal(size).astype(np.float32) for k in "xy"}
        got = kernel(ins, m=size)
        np.testing.assert_allclose(got, want_dot(ins), rtol=1e-4, atol=1e-4)
        # the derived program itself, reduce_add by its specification
        np.testing.assert_allclose(
            evaluate(prog, {k: v.astype(np.float64) for k, v in ins.items()}, {"m": size},
                     np.float64), want_dot(ins), rtol=1e-9, atol=1e-9)


@needs_avx
@pytest.mark.parametrize("isa", ISAS)
def test_rfactor_lanes_summed_by_horizontal_adds(isa) -> None:
    # Halide's intm.vectorize(u) and f.update().atomic().vectorize(ri): two vectors
    # of lanes per row, the final sum of 2w lanes as two horizontal adds, no tail
    w = LANES[isa]
    with Schedule.of(MATVEC) as s:
        s = s.split("j", 2 * w, "jo", "ji").rfactor("ji", "u", "t").vectorize("u", isa)
        s = s.vectorize("ji", isa, into="jv")
        final = [e for e in walk(s.program) if isinstance(e, Sum) and e.var == "jv"]
        assert len(final) == 1 and not isinstance(s.program, TAdd)   # exact: no tail
        assert reductions(s.program) == [f"{isa}_reduce_add"]
        assert "vectorize ji with " + isa + " into jv." in s.steps
        kernel = s.compile(isa)
    body = "\n".join(kernel.lowered.body)
    assert C_SUM[isa] in body and "acc += t[" not in body
    rng = np.random.default_rng(4)
    for rows, cols in ((1, 1), (3, 2 * w - 1), (5, 2 * w), (7, 37), (4, 100), (2, 1001)):
        a = rng.standard_normal((rows, cols)).astype(np.float32)
        v = rng.standard_normal(cols).astype(np.float32)
        np.testing.assert_allclose(kernel({"A": a, "x": v}, n=rows, m=cols),
                                   a.astype(np.float64) @ v, rtol=1e-4, atol=1e-4)


@needs_avx
def test_the_kernels_stay_in_bounds_under_the_sanitizers() -> None:
    isa = ISAS[-1]
    w = LANES[isa]
    with Schedule.of(DOT) as s:
        lw = lower(s.vectorize("j", isa).checked(), get_target(isa)).kernel
    with Schedule.of(DOT) as s:
        s = s.split("j", 2 * w, "jo", "ji").rfactor("ji", "u", "t").vectorize("u", isa)
        lw2 = lower(s.vectorize("ji", isa).checked(), get_target(isa)).kernel
    for k in (lw, lw2):
        exe = build_sanitized([k], get_target(isa))
        rng = np.random.default_rng(6)
        for size in (1, w - 1, 2 * w + 3, 333):
            ins = {v: rng.standard_normal(size).astype(np.float32) for v in "xy"}
            got = run_sanitized(exe, k, ins, {"m": size}, ())
            np.testing.assert_allclose(got, want_dot(ins), rtol=1e-4, atol=1e-4)


def test_a_sum_of_rows_is_refused_and_the_session_survives() -> None:
    rows = dsl.program("rows", dsl.sum("i", n, lambda i: dsl.gen("j", m, lambda j: A[i, j])))
    with Schedule.of(rows) as s:
        with pytest.raises(DirectiveRefused, match=r"body of loop i is not a scalar"):
            s.vectorize("i", "avx2")
        with pytest.raises(ScheduleArgumentError, match=r"vectorize.*no loop named 'q'"):
            s.vectorize("q", "avx2")   # Python checks the name before Coq is asked
        assert reductions(s.vectorize("j", "avx2").program) == []   # the GEN still works


@needs_avx
def test_a_literal_extent_keeps_literal_bounds() -> None:
    # SUM [ j < 37 ] in vectors of 16: two full vectors, then SUMR [ 2 <= j < 3 ]
    # masked (the tail's bound computed, not `cdiv 37 16`)
    isa = ISAS[-1]
    w = LANES[isa]
    z = dsl.tensor("z", 37)
    lit = dsl.program("lit", dsl.sum("j", 37, lambda j: z[j]))
    with Schedule.of(lit) as s:
        s = s.vectorize("j", isa)
        sums = [e for e in walk(s.program) if isinstance(e, Sum)]
        assert [(e.lo, e.hi) for e in sums] == [(IConst(0), IConst(37 // w)),
                                               (IConst(37 // w), IConst(-(-37 // w)))]
        kernel = s.compile(isa)
    v = np.random.default_rng(8).standard_normal(37).astype(np.float32)
    np.testing.assert_allclose(kernel({"z": v}), v.astype(np.float64).sum(), rtol=1e-5,
                               atol=1e-5)
