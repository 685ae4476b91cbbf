"""verisched bench polybench: derived PolyBench kernels vs the naive loop nest and OpenBLAS.

For every kernel of coq/Examples/PolyBench/ (gemm, 2mm, 3mm, atax, bicg, mvt, doitgen,
gesummv, gemver, syrk, jacobi-1d, jacobi-2d; jacobi-1d-tiled and jacobi-2d-tiled: the
same by overlapped time tiling, the tile size k one of the sizes; jacobi-1d-peeled and
jacobi-2d-peeled: the step's border peeled; mvt-sweep: mvt's two outputs in one sweep),
the derivation is replayed and lowered for the `c` target, and so is the original
program before any step: the suite's loop order as our `c` target lowers it (serial
loops, -O3 -march=native), not PolyBench's own C file.  gemm-vec: gemm by the SGEMM
schedule in float64 vector instructions (Gemm.v's gemm_avx512pd or gemm_avx2pd, the
CPU's best, lowered for that ISA's target; block sizes from the caches); doitgen-vec:
doitgen, 2mm and 3mm by examples/doitgen_f64.py's, two_mm_f64.py's and three_mm_f64.py's
directives in the same instructions.  Where a BLAS
call computes the kernel (gemm, 2mm, 3mm, atax, bicg, mvt, doitgen, gesummv), numpy's
OpenBLAS on one thread is the peer (for gemm and gemm-vec one `cblas_dgemm` of that
library with alpha and beta, into a copy of C, where it exports one; syrk and gemver
have none: numpy has no syrk or dger).  Every output
is checked against our numpy transcription.  float64, as the suite computes; medians of
interleaved runs (benchmarks/_common.py); sizes: PolyBench/C 4.2's LARGE datasets unless
--dataset says otherwise.  Writes benchmarks/results/polybench.md and .png.

    verisched bench polybench [--dataset MEDIUM|LARGE] [--repeat N] [--kernels NAME ...]
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import runpy
import sys
from collections.abc import Callable
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent))

import _plots  # noqa: E402
import numpy as np  # noqa: E402
from _common import (  # noqa: E402
    RESULTS_DIR,
    Estimate,
    Variant,
    cpu_model,
    fmt,
    md_table,
    positive_int,
    source_revision,
    text_table,
    time_round_robin,
    write_outputs,
)

from verisched import pipeline  # noqa: E402
from verisched.codegen.errors import CodegenError  # noqa: E402
from verisched.pipeline.check import check  # noqa: E402
from verisched.pybridge.terms import Expr  # noqa: E402
from verisched.schedule.directives import ISAS  # noqa: E402
from verisched.targets.auto import best_isa  # noqa: E402
from verisched.targets.base import Kernel  # noqa: E402
from verisched.targets.blocking import gemm_blocks  # noqa: E402
from verisched.targets.toolchain import atomic_write  # noqa: E402

PEERS = "OpenBLAS through numpy (one thread), where a BLAS call computes the kernel"
DURATION = "about 5 minutes at LARGE (277 s measured with cached derivations; 17 kernels)"
ROOT = Path(__file__).resolve().parents[1]
DIR = ROOT / "coq" / "Examples" / "PolyBench"

# PolyBench/C 4.2 dataset sizes (jacobi: T is two of ours per suite time step).
DATASETS = {
    "MEDIUM": {"gemm": {"ni": 200, "nj": 220, "nk": 240},
               "gemm-vec": {"ni": 200, "nj": 220, "nk": 240},
               "2mm": {"ni": 180, "nj": 190, "nk": 210, "nl": 220},
               "2mm-vec": {"ni": 180, "nj": 190, "nk": 210, "nl": 220},
               "3mm": {"ni": 180, "nj": 190, "nk": 200, "nl": 210, "nm": 220},
               "3mm-vec": {"ni": 180, "nj": 190, "nk": 200, "nl": 210, "nm": 220},
               "atax": {"m": 390, "n": 410}, "bicg": {"m": 390, "n": 410},
               "mvt": {"n": 400}, "mvt-sweep": {"n": 400},
               "doitgen": {"nr": 50, "nq": 40, "np": 60},
               "doitgen-vec": {"nr": 50, "nq": 40, "np": 60},
               "gesummv": {"n": 250}, "gemver": {"n": 400}, "syrk": {"n": 240, "m": 200},
               "jacobi-1d": {"n": 400, "T": 200},
               "jacobi-1d-tiled": {"n": 400, "T": 200, "k": 64},
               "jacobi-1d-peeled": {"n": 400, "T": 200},
               "jacobi-2d": {"n": 250, "T": 200},
               "jacobi-2d-tiled": {"n": 250, "T": 200, "k": 16},
               "jacobi-2d-peeled": {"n": 250, "T": 200}},
    "LARGE": {"gemm": {"ni": 1000, "nj": 1100, "nk": 1200},
              "gemm-vec": {"ni": 1000, "nj": 1100, "nk": 1200},
              "2mm": {"ni": 800, "nj": 900, "nk": 1100, "nl": 1200},
              "2mm-vec": {"ni": 800, "nj": 900, "nk": 1100, "nl": 1200},
              "3mm": {"ni": 800, "nj": 900, "nk": 1000, "nl": 1100, "nm": 1200},
              "3mm-vec": {"ni": 800, "nj": 900, "nk": 1000, "nl": 1100, "nm": 1200},
              "atax": {"m": 1900, "n": 2100}, "bicg": {"m": 1900, "n": 2100},
              "mvt": {"n": 2000}, "mvt-sweep": {"n": 2000},
              "doitgen": {"nr": 150, "nq": 140, "np": 160},
              "doitgen-vec": {"nr": 150, "nq": 140, "np": 160},
              "gesummv": {"n": 1300}, "gemver": {"n": 2000},
              "syrk": {"n": 1200, "m": 1000},
              "jacobi-1d": {"n": 2000, "T": 1000},
              "jacobi-1d-tiled": {"n": 2000, "T": 1000, "k": 64},
              "jacobi-1d-peeled": {"n": 2000, "T": 1000},
              "jacobi-2d": {"n": 1300, "T": 1000},
              "jacobi-2d-tiled": {"n": 1300, "T": 1000, "k": 16},
              "jacobi-2d-peeled": {"n": 1300, "T": 1000}},
}

# name -> (file, derivation, reference in numpy: inputs -> output, BLAS peer or None)
KERNELS = {
    "gemm": ("Gemm.v", "gemm_ikj", lambda x: 1.5 * x["A"] @ x["B"] + 1.2 * x["C"], True),
    # the SGEMM schedule in float64 lanes, for the CPU's best ISA (VECTOR below)
    "gemm-vec": ("Gemm.v", "gemm_avx512pd", lambda x: 1.5 * x["A"] @ x["B"] + 1.2 * x["C"],
                 True),
    "2mm": ("TwoMM.v", "two_mm_ikj",
            lambda x: (1.5 * x["A"] @ x["B"]) @ x["C"] + 1.2 * x["D"], True),
    # examples/two_mm_f64.py's schedule (VECTOR, SCHEDULED below; the naive is TwoMM.v's)
    "2mm-vec": ("TwoMM.v", "two_mm_ikj",
                lambda x: (1.5 * x["A"] @ x["B"]) @ x["C"] + 1.2 * x["D"], True),
    "3mm": ("ThreeMM.v", "three_mm_ikj", lambda x: (x["A"] @ x["B"]) @ (x["C"] @ x["D"]), True),
    "3mm-vec": ("ThreeMM.v", "three_mm_ikj",
                lambda x: (x["A"] @ x["B"]) @ (x["C"] @ x["D"]), True),
    "atax": ("Atax.v", "atax_rows", lambda x: x["A"].T @ (x["A"] @ x["x"]), True),
    "bicg": ("Bicg.v", "bicg_rows", lambda x: (x["A"].T @ x["r"], x["A"] @ x["p"]), True),
    "mvt": ("Mvt.v", "mvt_rows",
            lambda x: (x["x1"] + x["A"] @ x["y1"], x["x2"] + x["A"].T @ x["y2"]), True),
    # mvt's two outputs in one sweep over the rows of A (fuse_outputs).
    "mvt-sweep": ("Mvt.v", "mvt_sweep",
                  lambda x: (x["x1"] + x["A"] @ x["y1"], x["x2"] + x["A"].T @ x["y2"]), True),
    "doitgen": ("Doitgen.v", "doitgen_rows", lambda x: x["A"] @ x["C4"], True),
    # examples/doitgen_f64.py's schedule (VECTOR, SCHEDULED below; the naive is Doitgen.v's)
    "doitgen-vec": ("Doitgen.v", "doitgen_rows", lambda x: x["A"] @ x["C4"], True),
    "gesummv": ("Gesummv.v", "gesummv_fused",
                lambda x: 1.5 * x["A"] @ x["x"] + 1.2 * x["B"] @ x["x"], True),
    # No BLAS peer: numpy's outer products are not BLAS calls (no dger without scipy),
    # so its time is numpy's, not OpenBLAS's (bench idioms calls CBLAS for gemver).
    "gemver": ("Gemver.v", "gemver_rows", lambda x: _gemver(x), False),
    # No BLAS peer: numpy has no syrk, and a gemm computes both triangles (twice the work).
    "syrk": ("Syrk.v", "syrk_ikj",
             lambda x: np.where(np.tri(len(x["C"]), dtype=bool),
                                1.2 * x["C"] + 1.5 * x["A"] @ x["A"].T, x["C"]), False),
    "jacobi-1d": ("Jacobi1d.v", "jacobi1d_fused", None, False),
    # derived variant: the same kernel by overlapped time tiling (tile k, a size)
    "jacobi-1d-tiled": ("Jacobi1d.v", "jacobi1d_tiled", None, False),
    "jacobi-1d-peeled": ("Jacobi1d.v", "jacobi1d_peeled", None, False),
    "jacobi-2d": ("Jacobi2d.v", "jacobi2d_fused", None, False),
    "jacobi-2d-tiled": ("Jacobi2d.v", "jacobi2d_tiled", None, False),
    "jacobi-2d-peeled": ("Jacobi2d.v", "jacobi2d_peeled", None, False),
}


# Kernels in an ISA's float64 instructions, the CPU's best ISA picked
# (targets/auto.best_isa): ISA -> its derivation in the kernel's .v file (None: the
# Python schedule of SCHEDULED, proved as it runs), and the block sizes from the caches
# for a register tile 4 vectors of doubles wide (targets/blocking.gemm_blocks, as bench
# sgemm's).
VECTOR: dict[str, tuple[dict[str, str | None], Callable[[dict[str, int], int], dict]]] = {
    "gemm-vec": ({"avx512": "gemm_avx512pd", "avx2": "gemm_avx2pd"},
                 lambda s, nr: gemm_blocks(s["ni"], s["nk"], 1, nr=nr, elem=8, N=s["nj"])),
    "2mm-vec": ({"avx512": None, "avx2": None},
                lambda s, nr: gemm_blocks(s["ni"], s["nj"], 1, nr=nr, elem=8, N=s["nl"])),
    "3mm-vec": ({"avx512": None, "avx2": None},
                lambda s, nr: gemm_blocks(s["ni"], s["nk"], 1, nr=nr, elem=8, N=s["nl"])),
    "doitgen-vec": ({"avx512": None, "avx2": None},
                    lambda s, nr: {"kc": gemm_blocks(s["nq"], s["np"], 1, nr=nr, elem=8,
                                                     N=s["np"])["kc"]}),
}
# name -> the example whose `scheduled(isa)` builds it (its directives in Python)
SCHEDULED = {"doitgen-vec": ROOT / "examples" / "doitgen_f64.py",
             "2mm-vec": ROOT / "examples" / "two_mm_f64.py",
             "3mm-vec": ROOT / "examples" / "three_mm_f64.py"}


def _vector_variant(name: str, sizes: dict[str, int]) -> tuple[str, str | None, dict[str, int]]:
    """(target, derivation or None, sizes with the block sizes) of a VECTOR kernel on
    this CPU; a CodegenError where the CPU has neither AVX-512 nor AVX2."""
    isa = best_isa()
    derivations, blocks = VECTOR[name]
    if isa not in derivations:
        raise CodegenError(f"this CPU has no vector ISA the derivations are for "
                           f"({', '.join(derivations)})")
    nr = 4 * ISAS[isa + "pd"]
    return isa, derivations[isa], {**sizes, **blocks(sizes, nr)}


def _scheduled(name: str, isa: str) -> Kernel:
    """The kernel SCHEDULED's example builds for `isa`'s float64 instructions."""
    return runpy.run_path(str(SCHEDULED[name]))["scheduled"](isa + "pd")


def _openblas_gemm() -> Callable[[dict[str, np.ndarray]], np.ndarray] | None:
    """gemm as one call of numpy's own OpenBLAS, `cblas_dgemm` with alpha 1.5 and beta
    1.2 into a copy of C (numpy's `1.5 * A @ B + 1.2 * C` makes three more passes over
    the output); None where numpy's library does not export it (then numpy's
    expression is the peer)."""
    libs = Path(np.__file__).resolve().parent.parent / "numpy.libs"
    for path in sorted(libs.glob("libscipy_openblas64_*.so")):
        lib = ctypes.CDLL(str(path))
        fn = getattr(lib, "scipy_cblas_dgemm64_", None)
        if fn is None:
            continue
        i64, dbl, ptr = ctypes.c_int64, ctypes.c_double, ctypes.c_void_p
        fn.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int, i64, i64, i64, dbl, ptr, i64,
                       ptr, i64, dbl, ptr, i64]
        fn.restype = None

        def gemm(x: dict[str, np.ndarray], fn=fn) -> np.ndarray:
            a, b = np.ascontiguousarray(x["A"]), np.ascontiguousarray(x["B"])
            out = np.array(x["C"], dtype=np.float64, order="C")
            (m, k), n = a.shape, b.shape[1]
            # row-major (101), no transposes (111)
            fn(101, 111, 111, m, n, k, 1.5, a.ctypes.data, k, b.ctypes.data, n, 1.2,
               out.ctypes.data, n)
            return out
        return gemm
    return None


def _gemver(x: dict[str, np.ndarray]) -> np.ndarray:
    ah = x["A"] + np.outer(x["u1"], x["v1"]) + np.outer(x["u2"], x["v2"])
    xn = x["x"] + 1.2 * ah.T @ x["y"] + x["z"]
    return x["w"] + 1.5 * ah @ xn


def _stencil(name: str, a: np.ndarray, steps: int) -> np.ndarray:
    a = a.copy()
    for _ in range(steps):
        b = a.copy()
        if name.startswith("jacobi-1d"):
            b[1:-1] = (a[:-2] + a[1:-1] + a[2:]) / 3.0
        else:
            b[1:-1, 1:-1] = 0.2 * (a[1:-1, 1:-1] + a[1:-1, :-2] + a[1:-1, 2:] + a[2:, 1:-1]
                                   + a[:-2, 1:-1])
        a = b
    return a


def _original(derived: pipeline.DerivedProgram) -> pipeline.DerivedProgram:
    """The derivation's starting program, as a program of its own (no step applied)."""
    from dataclasses import replace

    assert derived.original is not None
    expr: Expr = derived.original
    # Coq's check_safe ran on the derived program, not on this one: built as unsafe
    # (its C says so), a baseline that the outputs check guards.
    return replace(derived, expr=expr, name=derived.name + "_naive",
                   safety_gap="the starting program, not checked by check_safe")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="verisched bench polybench", description=__doc__)
    ap.add_argument("--dataset", choices=sorted(DATASETS), default="LARGE")
    ap.add_argument("--repeat", type=positive_int, default=5, help="timed runs per kernel")
    ap.add_argument("--kernels", nargs="+", default=list(KERNELS), choices=list(KERNELS),
                    metavar="KERNEL", help=f"default: all ({', '.join(KERNELS)})")
    args = ap.parse_args(argv)
    try:  # numpy is imported before this module runs, so the variable is too late
        from threadpoolctl import threadpool_limits
        threadpool_limits(1, user_api="blas")
    except ImportError:
        print("threadpoolctl missing: OpenBLAS may use every core", file=sys.stderr)
    commit = source_revision()
    rows, plot = [], []
    estimate = Estimate(len(args.kernels))
    dgemm = _openblas_gemm()
    for name in args.kernels:
        file, derivation, ref, blas = KERNELS[name]
        sizes = DATASETS[args.dataset][name]
        estimate.next(f"{name} {sizes}")
        target, built = "c", None
        try:
            if name in VECTOR:
                target, vec, sizes = _vector_variant(name, sizes)
                derivation = vec or derivation
                built = _scheduled(name, target) if vec is None else None
            derived = pipeline.load(DIR / file, derivation)
            fast = built or pipeline.build(pipeline.render(pipeline.lower(
                check(derived, dtype="float64"), target)))[derivation]
            naive_name = derivation + "_naive"
            naive = pipeline.build(pipeline.render(pipeline.lower(
                check(_original(derived), dtype="float64", unsafe=True), "c")))[naive_name]
        except CodegenError as exc:   # a derivation Coq or the lowering refuses: say so, go on
            print(f"bench polybench: {name}: {file} {derivation} not built: {exc}",
                  file=sys.stderr, flush=True)
            rows.append([name, " ".join(f"{a}={b}" for a, b in sizes.items()),
                         *["-"] * 5, "not built"])
            continue
        # a derived variant's own sizes (a tile size) are not the original program's
        naive_sizes = {a: sizes[a] for a, _ in naive.lowered.sizes}
        shapes, _ = fast.extents(sizes)
        rng = np.random.default_rng(13)
        ins = {n: rng.uniform(0, 1, s) for n, s in shapes.items()}
        want = ref(ins) if ref else _stencil(name, ins["A"], sizes["T"])
        outs = {"ours": fast(ins, **sizes), "naive": naive(ins, **naive_sizes)}
        wants = want if isinstance(want, tuple) else (want,)  # bicg, mvt: two outputs
        ok = all(np.allclose(g, w, rtol=1e-9, atol=1e-9)
                 for v in outs.values()
                 for g, w in zip(v if isinstance(v, tuple) else (v,), wants, strict=True))
        variants = [Variant(("c", "naive"), lambda f=naive, s=naive_sizes, x=ins: f(x, **s)),
                    Variant(("c", "ours"), lambda f=fast, s=sizes, x=ins: f(x, **s))]
        if blas and ref is not None:
            peer = dgemm if name.startswith("gemm") and dgemm else ref
            variants.append(Variant(("openblas", "numpy"), lambda r=peer, x=ins: r(x)))
        time_round_robin(variants, args.repeat)
        med = {v.key[1]: v.median() for v in variants}
        peer = med.get("numpy")
        label = f"{name} ({target})" if name in VECTOR else name
        rows.append([label, " ".join(f"{a}={b}" for a, b in sizes.items()),
                     fmt(med["naive"], 2), fmt(med["ours"], 2),
                     fmt(med["naive"] / med["ours"], 2),
                     fmt(peer, 2) if peer else "-",
                     fmt(peer / med["ours"], 2) if peer else "-", "yes" if ok else "NO"])
        plot.append({"name": label, "sizes": sizes, "median_ms": med, "ok": ok,
                     "samples_ms": {v.key[1]: list(v.times_ms) for v in variants}})
        print(f"  naive {med['naive']:.2f} ms, ours {med['ours']:.2f} ms"
              + (f", OpenBLAS {peer:.2f} ms" if peer else "")
              + f"; outputs {'OK' if ok else 'WRONG'}", file=sys.stderr, flush=True)
    headers = ["kernel", f"sizes ({args.dataset})", "naive ms", "derived ms",
               "speedup", "OpenBLAS ms", "OpenBLAS / derived", "outputs = numpy"]
    print(text_table(headers, rows))
    md = "\n".join([
        "# PolyBench kernels: derived against the naive loop nest and OpenBLAS",
        "",
        f"Generated by `verisched bench polybench --dataset {args.dataset}` at commit "
        f"{commit} on {cpu_model()}; float64; medians of {args.repeat} interleaved runs. "
        "Naive: the program before any derivation step, lowered by our `c` target "
        "(the suite's loop order, -O3 -march=native), not PolyBench's own C file. "
        "OpenBLAS: numpy's, one thread, where one or two BLAS calls compute the kernel "
        "(gemm rows: one cblas_dgemm of that library with alpha and beta, into a copy of C"
        + ("" if dgemm else "; not exported here, so numpy's expression") + "); "
        "gemm-vec: the float64 vector schedule, lowered for the target named. "
        "A ratio above 1 in the last column: ours is faster.",
        "",
        md_table(headers, rows), ""])
    data = {"dataset": args.dataset, "repeat": args.repeat, "commit": commit,
            "cpu": cpu_model(), "rows": plot}
    atomic_write(RESULTS_DIR / "polybench.json", json.dumps(data, indent=1))
    fig = _plots.polybench(data)
    for p in write_outputs(RESULTS_DIR, "polybench", md, fig):
        print(f"wrote {p}", file=sys.stderr)
    return 0 if all(r[-1] == "yes" for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
