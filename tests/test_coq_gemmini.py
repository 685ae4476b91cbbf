"""Gemmini.v's integer model of the output path against the simulator.

coq/Targets/Gemmini.v models `mvout`'s output path, float32 scale, round half
to even, int8 saturation, optional ReLU, exactly over Z (`gemmini_acc_out sm
se act x` with the scale `sm * 2^se`).  The derived Gemmini kernels are only
correct if that model is what the simulator (targets/gemmini/include/
gemmini.h, `gemmini_sim_scale_to_elem`) computes, so this test evaluates the
Coq definition (vm_compute) and the simulator's C on the same random and
edge-case inputs and requires equal results for every one.  The interpreter's
numpy version (targets/gemmini/instrs.acc_out) is compared as well.
"""

from __future__ import annotations

import math
import re
import subprocess
from pathlib import Path

import numpy as np
import pytest

from verisched.pybridge.session import REPO_ROOT
from verisched.targets.gemmini import compile_program, run_program
from verisched.targets.gemmini.instrs import acc_out

REPO = REPO_ROOT  # the source tree, or $VERISCHED_REPO (a private consistent build)

C_DRIVER = r"""
#include <math.h>
#include "gemmini.h"
int main(void) {
  long long x, sm, se, act;
  while (scanf("%lld %lld %lld %lld", &x, &sm, &se, &act) == 4) {
    elem_t e = gemmini_sim_scale_to_elem((int64_t)x, ldexpf((float)sm, (int)se));
    if (act && e < 0) e = 0;
    printf("%d\n", (int)e);
  }
  return 0;
}
"""


def split_float32(f: np.float32) -> tuple[int, int]:
    """(sm, se) with f == sm * 2^se exactly and |sm| < 2^24 (the model's scale)."""
    if f == 0:
        return 0, 0
    m, e = math.frexp(float(f))
    return int(m * 2**24), e - 24


def cases(seed: int, n: int) -> list[tuple[int, int, int, int]]:
    """Random int32 accumulator values and float32 scales, plus the edge cases:
    ties, values whose float conversion rounds, tiny, subnormal and huge scales."""
    rng = np.random.default_rng(seed)
    out: list[tuple[int, int, int, int]] = [
        (3, 1, -1, 0), (5, 1, -1, 0), (-5, 1, -1, 0), (-7, 1, -1, 1), (1000, 1, 0, 0),
        (2**25 + 3, 1, -19, 0), (2**31 - 1, 1, -24, 0), (-(2**31), 1, -24, 0),
        (25, *split_float32(np.float32(0.1)), 0), (2**31 - 1, 1, 100, 0),
        (-(2**31), 1, 100, 1), (2**31 - 1, 1, -149, 0), (7, 0, 0, 0), (-300, -3, -2, 0),
    ]
    mags = [2**7, 2**16, 2**24, 2**26, 2**31]
    for _ in range(n):
        hi = int(rng.choice(mags))
        x = int(rng.integers(-hi, hi)) if hi < 2**31 else int(rng.integers(-(2**31), 2**31))
        kind = rng.integers(0, 5)
        if kind == 4:  # x * 2^-s within (float32 rounding of x) of a tie k + 1/2
            s = int(rng.integers(20, 28))
            tie = (2 * int(rng.integers(-120, 120)) + 1) * 2 ** (s - 1)
            ulp = 2 ** max(0, tie.bit_length() - 24)
            x = int(np.clip(tie + int(rng.integers(-ulp // 2, ulp // 2 + 1)), -(2**31), 2**31 - 1))
            out.append((x, 1, -s, int(rng.integers(0, 2))))
            continue
        if kind == 3:  # a large value scaled into the int8 range: float rounding matters
            x = int(rng.integers(2**24, 2**31)) * int(rng.choice([-1, 1]))
            f = np.float32(rng.uniform(-130.0, 130.0) / x)
        elif kind == 0:  # a typical requantization scale
            f = np.float32(rng.uniform(2.0**-20, 4.0))
        elif kind == 1:  # any finite float32
            f = np.frombuffer(rng.integers(0, 2**32, dtype=np.uint32).tobytes(), np.float32)[0]
            if not np.isfinite(f):
                f = np.float32(1.0)
        else:  # a power of two times a small odd number: exact ties are likely
            f = np.float32(np.ldexp(float(rng.integers(1, 8) * 2 - 1), int(rng.integers(-12, 2))))
        sm, se = split_float32(f)
        out.append((x, sm, se, int(rng.integers(0, 2))))
    return out


def coq_acc_out(tmp_path: Path, inputs: list[tuple[int, int, int, int]]) -> list[int]:
    """Evaluate `gemmini_acc_out` on every input inside Coq."""
    tup = "; ".join(f"(({x}, {sm}, {se}), {'true' if a else 'false'})"
                    for x, sm, se, a in inputs)
    src = tmp_path / "AccOut.v"
    src.write_text(
        "From Coq Require Import ZArith List. Import ListNotations.\n"
        "From Verisched Require Import Targets.Gemmini.\nOpen Scope Z_scope.\n"
        f"Definition cases : list (Z * Z * Z * bool) := [{tup}].\n"
        "Eval vm_compute in map (fun '(x, sm, se, a) => gemmini_acc_out sm se a x) cases.\n")
    proc = subprocess.run(["coqc", "-Q", str(REPO / "coq"), "Verisched", str(src)],
                          capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    body = proc.stdout[proc.stdout.index("[") + 1:proc.stdout.rindex("]")]
    return [int(t) for t in re.findall(r"-?\d+", body)]


def sim_acc_out(tmp_path: Path, inputs: list[tuple[int, int, int, int]]) -> list[int]:
    """Evaluate the simulator's output path on every input."""
    src = tmp_path / "acc_out.c"
    src.write_text(C_DRIVER)
    exe = compile_program([src], tmp_path / "acc_out", cflags=["-lm"])
    stdin = "".join(f"{x} {sm} {se} {a}\n" for x, sm, se, a in inputs)
    res = run_program(exe, [], stdin=stdin)
    assert res.returncode == 0, res.stdout + res.stderr
    return [int(t) for t in res.stdout.split()]


@pytest.mark.parametrize("seed", [0, 1])
def test_coq_output_path_matches_simulator(tmp_path: Path, seed: int) -> None:
    inputs = cases(seed, 400)
    want = sim_acc_out(tmp_path, inputs)
    got = coq_acc_out(tmp_path, inputs)
    assert len(got) == len(want) == len(inputs)
    bad = [(inp, g, w) for inp, g, w in zip(inputs, got, want, strict=True) if g != w]
    assert not bad, f"Coq model differs from the simulator on (x, sm, se, act): {bad[:10]}"
    x, sm, se, act = (np.array(c, dtype=np.int64) for c in zip(*inputs, strict=True))
    numpy_out = acc_out(x, sm, se, act).tolist()
    assert numpy_out == want
