"""How near a kernel runs to this machine's ceiling: the FMA peak and the register
tile's own loop, measured by probes compiled here rather than computed from a nominal
clock, and where a kernel's time goes (perf samples inside and outside its FMA loops).

Used by bench sgemm and bench conv for their "% of peak" columns and profile lines.
Measurements, never tests: nothing here has a threshold.
"""

from __future__ import annotations

import ctypes
import os
import re
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

from verisched.targets.toolchain import compile_c

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
