"""`verisched bench sgemm`: C += A·B, float32, row-major, against OpenBLAS.

Problems (the Exo thesis's SGEMM evaluation, Sec. 7.2, Fig. 7-2):
  square     M = N = K in 256, 512, 768, 1024, 1536, 2048 (Fig. 7-2a);
  aspect     K = 512 and M·N = 512², M/N from 1/64 to 64 (Fig. 7-2b).

Contenders, all timed round-robin in the same run (interleaved: every
variant sees the same machine load), 1 and 2 threads:
  openblas   numpy's own OpenBLAS (the library `np.matmul` calls), through its
             `cblas_sgemm` with beta = 1, i.e. exactly C += A·B in place; the
             thread count is set with threadpoolctl before each timed call.
  ours       the kernel derived in coq/Examples/Sgemm.v, replayed through the
             bridge, lowered for the `native` targets (the derivation's ISA,
             sgemm_avx512 where the CPU has avx512f, else sgemm_avx2: --isa
             auto), serial and with OpenMP (2 threads), compiled once
             (size-generic) and cached; per problem and thread count, the
             fastest of its pack-once, strip-packing and A-in-place
             derivations in an untimed trial (--no-plan: the use_direct and
             use_strip rules).  It
             writes a separate output (out = C + A·B when the derivation takes C,
             else out = A·B): the same reads of A and B, one read of C fewer at
             most; the report says which.
Only the multiply is timed: every array is allocated, filled and checked
before timing.  Times are medians over --repeat runs; GFLOP/s = 2·M·N·K / t.
Speed ratio convention: OpenBLAS time / our time at the same thread count
(> 1: ours faster).  The fraction of peak divides by the FMA peak measured
in the same run with a probe (12 independent FMA chains of the kernels' own
vector width: __m512 for the AVX-512 kernels, __m256 for AVX2), not by a
nominal clock.  Benchmarks are measurements, never tests: no thresholds.
Writes sgemm.md, sgemm.json and sgemm.png into --out-dir atomically.
"""

from __future__ import annotations

import argparse
import ctypes
import datetime
import json
import math
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from verisched.pipeline.execute import available_memory
from verisched.targets.auto import best_vector_isa
from verisched.targets.blocking import (
    ROW_BLOCKS_MAX_WIDTH,
    cache_sizes,
    gemm_blocks,
    kc_max,
    mc_max,
)
from verisched.targets.cpu import cpu_flags
from verisched.targets.registry import get_target

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as cm  # noqa: E402
import _peak as pk  # noqa: E402
import _plots  # noqa: E402
import _sgemm_report  # noqa: E402

SQUARE = (256, 512, 768, 1024, 1536, 2048)
ASPECT_LOG2 = (-6, -4, -2, 0, 2, 4, 6)  # M/N = 2^x
ASPECT_K = 512
# Block sizes of Sgemm.v's derivation, which keeps them symbolic: row blocks of
# mc = 6·mcr rows and depth blocks of kc.  By default both stay kernel arguments and
# are chosen per call (block_sizes); --fix NAME=INT compiles one in instead.
DEFAULT_FIX: dict[str, int] = {}
# The block sizes come from this machine's caches (targets/blocking.py: BLIS's analytical
# model): kc so that a kc x nr packed B micro-panel stays in L1 across the micro-kernel
# calls of a strip, mc = 6 mcr so that the mc x kc packed A block stays in L2.  nr is the
# register tile's width in the derivation that runs: Sgemm.v's tiles are 2 vectors wide
# for AVX2 (6 x 16) and 4 for AVX-512 (6 x 64), the lanes are the ISA's own
# (targets/avx2.py, avx512.py); choose_isa sets both.
TILE_VECTORS = {"avx2": 2, "avx512": 4}
nr, lanes = 16, 8
# Each timed call follows one untimed call of the same variant (decisions #29): a
# multi-threaded call that follows the wait for the other pool's spinning workers
# otherwise starts with sleeping workers and, on this VM, descheduled vCPUs (measured at
# 768: OpenBLAS 2t 7.0 ms cold vs 5.0 ms warm, ours 5.6 vs 5.3).
# And the untimed calls go on for at least --warm-ms (#109): on the Xeon VM, after the
# 0.12 s wait for OpenBLAS's workers both of our cores have idled, and one call was not
# enough to bring them back to full speed (a 2-thread 512^3 call after a 0.12 s idle gap:
# 0.97 ms back to back, 1.12-1.80 ms after one untimed call, 0.96-0.99 ms after 10 ms of
# them).  Only our 2-thread variant waits that long, so one call charged the wake-up to
# ours alone (2 threads, aspect 64: 0.73-0.75x OpenBLAS; with 10 ms, 1.07-1.10x).
# Hence cm.WARM and cm.WARM_MS, which bench conv and bench blur use too.


# Shown by `verisched bench --help` (read without importing this module).
PEERS = "OpenBLAS through numpy (threadpoolctl for threads)"
DURATION = ("about 1.5 min on the 2-core development machine (76 s measured: 14 problems, "
            "1 and 2 threads)")


def block_sizes(M: int, K: int, threads: int, N: int | None = None) -> dict[str, int]:
    """Run-time block sizes, as BLIS picks its partitioning per call: from this
    machine's caches and the register tile's width (targets/blocking.gemm_blocks,
    which says why).  Where all of M fits L2's block: a row block per thread, unless
    the problem is much wider than tall (N > 3 M), where the OpenMP kernel shares the
    column strips of one row block among the threads instead (openmp.py rule 6:
    64x4096x512 on 2 threads measured 0.95x OpenBLAS against 0.80x with two row
    blocks; #109 for the other shapes)."""
    return gemm_blocks(M, K, threads, nr=nr, N=N)


@dataclass
class Problem:
    group: str
    label: str
    M: int
    N: int
    K: int

    @property
    def flops(self) -> float:
        return 2.0 * self.M * self.N * self.K


# An L2-sized problem whose sizes are multiples of the 6x16 register block: A, B, C,
# the output and the packed copies take about 400 KiB (L2 is 512 KiB per core here), so
# it times the micro-kernel and the per-call work without DRAM traffic, which is what
# "where we lose" needs to tell apart.
IN_CACHE = (48, 128, 256)


ASPECT_LIMIT = 18   # M·N = 2^18: beyond it M or N would be below 1


def aspect_arg(text: str) -> int:
    """An argparse type: log2 of M/N, an integer within ±ASPECT_LIMIT."""
    try:
        x = int(text)
    except ValueError:
        x = None
    if x is None or abs(x) > ASPECT_LIMIT:
        raise argparse.ArgumentTypeError(f"{text!r}: expected an integer from -{ASPECT_LIMIT} "
                                         f"to {ASPECT_LIMIT} (M·N = 512², so M/N is at most "
                                         f"2^{ASPECT_LIMIT})")
    return x


def problems(square: list[int], aspect: list[int], k: int, in_cache: bool = True
             ) -> list[Problem]:
    out = [Problem("in-cache", "x".join(map(str, IN_CACHE)), *IN_CACHE)] if in_cache else []
    out += [Problem("square", str(n), n, n, n) for n in square]
    for x in aspect:
        # M/N = 2^x with M·N = 512^2: M = 512·2^(x/2).
        m = round(512 * 2 ** (x / 2))
        n = 512 * 512 // m
        ratio = f"{2 ** x:g}" if x >= 0 else f"1/{2 ** -x:g}"
        out.append(Problem("aspect", ratio, m, n, k))
    return out


def problem_bytes(p: Problem) -> int:
    """About the memory one problem takes at its peak (run_problem): A, B and C in
    float32 and their aligned copies, A and B in float64 and their float64 product
    (the check), the outputs of both sides."""
    return 12 * (p.M * p.K + p.K * p.N) + 28 * p.M * p.N


def memory_refusal(todo: list[Problem]) -> str | None:
    """Why the largest problem cannot run here (it would swap or be killed after the
    smaller ones had been timed), or None."""
    have = available_memory()
    if have is None or not todo:
        return None
    big = max(todo, key=problem_bytes)
    need = problem_bytes(big)
    if need <= have:
        return None
    return (f"{big.group} {big.label} ({big.M}x{big.N}x{big.K}) needs about "
            f"{need / 2**30:.1f} GiB and this machine has {have / 2**30:.1f} GiB available: "
            "choose smaller --square or --aspect values")


# ---------------------------------------------------------------------------
# OpenBLAS through numpy


class OpenBLAS:
    """numpy's OpenBLAS: cblas_sgemm and a thread-count control (threadpoolctl)."""

    def __init__(self) -> None:
        self.lc = cm.numpy_openblas("sgemm")
        self.version = self.lc.version
        self.arch = getattr(self.lc, "architecture", "?")
        fn = None
        for sym in ("scipy_cblas_sgemm64_", "cblas_sgemm64_", "cblas_sgemm"):
            fn = getattr(self.lc.dynlib, sym, None)
            if fn is not None:
                self.symbol = sym
                break
        if fn is None:
            raise SystemExit(f"bench sgemm: no cblas_sgemm in {self.lc.filepath}")
        # The 64-bit-integer interface (numpy's build) takes int64 dimensions.
        it = ctypes.c_int64 if "64" in self.symbol else ctypes.c_int
        fp = ctypes.POINTER(ctypes.c_float)
        fn.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int, it, it, it, ctypes.c_float,
                       fp, it, fp, it, ctypes.c_float, fp, it]
        fn.restype = None
        self.fn = fn

        # A call just large enough to run on OpenBLAS's threads (its sgemm stays on
        # one thread up to M·N·K = 2^18), made in threads() to start them.
        self._wake = self.bind(*(cm.aligned(np.zeros((128, 128), np.float32))
                                 for _ in range(3)))

    def threads(self, n: int):
        """Set the thread count before a call (cm.openblas_threads)."""
        return cm.openblas_threads(self.lc, n, self._wake)

    def bind(self, A: np.ndarray, B: np.ndarray, C: np.ndarray):
        """C += A·B (row-major, no transposes, alpha = beta = 1)."""
        m, k = A.shape
        n = B.shape[1]
        fp = ctypes.POINTER(ctypes.c_float)
        args = (101, 111, 111, m, n, k, 1.0, A.ctypes.data_as(fp), k, B.ctypes.data_as(fp), n,
                1.0, C.ctypes.data_as(fp), n)
        fn = self.fn

        def run(keep=(A, B, C)) -> None:
            fn(*args)
        return run


# ---------------------------------------------------------------------------
# Ours


def bind_ours(kernel, A: np.ndarray, B: np.ndarray, C: np.ndarray, out: np.ndarray,
              threads: int = 1):
    """Map the kernel's inputs and sizes by name (A, B, optional C; M, N, K, and the
    block sizes left to run time, from block_sizes)."""
    arrays = {"A": A, "B": B, "C": C}
    inputs = {a: arrays[a] for a, _, _ in kernel.lowered.inputs}
    M, K = A.shape
    dims = {"M": M, "N": B.shape[1], "K": K, **block_sizes(M, K, threads, B.shape[1])}
    sizes = {a: dims[a if a in RUNTIME_BLOCKS else a.upper()] for a, _ in kernel.lowered.sizes}
    return kernel.bind(inputs, sizes, out)


RUNTIME_BLOCKS = ("kc", "mcr")
# Sgemm.v's other derivations of each ISA's kernel, beside the pack-once one
# (--derivation): per problem and thread count the untimed trial (`cm.fastest`) or, with
# --no-plan, `rule_choice` picks which one runs.  A kernel's label in `Ours.kernels` is
# its thread label ("1t", "2t") plus the suffix.
STRIP, DIRECT = "/strip", "/direct"
VARIANTS = {STRIP: "strip-packing", DIRECT: "A-in-place"}
VARIANT_DERIVATIONS = {STRIP: {"avx2": "sgemm_avx2_strip", "avx512": "sgemm_avx512_strip"},
                       DIRECT: {"avx2": "sgemm_avx2_direct", "avx512": "sgemm_avx512_direct"}}
# The most column strips (of the register tile's width) for which --no-plan reads A in
# place: measured on the Xeon, 1 thread, AVX-512, the lowered kernels alternated in one
# process (decision #124): 1.42x the pack-once kernel at N = 64 (4096x64x512), 1.21x at
# 128, 1.11x at 256, 1.23x at 512 (512^3); 1.02x at 1024 (256x1024x512), 0.98x at 1024^3.
DIRECT_MAX_STRIPS = 8


def use_strip(M: int, N: int, K: int, threads: int) -> bool:
    """Whether to call the strip-packing derivation (Sgemm.v: sgemm_<isa>_strip) rather
    than the one that packs all of B once.  Strip packing repacks B for every row block
    but packs each strip right before the micro-kernels read it from L1; packing once
    costs a round trip of B through L3 or memory and a parallel region of its own.
    Strip wins with few row blocks per thread and on small problems (measured, 2
    threads, K = 512 aspect sweep: 0.87-0.93x OpenBLAS against 0.72-0.84x), packing
    once on large ones with many row blocks (1024³, 2 threads: 0.94x against 0.89x)."""
    blocks = -(-M // (6 * block_sizes(M, K, threads, N)["mcr"]))
    return blocks <= threads or 2 * M * N * K < 1e9


def use_direct(N: int) -> bool:
    """Whether to call the A-in-place derivation (Sgemm.v: sgemm_<isa>_direct).  A
    packed element of A is read once per column strip, so with few strips the pack is a
    pass over A from memory that overlaps no arithmetic, while the micro-kernel reading
    A's six rows in place streams them as it computes; with many strips the packed,
    contiguous block read from L2 wins (decision #124)."""
    return -(-N // nr) <= DIRECT_MAX_STRIPS


def rule_choice(p: Problem, threads: int, kernel, alts: dict):
    """--no-plan's pick among the pack-once `kernel` and its variants `alts` (suffix ->
    kernel): A in place where `use_direct` says so, else the strip kernel where
    `use_strip` does, else packing once."""
    if DIRECT in alts and use_direct(p.N):
        return alts[DIRECT]
    if STRIP in alts and use_strip(p.M, p.N, p.K, threads):
        return alts[STRIP]
    return kernel


def ours_shape_ok(kernel) -> str | None:
    names = {a for a, _, _ in kernel.lowered.inputs}
    if not names <= {"A", "B", "C"} or not {"A", "B"} <= names:
        return f"kernel inputs {sorted(names)}: expected A, B and optionally C"
    bad = [a for a, _ in kernel.lowered.sizes
           if a not in RUNTIME_BLOCKS and a.upper() not in "MNK"]
    if bad:
        return f"kernel size parameters {bad} besides M, N, K, kc, mcr (fix them with --fix)"
    return None


# ---------------------------------------------------------------------------


def check(got: np.ndarray, want: np.ndarray, k: int, what: str) -> None:
    """float32 dot products of length K: error grows like sqrt(K)·eps·|terms|."""
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=2e-6 * math.sqrt(k) * k,
                               err_msg=f"bench sgemm: {what} gives a wrong result")


def bind_checked(kernel, A: np.ndarray, B: np.ndarray, C: np.ndarray, prod: np.ndarray,
                 threads: int, label: str):
    """`kernel` bound to A, B and its own output, checked once against C + A·B."""
    if threads > 1:
        kernel.set_threads(threads)
    takes_c = any(a == "C" for a, _, _ in kernel.lowered.inputs)
    if takes_c and "C" in kernel.lowered.inplace:
        # In place, as OpenBLAS with beta = 1: the output is C's own buffer, which
        # bind's validating call has already updated once.
        out = cm.aligned(C)
        run = bind_ours(kernel, A, B, out, out, threads)
    else:
        out = cm.aligned_empty(C.shape, np.float32)
        run = bind_ours(kernel, A, B, C, out, threads)
    check(out, (C + prod) if takes_c else prod, A.shape[1], f"ours {label} ({kernel.name})")
    return run


def run_problem(p: Problem, blas: OpenBLAS, ours: cm.Ours, threads: int, repeat: int,
                spin: float, quiet_wait: float, rng, passive: bool = False,
                warm_ms: float = cm.WARM_MS, plan: bool = True) -> dict:
    """Median ms per variant (plus best times and the other processes' load).

    Where ours has several kernels for a thread count (pack-once, strip, A in place),
    `plan` times them first (untimed, `cm.fastest`) and keeps the fastest; without it,
    `rule_choice` decides.  Ours is bound and planned before OpenBLAS runs here, and after its
    workers from the previous problem have stopped spinning, so the trial does not
    compete with them."""
    # Both sides get the same 64-byte-aligned arrays (cm.aligned says why).
    A = cm.aligned(rng.standard_normal((p.M, p.K)).astype(np.float32))
    B = cm.aligned(rng.standard_normal((p.K, p.N)).astype(np.float32))
    C = cm.aligned(rng.standard_normal((p.M, p.N)).astype(np.float32))
    # numpy's float64 product runs on OpenBLAS's pool, which restarts its workers here
    # after a fork (a replay's coqtop, a compile, perf): outside cm.unbound they would
    # inherit the main thread's one core, and OpenBLAS's 2-thread calls ran no faster
    # than its 1-thread ones for the rest of the run (found after an uncached replay).
    with cm.unbound():
        prod = A.astype(np.float64) @ B.astype(np.float64)
    if plan and threads > 1:
        time.sleep(spin)
    chosen: dict[str, str] = {}
    mine: list[cm.Variant] = []
    for label, kernel in ours.kernels.items():
        if label.endswith(tuple(VARIANTS)):
            continue
        t = 1 if label == "1t" else threads
        alts = {s: ours.kernels[label + s] for s in VARIANTS if label + s in ours.kernels}
        kernels = [kernel, *alts.values()] if plan else [rule_choice(p, t, kernel, alts)]
        runs = {k.name: bind_checked(k, A, B, C, prod, t, label) for k in kernels}
        name = cm.fastest(runs, warm_ms) if len(runs) > 1 else next(iter(runs))
        chosen[label] = name
        # libgomp's default policy spins a little (well under 5 ms) after a region.
        mine.append(cm.steady(("ours", label), runs[name], threads=t,
                              spins_for=0.005 if t > 1 and not passive else 0.0,
                              warm_ms=warm_ms))
    variants: list[cm.Variant] = []
    for t in (1, threads):
        c0 = cm.aligned(C)
        run = blas.bind(A, B, c0)
        blas.threads(t)()
        run()
        check(c0, C + prod, p.K, f"OpenBLAS {t}t")
        variants.append(cm.steady(("openblas", f"{t}t"), run, blas.threads(t), threads=t,
                                  spins_for=spin if t > 1 else 0.0, warm_ms=warm_ms))
        if t == threads and threads == 1:
            break
    variants += mine
    # The in-cache problem needs more samples for a stable median (a call is ~0.2 ms).
    cm.wait_for_quiet(quiet_wait)
    other = cm.OtherLoad()
    cm.time_round_robin(variants, repeat * (5 if p.flops < 2e7 else 1))
    med = {f"{v.key[0]}-{v.key[1]}": v.median() for v in variants}
    med["best"] = {f"{v.key[0]}-{v.key[1]}": min(v.times_ms) for v in variants}
    med["samples"] = {f"{v.key[0]}-{v.key[1]}": list(v.times_ms) for v in variants}
    med["other_cores"] = other.cores()
    med["steal_cores"] = other.steal()
    med["kernels"] = chosen
    return med


def variant_derivations(args: argparse.Namespace) -> dict[str, str]:
    """Suffix -> the derivation named for that variant ('' for none), after choose_isa."""
    return {STRIP: args.strip_derivation, DIRECT: args.direct_derivation}


def choose_isa(args: argparse.Namespace) -> None:
    """Fill the derivation and target defaults from --isa.  `auto` takes AVX-512 where
    the CPU has it: there OpenBLAS runs its AVX-512 kernels, and our AVX2 kernels ran
    at about half their speed (issue 16), so an AVX2 default would compare a user's
    best choice with a handicapped one.  The targets default to `native`, which builds
    a derivation in one ISA's instruction form with that ISA (targets/auto.py)."""
    isa = args.isa
    if isa == "auto":
        isa = best_vector_isa()
    args.isa = isa
    global nr, lanes
    lanes = get_target(isa).isa.lanes
    nr = TILE_VECTORS.get(isa, 2) * lanes
    if args.derivation is None:
        args.derivation = f"sgemm_{isa}"
    if args.strip_derivation is None:
        args.strip_derivation = VARIANT_DERIVATIONS[STRIP].get(isa, "")
    if args.direct_derivation is None:
        args.direct_derivation = VARIANT_DERIVATIONS[DIRECT].get(isa, "")
    args.target = args.target or "native"
    args.par_target = args.par_target or "native-openmp"
    print(f"our kernels: {args.derivation} on {args.target} / {args.par_target} "
          f"(--isa {isa}{'; the CPU has avx512f' if 'avx512f' in cpu_flags() else ''})",
          flush=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="verisched bench sgemm",
                                 description=__doc__.splitlines()[0],
                                 epilog="See the module docstring for what is timed.")
    ap.add_argument("--square", type=cm.positive_int, nargs="*", default=list(SQUARE),
                    help=f"M = N = K of the square sweep (default: {' '.join(map(str, SQUARE))})")
    ap.add_argument("--aspect", type=aspect_arg, nargs="*", default=list(ASPECT_LOG2),
                    help="log2 of M/N for the K=512, M·N=512² sweep, -18 to 18 (default: "
                         f"{' '.join(map(str, ASPECT_LOG2))})")
    ap.add_argument("--repeat", type=cm.positive_int, default=10,
                    help="interleaved timed rounds per problem (default 10)")
    ap.add_argument("--warm-ms", type=cm.nonnegative_float, default=cm.WARM_MS,
                    help="before each timed call (both sides), untimed calls of the same "
                         f"variant for at least this many ms (default {cm.WARM_MS:g}; at least "
                         f"{cm.WARM} call): cores that idled through a wait run at full speed "
                         "again")
    ap.add_argument("--threads", type=cm.parallel_threads, default=2,
                    help="the multi-threaded count (at least 2; default 2)")
    ap.add_argument("--spin", type=cm.nonnegative_float, default=0.12,
                    help="seconds OpenBLAS's idle workers busy-wait after a call (2^28 "
                         "cycles by default): a multi-threaded variant of ours waits that "
                         "long (untimed) after an OpenBLAS call, or shares a core with them")
    ap.add_argument("--ours-file", type=cm.existing_file,
                    default=str(cm.REPO_ROOT / "coq" / "Examples" / "Sgemm.v"),
                    help="the .v file of our derivations (default coq/Examples/Sgemm.v)")
    ap.add_argument("--isa", choices=("auto", "avx2", "avx512"), default="auto",
                    help="our kernels' instruction set: auto = AVX-512 where the CPU has "
                         "avx512f (OpenBLAS uses it there too), else AVX2")
    ap.add_argument("--derivation", default=None,
                    help="the derivation to lower (default: sgemm_avx512 or sgemm_avx2, "
                         "by --isa)")
    ap.add_argument("--strip-derivation", default=None,
                    help="a second derivation: per problem and thread count, the fastest "
                         "in an untimed trial runs (with --no-plan, this one where "
                         "use_strip says so) ('' for none; default: the ISA's strip "
                         "variant, sgemm_avx2_strip or sgemm_avx512_strip)")
    ap.add_argument("--direct-derivation", default=None,
                    help="a third one, likewise (with --no-plan, where use_direct says so; "
                         "'' for none; default: the ISA's A-in-place variant, "
                         "sgemm_avx2_direct or sgemm_avx512_direct)")
    ap.add_argument("--no-plan", action="store_true",
                    help="choose among the derivations by the use_direct and use_strip "
                         "rules instead of timing them first")
    ap.add_argument("--target", choices=cm.TARGETS, metavar="TARGET", default=None,
                    help="our serial target (default: native, which builds the "
                         "derivation with its ISA)")
    ap.add_argument("--par-target", choices=cm.TARGETS, metavar="TARGET", default=None,
                    help="our OpenMP target (default: the ISA's -openmp)")
    ap.add_argument("--fix", action="append", default=[],
                    help=f"block size NAME=INT, repeatable or comma-separated (defaults "
                         f"{DEFAULT_FIX})")
    ap.add_argument("--fast-math", action="store_true", help="compile ours with -ffast-math")
    ap.add_argument("--passive", action="store_true",
                    help="OMP_WAIT_POLICY=passive for our OpenMP kernel (better on a loaded "
                         "machine, slower per parallel region)")
    ap.add_argument("--quiet-wait", type=cm.nonnegative_float, default=10.0,
                    help="before each problem, wait up to this many seconds for other "
                         "processes to leave the CPUs idle")
    ap.add_argument("--no-ours", action="store_true", help="peers only")
    ap.add_argument("--no-profile", action="store_true",
                    help="skip the perf profile of our kernel (needs `perf`)")
    ap.add_argument("--no-in-cache", action="store_true",
                    help=f"skip the L2-resident {'x'.join(map(str, IN_CACHE))} diagnostic problem")
    ap.add_argument("--out-dir", type=cm.out_dir_arg, default=str(cm.RESULTS_DIR))
    args = ap.parse_args(argv)
    todo = problems(args.square, args.aspect, ASPECT_K, not args.no_in_cache)
    if not todo:
        ap.error("nothing to measure: --square and --aspect are empty and --no-in-cache "
                 "drops the in-cache problem")
    too_big = memory_refusal(todo)
    if too_big:
        print(f"verisched bench sgemm: {too_big}", file=sys.stderr)
        return 2
    choose_isa(args)
    if args.passive:
        os.environ["OMP_WAIT_POLICY"] = "passive"
    # Our idle workers spin for 30000 rounds before they sleep (about 0.4 ms on the
    # Xeon), not libgomp's default 300000 (3.8 ms there), well within the 5 ms the next
    # multi-threaded call of another pool waits (spins_for).  It did not end the
    # disturbed runs on the Xeon (OpenBLAS's 2-thread calls at multiples of the 4 ms
    # tick, our 1-thread calls 3x slow): fewer with it, not none; their cause is not
    # known, and the stalled-peer warning still flags them (decision #116).
    os.environ.setdefault("GOMP_SPINCOUNT", "30000")
    # Otherwise libgomp's default (spin briefly, then sleep), as OpenBLAS's workers also
    # spin: a passive policy puts a futex wake-up at each of the kernel's two parallel
    # regions and barriers (measured at n = 512: 3.1 ms passive vs 2.3 ms active, best of
    # 15), a cost OpenBLAS does not pay.
    # Our OpenMP threads bound to cores (unless the caller says otherwise; read when
    # libgomp loads, with our first kernel): unbound, once OpenBLAS's pool had run in the
    # process our 2-thread kernels often took twice their time, as if sharing one core
    # (512^3: pack-once 5.36 ms median, best 1.36; bound: 1.48 ms; decisions #81).
    cm.bind_omp_threads()
    started = datetime.datetime.now(datetime.timezone.utc)
    blas = OpenBLAS()
    fixed = {**DEFAULT_FIX, **cm.fix_args(args.fix)}
    if args.no_ours:
        ours = cm.Ours("(not run)", missing="not run (--no-ours)")
    else:
        print(f"replaying and lowering {args.ours_file} ...", flush=True)
        ours = cm.load_ours(Path(args.ours_file), args.derivation, fixed,
                            [("1t", args.target), (f"{args.threads}t", args.par_target)],
                            {"M", "N", "K", "m", "n", "k"}, fast_math=args.fast_math,
                            runtime=set(RUNTIME_BLOCKS))
        added = []
        for suffix, name in variant_derivations(args).items():
            if not name or ours.missing or args.fix:
                continue
            print(f"replaying and lowering {name} ...", flush=True)
            alt = cm.load_ours(Path(args.ours_file), name, fixed,
                               [("1t", args.target), (f"{args.threads}t", args.par_target)],
                               {"M", "N", "K"}, fast_math=args.fast_math,
                               runtime=set(RUNTIME_BLOCKS))
            if alt.missing:
                ours.notes.append(f"no {VARIANTS[suffix]} variant: {alt.missing}")
            else:
                ours.kernels.update({k + suffix: v for k, v in alt.kernels.items()})
                added.append(name)
        if added:
            ours.origin += (f" (+ {', '.join(added)} where "
                            + ("use_direct or use_strip says)" if args.no_plan else "faster)"))
        for k in ours.kernels.values():
            why = ours_shape_ok(k)
            if why:
                ours = cm.Ours(ours.origin, missing=f"{ours.origin}: {why}")
                break
    if ours.missing:
        print(f"NO DERIVED KERNEL: {ours.missing}")
    print("measuring the FMA peak ...", flush=True)
    peak = {1: pk.fma_peak_gflops(1, isa=args.isa),
            args.threads: pk.fma_peak_gflops(args.threads, isa=args.isa)}
    load_before = os.getloadavg()
    rng = np.random.default_rng(0)
    results = []
    estimate = cm.Estimate(len(todo))
    for p in todo:
        estimate.next(f"{p.group} {p.label} ({p.M}x{p.N}x{p.K})")
        t0 = time.perf_counter()
        med = run_problem(p, blas, ours, args.threads, args.repeat, args.spin,
                          args.quiet_wait, rng, args.passive, args.warm_ms,
                          plan=not args.no_plan)
        results.append((p, med))
        print(f"  {p.group} {p.label} ({p.M}x{p.N}x{p.K}): "
              + ", ".join(f"{k} {v:.3f} ms" for k, v in med.items() if "-" in k)
              + f"; others used {med['other_cores']:.1f} core(s)"
              + (f", the host's steal {med['steal_cores']:.2f}"
                 if med["steal_cores"] >= cm.STEAL_NOTE_CORES else "")
              + f"  [{time.perf_counter() - t0:.1f} s]", flush=True)
    profile = {}
    if not ours.missing and not args.no_profile:
        # Where our serial kernel's time goes, at the in-cache and the largest square size.
        for p, _ in results:
            if p.group == "in-cache" or (p.group == "square" and p.M == max(args.square)):
                A = rng.standard_normal((p.M, p.K)).astype(np.float32)
                B = rng.standard_normal((p.K, p.N)).astype(np.float32)
                C = rng.standard_normal((p.M, p.N)).astype(np.float32)
                out = np.empty((p.M, p.N), dtype=np.float32)
                k = ours.kernels["1t"]
                split = pk.perf_split(bind_ours(k, A, B, C, out), k.name)
                if split:
                    profile[p.label] = split
    peak_after = {t: pk.fma_peak_gflops(t, isa=args.isa) for t in peak}
    peak = {t: max(peak[t], peak_after[t]) for t in peak}
    tile = None
    if profile:
        # The ceiling of the micro-kernel's own loop: its 6 x nr register tile alone,
        # operands in L1 (benchmarks/_common.py, tile_probe_gflops).
        nv = TILE_VECTORS.get(args.isa, 2)
        tile = {"rows": 6, "width": nv * get_target(args.isa).isa.lanes,
                "gflops": pk.tile_probe_gflops(args.isa, 6, nv)}
    report(results, peak, blas, ours, args, started, load_before, profile, tile)
    return 0


def report(results, peak, blas: OpenBLAS, ours: cm.Ours, args, started, load_before,
           profile: dict, tile: dict | None = None) -> None:
    T = args.threads
    thread_counts = [1] if T == 1 else [1, T]
    headers = ["problem", "M x N x K"]
    for t in thread_counts:
        headers += [f"OpenBLAS {t}t ms", "GF/s"]
        if not ours.missing:
            headers += [f"ours {t}t ms", "GF/s", "speed", "90% interval", "speed (best)",
                        "% peak"]
        else:
            headers += ["% peak"]
    headers.append("others")
    rows = []
    data = []
    for p, med in results:
        row = [f"{p.group} {p.label}", f"{p.M}x{p.N}x{p.K}"]
        rec = {"group": p.group, "label": p.label, "M": p.M, "N": p.N, "K": p.K,
               "median_ms": {k: v for k, v in med.items() if k != "samples"},
               "samples_ms": med.get("samples", {}), "speed_interval_90": {}}
        for t in thread_counts:
            b = med[f"openblas-{t}t"]
            gb = p.flops / b / 1e6
            row += [f"{b:.3f}", f"{gb:.1f}"]
            if not ours.missing:
                o = med[f"ours-{t}t"]
                go = p.flops / o / 1e6
                best = med["best"]
                iv = cm.ratio_interval(rec["samples_ms"].get(f"openblas-{t}t", []),
                                       rec["samples_ms"].get(f"ours-{t}t", []))
                rec["speed_interval_90"][f"{t}t"] = iv
                row += [f"{o:.3f}", f"{go:.1f}", f"{b / o:.2f}", cm.fmt_interval(iv),
                        f"{best[f'openblas-{t}t'] / best[f'ours-{t}t']:.2f}",
                        f"{100 * go / peak[t]:.0f} ({100 * gb / peak[t]:.0f})"]
            else:
                row += [f"{100 * gb / peak[t]:.0f}"]
        row.append(f"{med['other_cores']:.1f}")
        rows.append(row)
        data.append(rec)
    load = cm.load_lines(load_before)
    head = [
        f"# SGEMM C += A·B, float32, row-major ({started:%Y-%m-%d %H:%M} UTC)",
        "",
        f"- code: commit {cm.source_revision()}",
        f"- machine: {cm.cpu_model()}, {os.cpu_count()} CPU(s); "
        f"measured FMA peak ({pk.peak_label(args.isa)}): {peak[1]:.1f} GFLOP/s on 1 thread"
        + (f", {peak[T]:.1f} on {T}" if T > 1 else ""),
        f"- OpenBLAS {blas.version} ({blas.arch} kernels), numpy's own build, called as "
        f"`{blas.symbol}` with beta = 1 (C += A·B in place); threads set with threadpoolctl",
        f"- median of {args.repeat} interleaved runs per problem; only the multiply is timed "
        "(arrays preallocated, results checked against float64 numpy first); "
        f"a call of ours (1 thread or more) waits (untimed) until {args.spin:g} s after the last "
        "OpenBLAS call, whose idle workers busy-wait that long; every timed call (both "
        f"sides) follows untimed calls of the same variant ({cm.WARM} or more, for at least "
        f"{args.warm_ms:g} ms), so it starts with running worker threads, cores at full "
        "speed and warm caches (steady state, as in a loop of calls)",
        *[f"- {x}" for x in load],
        "- others = cores other processes kept busy while that problem was timed (each "
        f"problem first waited up to {args.quiet_wait:g} s for idle CPUs); with others > 0 the "
        "2-thread columns compete for cores",
    ]
    over = [f"{p.label} {t}t" for p, med in results for t in thread_counts
            if p.flops / med[f"openblas-{t}t"] / 1e6 > peak[t]]
    if over:
        head.append(f"- warning: OpenBLAS exceeds the measured peak on {', '.join(over)}: the "
                    "probe was slowed by other load, so the % peak figures are overstated")
    stalled = _sgemm_report.stalled_peer(results, T)
    if stalled:
        head.append(f"- warning: OpenBLAS on {T} threads took over 1.5x its 1-thread time on "
                    f"{', '.join(stalled)}: its threads were descheduled or shared cores "
                    "during this run, which disturbs every column; rerun on a quiet machine"
                    + _sgemm_report.stall_cause(results, stalled, cm.kernel_tick_ms(), T))
    unscaled = _sgemm_report.unscaled_peer(results, T)
    if unscaled:
        gains = ", ".join(f"{p.label}: {med['openblas-1t'] / med[f'openblas-{T}t']:.2f}x"
                          for p, med in results if p.label in unscaled)
        head.append(f"- warning: OpenBLAS on {T} threads was less than "
                    f"{cm.UNSCALED_SPEEDUP:g}x faster than on 1 on {', '.join(unscaled)} "
                    f"({gains}): " + cm.unscaled_why("OpenBLAS", T, " there"))
    stolen = [(p.label, med.get("steal_cores", 0.0)) for p, med in results
              if med.get("steal_cores", 0.0) >= cm.STEAL_NOTE_CORES]
    if stolen:
        head.append("- warning: " + (cm.steal_note(max(v for _, v in stolen)) or "")
                    + " (" + ", ".join(f"{lab}: {v:.2f}" for lab, v in stolen) + ")")
    if ours.missing:
        head += ["", f"**No derived SGEMM kernel in this run: {ours.missing}.** "
                 "Only the peers were measured; there is no `ours` column."]
    else:
        k = next(iter(ours.kernels.values()))
        takes_c = any(a == "C" for a, _, _ in k.lowered.inputs)
        head += [
            f"- ours: {ours.origin}, block sizes {ours.fixed or 'chosen per call'} "
            f"(unless fixed: from the caches, {cache_sizes().describe()}, for a 6 x {nr} "
            f"register tile: kc = ceil(K / ceil(K / {kc_max(nr)})), at most "
            f"{mc_max(kc_max(nr), nr)} rows per row block and a row-block count that is a "
            "multiple of the thread count; where all of M fits one block, a block per "
            f"thread unless N > {ROW_BLOCKS_MAX_WIDTH} M, where the threads share its "
            "column strips; targets/blocking.py); serial target "
            f"`{args.target}`, parallel target `{args.par_target}` ({T} threads, "
            f"{cm.omp_env()}); "
            + ("computes C += A·B in place (the output is C's buffer: codegen/inplace.py), "
               "as OpenBLAS does" if takes_c and "C" in k.lowered.inplace else
               "computes out = C + A·B into a separate array" if takes_c else
               "computes out = A·B into a separate array (no read of C: slightly less "
               "memory traffic than OpenBLAS's C += A·B)"),
            "- speed = OpenBLAS time / our time at the same thread count (> 1: ours faster), "
            f"from medians; {cm.INTERVAL_NOTE}; "
            "speed (best) from each side's fastest run, which a loaded machine disturbs least; "
            "% peak = our GFLOP/s over the measured peak (OpenBLAS's in parentheses); "
            "others = cores used by other processes while the problem was timed",
            *[f"- note: {n}" for n in ours.notes],
        ]
        if any(k.endswith(tuple(VARIANTS)) for k in ours.kernels):
            how = (f"use_direct: at most {DIRECT_MAX_STRIPS} column strips; else use_strip: "
                   "at most one row block per thread, or under 1 GFLOP"
                   if args.no_plan else "the fastest in an untimed trial before "
                   f"each problem: {cm.TRIAL_ROUNDS} rounds, interleaved, of "
                   f"{args.warm_ms:g} ms of warm-up and at least {cm.TRIAL_MIN_CALLS} "
                   "timed calls (and 5 ms) each")
            parts = []
            loaded = variant_derivations(args)
            for suffix, what in VARIANTS.items():
                if any(k.endswith(suffix) for k in ours.kernels):
                    used = [f"{p.label} {lab}" for p, med in results
                            for lab, name in med.get("kernels", {}).items()
                            if name.startswith(loaded[suffix] + "_")]
                    parts.append(f"the {what} kernel on: " + (", ".join(used) or "none"))
            head.append(f"- kernel per problem ({how}): " + "; ".join(parts)
                        + "; the pack-once kernel on the rest")
    md = "\n".join(head) + "\n\n" + cm.md_table(headers, rows) + "\n"
    md += "\n" + "\n".join(_sgemm_report.analysis(results, peak, ours, T, profile, tile, nr=nr,
                                                      lanes=lanes, block_sizes=block_sizes)) + "\n"
    print()
    print("\n".join(h.removeprefix("# ").removeprefix("- ") for h in head))
    print(cm.text_table(headers, rows))
    out_dir = Path(args.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    saved = {"started": started.isoformat(), "commit": cm.source_revision(),
             "peak_gflops": peak, "repeat": args.repeat, "warm_ms": args.warm_ms,
             "openblas": blas.version,
             "ours": ours.origin, "ours_missing": ours.missing, "fixed": ours.fixed,
             "perf_split": profile, "tile_probe": tile, "problems": data}
    cm.atomic_write(out_dir / "sgemm.json", json.dumps(saved, indent=2))
    fig = _plots.sgemm(json.loads(json.dumps(saved)))  # as a replot reads it
    for p in cm.write_outputs(out_dir, "sgemm", md, fig):
        print(f"wrote {p}")


if __name__ == "__main__":
    sys.exit(main())
