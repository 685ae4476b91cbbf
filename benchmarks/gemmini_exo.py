"""Exo's Gemmini matmul, generated now and run on our simulator (the benchmark's peer).

Exo (PyPI `exo-lang`, an optional peer: `pip install verisched[bench]`) ships a
Gemmini hardware library (`exo.platforms.gemmini`: memories, instructions,
configuration state, Exo thesis App. D) and helper schedules built from it.
The layer below is the quantized matmul of the thesis' Sec. 7.1 (int8 inputs,
int32 accumulator, scale, round, clamp, optional ReLU) written as an Exo
algorithm here; it is scheduled with the platform library's standard
sequence: memories set, outer loops tiled 16 x 64, the 16 x 16 blocks fissioned
and replaced by Gemmini instructions, configuration writes inlined and lifted
out of the loops.  That standard schedule tiles `i` by 16 and `j` and `k` by 64
with `perfect=True`, so shapes that are not multiples are run zero-padded
(and the padding is counted in the bytes, as it would be on the device).

Exo runs in a subprocess: its import is slow and it is not a dependency of
the package.  The generated C is compiled unmodified against
`include/gemmini.h` (the simulator) with a small driver that reads A and B
from a file and writes C.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from gemmini_reference import cdiv

from verisched.targets.gemmini.sim import GemminiSimError, compile_program, run_program

# The algorithm is ours; the scheduling helpers come from Exo's Gemmini platform library.
EXO_SCRIPT = '''
from __future__ import annotations
import sys
from pathlib import Path
import exo
from exo import proc
from exo.platforms.gemmini import *
from exo.stdlib.scheduling import *

@proc
def layer(N: size, M: size, K: size, scale: f32, act: bool,
          A: i8[N, K] @ DRAM, B: i8[K, M] @ DRAM, C: i8[N, M] @ DRAM):
    for i in seq(0, N):
        for j in seq(0, M):
            res: i32 @ DRAM
            res = 0.0
            for k in seq(0, K):
                a: i8 @ DRAM
                a = A[i, k]
                b: i8 @ DRAM
                b = B[k, j]
                a2: i32
                b2: i32
                a2 = a
                b2 = b
                res += a2 * b2
            acc: i32
            acc = res
            scaled: f32
            acc_scale(acc, scaled, scale)
            out: i8
            clamp(scaled, out)
            if act == True:
                out = relu(out)
            C[i, j] = out

name, outdir = sys.argv[1], sys.argv[5]
n, m, k = (int(x) for x in sys.argv[2:5])
p = rename(layer.partial_eval(n, m, k), name)
p = set_memory(p, "res", GEMM_ACCUM)
p = set_memory(p, "a", GEMM_SCRATCH)
p = set_memory(p, "b", GEMM_SCRATCH)
p = tile_outer_loops(p)
p = old_lift_alloc(p, "res : _ #0", n_lifts=2)
p = old_lift_alloc(p, "res : _ #0", n_lifts=1, mode="col", size=16)
p = fission_outer_blocks(p)
p = fission_inner_blocks(p)
p = replace_gemmini_calls(p)
p = inline_lift_config(p)
exo.compile_procs([p], Path(outdir), name + ".c", name + ".h")
'''

DRIVER = r"""
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include "{name}.h"
#include "gemm_malloc.h"
#include "gemm_acc_malloc.h"

int main(int argc, char **argv) {{
  const long n = {n}, m = {m}, k = {k};
  static int8_t A[{n} * {k}], B[{k} * {m}], C[{n} * {m}];
  float scale;
  FILE *f;
  if (argc != 5) {{ fprintf(stderr, "usage: in out scale relu\n"); return 2; }}
  scale = strtof(argv[3], NULL);
  f = fopen(argv[1], "rb");
  if (!f || fread(A, 1, n * k, f) != (size_t)(n * k) || fread(B, 1, k * m, f) != (size_t)(k * m)) {{
    fprintf(stderr, "cannot read %s\n", argv[1]);
    return 1;
  }}
  fclose(f);
  gemm_init_mem();
  gemm_acc_init_mem();
  {name}(NULL, &scale, atoi(argv[4]) != 0, A, B, C);
  gemmini_fence();
  f = fopen(argv[2], "wb");
  if (!f || fwrite(C, 1, n * m, f) != (size_t)(n * m)) {{
    fprintf(stderr, "cannot write %s\n", argv[2]);
    return 1;
  }}
  fclose(f);
  return 0;
}}
"""

# Exo's output casts between pointers and 32-bit integers and ignores its context.
EXO_CFLAGS = ("-O2", "-Wno-pointer-to-int-cast", "-Wno-int-to-pointer-cast",
              "-Wno-unused-parameter", "-Wno-unused-variable", "-Wno-unused-function")


class ExoUnavailable(RuntimeError):
    """exo-lang is not installed (it is an optional benchmark peer)."""


@dataclass
class ExoRun:
    """Exo's result on one layer: the output (unpadded), the simulator counters, the shape run."""

    out: np.ndarray
    counters: dict[str, int]
    padded: tuple[int, int, int]
    source: str


def available() -> bool:
    return importlib.util.find_spec("exo") is not None


def padded_shape(n: int, m: int, k: int) -> tuple[int, int, int]:
    """The shape Exo's standard schedule accepts: n a multiple of 16, m and k of 64."""
    return cdiv(n, 16) * 16, cdiv(m, 64) * 64, cdiv(k, 64) * 64


def generate(name: str, n: int, m: int, k: int, outdir: Path, timeout: float = 600.0) -> Path:
    """Run Exo on the layer at n x m x k (already padded); returns the generated .c."""
    if not available():
        raise ExoUnavailable("exo-lang is not installed (pip install exo-lang)")
    script = outdir / "exo_gen.py"
    script.write_text(EXO_SCRIPT)
    proc = subprocess.run([sys.executable, str(script), name, str(n), str(m), str(k),
                           str(outdir)], capture_output=True, text=True, timeout=timeout,
                          check=False)
    if proc.returncode != 0:
        raise GemminiSimError(f"exo: scheduling {name} ({n}x{m}x{k}) failed:\n"
                              f"{proc.stderr[-3000:]}")
    return outdir / f"{name}.c"


def run_layer(a: np.ndarray, b: np.ndarray, scale: float, relu: bool,
              workdir: Path | None = None) -> ExoRun:
    """Generate Exo's code for A @ B, run it on the simulator, return output and counters."""
    n, k = a.shape
    k2, m = b.shape
    if k != k2:
        raise ValueError(f"exo: inner dimensions differ: A is {a.shape}, B is {b.shape}")
    pn, pm, pk = padded_shape(n, m, k)
    with tempfile.TemporaryDirectory(prefix="vs-exo-") as tmp:
        d = Path(workdir) if workdir is not None else Path(tmp)
        d.mkdir(parents=True, exist_ok=True)
        name = f"exo_mm_{pn}x{pm}x{pk}"
        src = generate(name, pn, pm, pk, d)
        driver = d / "driver.c"
        driver.write_text(DRIVER.format(name=name, n=pn, m=pm, k=pk))
        exe = compile_program([src, driver], d / name, cflags=[f"-I{d}", *EXO_CFLAGS])
        ap = np.zeros((pn, pk), dtype=np.int8)
        bp = np.zeros((pk, pm), dtype=np.int8)
        ap[:n, :k] = a
        bp[:k, :m] = b
        (d / "in.bin").write_bytes(ap.tobytes() + bp.tobytes())
        res = run_program(exe, [str(d / "in.bin"), str(d / "out.bin"),
                                f"{float(np.float32(scale)):.9g}", str(int(relu))],
                          timeout=900)
        if res.returncode != 0:
            raise GemminiSimError(f"exo: {name} failed on the simulator (exit "
                                  f"{res.returncode}): {res.sim_error or res.stderr[-2000:]}")
        out = np.frombuffer((d / "out.bin").read_bytes(), dtype=np.int8).reshape(pn, pm)
        return ExoRun(out[:n, :m].copy(), res.counters, (pn, pm, pk), src.read_text())
