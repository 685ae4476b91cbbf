"""The Exo side of `verisched bench gemmini`, at a small size.

Exo's Gemmini code (exo-lang's platform library and standard matmul schedule,
generated now by targets/gemmini/exo_peer.py) must compute the layer exactly
(checked against numpy), and its counters must be what its schedule implies;
the benchmark's own layer runner is exercised on the same shape with our
lowering of the GemminiMatmul.v program form.  Skipped without exo-lang.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import gemmini_exo as exo_peer
import pytest
from gemmini_reference import cdiv, min_computes

from verisched import pipeline
from verisched.pybridge.coqterm import parse_program
from verisched.pybridge.terms import IVar

pytestmark = pytest.mark.skipif(not exo_peer.available(),
                                reason="exo-lang is not installed (pip install exo-lang)")

BENCH = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_gemmini.py"

# GemminiMatmul.v's qmatmul_nobias_gemmini_expected.
NOBIAS = """trunc_r M (flatten (cdiv M 16) 16 (GEN [ io < cdiv M 16 ]
  transpose N 16 (trunc_r N (flatten (cdiv N 16) 16 (GEN [ jo < cdiv N 16 ]
    transpose 16 16 (tlet c := in_mem GEMMINI_ACC (SUM [ ko < cdiv K 16 ]
        tlet a := in_mem GEMMINI_SPAD (gemmini_mvin A (io * 16) (ko * 16) M K) in
        tlet b := in_mem GEMMINI_SPAD (gemmini_mvin B (ko * 16) (jo * 16) K N) in
        gemmini_matmul a b) in
      gemmini_mvout sm se act c (io * 16) (jo * 16) M N))))))"""


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_gemmini", BENCH)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_gemmini"] = module
    spec.loader.exec_module(module)
    return module


def test_exo_layer_runs_correctly_and_counts_as_its_schedule(bench) -> None:
    m, n, k = 20, 70, 100  # none a multiple of Exo's blocks: run zero-padded
    # Hand-written: Coq's check_safe proves its bounds before it is built (pipeline).
    kernel = pipeline.compile_program(parse_program(NOBIAS), {"A": (IVar("M"), IVar("K")),
                                                             "B": (IVar("K"), IVar("N"))},
                                      "gemmini", name="mm", bools=["act"])
    layer = bench.Layer("small", "matmul", m, n, k)
    # run_layer checks both outputs bit for bit against numpy (and stops if either differs).
    results, note = bench.run_layer(layer, {"matmul": kernel}, True, seed=5)
    ours, exo = results
    pm, pn, pk = exo_peer.padded_shape(m, n, k)
    assert (pm, pn, pk) == (32, 128, 128) and note == "padded to 32x128x128"
    # Exo's schedule: one 16x16x16 product per block of the padded problem; A read once
    # per 64 output columns, B once per 16 output rows; zeroing by moves from address 0.
    assert exo.get("compute_preloaded") == min_computes(pm, pn, pk)
    assert exo.get("dram_to_spad_bytes") == pm * pk * (pn // 64) + pk * pn * (pm // 16)
    assert exo.get("zero_fill_rows") == pm * (pn // 16)
    # Ours: exactly the utilization bound, every configuration set once.
    assert ours.get("compute_preloaded") == min_computes(m, n, k)
    assert ours.get("config_ld") == 2 and ours.get("config_ex") == 1
    assert ours.get("dram_to_spad_bytes") == m * k * cdiv(n, 16) + k * n * cdiv(m, 16)
    # A gap, where there is one, is explained in the output, not hidden.
    worse = bench.Result("ours", {**ours.counters, "dram_to_spad_bytes": 10**9, "mvin": 10**6})
    lines = bench.explain(layer, worse, exo)
    assert len(lines) == 2 and "scratchpad" in lines[0] and "instructions" in lines[1]
