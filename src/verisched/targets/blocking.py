"""Cache sizes of the machine a kernel runs on, and the GEMM block sizes they imply.

Sgemm.v's derivations keep their block sizes symbolic (row blocks of `mc = 6 mcr`
rows, depth blocks of `kc`), so a kernel takes them as arguments and the caller
chooses them per call, as BLIS does.  This module chooses them from the caches of
the machine that runs the kernel, with the analytical model of Low, Igual, Smith and
Quintana-Orti ("Analytical modeling is enough for high-performance BLIS", ACM TOMS
43(2), 2016, Sec. 4): the loop order is BLIS's (a `kc x nr` micro-panel of B reused
from L1 across the micro-kernel calls of a strip, an `mc x kc` block of A reused from
L2 across the strips), and a set-associative cache of `W` ways keeps

- in L1, the B micro-panel in `C_B = W - 1 - C_A` ways, where the A micro-panel that
  streams past it takes `C_A = floor((W - 1) / (1 + nr / mr))` ways (at least one)
  and one way is left for the C tile: `kc = C_B * sets * line / (nr * elem)`;
  When L1 leaves the micro-panel fewer than `KC_L1_FLOOR` steps (a wide AVX-512
  tile), it is kept in one way of L2 instead (measured, see `KC_L1_FLOOR`);
- in L2, the A block in `W - 1 - C_B2` ways, where `C_B2 = ceil(nr kc elem / (sets
  line))` ways hold the B micro-panel: `mc = (W - 1 - C_B2) * sets * line / (kc elem)`.

The choice is a performance heuristic only: every block size gives the same result
(the derivation is proved for all `mcr >= 1`, `kc >= 1`), so a wrong cache figure
costs speed, never correctness.  Where the figures come from is kept
(`CacheSizes.source`) so a benchmark can say it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import cache
from pathlib import Path

_SYSFS = Path("/sys/devices/system/cpu/cpu0/cache")


@dataclass(frozen=True)
class Cache:
    """One data (or unified) cache level: size and line in bytes, associativity."""

    size: int
    ways: int
    line: int = 64

    @property
    def sets(self) -> int:
        return max(1, self.size // (self.ways * self.line))


@dataclass(frozen=True)
class CacheSizes:
    """The L1 data cache and L2 of one core, and where the figures were read."""

    l1: Cache
    l2: Cache
    source: str

    def describe(self) -> str:
        return (f"L1d {self.l1.size // 1024} KiB {self.l1.ways}-way, "
                f"L2 {self.l2.size // 1024} KiB {self.l2.ways}-way ({self.source})")


# Used when nothing can be read (a container without sysfs, another OS): a common
# x86 core (32 KiB 8-way L1d, 512 KiB 8-way L2), the sizes bench sgemm assumed before.
DEFAULT = CacheSizes(Cache(32 * 1024, 8), Cache(512 * 1024, 8), "default: not readable")


def _parse_size(text: str) -> int:
    """sysfs writes sizes as '32K', '1024K', '32M'."""
    text = text.strip().upper()
    scale = {"K": 1024, "M": 1024 ** 2, "G": 1024 ** 3}.get(text[-1:], 1)
    return int(text.rstrip("KMG")) * scale


def _from_sysfs(root: Path) -> CacheSizes | None:
    found: dict[int, Cache] = {}
    for index in sorted(root.glob("index*")):
        try:
            kind = (index / "type").read_text().strip()
            level = int((index / "level").read_text())
            size = _parse_size((index / "size").read_text())
            ways = int((index / "ways_of_associativity").read_text() or 0)
            line = int((index / "coherency_line_size").read_text() or 64)
        except (OSError, ValueError):
            continue
        if kind in ("Data", "Unified") and size > 0:
            found[level] = Cache(size, ways if ways > 0 else 8, line if line > 0 else 64)
    if 1 in found and 2 in found:
        return CacheSizes(found[1], found[2], f"{root}")
    return None


def _from_sysconf() -> CacheSizes | None:
    try:
        l1 = Cache(os.sysconf("SC_LEVEL1_DCACHE_SIZE"),
                   os.sysconf("SC_LEVEL1_DCACHE_ASSOC") or 8,
                   os.sysconf("SC_LEVEL1_DCACHE_LINESIZE") or 64)
        l2 = Cache(os.sysconf("SC_LEVEL2_CACHE_SIZE"),
                   os.sysconf("SC_LEVEL2_CACHE_ASSOC") or 8,
                   os.sysconf("SC_LEVEL2_CACHE_LINESIZE") or 64)
    except (ValueError, OSError, AttributeError):
        return None
    if l1.size <= 0 or l2.size <= 0:
        return None
    return CacheSizes(l1, l2, "sysconf")


@cache
def cache_sizes() -> CacheSizes:
    """This machine's caches: sysfs (Linux), else sysconf, else `DEFAULT`."""
    return _from_sysfs(_SYSFS) or _from_sysconf() or DEFAULT


# The shallowest depth block worth keeping B's micro-panel in L1 for.  A wide register
# tile (Sgemm.v's AVX-512 6 x 64) leaves L1 room for fewer steps than this, and there the
# L1 rule loses: its 4 B vectors per 24 FMAs stream from L2 at a fraction of L2's
# bandwidth, while a short depth block reloads the C tile and re-enters the micro-kernel
# more often.  Measured (AMD EPYC, 1 thread, AVX-512 kernel, 1024^3 and 2048^3, medians
# of 9 interleaved calls): kc = 94 (the L1 rule) 101.0-102.4 GFLOP/s, kc = 128 101.7-105.4,
# kc = 256 105.9-108.6, kc = 342 107.2-108.7, kc = 512 108.1-108.5.
KC_L1_FLOOR = 256


def l1_depth(nr: int, mr: int = 6, elem: int = 4, caches: CacheSizes | None = None) -> int:
    """The L1 rule alone: the most depth steps of a `kc x nr` micro-panel kept in L1
    beside the `mr`-row panel streaming past it (the model above), unrounded.  A
    kernel whose depth is fixed by the problem (Conv.v's taps: one tap's input
    channels) asks it whether a tile width keeps its panel in L1."""
    l1 = (caches or cache_sizes()).l1
    c_a = max(1, (l1.ways - 1) * mr // (mr + nr))
    c_b = max(1, l1.ways - 1 - c_a)
    return c_b * l1.sets * l1.line // (nr * elem)


def kc_max(nr: int, mr: int = 6, elem: int = 4, caches: CacheSizes | None = None) -> int:
    """The deepest depth block whose `kc x nr` B micro-panel stays in L1 (the model
    above); when that is under `KC_L1_FLOOR` (a wide register tile), the micro-panel
    is kept in one way of L2 instead.  Rounded down to a multiple of 8, in [16, 1024]."""
    c = caches or cache_sizes()
    kc = l1_depth(nr, mr, elem, c)
    if kc < KC_L1_FLOOR:
        kc = max(kc, c.l2.sets * c.l2.line // (nr * elem))
    return min(1024, max(16, kc // 8 * 8))


def mc_max(kc: int, nr: int, mr: int = 6, elem: int = 4,
           caches: CacheSizes | None = None) -> int:
    """The most rows of an `mc x kc` A block that stays in L2 beside a B micro-panel,
    a multiple of `mr` (at least `mr`)."""
    l2 = (caches or cache_sizes()).l2
    way_bytes = l2.sets * l2.line
    c_b = -(-nr * kc * elem // way_bytes)
    c_a = max(1, l2.ways - 1 - c_b)
    mc = c_a * way_bytes // (kc * elem)
    return max(mr, mc // mr * mr)


# How much wider than tall a problem may be and still get a row block per thread when
# all of M fits one L2 block (#109).  Row blocks repack all of B in every thread; shared
# column strips make every thread read the whole packed A block, half of it packed by
# the other core, and cost a second parallel region per depth block.  Measured on the
# Xeon (2 threads, 6 x 64 kernel, medians of three runs, one block / a block per
# thread): 256^3 0.127-0.147 / 0.109-0.119 ms, 512^3 0.98-1.03 / 0.93-0.98, 768^3
# 3.19-3.25 / 3.03-3.20, 48x128x256 0.025 / 0.015; N = 2M and 3M even (512x1024x512
# 1.86-1.90 / 1.81-1.94, 256x768x512 0.68-0.70 / 0.69-0.72); N = 4M and wider the strips
# win (256x1024x512 0.98-1.04 / 1.03-1.06, 128x2048x512 1.05-1.11 / 1.17-1.20,
# 64x4096x512 1.20-1.24 / 1.55-1.57).
ROW_BLOCKS_MAX_WIDTH = 3


def gemm_blocks(M: int, K: int, threads: int, *, nr: int, mr: int = 6, elem: int = 4,
                caches: CacheSizes | None = None, N: int | None = None) -> dict[str, int]:
    """Run-time block sizes for Sgemm.v's kernels: `kc` and `mcr` (`mc = mr mcr`).

    kc: depth blocks of nearly equal size, at most `kc_max`, so the zero-padded last
    block wastes at most one step per block (`kc = ceil(K / ceil(K / kc_max))`).
    mcr: when all of M fits in `mc_max` rows, one row block, whose column strips the
    OpenMP kernel shares among the threads, if the problem is wide (`N` over
    `ROW_BLOCKS_MAX_WIDTH` times M, or N not given); otherwise one nearly equal row
    block per thread (each packs its own A block, none reads another's).  When M does
    not fit, the row blocks are the parallel loop's iterations, so their count is made
    a multiple of `threads` and their sizes nearly equal (a 10 + 1 split of 1024 rows
    over 2 threads measured 0.82x OpenBLAS against 0.88x balanced)."""
    K, M, threads = max(1, K), max(1, M), max(1, threads)
    kmax = kc_max(nr, mr, elem, caches)
    kc = -(-K // -(-K // kmax))
    mcr_max = max(1, mc_max(kmax, nr, mr, elem, caches) // mr)
    panels = -(-M // mr)
    if panels <= mcr_max:
        wide = N is None or N > ROW_BLOCKS_MAX_WIDTH * M
        mcr = -(-panels // threads)
        if threads == 1 or wide or -(-panels // mcr) < threads:
            return {"kc": kc, "mcr": panels}
        return {"kc": kc, "mcr": mcr}
    nblocks = threads * -(-panels // (threads * mcr_max))
    return {"kc": kc, "mcr": -(-panels // nblocks)}
