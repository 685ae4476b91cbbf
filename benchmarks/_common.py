"""Helpers shared by the peer benchmarks (bench_sgemm, bench_conv, bench_blur).

One concern each: interleaved timing, the machine's measured FMA peak,
load-average reporting, and atomic markdown/PNG output.  Benchmarks are
measurements, never tests: nothing here has a threshold.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import dataclasses
import io
import os
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from verisched import pipeline
from verisched.codegen.errors import CodegenError
from verisched.commands.common import (  # noqa: F401 - the benchmarks' argparse types
    Progress,
    existing_file,
    nonnegative_float,
    positive_float,
    positive_int,
    seed_int,
    split_commas,
)
from verisched.commands.common import directory_arg as out_dir_arg  # noqa: F401 - for --out-dir
from verisched.targets.cpu import cpu_model  # noqa: F401 - re-exported to the benchmarks
from verisched.targets.toolchain import atomic_write, compile_c

RESULTS_DIR = Path(__file__).resolve().parent / "results"
# What a benchmark's --target flags accept (argparse choices: a misspelt target stops
# the run when the arguments are read, not after the peers were timed).
TARGETS = tuple(pipeline.target_names())
REPO_ROOT = Path(__file__).resolve().parents[1]
# The warm-up bench sgemm, conv and blur give every timed call (Variant.warm, warm_ms):
# one untimed call, and more until 10 ms have passed.  On a VM a core that idled runs
# slowly for some milliseconds, so a call timed right after another variant's, or after
# a wait, is timed in the state that left (#109: a 2-thread 512^3 SGEMM after a 0.12 s
# gap, 1.12-1.80 ms after one untimed call, 0.96-0.99 ms after 10 ms; #116: Blur.v's
# tiled blur on 1 thread 2.6 ms right after Halide's parallel blur, 4.2-5.6 ms after a
# 5-20 ms pause, 2.2 ms warmed, and the blur's medians up to 1.7x the steady state).
WARM = 1
WARM_MS = 10.0


@dataclass
class Variant:
    """One timed contender, key = (pool, label): variants of one pool share a runtime
    (a library and its worker threads).  `run` is timed; `prepare` (untimed) runs
    before every timed call, e.g. to set the pool's thread count.  `threads` is how
    many cores a call wants; `spins_for` how long the pool's idle workers may keep
    spinning after a call (OpenBLAS's busy-wait: about 2^28 cycles)."""

    key: tuple[str, str]
    run: Callable[[], None]
    prepare: Callable[[], None] | None = None
    threads: int = 1
    spins_for: float = 0.0
    # Untimed calls right before each timed one (after any wait for other pools):
    # steady-state timing, as a caller's loop of calls sees it (decisions #29): at
    # least `warm` calls, and more until `warm_ms` milliseconds have passed (#109: on a
    # VM, cores that idled through a wait need a few milliseconds, not one short call,
    # to run at full speed again).
    warm: int = 0
    warm_ms: float = 0.0
    times_ms: list[float] = field(default_factory=list)

    def median(self) -> float:
        return statistics.median(self.times_ms)


class Estimate:
    """`[k/n] label (about S s left)` before each problem of a benchmark, on stderr
    (stdout carries the results): the estimate is the mean time of the problems done
    so far times those left, so a long run says how long it will take once it has
    started (issue 15)."""

    def __init__(self, total: int) -> None:
        self.total, self.done, self.t0 = total, 0, time.perf_counter()

    def next(self, label: str) -> None:
        left = self.total - self.done
        if self.done:
            per = (time.perf_counter() - self.t0) / self.done
            eta = f" (about {per * left:.0f} s left)"
        else:
            eta = ""
        self.done += 1
        print(f"[{self.done}/{self.total}] {label}{eta}", file=sys.stderr, flush=True)


ALIGN = 64


def aligned_empty(shape: tuple[int, ...], dtype, align: int = ALIGN):
    """An uninitialised C-contiguous array whose data starts on an `align`-byte
    boundary (as `np.empty`, which aligns to 16 bytes only).

    numpy's large arrays start 16 bytes into a page (malloc's header), so a 512-bit
    load from them spans two cache lines.  Both sides of a benchmark get the same
    aligned arrays (torch's own tensors are 64-byte aligned; OpenBLAS packs what it
    reads), so neither pays for where numpy happened to put an input (#110)."""
    import numpy as np
    dtype = np.dtype(dtype)
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    buf = np.empty(nbytes + align, dtype=np.uint8)
    off = -buf.ctypes.data % align
    return buf[off:off + nbytes].view(dtype).reshape(shape)


def aligned(a, align: int = ALIGN):
    """A C-contiguous, `align`-byte-aligned copy of array `a` (`aligned_empty`)."""
    out = aligned_empty(a.shape, a.dtype, align)
    out[...] = a
    return out


def warm_up(run: Callable[[], None], calls: int, ms: float) -> None:
    """Untimed calls of `run`: at least `calls` of them, and more until `ms`
    milliseconds have passed."""
    done, w0 = 0, time.perf_counter()
    while done < calls or (time.perf_counter() - w0) * 1000 < ms:
        run()
        done += 1


def steady(key: tuple[str, str], run: Callable[[], None],
           prepare: Callable[[], None] | None = None, *, warm_ms: float = WARM_MS,
           **kw: object) -> Variant:
    """A Variant timed in the steady state (WARM untimed calls, and more for `warm_ms`,
    before each timed one), as bench sgemm, conv and blur time every contender."""
    return Variant(key, run, prepare, warm=WARM, warm_ms=warm_ms, **kw)  # type: ignore[arg-type]


def time_round_robin(variants: list[Variant], repeat: int, warmup: int = 2) -> float:
    """Median-ready samples for every variant, timed round-robin; returns the seconds
    spent waiting for other pools' spinning workers.

    On a shared 2-core machine the load changes during a run (other
    engineers' builds and tests); timing one variant after another would
    charge those changes to whichever ran then.  Interleaved, every variant
    sees the same conditions, so ratios of medians compare like with like.
    Interleaving has one trap: a pool whose workers busy-wait after a call
    (measured: a 2-thread FMA loop right after a 2-thread OpenBLAS call runs at
    half speed) would slow the next variant of another pool.  So a call first
    waits (untimed) until every other pool's workers are past their spinning
    time.  A 1-thread call waits too (decision #119): our kernels' main thread is
    bound to one core (bind_omp_threads), and a spinning worker of another pool
    on that core leaves it only when the scheduler balances, at a tick (4 ms at
    HZ=250).  In the usual order (OpenBLAS 1t, 2t, ours 1t, 2t) that moves the
    wait from our 2-thread call to our 1-thread one before it, so the run is no
    longer.  A variant of the same pool does not wait: its own workers are its
    steady state.
    """
    spin_end: dict[str, float] = {}
    waited = 0.0

    def call(v: Variant) -> float:
        nonlocal waited
        if v.prepare:
            v.prepare()
        until = max((t for pool, t in spin_end.items() if pool != v.key[0]), default=0.0)
        delay = until - time.perf_counter()
        if delay > 0:
            time.sleep(delay)
            waited += delay
        warm_up(v.run, v.warm, v.warm_ms)
        t0 = time.perf_counter()
        v.run()
        t1 = time.perf_counter()
        if v.spins_for:
            spin_end[v.key[0]] = t1 + v.spins_for
        return (t1 - t0) * 1000

    for v in variants:
        for _ in range(warmup):
            call(v)
    for _ in range(repeat):
        for v in variants:
            v.times_ms.append(call(v))
    return waited


def ratio_interval(num_ms: list[float], den_ms: list[float], level: float = 0.9,
                   resamples: int = 2000, seed: int = 0) -> tuple[float, float] | None:
    """A `level` bootstrap interval for median(num_ms) / median(den_ms), the speed a
    table reports, from samples timed round-robin (`time_round_robin`).

    Why: on a shared VM the medians drift 10-15% between runs (#111), so a bare ratio
    such as 1.04x cannot tell a reader whether a 1.1x bar is missed or within the
    noise.  The rounds are resampled as pairs (sample k of both sides was timed in the
    same round, under the same conditions), so drift that slows both sides alike does
    not widen the interval.  Seeded: the same samples give the same interval.  None
    when the sides were not timed in the same rounds or there are fewer than 3."""
    import numpy as np
    n = len(num_ms)
    if n < 3 or len(den_ms) != n:
        return None
    a, b = np.asarray(num_ms, dtype=float), np.asarray(den_ms, dtype=float)
    idx = np.random.default_rng(seed).integers(0, n, size=(resamples, n))
    ratios = np.median(a[idx], axis=1) / np.median(b[idx], axis=1)
    tail = (1 - level) / 2
    lo, hi = np.quantile(ratios, [tail, 1 - tail])
    return float(lo), float(hi)


# How the tables' interval columns are made, for their header lines.
INTERVAL_NOTE = ("90% interval: of that ratio of medians, by resampling the interleaved rounds "
                 "(a paired bootstrap, benchmarks/_common.py's ratio_interval)")


def fmt_interval(iv: tuple[float, float] | None, digits: int = 2) -> str:
    """`lo-hi` for a table cell, `-` where there is no interval."""
    return "-" if iv is None else f"{iv[0]:.{digits}f}-{iv[1]:.{digits}f}"


TRIAL_ROUNDS = 5
TRIAL_MIN_CALLS = 3


def fastest(candidates: dict[str, Callable[[], None]], warm_ms: float,
            trials: int = TRIAL_ROUNDS, timed_ms: float = 5.0,
            min_calls: int = TRIAL_MIN_CALLS) -> str:
    """The name of the candidate with the least median call time over `trials` rounds,
    interleaved: in each, every candidate gets `warm_ms` of untimed calls, then timed
    calls for at least `timed_ms` and at least `min_calls` of them.

    Five rounds of at least three calls: with three rounds of 5 ms, a 25-100 ms call
    was timed three times, and on the shared Xeon the trial picked the kernel that
    was 4-6% slower in steady state (1536^3 on 2 threads, #110).

    A planner's trial, as FFTW_MEASURE plans: where several proved kernels compute the
    same thing (Sgemm.v's pack-once, strip-packing and A-in-place derivations), a caller
    picks one per shape; which is faster depends on the machine's caches (#109), so it is
    measured rather than guessed.  None of these calls is in a benchmark's figures."""
    times: dict[str, list[float]] = {name: [] for name in candidates}
    for _ in range(trials):
        for name, run in candidates.items():
            warm_up(run, 1, warm_ms)
            s0, done = time.perf_counter(), 0
            while True:
                t0 = time.perf_counter()
                run()
                t1 = time.perf_counter()
                times[name].append(t1 - t0)
                done += 1
                if (t1 - s0) * 1000 >= timed_ms and done >= min_calls:
                    break
    return min(times, key=lambda name: (statistics.median(times[name]), name))


def load_lines(before: tuple[float, float, float]) -> list[str]:
    """What the load was, and a warning when parallel times cannot be trusted."""
    after = os.getloadavg()
    cpus = os.cpu_count() or 1
    lines = [f"load average (1 min) {before[0]:.2f} before, {after[0]:.2f} after, "
             f"on {cpus} CPU(s)"]
    if max(before[0], after[0]) > cpus:
        # More runnable threads than cores: parallel kernels time-share and wait for
        # each other at every barrier, so the 2-thread figures say little.
        lines.append(f"warning: load average above {cpus}: the multi-threaded times and "
                     "ratios are not reliable")
    return lines


def _cpu_jiffies() -> tuple[int, int, int]:
    """(busy, total, steal) jiffies of the whole machine since boot (/proc/stat).  Steal
    is time a hypervisor ran something else while one of this VM's vCPUs wanted to run;
    it is counted in neither busy nor idle here."""
    with open("/proc/stat") as f:
        vals = [int(x) for x in f.readline().split()[1:]]
    idle = vals[3] + (vals[4] if len(vals) > 4 else 0)  # idle + iowait
    steal = vals[7] if len(vals) > 7 else 0
    return sum(vals) - idle - steal, sum(vals), steal


# Above this many cores of steal while timing, a report says the host took CPU from
# this VM.  On the Xeon VM a quiet full `bench sgemm` run (about 330 s) accrued 0.15 s
# of steal in all, 0.0005 cores; a few hundredths is already a busy host.
STEAL_NOTE_CORES = 0.02


class OtherLoad:
    """Cores kept busy by OTHER processes over an interval: the machine's busy time
    (/proc/stat) minus this process's own CPU time, over the wall time.  Unlike the
    load average (a 1-minute mean of runnable threads, ours included), it says what
    the timed runs competed with.  On a VM it also measures the host's steal time
    (`steal`), which the guest's own process accounting cannot see: a vCPU the host
    deschedules stalls whichever of our threads it was running, the disturbance that
    `bench sgemm`'s stalled-peer warning catches (#108, #116)."""

    def __init__(self, children: bool = False) -> None:
        # children: count the CPU of this process's waited-for children as its own
        # (bench proofs, whose builds run in make and coqc).
        self.hz = os.sysconf("SC_CLK_TCK")
        self.children = children
        self.start()

    def _own(self) -> float:
        t = os.times()
        return t.user + t.system + (t.children_user + t.children_system if self.children
                                    else 0.0)

    def start(self) -> None:
        self.t0 = time.perf_counter()
        self.busy0, _, self.steal0 = _cpu_jiffies()
        self.self0 = self._own()

    def cores(self) -> float:
        busy, _, _ = _cpu_jiffies()
        own = self._own() - self.self0
        wall = max(time.perf_counter() - self.t0, 1e-6)
        return max(0.0, ((busy - self.busy0) / self.hz - own) / wall)

    def steal(self) -> float:
        """Cores' worth of time the host took from this VM since `start`."""
        _, _, steal = _cpu_jiffies()
        wall = max(time.perf_counter() - self.t0, 1e-6)
        return max(0.0, (steal - self.steal0) / self.hz / wall)


def steal_note(steal: float) -> str | None:
    """A report's line when the host took CPU time from this VM while timing."""
    if steal < STEAL_NOTE_CORES:
        return None
    return (f"the host took {steal:.2f} core(s) from this VM while timing (steal time, "
            "/proc/stat): its vCPUs were descheduled, which slows whichever thread they ran; "
            "rerun when the host is quieter")


# A peer on T threads less than this many times faster than on 1, on a problem large
# enough to split (bench conv's 11.8 GFLOP, bench sgemm's 512^3 and up), did not run in
# parallel; every committed run's peers scaled 1.5x or more there.
UNSCALED_SPEEDUP = 1.2


def unscaled_note(peer: str, t1_ms: float, tT_ms: float, T: int) -> str | None:
    """A report's warning when a peer's T-thread median was less than UNSCALED_SPEEDUP
    times faster than its 1-thread median.  Its threads then shared a core (started from
    a thread bound to one, or a core taken): our T-thread speed ratio against it would
    compare our threads with one core of the peer's and overstate ours (bench sgemm did
    this after an uncached replay, until its reference product moved into `unbound`)."""
    if T <= 1 or not tT_ms > 0 or t1_ms >= UNSCALED_SPEEDUP * tT_ms:
        return None
    return (f"{peer} on {T} threads was only {t1_ms / tT_ms:.2f}x faster than on 1 (less "
            f"than {UNSCALED_SPEEDUP:g}x): " + unscaled_why(peer, T))


def unscaled_why(peer: str, T: int, where: str = "") -> str:
    """What an unscaled peer's warning says it means (unscaled_note's tail, and bench
    sgemm's for several problems, `where` naming them)."""
    return (f"its threads did not run in parallel (bound to one core, or a core taken), so "
            f"the {T}-thread speed{where} compares ours with a one-core {peer} and "
            "overstates ours; rerun")


def kernel_tick_ms(config: Path = Path("/proc/config.gz")) -> float | None:
    """The Linux scheduler tick in ms (1000 / CONFIG_HZ), from the running kernel's
    configuration where it exposes one; None where it does not."""
    import gzip

    try:
        with gzip.open(config, "rt") as f:
            for line in f:
                if line.startswith("CONFIG_HZ="):
                    hz = int(line.split("=", 1)[1])
                    return 1000.0 / hz if hz > 0 else None
    except (OSError, ValueError, EOFError):
        return None
    return None


def on_ticks(samples_ms: list[float], tick_ms: float, tol_ms: float = 0.05) -> int:
    """How many of `samples_ms` lie within `tol_ms` of a whole multiple (>= 1) of the
    scheduler tick.  A stalled call that is all waiting ends on a tick when its threads
    could only run at the next tick (#118): a woken thread waits for a vCPU the guest
    idled, or a thread shares its core with another one until the tick preempts it."""
    return sum(1 for x in samples_ms
               if x >= tick_ms - tol_ms and abs(x - tick_ms * round(x / tick_ms)) <= tol_ms)


def wait_for_quiet(max_wait: float, threshold: float = 0.25, window: float = 0.5) -> float:
    """Wait (up to `max_wait` s) until other processes use less than `threshold` cores
    over two consecutive `window`s; return the other load of the last window.  On a
    shared machine this starts each timing in a quiet moment when there is one, and
    wastes at most `max_wait` when there is none."""
    deadline = time.perf_counter() + max_wait
    quiet = 0
    while True:
        probe = OtherLoad()
        time.sleep(window)
        other = probe.cores()
        quiet = quiet + 1 if other < threshold else 0
        if quiet >= 2 or time.perf_counter() >= deadline:
            return other


# The cores this process may run on, as it started (read when a benchmark imports this
# module, before any OpenMP runtime binds the main thread to one core).
START_CORES = frozenset(os.sched_getaffinity(0))


@contextlib.contextmanager
def unbound() -> Iterator[None]:
    """Run the body with the calling thread's CPU affinity widened to START_CORES.

    A thread inherits the affinity of the thread that starts it.  Our first OpenMP
    kernel binds the main thread to one core (bind_omp_threads), and the peers start
    their worker threads from it, lazily: Halide's pool at its first parallel
    pipeline, OpenBLAS's again at its next call after each fork (it stops them before
    a fork).  Started after that binding they all shared the main thread's core:
    Halide's parallel blur ran no faster than its serial one, and OpenBLAS's 2-thread
    calls took whole multiples of the 4 ms scheduler tick (decision #116).  A peer's
    call that may start workers runs in here."""
    mask = os.sched_getaffinity(0)
    if mask == START_CORES:
        yield
        return
    os.sched_setaffinity(0, START_CORES)
    try:
        yield
    finally:
        os.sched_setaffinity(0, mask)


def bind_omp_threads() -> None:
    """Bind OpenMP threads to cores, unless the caller's environment says otherwise:
    OMP_PROC_BIND=close, OMP_PLACES=cores (setdefault).  Read when an OpenMP runtime
    loads (ours with the first kernel, torch's at `import torch`), so call this before
    either.  Unbound, once another pool had run in the process our 2-thread kernels
    often took twice their time, as if sharing one core (bench_sgemm, decisions #81)."""
    os.environ.setdefault("OMP_PROC_BIND", "close")
    os.environ.setdefault("OMP_PLACES", "cores")


def omp_env() -> str:
    """The OpenMP settings in force, for a results header."""
    return ", ".join(f"{k}={os.environ.get(k, 'unset: libgomp default')}"
                     for k in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "OMP_PROC_BIND", "OMP_PLACES"))


def md_table(headers: list[str], rows: list[list[str]]) -> str:
    """A GitHub markdown table."""
    out = ["| " + " | ".join(headers) + " |", "|" + "|".join(" --- " for _ in headers) + "|"]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(out)


def text_table(headers: list[str], rows: list[list[str]]) -> str:
    """The same table for the terminal, right-aligned columns."""
    widths = [max(len(h), *(len(r[k]) for r in rows)) if rows else len(h)
              for k, h in enumerate(headers)]
    fmt = "  ".join(f"{{:>{w}}}" for w in widths)
    return "\n".join([fmt.format(*headers), *(fmt.format(*r) for r in rows)])


def fmt(x: float | None, digits: int = 2) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def close_figure(fig) -> None:
    """Release a figure from pyplot's registry once nothing draws it again (closing
    detaches its canvas): pyplot keeps every figure it made until closed, and a
    process that draws many (a redraw of every chart, a test session) would hold them
    all."""
    plt = pyplot()
    if plt is not None:
        plt.close(fig)


def write_outputs(out_dir: Path, stem: str, markdown: str, fig) -> list[Path]:
    """Write STEM.md and STEM.png atomically (temporary file + rename)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    md = out_dir / f"{stem}.md"
    atomic_write(md, markdown)
    written = [md]
    if fig is not None:
        written.append(save_figure(fig, out_dir / f"{stem}.png"))
    return written


def save_figure(fig, path: Path) -> Path:
    """Write the figure as a PNG through the one atomic writer (the file gets a plain
    `open`'s mode; a temporary file's private 0600 would hide the plot from the team)."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    atomic_write(path, buf.getvalue())
    return path


def pyplot():
    """matplotlib's pyplot without a display, or None when matplotlib is missing."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    return plt


# ---------------------------------------------------------------------------
# The machine's FMA peak, measured rather than computed from a nominal clock.

# The probes' vector type and operations, for either width.
VEC_HEADER = r"""
#include <immintrin.h>

/* VS_LANES 8: AVX2 (__m256), 16: AVX-512 (__m512), chosen at compile time. */
#if VS_LANES == 16
typedef __m512 vs_vec;
#define VS_LOAD(p) _mm512_loadu_ps(p)
#define VS_SET(x) _mm512_set1_ps(x)
#define VS_ZERO() _mm512_setzero_ps()
#define VS_FMA(a, b, c) _mm512_fmadd_ps(a, b, c)
#define VS_ADD(a, b) _mm512_add_ps(a, b)
#define VS_STORE(p, v) _mm512_storeu_ps(p, v)
#else
typedef __m256 vs_vec;
#define VS_LOAD(p) _mm256_loadu_ps(p)
#define VS_SET(x) _mm256_set1_ps(x)
#define VS_ZERO() _mm256_setzero_ps()
#define VS_FMA(a, b, c) _mm256_fmadd_ps(a, b, c)
#define VS_ADD(a, b) _mm256_add_ps(a, b)
#define VS_STORE(p, v) _mm256_storeu_ps(p, v)
#endif
"""

PEAK_SOURCE = VEC_HEADER + r"""
#include <omp.h>

/* 12 independent FMA chains: enough to cover the FMA latency (4-5 cycles)
   times the number of FMA pipes (2) of current x86 cores, so the loop is
   throughput-bound.  The multiplier and addend keep every value normal (no
   denormal slow path).  Each iteration does 12 * VS_LANES * 2 flops. */
static float chains(long iters, float seed) {
  const vs_vec x = VS_SET(0.999999f), y = VS_SET(1e-6f);
  vs_vec a0 = VS_SET(seed), a1 = VS_SET(seed + 1), a2 = VS_SET(seed + 2),
         a3 = VS_SET(seed + 3), a4 = VS_SET(seed + 4), a5 = VS_SET(seed + 5),
         a6 = VS_SET(seed + 6), a7 = VS_SET(seed + 7), a8 = VS_SET(seed + 8),
         a9 = VS_SET(seed + 9), a10 = VS_SET(seed + 10), a11 = VS_SET(seed + 11);
  for (long i = 0; i < iters; i++) {
    a0 = VS_FMA(a0, x, y); a1 = VS_FMA(a1, x, y); a2 = VS_FMA(a2, x, y);
    a3 = VS_FMA(a3, x, y); a4 = VS_FMA(a4, x, y); a5 = VS_FMA(a5, x, y);
    a6 = VS_FMA(a6, x, y); a7 = VS_FMA(a7, x, y); a8 = VS_FMA(a8, x, y);
    a9 = VS_FMA(a9, x, y); a10 = VS_FMA(a10, x, y); a11 = VS_FMA(a11, x, y);
  }
  vs_vec s = VS_ADD(VS_ADD(VS_ADD(a0, a1), VS_ADD(a2, a3)), VS_ADD(VS_ADD(a4, a5), VS_ADD(a6, a7)));
  s = VS_ADD(s, VS_ADD(VS_ADD(a8, a9), VS_ADD(a10, a11)));
  float out[VS_LANES];
  VS_STORE(out, s);
  return out[0] + out[VS_LANES - 1];
}

/* Seconds for `iters` iterations on each of `threads` threads (all start
   together; the time is that of the slowest).  `sink` defeats dead-code
   elimination. */
double vs_fma_probe(long iters, int threads, float *sink) {
  float total = 0.0f;
  double t0 = omp_get_wtime();
  #pragma omp parallel num_threads(threads) reduction(+:total)
  total += chains(iters, (float)omp_get_thread_num());
  double t1 = omp_get_wtime();
  *sink = total;
  return t1 - t0;
}
"""

class PeakProbe(NamedTuple):
    """The probe for one instruction set: vector width, compiler flags, the name
    reports print."""

    lanes: int
    flags: tuple[str, ...]
    name: str


PEAK_ISA = {"avx2": PeakProbe(8, ("-mavx2", "-mfma"), "AVX2"),
            "avx512": PeakProbe(16, ("-mavx512f", "-mfma"), "AVX-512")}


def peak_label(isa: str) -> str:
    """How the reports name the probe: its instruction set and chains."""
    return f"{PEAK_ISA[isa].name}, 12 independent chains"


def fma_peak_gflops(threads: int, seconds: float = 0.05, trials: int = 15,
                    isa: str = "avx2") -> float:
    """Best of `trials` runs of the FMA probe on `threads` threads, in GFLOP/s.

    The best (not the median) is the peak: every disturbance only slows it; many
    short trials give a loaded machine more chances of one undisturbed trial.
    `isa` is the vector width the measured kernels use: a core with two 512-bit FMA
    pipes (Intel Xeon) has twice the AVX2 peak in AVX-512, one that splits 512-bit
    operations into two 256-bit halves (AMD Zen 4) the same, so a % of peak is only
    meaningful against the probe of the kernels' own width.  Compiled -O3 with that
    ISA's flags only (no -march=native).
    """
    probe = PEAK_ISA[isa]
    lanes = probe.lanes
    so = compile_c(PEAK_SOURCE, ["-std=c11", "-O3", *probe.flags, f"-DVS_LANES={lanes}",
                                 "-fPIC", "-fopenmp"])
    lib = ctypes.CDLL(str(so))
    fn = lib.vs_fma_probe
    fn.restype = ctypes.c_double
    fn.argtypes = [ctypes.c_long, ctypes.c_int, ctypes.POINTER(ctypes.c_float)]
    sink = ctypes.c_float()
    iters = 1 << 20
    while fn(iters, 1, ctypes.byref(sink)) < seconds / 4:  # calibrate on one thread
        iters *= 2
    iters = int(iters * seconds / max(fn(iters, 1, ctypes.byref(sink)), 1e-9))
    best = min(fn(iters, threads, ctypes.byref(sink)) for _ in range(trials))
    return 12 * lanes * 2 * iters * threads / best / 1e9


# The register tile's own loop, alone.  The FMA probe above has no loads; a GEMM or
# conv micro-kernel step also loads its operands: `VS_MR` broadcasts (one per tile
# row) and `VS_NV` vectors (the weight / B panel row) per `VS_MR * VS_NV` FMAs.  Here
# those operands stay in L1 (a 32-step panel and `VS_MR` short input rows, reused
# cyclically), so the rate is what this core does with the loop's instruction mix
# and nothing else: no cache misses, packing, edges or tile stores.  Measured on the
# Intel Xeon (model 167, docs/decisions.md #114) at about 82% of the FMA probe for
# the 6 x 64 AVX-512 tile, whatever the panel's size (8 to 128 steps), and at about
# 94% with the panel row held in registers, so it is the vector loads that cost.
TILE_PROBE_SOURCE = VEC_HEADER + r"""
#define VS_STEPS 32  /* panel rows, reused cyclically */
#define VS_ROW 128   /* floats between two tile rows' inputs, as an NHWC pixel of 128 channels */

/* `blocks` passes over the panel: blocks * VS_STEPS steps of VS_MR * VS_NV FMAs. */
float vs_tile_probe(long blocks, const float *restrict panel, const float *restrict in) {
  vs_vec t[VS_MR * VS_NV];
  for (int i = 0; i < VS_MR * VS_NV; i++) t[i] = VS_ZERO();
  for (long b = 0; b < blocks; b++) {
    #pragma GCC unroll 2
    for (int c = 0; c < VS_STEPS; c++) {
      vs_vec w[VS_NV];
      for (int v = 0; v < VS_NV; v++) w[v] = VS_LOAD(panel + (c * VS_NV + v) * VS_LANES);
      for (int i = 0; i < VS_MR; i++) {
        vs_vec x = VS_SET(in[i * VS_ROW + c]);
        for (int v = 0; v < VS_NV; v++) t[i * VS_NV + v] = VS_FMA(x, w[v], t[i * VS_NV + v]);
      }
    }
  }
  vs_vec s = t[0];
  for (int i = 1; i < VS_MR * VS_NV; i++) s = VS_ADD(s, t[i]);
  float out[VS_LANES];
  VS_STORE(out, s);
  return out[0];
}
"""


def tile_probe_library(isa: str, rows: int, vectors: int) -> Path:
    """The tile probe compiled (cached by content) as the FMA probe is: -O3 and the
    ISA's flags only; `vs_tile_probe` is the function to time."""
    probe = PEAK_ISA[isa]
    return Path(compile_c(TILE_PROBE_SOURCE, ["-std=c11", "-O3", *probe.flags,
                                              f"-DVS_LANES={probe.lanes}", f"-DVS_MR={rows}",
                                              f"-DVS_NV={vectors}", "-fPIC"]))


def tile_probe_gflops(isa: str, rows: int = 6, vectors: int = 4, seconds: float = 0.05,
                      trials: int = 15) -> float:
    """Best of `trials` runs of the register-tile probe on one thread, in GFLOP/s: a
    `rows` x `vectors` tile of `isa`'s vectors, its operands in L1.

    The ceiling a micro-kernel's FMA loop can reach on this core, which the FMA probe
    (no loads) overstates; reports give our loops' rate against both.  Compiled as
    the FMA probe is (-O3, the ISA's flags only)."""
    lanes = PEAK_ISA[isa].lanes
    lib = ctypes.CDLL(str(tile_probe_library(isa, rows, vectors)))
    fn = lib.vs_tile_probe
    fn.restype = ctypes.c_float
    fn.argtypes = [ctypes.c_long, ctypes.POINTER(ctypes.c_float), ctypes.POINTER(ctypes.c_float)]
    steps = 32
    panel = (ctypes.c_float * (steps * vectors * lanes))(*([1e-7] * (steps * vectors * lanes)))
    inp = (ctypes.c_float * (rows * 128))(*([1e-7] * (rows * 128)))

    def run(blocks: int) -> float:
        t0 = time.perf_counter()
        fn(blocks, panel, inp)
        return time.perf_counter() - t0

    blocks = 1 << 10
    while run(blocks) < seconds / 4:
        blocks *= 2
    blocks = int(blocks * seconds / max(run(blocks), 1e-9))
    best = min(run(blocks) for _ in range(trials))
    return 2 * rows * vectors * lanes * steps * blocks / best / 1e9


def tile_ceiling_sentence(loop_gf: float, tile: dict | None, peak: float,
                          outside_pct: float) -> str:
    """The report's sentence on the FMA loops against the register-tile probe ("" when
    the probe was not run): how close they are to what this core does with the tile's
    own instruction mix, and so whether anything is left inside the loops."""
    if not tile:
        return ""
    g = tile["gflops"]
    verdict = (f"at the ceiling (run-to-run noise is several %), and what is left is the "
               f"{outside_pct:.0f}% of the time outside them" if loop_gf >= 0.95 * g else
               "below it: the loops themselves lose time (cache misses, the panel's layout)")
    return (f"  The same 6x{tile['width']} tile's loop run alone, its operands in L1, reaches "
            f"{g:.0f} GFLOP/s on this core ({100 * g / peak:.0f}% of the peak: the FMA probe "
            "has no loads, a tile step has a broadcast per row and a load per vector), so the "
            f"FMA loops run at {100 * loop_gf / g:.0f}% of it: {verdict}.")


def source_revision() -> str:
    """The commit the measured code comes from ($VERISCHED_COMMIT for an exported tree),
    marked when the working tree differs from it outside benchmarks/results/ (where the
    benchmarks run before this one in the same session wrote their results)."""
    import subprocess

    if os.environ.get("VERISCHED_COMMIT"):
        return os.environ["VERISCHED_COMMIT"]
    try:
        head = subprocess.run(["git", "-C", str(REPO_ROOT), "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True, timeout=30).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(REPO_ROOT), "status", "--porcelain",
                                "--untracked-files=no", "--", ".",
                                ":(exclude)benchmarks/results"],
                               capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return (head or "unknown") + (" + uncommitted changes" if dirty else "")




# ---------------------------------------------------------------------------
# Our kernels: replay a Coq derivation once, fix its block sizes, lower it for
# each requested target and compile (cached by content).  When the derivation
# is missing, does not replay or does not lower, the benchmark must say so
# plainly and run with the peers only, so `load_ours` returns the reason
# instead of raising.


@dataclass
class Ours:
    """Compiled kernels by label ("ours-avx2", ...), or why there are none."""

    origin: str
    kernels: dict = field(default_factory=dict)
    missing: str | None = None
    fixed: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    sizes: tuple[str, ...] = ()
    inputs: tuple[str, ...] = ()


def derivations_in(path: Path) -> list[str]:
    """Names of the derivations in a .v file, in order."""
    return pipeline.derivations_in(path)


def load_ours(path: Path, derivation: str | None, fixed: dict[str, int],
              variants: list[tuple[str, str]], problem_sizes: set[str],
              fast_math: bool = False, timeout: float = 900.0,
              runtime: set[str] = frozenset(), only_blocks: bool = True) -> Ours:
    """Replay `derivation` of `path` (default: its last Derive), fix every size that is
    not a problem size (block sizes, from `fixed`; proved for all values, so valid for
    these) nor left to run time (`runtime`: block sizes the benchmark passes per call),
    and build one kernel per (label, target name) in `variants`, through
    verisched.pipeline (check_safe required, hypotheses as preconditions).
    `only_blocks`: every name in `fixed` must be one of the derivation's block sizes
    (the user's `--fix`: a misspelt name stops the run); False where `fixed` holds
    defaults that some derivations do not take (bench blur's tile)."""
    rel = path.relative_to(REPO_ROOT) if path.is_relative_to(REPO_ROOT) else path
    if not path.is_file():
        return Ours(str(rel), missing=f"{rel} does not exist (no derivation written yet)")
    try:
        names = derivations_in(path)
        if not names:
            return Ours(str(rel), missing=f"{rel} holds no Derive")
        if derivation is not None and derivation not in names:
            # A user's misspelling: stop, rather than time the peers alone and write
            # their table over the results (a missing --ours-file is refused by its
            # argparse type, existing_file, before this).
            raise SystemExit(f"verisched bench: {rel} has no derivation {derivation!r} "
                             f"(it has: {', '.join(names)})")
        name = derivation or names[-1]
        origin = f"{rel}:{name}"
        progress = Progress()  # replay steps on stderr (a cached derivation: one line)
        try:
            dp = pipeline.load(path, name, timeout=timeout, progress=progress)
        finally:
            progress.close()
        blocks = [s for s in dp.sizes if s not in problem_sizes]
        unknown = sorted(set(fixed) - set(blocks))
        # A user's mistake, not a missing kernel: stop before any timing.
        if unknown and only_blocks:
            raise SystemExit(f"verisched bench: --fix {', '.join(unknown)}: not a block size "
                             f"of {origin} (its block sizes: {', '.join(blocks) or 'none'})")
        used = {k: v for k, v in fixed.items() if k in blocks}
        checked = pipeline.check(dp, fix=used)
        unset = sorted(set(blocks) & set(checked.program.sizes) - set(runtime))
        if unset:
            return Ours(origin, missing=f"{origin}: block size(s) {unset} are symbolic: "
                        "pass --fix NAME=INT")
        ours = Ours(origin, fixed=used, sizes=checked.program.sizes,
                    inputs=tuple(t for t, _ in checked.program.inputs))
        for label, tname in variants:
            kname = re.sub(r"\W", "_", f"{name}_{tname}")
            c = dataclasses.replace(checked, program=dataclasses.replace(checked.program,
                                                                         name=kname))
            ours.kernels[label] = pipeline.compile_checked(c, tname, fast_math=fast_math)
        ours.notes += [f"hypothesis {a} assumed, not checked at run time"
                       for a in checked.program.assumed]
        return ours
    except (CodegenError, OSError) as exc:
        text = str(exc).strip()
        first = text.splitlines()[0] if text else type(exc).__name__
        where = f"{rel}:{derivation}" if derivation else str(rel)
        return Ours(where, missing=f"{where} did not replay, lower or compile: {first[:400]}")


def parallel_threads(text: str) -> int:
    """An argparse type: the thread count of a benchmark's multi-threaded column, which
    sits beside the 1-thread one (so at least 2)."""
    n = positive_int(text)
    if n < 2:
        raise argparse.ArgumentTypeError(f"{text!r}: the multi-threaded count is at least 2 "
                                         "(the 1-thread column is always measured)")
    return n


def fix_args(items: list[str]) -> dict[str, int]:
    """--fix NAME=INT arguments: block sizes, so positive (load_ours checks the names
    against the derivation's block sizes, and its hypotheses decide the rest); several
    in one argument, comma-separated, as the commands take them (mc=96,kc=256)."""
    out = {}
    for it in split_commas(items):
        k, eq, v = it.partition("=")
        try:
            value = int(v) if eq and k.strip() else None
        except ValueError:
            value = None
        if value is None:
            raise SystemExit(f"verisched bench: --fix {it!r}: expected NAME=INT")
        if value < 1:
            raise SystemExit(f"verisched bench: --fix {it!r}: a block size is a positive integer")
        if out.get(k.strip(), value) != value:  # as the command line's pairs() refuses it
            raise SystemExit(f"verisched bench: --fix {k.strip()}: given twice, as "
                             f"{out[k.strip()]} and as {value}")
        out[k.strip()] = value
    return out


# ---------------------------------------------------------------------------
# Where the time goes inside one of our kernels (perf, software clock samples).

_INSN = re.compile(r"^\s*([\d.]+)\s*:\s*([0-9a-f]+):\s*(\S+)\s*(.*)$")
_BRANCH_TARGET = re.compile(r"^([0-9a-f]+)\b")


def innermost_fma_loops(insns: list[tuple[int, str, str]]) -> list[tuple[int, int]]:
    """The (first, last) addresses of the innermost loops that hold FMAs, from
    disassembled (address, mnemonic, operands) rows: a backward conditional branch and
    its target, with no other backward branch between them (the micro-kernels)."""
    loops = []
    for addr, op, arg in insns:
        t = _BRANCH_TARGET.match(arg.strip())
        if op.startswith("j") and op != "jmp" and t and int(t.group(1), 16) < addr:
            loops.append((int(t.group(1), 16), addr))
    return [(lo, hi) for lo, hi in loops
            if not any(lo <= a < b <= hi and (a, b) != (lo, hi) for a, b in loops)
            and any(lo <= a <= hi and op.startswith("vfmadd") for a, op, _ in insns)]


def perf_split(run: Callable[[], None], symbol: str, seconds: float = 2.0) -> dict | None:
    """Profile this process with `perf record -e cpu-clock` while calling `run` for
    about `seconds`, and split the samples inside `symbol` into its innermost loops
    that hold FMAs (the micro-kernels) and everything else (packing, copies, the
    load-add-store of the result tile, edges).  None when perf is unavailable."""
    import shutil
    import signal
    import subprocess

    if not shutil.which("perf"):
        return None
    with tempfile.TemporaryDirectory(prefix="vs_perf_") as d:
        data = os.path.join(d, "perf.data")
        proc = subprocess.Popen(["perf", "record", "-q", "-e", "cpu-clock", "-p",
                                 str(os.getpid()), "-o", data],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        time.sleep(0.3)  # perf attaches
        t_end = time.perf_counter() + seconds
        while time.perf_counter() < t_end:
            run()
        proc.send_signal(signal.SIGINT)
        try:
            _, err = proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            return None
        if proc.returncode not in (0, -signal.SIGINT, 130) or not os.path.exists(data):
            return None
        ann = subprocess.run(["perf", "annotate", "-i", data, "--stdio", "-s", symbol],
                             capture_output=True, text=True, timeout=120)
    rows = []
    for line in ann.stdout.splitlines():
        m = _INSN.match(line)
        if m:
            rows.append((float(m.group(1)), int(m.group(2), 16), m.group(3), m.group(4)))
    if not rows:
        return None
    fma_loops = innermost_fma_loops([r[1:] for r in rows])
    total = sum(r[0] for r in rows)
    in_loops = sum(r[0] for r in rows if any(lo <= r[1] <= hi for lo, hi in fma_loops))
    return {"samples_pct_in_fma_loops": 100 * in_loops / total if total else 0.0,
            "fma_loops": len(fma_loops)}
