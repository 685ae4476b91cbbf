"""verisched bench idioms: the programs `verisched search` found, with CBLAS calls, against naive C.

For every kernel of examples/search/liar_blas.v that gets idioms, the search finds and
certifies the program (NAME_found.v, coqc-checked), the `blas` target lowers its calls
to OpenBLAS (single-threaded: OPENBLAS_NUM_THREADS=1, as the naive C is serial), and
the original program is compiled for `c` (naive loops, -O3 -march=native, the
PolyBench-style reference LIAR's Fig. 7 divides by).  Both run on the same random
inputs and both outputs are checked against the reference interpreter on the original
program; a found program the C lowering does not take is listed with the reason;
times are medians of interleaved runs (benchmarks/_common.py).
LIAR's Fig. 7 gives its speedups only as a plot (no numbers in the paper's text), so
the table cannot put them side by side; its bars are between about 1x and 100x.
Writes benchmarks/results/idioms_bench.md and .png.

    verisched bench idioms [--repeat N] [--scale F]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
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
    positive_float,
    positive_int,
    source_revision,
    text_table,
    time_round_robin,
    write_outputs,
)

from verisched import pipeline  # noqa: E402
from verisched.codegen.errors import CodegenError  # noqa: E402
from verisched.pybridge.interp import evaluate  # noqa: E402
from verisched.search import load_program, search  # noqa: E402
from verisched.targets.toolchain import atomic_write  # noqa: E402

PEERS = "OpenBLAS (Debian libopenblas-dev, make setup)"
DURATION = "about 4 minutes (16 searches and certificates, 32 builds)"
ROOT = Path(__file__).resolve().parents[1]
KERNELS = ROOT / "examples" / "search" / "liar_blas.v"

# Sizes: PolyBench's MEDIUM datasets where they fit a short run on 2 cores.
SIZES = {
    "gemv": {"n": 2000, "m": 2000},
    "slim_2mm": {"ni": 200, "nj": 220, "nk": 240, "nl": 260},
    "gemm": {"ni": 200, "nj": 220, "nk": 240},
    "two_mm": {"ni": 180, "nj": 190, "nk": 210, "nl": 220},
    "atax": {"m": 1900, "n": 2100},
    "mvt": {"n": 2000},
    "gesummv": {"n": 1300},
    "gemver": {"n": 2000},
    "doitgen": {"nr": 50, "nq": 40, "np": 60},
    "one_mm": {"ni": 200, "nj": 220, "nk": 240},
    "axpy": {"n": 1_000_000},
    "memset": {"n": 1_000_000},
    # LIAR's latent idioms: vsum a dot with a filled vector of ones; the stencils a gemv
    # over a window (jacobi1d, blur1d) or, per row, a gather (stencil2d) of the input,
    # each view copied into a buffer first (search/operands.py), as LIAR's C does
    "vsum": {"n": 1_000_000},
    "jacobi1d": {"n": 1_000_000},
    "blur1d": {"n": 1_000_000},
    "stencil2d": {"n": 1000, "m": 1000},
}


def _scaled(sizes: dict[str, int], scale: float) -> dict[str, int]:
    return {k: max(3, int(v * scale)) for k, v in sizes.items()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="verisched bench idioms", description=__doc__)
    ap.add_argument("--repeat", type=positive_int, default=7, help="timed runs per kernel")
    ap.add_argument("--scale", type=positive_float, default=1.0, help="multiply every size")
    args = ap.parse_args(argv)
    rows, plot = [], []
    with tempfile.TemporaryDirectory() as tmp:
        estimate = Estimate(len(SIZES))
        for name, base in SIZES.items():
            estimate.next(name)
            sizes = _scaled(base, args.scale)
            found = search(KERNELS, name, out=tmp)
            program = load_program(KERNELS, name)
            env = dict(program.inputs)
            naive = pipeline.compile_program(program.expr, env, "c", name=f"{name}_naive",
                                             sizes=program.sizes)
            calls = " + ".join(f"{k} {n.removeprefix('blas_')}" for n, k in found.idioms.items())
            size_text = " ".join(f"{k}={v}" for k, v in sizes.items())
            try:
                fast = pipeline.compile_derivation(found.path, f"{name}_scheduled", "blas")
            except CodegenError as exc:
                why = str(exc).splitlines()[0]
                rows.append([name, calls, size_text, "-", "-", "-", f"not lowered: {why}"])
                plot.append({"name": name, "sizes": sizes, "not_lowered": why})
                print(f"{name}: not lowered: {why}", file=sys.stderr)
                continue
            rng = np.random.default_rng(14)
            shapes, _ = naive.extents(sizes)
            ins = {k: rng.standard_normal(s).astype(np.float32) for k, s in shapes.items()}
            want = evaluate(program.expr, {k: v.astype(np.float64) for k, v in ins.items()},
                            sizes, np.float64)
            tol = 1e-3 * float(np.abs(want).max())
            ok = all(bool(np.allclose(k(ins, **sizes), want, rtol=1e-3, atol=tol))
                     for k in (naive, fast))
            variants = [Variant(("c", name), lambda k=naive, s=sizes, x=ins: k(x, **s)),
                        Variant(("blas", name), lambda k=fast, s=sizes, x=ins: k(x, **s))]
            time_round_robin(variants, args.repeat)
            t_naive, t_fast = variants[0].median(), variants[1].median()
            rows.append([name, calls, size_text, fmt(t_naive, 3), fmt(t_fast, 3),
                         fmt(t_naive / t_fast, 1), "yes" if ok else "NO"])
            plot.append({"name": name, "sizes": sizes, "ok": ok,
                         "median_ms": {"naive": t_naive, "found": t_fast},
                         "samples_ms": {"naive": list(variants[0].times_ms),
                                        "found": list(variants[1].times_ms)}})
            print(f"{name}: naive {t_naive:.3f} ms, found {t_fast:.3f} ms, "
                  f"speedup {t_naive / t_fast:.1f}x, output {'OK' if ok else 'WRONG'}",
                  file=sys.stderr)
    headers = ["kernel", "idioms (CBLAS)", "sizes", "naive C ms", "found ms", "speedup",
               "outputs = interpreter"]
    print(text_table(headers, rows))
    md = "\n".join([
        "# The found programs with CBLAS calls against naive C",
        "",
        f"Generated by `verisched bench idioms` at commit {source_revision()} on "
        f"{cpu_model()}; OpenBLAS single-threaded. "
        "Naive C: the original program as our `c` target lowers it (serial loops, -O3 "
        "-march=native), not PolyBench's own C file. Medians of interleaved runs. LIAR's "
        "Fig. 7 shows its speedups only as a plot, so they are not copied here.",
        "",
        md_table(headers, rows), ""])
    data = {"repeat": args.repeat, "scale": args.scale, "commit": source_revision(),
            "cpu": cpu_model(), "rows": plot}
    atomic_write(RESULTS_DIR / "idioms_bench.json", json.dumps(data, indent=1))
    fig = _plots.idioms(data)
    for p in write_outputs(RESULTS_DIR, "idioms_bench", md, fig):
        print(f"wrote {p}", file=sys.stderr)
    return 0 if all(r[-1] != "NO" for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
