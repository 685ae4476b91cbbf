"""The `native` targets (targets/auto.py): which ISA they pick for a CPU's flags and a
program's instruction form, that they say so, and that their kernels are right."""

from __future__ import annotations

import dataclasses
import runpy

import numpy as np
import pytest

from verisched import pipeline
from verisched.codegen.errors import LowerError
from verisched.codegen.program import KernelProgram
from verisched.pybridge.interp import evaluate
from verisched.pybridge.session import REPO_ROOT
from verisched.pybridge.terms import Instr, IVar, Var, gen, get
from verisched.targets import auto
from verisched.targets.cpu import cpu_flags

AVX512 = frozenset({"sse2", "avx2", "fma", "avx512f"})
AVX2 = frozenset({"sse2", "avx2", "fma"})
PLAIN = frozenset({"sse2"})


def _program(instr: str | None = None, dtype: str | None = None) -> KernelProgram:
    body = get(Var("f"), "i")
    if instr is not None:  # only its instruction family matters to the pick
        body = Instr(instr, (body,))
    return KernelProgram("p", gen("i", "n", body), (("f", (IVar("n"),)),), ("n",), dtype=dtype)


def _native(flags: frozenset[str], parallel: bool = False) -> auto.AutoTarget:
    t = auto.TARGET_OPENMP if parallel else auto.TARGET
    return dataclasses.replace(t, flags=flags)


@pytest.mark.parametrize("flags,want", [(AVX512, "avx512"), (AVX2, "avx2"), (PLAIN, "c"),
                                        (frozenset({"avx2"}), "c"),
                                        (frozenset({"avx512f", "fma"}), "avx512")])
def test_best_isa_for_a_flag_set(flags, want) -> None:
    assert auto.best_isa(flags) == want
    assert auto.best_vector_isa(flags) == (want if want != "c" else "avx2")


def test_best_isa_reads_this_cpu(monkeypatch) -> None:
    monkeypatch.setattr(auto, "cpu_flags", lambda: AVX2)
    assert auto.best_isa() == "avx2"
    assert _native(None).resolve(_program()).picked == "avx2"  # type: ignore[arg-type]
    monkeypatch.setattr(auto, "cpu_flags", lambda: PLAIN)
    assert auto.TARGET.resolve(_program()).picked == "c"


@pytest.mark.parametrize("parallel", [False, True])
@pytest.mark.parametrize("flags,want", [(AVX512, "avx512"), (AVX2, "avx2"), (PLAIN, "c")])
def test_an_isa_neutral_program_gets_the_best_isa(flags, want, parallel) -> None:
    t = _native(flags, parallel).resolve(_program())
    member = auto._native_member(want, parallel)
    assert t.picked == want and t.name == ("native-openmp" if parallel else "native")
    assert t.isa == member.isa and t.extra_flags == member.extra_flags
    assert t.parallel == parallel
    assert want in t.pick_note


def test_a_float64_program_gets_the_best_isa_and_its_float64_library() -> None:
    # decision #154: the vector targets lower float64 with the pd libraries
    t = _native(AVX512).resolve(_program(dtype="float64"))
    assert t.picked == "avx512" and t.isa_for("float64").family == "avx512pd"
    assert _native(AVX512).resolve(_program("avx512pd_loadu", dtype="float64")).picked == \
        "avx512"


def test_an_integer_program_gets_plain_c() -> None:
    t = _native(AVX512).resolve(_program(dtype="int32"))
    assert t.picked == "c" and "int32" in t.picked_why


def test_a_program_in_an_isas_form_keeps_it() -> None:
    t = _native(AVX512).resolve(_program("avx2_loadu"))
    assert t.picked == "avx2" and "best is avx512" in t.picked_why
    assert _native(AVX512).resolve(_program("avx512_loadu")).picked == "avx512"
    assert _native(AVX2).resolve(_program("avx2_loadu")).picked == "avx2"


def test_a_program_for_an_isa_the_cpu_lacks_is_refused_naming_both() -> None:
    with pytest.raises(LowerError, match="avx512's instruction form.*lacks avx512f.*picks "
                                         "avx2 here.*target avx512"):
        _native(AVX2).resolve(_program("avx512_loadu"))
    with pytest.raises(LowerError, match="avx2's instruction form.*picks c here"):
        _native(PLAIN).resolve(_program("avx2_loadu"))


def test_mixed_isas_are_refused() -> None:
    prog = _program("avx2_loadu")
    prog = dataclasses.replace(prog, expr=gen("j", "n", Instr("avx512_loadu", (prog.expr,))))
    with pytest.raises(LowerError, match="avx2 and avx512"):
        _native(AVX512).resolve(prog)


def test_native_is_registered_and_offers_the_isas_the_cpu_runs() -> None:
    names = pipeline.target_names()
    assert "native" in names and "native-openmp" in names
    for flags, want in ((AVX512, {"avx512", "avx512pd", "avx2", "avx2pd"}),
                        (AVX2, {"avx2", "avx2pd"}), (PLAIN, set())):
        t = _native(flags)
        assert set(t.families) == want == {s.family for s in t.instructions()}
        assert set(t.memories) == {f"{x.upper()}_REG" for x in want if not x.endswith("pd")}


def test_native_kernels_say_what_they_picked_and_match_the_interpreter() -> None:
    """An ISA-neutral program through the whole pipeline: the pick is in the summary,
    the C banner and on the kernel, and the result is the interpreter's."""
    checked = pipeline.check(pipeline.from_ast(
        gen("i", "n", get(Var("f"), "i")), {"f": (IVar("n"),)}, name="copy_native",
        prove=False), unsafe=True)
    want = auto.best_isa()
    for name in ("native", "native-openmp"):
        lowered = pipeline.lower(checked, name)
        assert f"picked {want}" in lowered.summary
        src = pipeline.render(lowered)
        assert f"target {name} picked {want}" in src.c
        kernel = pipeline.build(src)[checked.name]
        assert kernel.target == name and kernel.picked == want
        f = np.arange(11, dtype=np.float32)
        np.testing.assert_array_equal(kernel({"f": f}), evaluate(checked.program.expr,
                                                                 {"f": f}, {"n": 11}))


def test_schedule_defaults_to_native(coq) -> None:
    """`vectorize` without an ISA takes the CPU's best vector ISA and `compile()` builds
    it with `native`, which keeps that ISA; the kernel matches the interpreter."""
    if not {"avx2", "fma"} <= cpu_flags():
        pytest.skip("this CPU has no AVX2+FMA")
    from verisched.schedule import Schedule

    fused = runpy.run_path(str(REPO_ROOT / "examples" / "blur_fused.py"))
    isa = auto.best_vector_isa()
    rng = np.random.default_rng(4)
    with Schedule.of(fused["blur"]) as s:
        vec = s.peel("y", "x", into=("yc", "xc")).vectorize("xc")
        assert f"{isa}_loadu" in vec.text
        kernel = vec.compile()
        assert kernel.target == "native" and kernel.picked == isa
        checked = vec.checked()
        for rows, cols in ((3, 11), (9, 37)):
            img = rng.standard_normal((rows, cols)).astype(np.float32)
            want = evaluate(checked.program.expr, {"v": img.astype(np.float64)},
                            {"n": rows, "m": cols}, np.float64)
            np.testing.assert_allclose(kernel({"v": img}, n=rows, m=cols), want,
                                       rtol=1e-5, atol=1e-5)
            np.testing.assert_allclose(kernel({"v": img}, n=rows, m=cols),
                                       fused["reference"](img), rtol=1e-5, atol=1e-5)
