"""verisched bench reduce: Halide's rfactor idioms (a dot product, matvec rows) against OpenBLAS.

Ours are derived from the plain programs by directives alone (verisched.schedule), as
docs/directives.md's rfactor section writes them, in the CPU's best vector ISA
(`native`): a dot product `SUM j x[j] * y[j]` split by two vectors (`split`'s default
guard tail: the last chunk's vectors masked, the full chunks' not, decision #150),
`rfactor` of the lanes, `vectorize` of the lanes and of their final sum (horizontal
adds, decision #151; 1 thread);
for threads, first split into chunks of CHUNK and `rfactor` of the chunks, `parallel`
over them (Halide's `rfactor(ro, u).parallel(u)`).
A matvec `GEN i SUM j A[i, j] * x[j]` (row-major A): each row's sum the same way, rows
`parallel`.  The peer is numpy's OpenBLAS, called through its CBLAS symbols
(`sdot`, `sgemv`), its thread count set with threadpoolctl; OPENBLAS_CORETYPE as the
environment gives it (the header records the kernels OpenBLAS used).  Both sides
are timed as bound C calls (no argument checks), round-robin, in the steady state
(benchmarks/_common.py), results first checked against float64 numpy.
Writes benchmarks/results/reduce.md, .json and .png.

    verisched bench reduce [--dot N ...] [--gemv N ...] [--repeat R] [--threads T]
"""

from __future__ import annotations

import argparse
import ctypes
import datetime
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common as cm  # noqa: E402
import _plots  # noqa: E402
import numpy as np  # noqa: E402

from verisched.schedule import Schedule, dsl  # noqa: E402
from verisched.targets.auto import best_vector_isa  # noqa: E402

PEERS = "OpenBLAS through numpy (cblas sdot, sgemv; threadpoolctl for threads)"
DURATION = "about 1 minute (4 derivations, 4 problems, 1 and 2 threads)"
CHUNK = 16384          # elements of x per thread chunk of the parallel dot product
SPIN = 0.12            # seconds OpenBLAS's idle workers may keep spinning (bench sgemm)


def derive(isa: str, final_sum: str = "vector") -> dict[str, object]:
    """The four kernels, compiled from their schedules (Coq checks every step).
    `final_sum`: "vector" sums the lanes by horizontal adds (`vectorize ji`), "scalar"
    leaves that loop scalar (as before decision #151, for a side-by-side run)."""
    lanes = {"avx2": 8, "avx512": 16}[isa] * 2      # two vectors: two accumulators

    def finish(s: Schedule) -> Schedule:
        s = s.vectorize("u", isa)
        return s.vectorize("ji", isa) if final_sum == "vector" else s

    n, m = dsl.sizes("n m")
    x, y, A = dsl.tensor("x", m), dsl.tensor("y", m), dsl.tensor("A", n, m)
    dot = dsl.program("dot", dsl.sum("j", m, lambda j: x[j] * y[j]))
    gemv = dsl.program("gemv", dsl.gen("i", n, lambda i:
                                       dsl.sum("j", m, lambda j: A[i, j] * x[j])))
    out: dict[str, object] = {}
    with Schedule.of(dot) as s:
        out["dot 1t"] = finish(s.split("j", lanes, "jo", "ji").rfactor("ji", "u", "t")
                               ).compile(isa)
        out["dot Tt"] = finish(s.split("j", CHUNK, "jc", "jj").rfactor("jc", "c", "part")
                               .split("jj", lanes, "jo", "ji").rfactor("ji", "u", "t")
                               ).parallel("c").compile(f"{isa}-openmp")
    with Schedule.of(gemv) as s:
        row = finish(s.split("j", lanes, "jo", "ji").rfactor("ji", "u", "t"))
        out["gemv 1t"] = row.compile(isa)
        out["gemv Tt"] = row.parallel("i").compile(f"{isa}-openmp")
    return out


class OpenBLAS:
    """numpy's OpenBLAS: cblas sdot and sgemv (64-bit integers) and its thread count."""

    def __init__(self) -> None:
        self.lc = cm.numpy_openblas("reduce")
        self.version, self.arch = self.lc.version, getattr(self.lc, "architecture", "?")
        lib, i64, fp = self.lc.dynlib, ctypes.c_int64, ctypes.POINTER(ctypes.c_float)
        self.sdot = getattr(lib, "scipy_cblas_sdot64_", None)
        self.sgemv = getattr(lib, "scipy_cblas_sgemv64_", None)
        if self.sdot is None or self.sgemv is None:
            raise SystemExit(f"bench reduce: no scipy_cblas_sdot64_/sgemv64_ in "
                             f"{self.lc.filepath}")
        self.sdot.argtypes, self.sdot.restype = [i64, fp, i64, fp, i64], ctypes.c_float
        self.sgemv.argtypes = [ctypes.c_int, ctypes.c_int, i64, i64, ctypes.c_float, fp,
                               i64, fp, i64, ctypes.c_float, fp, i64]
        self.sgemv.restype = None

        # A call that runs on OpenBLAS's threads, made in threads() to start them with
        # every core allowed, as bench sgemm does (see `problems`)
        self._wake = self.bind_gemv(cm.aligned(np.zeros((1024, 1024), np.float32)),
                                    cm.aligned(np.zeros(1024, np.float32)),
                                    cm.aligned(np.zeros(1024, np.float32)))

    def threads(self, n: int):
        """Set the thread count before a call (cm.openblas_threads)."""
        return cm.openblas_threads(self.lc, n, self._wake)

    def bind_dot(self, x: np.ndarray, y: np.ndarray, out: np.ndarray):
        fp = ctypes.POINTER(ctypes.c_float)
        px, py, n = x.ctypes.data_as(fp), y.ctypes.data_as(fp), x.size

        def run() -> None:
            out[()] = self.sdot(n, px, 1, py, 1)
        return run

    def bind_gemv(self, A: np.ndarray, x: np.ndarray, out: np.ndarray):
        fp = ctypes.POINTER(ctypes.c_float)
        rows, cols = A.shape
        pa, px, po = (a.ctypes.data_as(fp) for a in (A, x, out))

        def run() -> None:   # row-major (101), no transpose (111): out = A x
            self.sgemv(101, 111, rows, cols, 1.0, pa, cols, px, 1, 0.0, po, 1)
        return run


def problems(args: argparse.Namespace, rng: np.random.Generator):
    """(label, kind, inputs, sizes, float64 reference, flops, bytes) per problem.  The
    references are OpenBLAS calls: made unbound (cm.unbound), since a call after a fork
    (the Coq sessions, the compiler) restarts OpenBLAS's workers, which would otherwise
    inherit the main thread's one core (our OpenMP binds it) and share it: a 2-thread
    sgemv of 1024 x 1024 then took 8 ms, two scheduler ticks, instead of 0.03."""
    for n in args.dot:
        x, y = (cm.aligned(rng.standard_normal(n).astype(np.float32)) for _ in range(2))
        with cm.unbound():
            want = np.float64(x.astype(np.float64) @ y)
        yield f"dot {n}", "dot", {"x": x, "y": y}, {"m": n}, want, 2.0 * n, 8.0 * n
    for n in args.gemv:
        A = cm.aligned(rng.standard_normal((n, n)).astype(np.float32))
        x = cm.aligned(rng.standard_normal(n).astype(np.float32))
        with cm.unbound():
            want = A.astype(np.float64) @ x
        yield (f"gemv {n}x{n}", "gemv", {"A": A, "x": x}, {"n": n, "m": n}, want,
               2.0 * n * n, 4.0 * (n * n + 2 * n))


def calls_per_sample(run, target_ms: float = 1.0) -> int:
    """How many back-to-back calls make one timed sample of about `target_ms`: a single
    call of a few microseconds (a dot product in L2) is timed mostly as the clock's
    and the call's own noise (samples of one call ranged 4-17 us for a 3 us kernel)."""
    run()
    t0 = time.perf_counter()
    for _ in range(20):
        run()
    per = max((time.perf_counter() - t0) / 20 * 1000, 1e-6)
    return max(1, int(target_ms / per))


def repeated(run, k: int):
    if k == 1:
        return run

    def many() -> None:
        for _ in range(k):
            run()
    return many


def check(got: np.ndarray, want: np.ndarray, what: str, terms: int) -> None:
    # float32 sums of `terms` products, in different orders on each side
    tol = 1e-5 * np.sqrt(terms) * (1.0 + float(np.abs(want).max()))
    if not np.allclose(got, want, rtol=1e-4, atol=tol):
        raise SystemExit(f"bench reduce: {what} gives a wrong result "
                         f"(max error {float(np.abs(got - want).max()):.3g})")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="verisched bench reduce", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dot", type=cm.positive_int, nargs="*", default=[1 << 16, 1 << 24],
                    help="dot-product lengths (default 65536: in L2; 16777216: memory)")
    ap.add_argument("--gemv", type=cm.positive_int, nargs="*", default=[256, 1024, 4096],
                    help="square matvec sizes (default 256: in L2; 1024: in L3; 4096: memory)")
    ap.add_argument("--repeat", type=cm.positive_int, default=21, help="timed rounds")
    ap.add_argument("--final-sum", choices=("vector", "scalar"), default="vector",
                    help="the lanes' final sum: horizontal adds (default) or a scalar "
                         "loop (before decision #151)")
    ap.add_argument("--threads", type=cm.positive_int, default=2,
                    help="the multi-threaded count (at least 2)")
    ap.add_argument("--quiet-wait", type=cm.nonnegative_float, default=10.0,
                    help="wait up to this many seconds for idle CPUs before timing")
    ap.add_argument("--out-dir", type=cm.out_dir_arg, default=str(cm.RESULTS_DIR))
    args = ap.parse_args(argv)
    if args.threads < 2:
        ap.error("argument --threads: the multi-threaded count is at least 2")
    if not args.dot and not args.gemv:
        ap.error("nothing to measure: give --dot or --gemv sizes")
    # As bench sgemm: our idle workers spin 30000 rounds, not libgomp's default, before
    # they sleep, well within the 5 ms another pool's next call waits (spins_for);
    # threads bound to cores (bind_omp_threads)
    os.environ.setdefault("GOMP_SPINCOUNT", "30000")
    cm.bind_omp_threads()
    blas = OpenBLAS()
    isa = best_vector_isa()
    started = datetime.datetime.now(datetime.timezone.utc)
    print(f"deriving the kernels ({isa}) ...", file=sys.stderr, flush=True)
    ours = derive(isa, args.final_sum)
    T = args.threads
    ours["dot Tt"].set_threads(T)
    ours["gemv Tt"].set_threads(T)
    rng = np.random.default_rng(0)
    rows, data_rows = [], []
    load_before = os.getloadavg()
    probs = list(problems(args, rng))
    estimate = cm.Estimate(len(probs))
    for label, kind, ins, sizes, want, flops, nbytes in probs:
        estimate.next(label)
        variants: list[cm.Variant] = []
        inner = 0
        for t in (1, T):
            tag = "1t" if t == 1 else "Tt"
            out = cm.aligned_empty(np.shape(want), np.float32)
            k = ours[f"{kind} {tag}"]
            run = k.bind(ins, sizes, out)
            run()
            check(out, want, f"ours {t}t on {label}", sizes["m"])
            inner = inner or calls_per_sample(run)     # the same count for every variant
            variants.append(cm.steady(("ours", f"{t}t"), repeated(run, inner), threads=t,
                                      spins_for=0.005 if t > 1 else 0.0))
            peer_out = cm.aligned_empty(np.shape(want), np.float32)
            prun = (blas.bind_dot(ins["x"], ins["y"], peer_out) if kind == "dot"
                    else blas.bind_gemv(ins["A"], ins["x"], peer_out))
            blas.threads(t)()
            prun()
            check(peer_out, want, f"OpenBLAS {t}t on {label}", sizes["m"])
            variants.append(cm.steady(("openblas", f"{t}t"), repeated(prun, inner),
                                      blas.threads(t), threads=t,
                                      spins_for=SPIN if t > 1 else 0.0))
        cm.wait_for_quiet(args.quiet_wait)
        other = cm.OtherLoad()
        cm.time_round_robin(variants, args.repeat)
        for v in variants:        # per call
            v.times_ms = [x / inner for x in v.times_ms]
        med = {f"{who} {lbl}": v.median() for v in variants for who, lbl in [v.key]}
        samples = {f"{who} {lbl}": v.times_ms for v in variants for who, lbl in [v.key]}
        row = [label]
        for t in (1, T):
            o, p = med[f"ours {t}t"], med[f"openblas {t}t"]
            row += [cm.fmt(p, 4), cm.fmt(o, 4), f"{flops / o / 1e6:.1f}",
                    f"{nbytes / o / 1e6:.1f}", cm.fmt(p / o)]
        row.append(f"{other.cores():.1f}")
        row.insert(1, str(inner))
        rows.append(row)
        data_rows.append({"name": label, "median_ms": med, "samples_ms": samples,
                          "calls_per_sample": inner, "flops": flops, "bytes": nbytes})
    headers = ["problem", "calls / sample"]
    for t in (1, T):
        headers += [f"OpenBLAS {t}t ms", f"ours {t}t ms", "GF/s", "GB/s", "speed"]
    headers.append("others")
    rev = cm.source_revision()
    md = "\n".join([
        f"# rfactor idioms: dot product and matvec, float32 ({started:%Y-%m-%d %H:%M} UTC)",
        "",
        f"- code: commit {rev}; machine: {cm.cpu_model()}, {os.cpu_count()} CPU(s); ISA {isa}",
        f"- OpenBLAS {blas.version} ({blas.arch} kernels; OPENBLAS_CORETYPE="
        f"{os.environ.get('OPENBLAS_CORETYPE', 'unset')}), cblas sdot / sgemv called "
        "directly; threads set with threadpoolctl",
        f"- ours: derived with directives only (benchmarks/bench_reduce.py `derive`): the "
        "sum split by two vectors (the guard tail: the last chunk masked), `rfactor` of "
        f"its lanes, `vectorize` of the lanes and of their final sum ({args.final_sum}: "
        f"{'horizontal adds' if args.final_sum == 'vector' else 'a scalar loop'}); "
        f"{T} threads: the "
        f"dot product's chunks of {CHUNK} `rfactor`ed and `parallel`, the matvec's rows "
        f"`parallel`; targets {isa} and {isa}-openmp ({cm.omp_env()})",
        f"- median of {args.repeat} interleaved runs of bound C calls, ms per call; a run "
        "is `calls / sample` calls back to back (about 1 ms; the same count for every "
        "variant of a problem); speed = OpenBLAS time / ours (> 1: ours faster); GB/s: "
        "bytes of the inputs read once; others: cores other processes kept busy while "
        "the problem was timed (after waiting up to --quiet-wait s for idle CPUs)",
        *[f"- {x}" for x in cm.load_lines(load_before)],
        "",
        cm.md_table(headers, rows),
        "",
    ])
    data = {"commit": rev, "cpu": cm.cpu_model(), "isa": isa, "threads": T,
            "final_sum": args.final_sum,
            "repeat": args.repeat, "openblas": f"{blas.version} {blas.arch}",
            "rows": data_rows}
    out_dir = Path(args.out_dir)
    fig = _plots.reduce(data)
    written = cm.write_outputs(out_dir, "reduce", md, fig)
    cm.atomic_write(out_dir / "reduce.json", json.dumps(data, indent=1))
    print(cm.text_table(headers, rows))
    for p in written:
        print(f"wrote {p}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
