"""gemmini_loop_ws in the simulator: the loop against the single instructions it stands for.

tests/gemmini_c/loop_ws.c runs one matmul twice, as gemmini_loop_ws calls and as a
hand-written sequence of mvin / preload / compute / mvout; here both outputs and both
accumulator images must agree bit for bit, and the output must agree with numpy, on
random sizes that are mostly not multiples of 16, with row strides wider than the
matrices, with and without bias (int32 or int8), narrow or full-width C, and K split
over two loop calls as Gemmini's tiled_matmul does.  Also gemmini_config_norm and the
performance-counter API (include/gemmini_perf.h), through tests/gemmini_c/perf_counters.c.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from verisched.targets.gemmini import compile_program, run_program

C_DIR = Path(__file__).parent / "gemmini_c"


@pytest.fixture(scope="module")
def loop_exe(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The loop_ws driver, built once for the module."""
    out = tmp_path_factory.mktemp("gemmini_loop") / "loop_ws"
    return compile_program([C_DIR / "loop_ws.c"], out)


def reference(a: np.ndarray, b: np.ndarray, d: np.ndarray, scale: np.float32,
              relu: bool, full: bool) -> np.ndarray:
    """C = act(sat8(rne(float32(A @ B + D) * scale))), or the raw int32 sum if full."""
    acc = a.astype(np.int64) @ b.astype(np.int64) + d.astype(np.int64)
    assert np.all(np.abs(acc) < 2**31)
    acc32 = acc.astype(np.int32)
    if full:
        return acc32  # full-width mvout: raw, no scale, no activation
    c = np.clip(np.rint(acc32.astype(np.float32) * scale), -128, 127).astype(np.int8)
    return np.maximum(c, 0).astype(np.int8) if relu else c


def run_case(exe: Path, tmp: Path, m: int, n: int, k: int, pads: tuple[int, int, int],
             relu: bool, scale: float, bias: int, full: bool, split: bool,
             seed: int) -> dict[str, int]:
    """Run one case; return the loop run's counters (printed by the driver)."""
    rng = np.random.default_rng(seed)
    lda, ldb, ldc = k + pads[0], n + pads[1], n + pads[2]
    a = rng.integers(-128, 128, size=(m, lda), dtype=np.int8)
    b = rng.integers(-128, 128, size=(k, ldb), dtype=np.int8)
    if bias == 2:
        d = rng.integers(-128, 128, size=(m, n), dtype=np.int8)
    else:
        d = rng.integers(-(2**20), 2**20, size=(m, n), dtype=np.int32)
    in_file, out_file = tmp / "in.bin", tmp / "out.bin"
    in_file.write_bytes(a.tobytes() + b.tobytes() + d.tobytes())
    scale32 = np.float32(scale)
    args = [str(v) for v in (m, n, k, lda, ldb, ldc, int(relu))]
    args += [f"{float(scale32):.9g}", str(bias), str(int(full)), str(int(split)),
             str(in_file), str(out_file)]
    result = run_program(exe, args)
    assert result.returncode == 0, result.stderr
    raw = out_file.read_bytes()
    ctype = np.int32 if full else np.int8
    c_bytes = m * ldc * np.dtype(ctype).itemsize
    tiles = -(-m // 16) * -(-n // 16)
    acc_bytes = tiles * 256 * 4
    assert len(raw) == 2 * c_bytes + 2 * acc_bytes
    c_loop = np.frombuffer(raw[:c_bytes], dtype=ctype).reshape(m, ldc)
    c_seq = np.frombuffer(raw[c_bytes:2 * c_bytes], dtype=ctype).reshape(m, ldc)
    acc_loop = raw[2 * c_bytes:2 * c_bytes + acc_bytes]
    acc_seq = raw[2 * c_bytes + acc_bytes:]
    # Bit for bit: the loop is the sequence of single instructions it stands for.
    assert c_loop.tobytes() == c_seq.tobytes()
    assert acc_loop == acc_seq
    # And both are the matmul.
    dd = np.zeros((m, n), dtype=np.int64) if bias == 0 else d
    np.testing.assert_array_equal(c_loop[:, :n], reference(a[:, :k], b[:, :n], dd, scale32,
                                                           relu, full))
    # Columns past N (the row stride's padding) are never written.
    assert not c_loop[:, n:].any()
    # The CPU issued six commands per loop_ws (read_cycles counts those, not the unrolled ones).
    calls = 2 if split and k > 16 else 1
    assert f"loop_ws issued {6 * calls}" in result.stdout
    line = next(s for s in result.stdout.splitlines()
                if s.startswith("loop_ws ") and "issued" not in s)
    words = line.split()
    return {words[i]: int(words[i + 1]) for i in range(0, len(words), 2)}


@pytest.mark.parametrize(("m", "n", "k"), [(1, 1, 1), (16, 16, 16), (17, 33, 47), (64, 64, 64),
                                           (5, 80, 3), (70, 9, 100), (33, 130, 70)])
@pytest.mark.parametrize("bias", [0, 1, 2])
def test_loop_ws_fixed_shapes(loop_exe: Path, tmp_path: Path, m: int, n: int, k: int,
                              bias: int) -> None:
    counters = run_case(loop_exe, tmp_path, m, n, k, (0, 0, 0), True, 1 / 512, bias, False,
                        False, m * n + k)
    # One loop_ws: five configuration commands and the loop; what it unrolled, by tiles.
    ti, tj, tk = -(-m // 16), -(-n // 16), -(-k // 16)
    assert counters["loop_ws"] == 1 and counters["loop_ws_config"] == 5
    a_moves = ti * -(-tk // 4)
    b_moves = tk * -(-tj // 4)
    d_moves = (ti * (-(-tj // 4) if bias == 2 else tj)) if bias else 0
    c_moves = ti * -(-tj // 4)
    assert counters["loop_unrolled"] == a_moves + b_moves + d_moves + 2 * ti * tj * tk + c_moves


@settings(max_examples=40, deadline=None, derandomize=True)
@given(
    m=st.integers(1, 90),
    n=st.integers(1, 90),
    k=st.integers(1, 120),
    pads=st.tuples(st.integers(0, 20), st.integers(0, 20), st.integers(0, 20)),
    relu=st.booleans(),
    scale=st.sampled_from([1.0, 0.5, 1 / 64, 1 / 300, 0.0123, 1 / 4096, -1 / 256]),
    bias=st.sampled_from([0, 1, 2]),
    full=st.booleans(),
    split=st.booleans(),
    seed=st.integers(0, 2**32 - 1),
)
def test_loop_ws_random(loop_exe: Path, tmp_path_factory: pytest.TempPathFactory, m: int,
                        n: int, k: int, pads: tuple[int, int, int], relu: bool, scale: float,
                        bias: int, full: bool, split: bool, seed: int) -> None:
    # C's tiles must fit half of the accumulator (512 rows, 32 tiles of 16): a larger C
    # is refused by the simulator (test_loop_ws_misuse), as by the hardware's unroller.
    assume(-(-m // 16) * -(-n // 16) <= 32)
    run_case(loop_exe, tmp_path_factory.mktemp("loop"), m, n, k, pads, relu, scale, bias, full,
             split, seed)


@pytest.mark.parametrize(("case", "message"), [
    ("stride", "load configuration 0 must be set with stride"),
    ("transpose", "not modelled"),
    ("fit", "does not fit half of the accumulator"),
    ("pad", "must be < DIM"),
])
def test_loop_ws_misuse(loop_exe: Path, case: str, message: str) -> None:
    result = run_program(loop_exe, ["err", case])
    assert result.returncode != 0
    assert result.sim_error is not None and "gemmini_loop_ws(" in result.sim_error
    assert message in result.sim_error


# ---- gemmini_config_norm and the counter API (gemmini_perf.h) -------------------------


def test_counter_api_and_config_norm(tmp_path: Path) -> None:
    exe = compile_program([C_DIR / "perf_counters.c"], tmp_path / "perf")
    result = run_program(exe)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "PASS perf_counters" in result.stdout
    assert result.counters["config_norm"] == 2


@pytest.mark.parametrize(("case", "message"), [
    ("err_norm", "one-bit fields"),
    ("err_event", "does not exist"),
])
def test_counter_api_misuse(tmp_path: Path, case: str, message: str) -> None:
    exe = compile_program([C_DIR / "perf_counters.c"], tmp_path / "perf")
    result = run_program(exe, [case])
    assert result.returncode != 0
    assert result.sim_error is not None and message in result.sim_error
