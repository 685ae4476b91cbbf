"""Float64 vector instructions (decision #154): the avx2pd (4 lanes) and avx512pd (8 lanes)
libraries of coq/Targets/AVX.v, lowered by the avx2 / avx512 targets for float64 kernels.

The hand-written programs of test_vector_lower.py in the pd families are compared with
the reference interpreter (in float64) at sizes that are and are not multiples of the
width and the register block, and run under ASan+UBSan; their C builds as strict C++
on both ISAs; `vectorize` and `select_instr` with the pd libraries go through Coq, and
PolyBench's gemm derived in them (Gemm.v) agrees with numpy at sizes no multiple of
its tile; a kernel of the other element type's instructions is refused with the fix."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from conftest import REPO, requires_coq
from test_vector_lower import (
    AXPY,
    DOT,
    DOT_ENV,
    LANES,
    MASKED,
    MM_ENV,
    MM_SIZES,
    SGEMM,
    VEC_ENV,
    VEC_SIZES,
)

from verisched.codegen import LowerError, lower
from verisched.codegen.render import render_source
from verisched.pybridge.coqterm import parse_program
from verisched.pybridge.interp import evaluate
from verisched.pybridge.terms import Instr, specialize, walk
from verisched.targets.avx2 import AVX2PD
from verisched.targets.avx512 import AVX512PD
from verisched.targets.cpu import cpu_flags
from verisched.targets.native import build, build_sanitized, run_sanitized
from verisched.targets.registry import get_target

PD = {"avx2pd": (AVX2PD, "avx2", {"avx2", "fma"}), "avx512pd": (AVX512PD, "avx512", {"avx512f"})}
ON_CPU = [name for name, (_, _, need) in PD.items() if need <= cpu_flags()]
needs_pd = pytest.mark.skipif(not ON_CPU, reason="this CPU has no AVX2+FMA")


def pd_program(text: str, family: str) -> object:
    """test_vector_lower's program text in a pd family: W its lanes, the tile 2W wide."""
    isa = PD[family][0]
    W = isa.lanes
    text = (text.replace("P_", f"{family}_").replace("NR", str(2 * W))
            .replace("REG", isa.memory).replace("W", str(W)))
    return parse_program(text)


def _programs(family: str) -> list[tuple[str, object, dict]]:
    mm = specialize(pd_program(SGEMM, family), {"kc": 4})
    return [("axpy", pd_program(AXPY, family), VEC_ENV),
            ("masked", pd_program(MASKED, family), VEC_ENV),
            ("lanes", pd_program(LANES, family), VEC_ENV),
            ("dot", pd_program(DOT, family), DOT_ENV), ("dgemm", mm, MM_ENV)]


def _close(got: np.ndarray, want: np.ndarray, what: str) -> None:
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12, err_msg=what)


@needs_pd
@pytest.mark.parametrize("family", ON_CPU)
def test_pd_programs_match_the_interpreter_and_sanitizers(family: str) -> None:
    isa, target_name, _ = PD[family]
    t = get_target(target_name)
    assert t.isa_for("float64") is isa
    progs = _programs(family)
    lowered = {name: lower(e, env, name=name, dtype="float64", isa=isa, sizes=sorted(
        {i.name for s in env.values() for i in s})) for name, e, env in progs}
    for lw in lowered.values():   # doubles all the way: no float vector type or intrinsic
        text = "\n".join(lw.body)
        assert "_pd(" in text and "_ps(" not in text
        assert "__m256 " not in text and "__m512 " not in text
    kernels = build(list(lowered.values()), t)
    exe = build_sanitized(list(lowered.values()), t)
    rng = np.random.default_rng(11)
    w = isa.lanes
    for name, e, env in progs:
        size_sets = ([{"n": n} for n in sorted({*VEC_SIZES, w - 1, w + 1, 3 * w + 5})]
                     if env is not MM_ENV else [{"M": m, "N": n, "K": k} for m, n, k in MM_SIZES])
        for sizes in size_sets:
            ins = {k: rng.uniform(-2, 2, tuple(sizes[i.name] for i in shp))
                   for k, shp in env.items()}
            want = evaluate(e, ins, {**sizes, "kc": 4}, np.float64)
            got = kernels[name].call(ins, sizes)
            assert got.dtype == np.float64
            what = f"{family} {name} at {sizes}:\n" + "\n".join(lowered[name].body)
            _close(got, want, what)
            _close(run_sanitized(exe, lowered[name], ins, sizes, got.shape), want,
                   "sanitized " + what)
    mm = ins   # the last dgemm inputs, against numpy's product too
    _close(kernels["dgemm"].call(mm, sizes), mm["A"] @ mm["B"], "dgemm vs numpy")


@pytest.mark.skipif(shutil.which("g++") is None, reason="no C++ compiler")
@pytest.mark.parametrize("family", list(PD))
def test_pd_kernel_files_build_as_strict_cxx(family: str, tmp_path: Path) -> None:
    """Compiled only (this CPU may lack the ISA): the pd masks (64-bit lanes for AVX2,
    __mmask8 for AVX-512), the register tile, the lanes' sum (vs_hsum4d / vs_hsum8d)."""
    isa = PD[family][0]
    kernels = [lower(e, env, name=f"d{i}", dtype="float64", isa=isa)
               for i, (_, e, env) in enumerate(_programs(family))]
    src = render_source(kernels, isa.name)
    assert isa.reduce_add.split("(")[0] + "(" in src and "static inline double" in src
    (tmp_path / "d.c").write_text(src)
    proc = subprocess.run(["g++", "-std=c++11", "-Wall", "-Wextra", "-pedantic", "-Werror",
                           "-O1", *isa.cflags, "-x", "c++", "-c", "d.c", "-o", "d.o"],
                          cwd=tmp_path, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-4000:]


def test_a_library_lowers_only_its_own_element_type() -> None:
    e = pd_program(AXPY, "avx512pd")
    with pytest.raises(LowerError, match="avx512pd has float64 lanes, not float32"):
        lower(e, VEC_ENV, name="k", dtype="float32", isa=AVX512PD)


@requires_coq
@needs_pd
def test_vectorize_with_the_float64_library_through_coq() -> None:
    """`vectorize(..., dtype="float64")` picks the CPU's pd library, Coq proves it, and
    `compile()` lowers the result as float64 without being told (the instructions say)."""
    from verisched.schedule import Schedule, ScheduleArgumentError, dsl
    from verisched.targets.auto import best_vector_isa

    (m,) = dsl.sizes("m")
    x, y = dsl.tensor("x", m), dsl.tensor("y", m)
    relu = dsl.program("relu_axpy", dsl.gen("j", m, lambda j: dsl.max(x[j] * y[j] + x[j], 0)))
    family = best_vector_isa(dtype="float64")
    assert family in ON_CPU
    w = PD[family][0].lanes
    with Schedule.of(relu) as s:
        with pytest.raises(ScheduleArgumentError, match="avx512 has float32 lanes, not "
                                                        "float64: use avx512pd"):
            s.vectorize("j", "avx512", dtype="float64")
        v = s.vectorize("j", dtype="float64")
        assert v.steps[-1] == f"vectorize j with {family}."
        used = {x.name.split("_", 1)[0] for x in walk(v.program) if isinstance(x, Instr)}
        assert used == {family}
        kernel = v.compile()
        assert kernel.lowered.dtype == "float64"
        with pytest.raises(LowerError, match=f"is a float32 kernel, but calls {family}_"):
            v.compile(dtype="float32")
    rng = np.random.default_rng(5)
    for size in (1, w - 1, w, w + 1, 3 * w + 5, 1000):
        ins = {k: rng.standard_normal(size) for k in "xy"}
        want = evaluate(relu.expr, ins, {"m": size}, np.float64)
        np.testing.assert_allclose(kernel(ins, m=size), want, rtol=1e-12, atol=1e-12)


@requires_coq
@needs_pd
@pytest.mark.parametrize("family", ON_CPU)
def test_polybench_gemm_in_float64_vectors(family: str) -> None:
    """Gemm.v's gemm_avx512pd / gemm_avx2pd (the SGEMM schedule, alpha packed with A):
    numpy's gemm at sizes no multiple of the tile (6 x 4w) or the blocks, as the
    interpreter's; the micro-kernel multiplies no alpha (it went into the pack)."""
    from verisched import pipeline

    isa, target, _ = PD[family]
    name = f"gemm_{family}"
    derived = pipeline.load(REPO / "coq" / "Examples" / "PolyBench" / "Gemm.v", name)
    assert derived.safety_gap is None
    kernel = pipeline.build(pipeline.render(pipeline.lower(
        pipeline.check(derived, dtype="float64"), target)))[name]
    fma = isa.fmadd.split("(")[0] + "(" + isa.set1.split("(")[0] + "(Ap["
    assert any(fma in line for line in kernel.lowered.body)
    assert not any(fma.replace("Ap[", "1.5") in line for line in kernel.lowered.body)
    rng = np.random.default_rng(2)
    for ni, nj, nk, mcr, kc in ((13, 37, 19, 2, 5), (6, 4 * isa.lanes, 8, 1, 8),
                                (1, 1, 1, 1, 1), (25, 70, 33, 3, 16)):
        A, B, C = (rng.uniform(-1, 1, s) for s in ((ni, nk), (nk, nj), (ni, nj)))
        got = kernel({"A": A, "B": B, "C": C}, ni=ni, nj=nj, nk=nk, mcr=mcr, kc=kc)
        np.testing.assert_allclose(got, 1.5 * A @ B + 1.2 * C, rtol=1e-12, atol=1e-12,
                                   err_msg=f"{name} at {ni}x{nj}x{nk}, mcr {mcr}, kc {kc}")
