"""The hardware loop instructions gemmini_loop_ws / gemmini_loop_ws_bias, lowered.

`gemmini_loop_ws sm se act A B M N K` (coq/Targets/GemminiLoop.v) is by definition
the per-tile program of single instructions; GemminiMatmul.v proves the layer equal
to it (qmatmul_nobias_loop_ws, qmatmul_loop_ws).  Here: the registry's
specifications are Coq's definitions; the lowered kernel (targets/gemmini/loops.py:
hardware loops over blocks of output tiles) agrees with numpy, with the reference
interpreter and with the per-tile program lowered instruction by instruction, bit
for bit, on sizes that are not multiples of 16, including reductions too deep for
one hardware loop; and it issues far fewer instructions.
"""

from __future__ import annotations

import numpy as np
import pytest
from gemmini_checks import specs_agree_with_coq
from gemmini_reference import matmul_acc, min_computes, quantize

from verisched import pipeline
from verisched.codegen.errors import LowerError
from verisched.pybridge.coqterm import parse_program
from verisched.pybridge.instrs import alpha_equal, instantiate
from verisched.pybridge.interp import evaluate
from verisched.pybridge.session import REPO_ROOT
from verisched.pybridge.terms import IVar
from verisched.targets.gemmini import build
from verisched.targets.gemmini.instrs import split_scale
from verisched.targets.gemmini.lower import lower_gemmini

M, N, K = IVar("M"), IVar("N"), IVar("K")
LOOP = "gemmini_loop_ws sm se act A B M N K"
LOOP_BIAS = "gemmini_loop_ws_bias sm se act A B D M N K"
INSTR_KEYS = ("config_ex", "config_ld", "config_st", "mvin", "mvin2", "mvin3", "mvout",
              "preload", "compute_preloaded", "compute_accumulated", "flush", "fence")


def issued(c: dict[str, int]) -> int:
    """Instructions the CPU issued: single ones plus six per hardware loop, not what the
    loops unrolled (which the per-kind counters also count)."""
    return sum(c[k] for k in INSTR_KEYS) + c["loop_ws"] + c["loop_ws_config"] \
        - c["loop_unrolled"]


def env_for(bias: bool) -> dict:
    env = {"A": (M, K), "B": (K, N)}
    if bias:
        env["D"] = (M, N)
    return env


def run(kernel, m: int, n: int, k: int, bias: bool, scale: float, relu: bool, seed: int):
    rng = np.random.default_rng(seed)
    ins = {"A": rng.integers(-128, 128, (m, k), dtype=np.int8),
           "B": rng.integers(-128, 128, (k, n), dtype=np.int8)}
    if bias:
        ins["D"] = rng.integers(-2**20, 2**20, (m, n), dtype=np.int32)
    sm, se = split_scale(scale)
    sizes = {"M": m, "N": n, "K": k, "sm": sm, "se": se, "act": int(relu)}
    res = build.run(kernel, ins, sizes)
    want = quantize(matmul_acc(ins["A"], ins["B"]) + (ins["D"] if bias else 0), scale, relu)
    np.testing.assert_array_equal(res.out, want)
    return res, ins, sizes


def test_loop_specs_agree_with_coq(coq) -> None:
    """The registry's templates are GemminiLoop.v's definitions (printed, parsed back)."""
    specs_agree_with_coq(coq, "Targets.GemminiLoop",
                         "(A B D : Z -> Z -> gint) (M N K sm se : Z) (act : bool)",
                         [LOOP, LOOP_BIAS])


@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("shape", [(1, 1, 1), (16, 16, 16), (5, 7, 3), (33, 20, 50),
                                   (17, 31, 47), (100, 130, 70), (20, 600, 40), (40, 40, 9000)])
def test_loop_kernel_matches_per_tile_program(bias: bool, shape) -> None:
    m, n, k = shape
    loop = parse_program(LOOP_BIAS if bias else LOOP)
    kernel = lower_gemmini(loop, env_for(bias), name="loopws")
    assert any("gemmini_loop_ws(" in s for s in kernel.body)
    per_tile = instantiate(loop)  # the specification: the program the loop stands for
    tiles = lower_gemmini(per_tile, env_for(bias), name="tiles")
    res, ins, sizes = run(kernel, m, n, k, bias, 1 / 311, True, seed=m * n + k)
    ref, _, _ = run(tiles, m, n, k, bias, 1 / 311, True, seed=m * n + k)
    np.testing.assert_array_equal(res.out, ref.out)
    if m * n * k < 200_000:  # the interpreter is slow on the large shapes
        got = evaluate(loop, {a: v.astype(np.int64) for a, v in ins.items()}, sizes, np.int64)
        np.testing.assert_array_equal(got, res.out)
    c, t = res.counters, ref.counters
    assert c["loop_ws"] >= 1 and c["loop_ws_config"] == 5 * c["loop_ws"]
    # The same products, none wasted; fewer instructions from the CPU.
    assert c["compute_preloaded"] + c["compute_accumulated"] == min_computes(m, n, k)
    assert c["macs_useful"] == m * n * k
    assert issued(c) < issued(t) or m * n * k <= 16 ** 3
    # Each input is read at most as often as the per-tile program reads it.
    assert c["dram_to_spad_bytes"] <= t["dram_to_spad_bytes"]


def test_derived_loop_kernel(coq) -> None:
    """GemminiMatmul.v's qmatmul_nobias_loop, replayed: the layer rewritten into the loop
    instruction, lowered to hardware loops, on the simulator against numpy."""
    dp = pipeline.load(REPO_ROOT / "coq/Examples/GemminiMatmul.v", "qmatmul_nobias_loop")
    checked = pipeline.check(dp)
    assert alpha_equal(checked.program.expr, parse_program(LOOP))
    kernel = pipeline.lower(checked, "gemmini").kernel
    for m, n, k in [(20, 33, 40), (3, 70, 200)]:
        res, _, _ = run(kernel, m, n, k, False, 1 / 97, False, seed=m + n + k)
        assert res.counters["loop_ws"] >= 1


def test_loop_needs_the_whole_output() -> None:
    prog = parse_program(f"GEN [ i < 2 ] ({LOOP})")
    with pytest.raises(LowerError, match="must be the whole program"):
        lower_gemmini(prog, env_for(False), name="bad")


def test_loop_operands_must_be_whole_matrices() -> None:
    with pytest.raises(LowerError, match="must be a whole DRAM matrix"):
        lower_gemmini(parse_program(LOOP), {"A": (M, K), "B": (N, N)}, name="bad")
