"""The quantized matmul layer's meaning in numpy, and what its counters can at best be.

Gemmini's default output path (README "mvout"; Spike's functional model):
the int32 accumulator is multiplied by a float32 scale in single precision,
rounded half to even, saturated to int8 and optionally clipped at 0 (ReLU).
Both the benchmark and the tests compare generated code against this
bit for bit, so it lives in one place.
"""

from __future__ import annotations

import numpy as np

DIM = 16


def quantize(acc: np.ndarray, scale: float, relu: bool) -> np.ndarray:
    """int32 accumulator -> int8 output, exactly as the accelerator's mvout does it."""
    scaled = acc.astype(np.int32).astype(np.float32) * np.float32(scale)
    out = np.clip(np.rint(scaled), -128, 127).astype(np.int8)  # rint: half to even
    if relu:
        out = np.maximum(out, 0).astype(np.int8)
    return out


def matmul_acc(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """int8 x int8 -> int32 with the accelerator's wrap-around accumulation."""
    full = a.astype(np.int64) @ b.astype(np.int64)
    return ((full + 2**31) % 2**32 - 2**31).astype(np.int32)


def quantized_matmul(a: np.ndarray, b: np.ndarray, scale: float, relu: bool) -> np.ndarray:
    """The layer int8 A (n x k) times int8 B (k x m), scaled, rounded, clamped, maybe ReLU."""
    return quantize(matmul_acc(a, b), scale, relu)


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


def min_computes(n: int, m: int, k: int) -> int:
    """Fewest DIM x DIM x DIM compute instructions any schedule needs for an n x m x k matmul.

    Each compute multiplies one DIM x DIM tile of A by one of B; every (row tile,
    column tile, reduction tile) triple holds at least one product, so this many
    computes are needed whatever the schedule (the utilization bound)."""
    return cdiv(n, DIM) * cdiv(m, DIM) * cdiv(k, DIM)


def min_dram_bytes(n: int, m: int, k: int) -> tuple[int, int]:
    """Bytes every schedule must move: (DRAM -> scratchpad, accumulator -> DRAM).

    Each int8 input element must be read once and each int8 output written once."""
    return n * k + k * m, n * m
