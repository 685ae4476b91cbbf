"""The example derivations that end in instruction form (coq/Examples/*.v using
avx2_/avx512_ instructions: Sgemm.v, BlurVec.v), replayed through the bridge,
lowered for the vector targets and run.

Each derived program is checked three ways on odd sizes (not multiples of the
vector width or of any tile size): the compiled kernel against the
interpreter on the program as derived (instructions evaluated by their
specifications), that against the program with every definition unfolded by
Coq (so the templates agree with Coq on this program), and against the
original algorithm; the kernel also runs under ASan+UBSan.  AVX-512
derivations are lowered and compiled, and run only on a CPU that has it.

The replay is shared with tests/test_replay_examples.py when both run in one
session (its cache), so the Coq work is done once.
"""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import numpy as np
import pytest

from verisched import pipeline
from verisched.pipeline import CheckedProgram, DerivedProgram
from verisched.pipeline.derive import from_replayed
from verisched.pybridge.interp import evaluate
from verisched.pybridge.replay import replay_file
from verisched.pybridge.session import REPO_ROOT
from verisched.pybridge.terms import Instr, any_node, free_vars, idx_free_vars
from verisched.targets.cpu import CpuSupportError, cpu_flags
from verisched.targets.native import build_sanitized, run_sanitized
from verisched.targets.registry import get_target

EXAMPLES = sorted(p for p in (REPO_ROOT / "coq" / "Examples").glob("*.v")
                  if "avx2_" in p.read_text() or "avx512_" in p.read_text())
BLOCK = 4          # every block size (a size no input's shape mentions) fixed to this
PROBLEM = [1, 3, 7, 13, 17, 26]
CASES = 5

_CACHE: dict[Path, dict[str, DerivedProgram]] = {}


def derived(coq, path: Path) -> dict[str, DerivedProgram]:
    if path not in _CACHE:
        try:  # share test_replay_examples' replay when it ran in this session
            from test_replay_examples import replayed
            rds = replayed(coq, path)
        except ImportError:
            res = replay_file(coq, path, semantics=True)
            assert res.failure is None, f"{path.name}:{res.failure.line}: {res.failure.message}"
            rds = res.derivations
        _CACHE[path] = {rd.derivation.name: from_replayed(rd, f"{path}:{rd.derivation.name}")
                        for rd in rds}
    return _CACHE[path]


def _isa_of(e: object) -> str | None:
    text = repr(e)
    return "avx512" if "avx512_" in text else "avx2" if "avx2_" in text else None


def _prepare(dp: DerivedProgram) -> CheckedProgram:
    """The program with every block size (a size no input's shape mentions) fixed."""
    used = free_vars(dp.expr)
    shape_sizes: set[str] = set()
    for t, shp in dp.hypotheses.shapes.items():
        if t in used:
            for i in shp:
                shape_sizes |= idx_free_vars(i)
    fixed = {s: BLOCK for s in dp.sizes if s not in shape_sizes and s in used}
    return pipeline.check(dp, fix=fixed)


def _size_cases(checked: CheckedProgram) -> list[dict]:
    sizes = checked.program.sizes
    rng = np.random.default_rng(len(sizes))
    out = []
    for combo in itertools.product(PROBLEM, repeat=len(sizes)):
        case = dict(zip(sizes, combo, strict=True))
        if checked.program.violated(case) is None:
            out.append(case)
    picks = rng.choice(len(out), size=min(CASES, len(out)), replace=False) if out else []
    return [out[int(k)] for k in picks] + ([out[-1]] if out else [])


def _programs(coq, path: Path) -> list[tuple[str, DerivedProgram]]:
    progs = [(n, dp) for n, dp in derived(coq, path).items()
             if any_node(dp.expr, lambda x: isinstance(x, Instr))]
    assert progs, f"{path.name}: no derivation ends in instruction form"
    return progs


def _openmp_kernel(checked: CheckedProgram, target: str):
    """The OpenMP kernel, built, once its C has each parallel loop's body outlined: a
    function of its own, where GCC 12 honours the micro-kernel's `#pragma GCC unroll`
    (codegen/outline.py, decision #113).  The rewrite leaves a body in place when it
    cannot read it, which only makes the kernel slower; no output comparison notices."""
    src = pipeline.render(pipeline.lower(checked, target))
    loops = len(re.findall(r"#pragma omp parallel for", src.c))
    helpers = re.findall(rf"^static inline void vs_{checked.name}_p\d+\(", src.c, re.M)
    assert loops and len(helpers) == loops, f"{checked.name}: {len(helpers)} of {loops} " \
        "parallel loop bodies outlined"
    return pipeline.build(src)[checked.name]


def _kernel(checked: CheckedProgram, target: str):
    """(lowered, kernel) through the pipeline's stages."""
    lowered = pipeline.lower(checked, target)
    return lowered.kernel, pipeline.build(pipeline.render(lowered))[checked.name]


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_vector_examples_run_and_match(coq, path: Path) -> None:
    if not {"avx2", "fma"} <= cpu_flags():
        pytest.skip("this CPU has no AVX2+FMA")
    # The OpenMP build is checked on the file's first derivation only: its lowering
    # repeats the serial one's bounds proofs (about 30 s for each SGEMM derivation), and
    # the parallel rules are the same for the others (SGEMM's column-strip rule has its
    # own test below, test_sgemm_runtime_block_sizes).
    for n_prog, (name, dp) in enumerate(_programs(coq, path)):
        assert dp.safety_gap is None, f"{name}: {dp.safety_gap}"
        isa = _isa_of(dp.expr)
        checked = _prepare(dp)
        fixed, sizes = checked.fixed, checked.program.sizes
        lw, kernel = _kernel(checked, isa)
        if isa == "avx512" and "avx512f" not in cpu_flags():
            # The C compiles; running it is refused.
            with pytest.raises(CpuSupportError):
                kernel.call({a: np.zeros(1, np.float32) for a, _ in checked.program.inputs},
                            {s: 1 for s in sizes})
            continue
        t = get_target(isa)
        exe = build_sanitized([lw], t)
        par = _openmp_kernel(checked, f"{isa}-openmp") if n_prog == 0 else None
        if par is not None:
            par.set_threads(2)
        rng = np.random.default_rng(3)
        for case in _size_cases(checked):
            shapes, out_shape = kernel.extents(case)
            ins = {a: rng.uniform(-1, 1, size=s).astype(np.float32) for a, s in shapes.items()}
            wide = {a: v.astype(np.float64) for a, v in ins.items()}
            allsizes = {**case, **fixed}
            want = evaluate(dp.expr, wide, allsizes, np.float64)
            for what, other in (("unfolded", dp.unfolded), ("original", dp.original)):
                if other is not None:
                    np.testing.assert_allclose(
                        evaluate(other, wide, allsizes, np.float64, rank=want.ndim), want,
                        rtol=1e-9, atol=1e-9, err_msg=f"{name} {case}: {what} program")
            got = kernel.call(ins, case)
            scale = max(1.0, float(np.abs(want).max(initial=0.0)))
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5 * scale,
                                       err_msg=f"{name} at {case}")
            if par is not None:
                np.testing.assert_allclose(par.call(ins, case), want, rtol=1e-4,
                                           atol=1e-5 * scale,
                                           err_msg=f"{name} [{isa}-openmp] at {case}")
            san = run_sanitized(exe, lw, ins, case, out_shape)
            np.testing.assert_allclose(san, want, rtol=1e-4, atol=1e-5 * scale,
                                       err_msg=f"sanitized {name} at {case}")


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_vector_examples_are_refused_by_scalar_targets(coq, path: Path) -> None:
    from verisched.codegen import LowerError

    for _, dp in _programs(coq, path):
        with pytest.raises(LowerError, match="(is not supported by|which) target c "):
            pipeline.lower(_prepare(dp), "c")


@pytest.mark.parametrize("name,isa", [("sgemm_avx2", "avx2"), ("sgemm_avx2_direct", "avx2"),
                                      ("sgemm_avx512_direct", "avx512")])
def test_sgemm_runtime_block_sizes(coq, name: str, isa: str) -> None:
    """Sgemm.v's kernels with their block sizes left as kernel arguments, as `verisched
    bench sgemm` calls them (kc and mcr chosen per call): serial, 2-thread (the parallel
    row blocks, the ragged last one included) and sanitized, against the interpreter, with
    block sizes that divide nothing.  The A-in-place derivations read A where the pack
    read it, under its guard: the sanitizer sees every partial tile's rows and depth."""
    needs = {"avx2", "fma"} if isa == "avx2" else {"avx512f"}
    if not needs <= cpu_flags():
        pytest.skip(f"this CPU lacks {sorted(needs - cpu_flags())}")
    path = REPO_ROOT / "coq" / "Examples" / "Sgemm.v"
    dp = derived(coq, path)[name]
    assert dp.safety_gap is None, dp.safety_gap
    checked = pipeline.check(dp, name="sgemm_rt")
    assert {"mcr", "kc"} <= set(checked.program.sizes), checked.program.sizes
    lw, kernel = _kernel(checked, isa)
    par = _openmp_kernel(checked, f"{isa}-openmp")
    exe = build_sanitized([lw], get_target(isa))
    if name.endswith("_direct"):
        # No pack of A: the micro-kernel broadcasts A's own elements.
        body = "\n".join(kernel.lowered.body)
        assert "Ap[" not in body and "Bp[" in body
        assert re.search(r"_set1_ps\(A\[", body), "no broadcast from A itself"
    par.set_threads(2)
    rng = np.random.default_rng(5)
    # Fewer row blocks than threads (one: M <= 6 mcr) take the serial copy of the
    # row-block loop, whose column strips are then the parallel loop (openmp.py, rule 6).
    body = "\n".join(par.lowered.body)
    assert "if(!omp_in_parallel())" not in body
    assert "6*mcr) >= omp_get_max_threads()) {" in body
    for M, N, K, mcr, kc, threads in [(50, 33, 29, 2, 5, 2), (13, 17, 7, 1, 3, 2),
                                      (61, 40, 16, 3, 16, 2), (7, 5, 40, 5, 7, 2),
                                      (30, 70, 20, 5, 8, 2), (24, 37, 19, 2, 6, 3),
                                      (40, 21, 9, 1, 4, 3)]:
        par.set_threads(threads)  # 3 threads, 2 row blocks: the strips are parallel
        case = {"M": M, "N": N, "K": K, "mcr": mcr, "kc": kc}
        assert checked.program.violated(case) is None
        shapes, out_shape = kernel.extents(case)
        ins = {a: rng.uniform(-1, 1, size=s).astype(np.float32) for a, s in shapes.items()}
        want = evaluate(dp.original, {a: v.astype(np.float64) for a, v in ins.items()},
                        case, np.float64)
        assert kernel.lowered.inplace == par.lowered.inplace == ("C",)
        for what, k in (("serial", kernel), ("openmp", par)):
            np.testing.assert_allclose(k.call(ins, case), want, rtol=1e-4, atol=1e-4,
                                       err_msg=f"{name} [{what}, {threads}t] at {case}")
            c = ins["C"].copy()  # in place: C += A B, as BLAS with beta = 1
            k.call({**ins, "C": c}, case, out=c)
            np.testing.assert_allclose(c, want, rtol=1e-4, atol=1e-4,
                                       err_msg=f"{name} [{what}, in place] at {case}")
        np.testing.assert_allclose(run_sanitized(exe, lw, ins, case, out_shape), want,
                                   rtol=1e-4, atol=1e-4, err_msg=f"sanitized at {case}")


@pytest.mark.parametrize("name,width", [("conv_avx512_kc", 32), ("conv_avx512_kc64", 64)])
def test_conv_depth_blocked_serial_and_openmp(coq, name: str, width: int) -> None:
    """Conv.v's depth-blocked kernels (the taps as depth blocks, the tile accumulated
    into the output row, the input read in place; 6 x 32 and 6 x 64 register tiles), as
    `verisched bench conv` builds them (`native` and `native-openmp`, 2 and 3 threads)
    and under the sanitizers, against the interpreter on the original convolution and
    against conv_avx512, at sizes that are not multiples of the 6-pixel tile nor of the
    channel strip or the 16-lane vector (a partial last tile of each width from 1 to 5
    pixels, a masked last strip, one pixel, one channel, a strip of 64 cut after 2 or 6
    channels)."""
    if "avx512f" not in cpu_flags():
        pytest.skip("this CPU has no AVX-512F")
    progs = derived(coq, REPO_ROOT / "coq" / "Examples" / "Conv.v")
    dp, old = progs[name], progs["conv_avx512"]
    assert dp.safety_gap is None, dp.safety_gap
    checked = pipeline.check(dp)
    assert set(checked.program.sizes) == {"NB", "H", "W", "CI", "KO"}
    lw, kernel = _kernel(checked, "native")
    par = _openmp_kernel(checked, "native-openmp")
    ref = _kernel(pipeline.check(old), "native")[1]
    exe = build_sanitized([lw], get_target("avx512"))
    # The channel strips are the derivation's width apart (`64*jm` in the weight panel).
    assert f"{width}*jm" in "\n".join(kernel.lowered.body)
    rng = np.random.default_rng(16)
    for case, threads in [(dict(NB=2, H=3, W=13, CI=5, KO=50), 2),
                          (dict(NB=1, H=4, W=7, CI=17, KO=33), 3),
                          (dict(NB=1, H=1, W=1, CI=1, KO=1), 2),
                          (dict(NB=3, H=2, W=26, CI=3, KO=70), 2),
                          (dict(NB=1, H=2, W=9, CI=4, KO=130), 2),
                          (dict(NB=1, H=5, W=12, CI=8, KO=16), 3),
                          # the last tile 4 and 5 pixels wide (with 13, 26 and 9 above:
                          # every band of codegen/vloops.py's lower_tail)
                          (dict(NB=1, H=2, W=10, CI=3, KO=20), 2),
                          (dict(NB=2, H=1, W=11, CI=2, KO=64), 3)]:
        par.set_threads(threads)
        shapes, _ = kernel.extents(case)
        ins = {a: rng.uniform(-1, 1, size=s).astype(np.float32) for a, s in shapes.items()}
        want = evaluate(dp.original, {a: v.astype(np.float64) for a, v in ins.items()},
                        case, np.float64)
        assert want.shape == (case["NB"], case["H"], case["W"], case["KO"])
        scale = max(1.0, float(np.abs(want).max(initial=0.0)))
        for what, k in (("serial", kernel), (f"openmp {threads}t", par),
                        ("conv_avx512", ref)):
            np.testing.assert_allclose(k.call(ins, case), want, rtol=1e-4, atol=1e-5 * scale,
                                       err_msg=f"{name} [{what}] at {case}")
        np.testing.assert_allclose(run_sanitized(exe, lw, ins, case, want.shape), want,
                                   rtol=1e-4, atol=1e-5 * scale,
                                   err_msg=f"{name} [sanitized] at {case}")


def test_conv_tail_tile_computes_only_its_rows(coq) -> None:
    """The last, partial 6-pixel tile of a conv row (W mod 6 pixels) is lowered once per
    width it can have (codegen/vloops.py, lower_tail), each version's reduction loop
    holding 4 FMAs (a 64-channel strip: four 16-lane vectors) per live pixel and none
    for the pixels past the row's end: at W = 100 the 4-pixel tail does 16 FMAs a step,
    not 24 on zeros.  Lowering only, so it runs on any CPU."""
    progs = derived(coq, REPO_ROOT / "coq" / "Examples" / "Conv.v")
    body = pipeline.lower(pipeline.check(progs["conv_avx512_kc64"]), "avx512").kernel.body
    head = re.compile(r"^(\s*)(?:else )?if \(W - 6\*\w+ >= (\d)\) \{$")
    first = next(k for k, s in enumerate(body) if head.match(s))
    indent = head.match(body[first]).group(1)  # type: ignore[union-attr]
    versions: list[tuple[int, int]] = []  # (live pixels, FMAs in the version)
    for s in body[first:]:
        m = head.match(s)
        if m and m.group(1) == indent:
            versions.append((int(m.group(2)), 0))
        elif s == indent + "else {":
            versions.append((1, 0))
        elif not s.startswith(indent):
            break  # the tail loop ends
        elif "_mm512_fmadd_ps" in s:
            live, n = versions[-1]
            versions[-1] = (live, n + 1)
    assert versions == [(k, 4 * k) for k in (5, 4, 3, 2, 1)], versions
