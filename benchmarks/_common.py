"""Helpers shared by the peer benchmarks (bench_sgemm, bench_conv, bench_blur).

One concern each: interleaved timing, load and steal reporting, loading our
kernels, and atomic markdown/PNG output (the machine's ceiling probes are in
_peak.py).  Benchmarks are measurements, never tests: nothing here has a
threshold.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import io
import os
import re
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

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
from verisched.targets.toolchain import atomic_write

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


def numpy_openblas(bench: str):
    """numpy's OpenBLAS as threadpoolctl controls it (`set_num_threads`, `version`,
    `architecture`, its symbols in `.dynlib`), or a SystemExit naming what is missing:
    without the thread count the 1- and 2-thread columns cannot be compared."""
    try:
        from threadpoolctl import ThreadpoolController
    except ImportError:
        raise SystemExit(f"bench {bench}: threadpoolctl is missing (pip install "
                         "'verisched[bench]'); it sets OpenBLAS's thread count, without "
                         "which the 1- and 2-thread columns cannot be compared") from None
    libs = [lc for lc in ThreadpoolController().lib_controllers
            if lc.internal_api == "openblas" and "numpy" in lc.filepath]
    if not libs:
        raise SystemExit(f"bench {bench}: numpy is not linked with OpenBLAS "
                         "(threadpoolctl found no numpy OpenBLAS)")
    return libs[0]


def openblas_threads(lc, n: int, wake: Callable[[], None]) -> Callable[[], None]:
    """A Variant's `prepare` setting OpenBLAS's thread count before a call.  Its workers
    are (re)started with every core allowed (`unbound`): setting the count starts them
    after a fork, and so does one multi-threaded call (`wake`), made here for the case
    that it does not."""
    def prepare() -> None:
        with unbound():
            lc.set_num_threads(n)
            if n > 1:
                wake()
    return prepare


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

