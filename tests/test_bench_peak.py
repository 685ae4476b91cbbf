"""The benchmarks' ceiling probes (benchmarks/_peak.py): the FMA peak probe of either
width, the register-tile probe and the loop it claims to time, and the reports' sentence
on the FMA loops against it.  Rates are only checked to be plausible and positive:
benchmarks are measurements, not tests."""

from __future__ import annotations

import pytest
from test_bench_helpers import _load


@pytest.fixture(scope="module")
def pk():
    return _load("_peak")


def test_fma_probe_runs(pk) -> None:
    """The peak probe compiles (-mavx2 -mfma) and reports a plausible positive rate
    (at least one 8-lane FMA per nanosecond is far below any AVX2 core's peak)."""
    from verisched.targets.cpu import cpu_flags

    if not {"avx2", "fma"} <= cpu_flags():
        pytest.skip("no AVX2/FMA on this CPU")
    assert pk.fma_peak_gflops(1, seconds=0.02, trials=1) > 16.0


def test_fma_peak_avx512_probe(pk) -> None:
    """The AVX-512 probe (16-lane chains, -mavx512f) compiles and runs where the CPU
    has avx512f, and counts 16 lanes per FMA: it reports at least the AVX2 probe's
    rate less noise (a 512-bit FMA does at least the work of a 256-bit one per
    cycle on every AVX-512 core; Zen 4 splits it in two halves, Intel runs two
    pipes), where a count of 8 lanes would halve it."""
    from verisched.targets.cpu import cpu_flags

    if "avx512f" not in cpu_flags():
        pytest.skip("no AVX-512 on this CPU")
    avx2 = pk.fma_peak_gflops(1, seconds=0.02, trials=3, isa="avx2")
    avx512 = pk.fma_peak_gflops(1, seconds=0.02, trials=3, isa="avx512")
    assert avx512 > 0.6 * avx2


@pytest.mark.parametrize("isa,lanes,rows,vectors", [("avx2", 8, 6, 2), ("avx512", 16, 6, 4),
                                                      ("avx512", 16, 6, 2)])
def test_tile_probe_is_the_micro_kernels_loop(pk, isa, lanes, rows, vectors) -> None:
    """The register-tile probe the benchmarks load holds the loop it claims to time:
    its innermost FMA loop (found as perf_split finds the kernels') does per step
    `rows` broadcasts, `vectors` full-width loads and rows x vectors FMAs into
    accumulators that stay in registers (no stack access), and it runs where the CPU
    has the ISA."""
    import re
    import subprocess

    from verisched.targets.cpu import cpu_flags

    so = pk.tile_probe_library(isa, rows, vectors)
    dis = subprocess.run(["objdump", "-d", "--no-show-raw-insn", str(so)],
                         capture_output=True, text=True, check=True).stdout
    func = dis.split("<vs_tile_probe>:", 1)[1].split("\n\n", 1)[0]
    insns = [(int(m.group(1), 16), m.group(2), m.group(3))
             for m in re.finditer(r"^\s*([0-9a-f]+):\s+(\S+)\s*(.*)$", func, re.M)]
    (lo, hi), = pk.innermost_fma_loops(insns)
    body = [(op, arg) for a, op, arg in insns if lo <= a <= hi]
    reg = "zmm" if lanes == 16 else "ymm"
    fmas = sum(op.startswith("vfmadd") for op, _ in body)
    steps = fmas // (rows * vectors)
    assert steps >= 1 and fmas == steps * rows * vectors, body
    assert sum(op == "vbroadcastss" for op, _ in body) == steps * rows, body
    assert sum(op.startswith("vmov") and re.match(rf"\S*\(.*\),%{reg}", arg) is not None
               for op, arg in body) == steps * vectors, body
    assert not any("%rsp" in arg or "%rbp" in arg for _, arg in body), body
    if {"avx512": "avx512f", "avx2": "fma"}[isa] in cpu_flags():
        assert pk.tile_probe_gflops(isa, rows, vectors, seconds=0.01, trials=1) > 0


def test_tile_ceiling_sentence(pk) -> None:
    """The reports judge the FMA loops against the tile probe: at the ceiling (within
    5%) what is left is the time outside the loops; well below it, the loops
    themselves; without a probe, nothing is said."""
    tile = {"rows": 6, "width": 64, "gflops": 190.0}
    at = pk.tile_ceiling_sentence(185.0, tile, 225.0, 8.0)
    assert "97% of it: at the ceiling" in at and "the 8% of the time outside" in at
    assert "6x64" in at and "84% of the peak" in at
    assert "below it" in pk.tile_ceiling_sentence(150.0, tile, 225.0, 8.0)
    assert pk.tile_ceiling_sentence(185.0, None, 225.0, 8.0) == ""
