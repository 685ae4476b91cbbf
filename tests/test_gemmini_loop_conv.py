"""gemmini_loop_conv_ws in the simulator: the loop against the single instructions it stands for.

tests/gemmini_c/loop_conv_ws.c runs one quantized NHWC convolution twice, as
gemmini_loop_conv_ws calls over tiles (Gemmini's tiled_conv arithmetic: pointers offset
to the tile, paddings where the window leaves the image, the input channels split over
two calls when asked) and as a hand-written sequence of mvin / preload / compute / mvout
(one pixel per move, A stride 1); here both outputs must agree bit for bit and with a
numpy reference, on random sizes mostly not multiples of 16, strides 1-3 and paddings.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from gemmini_checks import conv_acc
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from verisched.targets.gemmini import compile_program, run_program

C_DIR = Path(__file__).parent / "gemmini_c"


@pytest.fixture(scope="module")
def conv_exe(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The loop_conv_ws driver, built once for the module."""
    out = tmp_path_factory.mktemp("gemmini_loop_conv") / "loop_conv_ws"
    return compile_program([C_DIR / "loop_conv_ws.c"], out)


def reference(x: np.ndarray, w: np.ndarray, bias: np.ndarray, stride: int, pad: int,
              scale: np.float32, relu: bool) -> np.ndarray:
    """act(sat8(rne(float32(bias + conv(x, w)) * scale))), NHWC, zero padding."""
    acc = conv_acc(x, w, bias, stride, pad)
    assert np.all(np.abs(acc) < 2**31)
    out = np.clip(np.rint(acc.astype(np.int32).astype(np.float32) * scale), -128, 127)
    out = out.astype(np.int8)
    return np.maximum(out, 0).astype(np.int8) if relu else out


def run_case(exe: Path, tmp: Path, shape: tuple[int, ...], stride: int, pad: int, relu: bool,
             scale: float, bias_on: bool, split: bool, seed: int) -> str:
    """Run one case, check loop = sequence = numpy; return the driver's stdout."""
    nb, h, wd, c, ko, kh, kw = shape
    rng = np.random.default_rng(seed)
    x = rng.integers(-128, 128, size=(nb, h, wd, c), dtype=np.int8)
    w = rng.integers(-128, 128, size=(kh, kw, c, ko), dtype=np.int8)
    bias = rng.integers(-(2**16), 2**16, size=ko, dtype=np.int32)
    in_file, out_file = tmp / "in.bin", tmp / "out.bin"
    in_file.write_bytes(x.tobytes() + w.tobytes() + bias.tobytes())
    scale32 = np.float32(scale)
    args = [str(v) for v in (nb, h, wd, c, ko, kh, kw, stride, pad, int(relu))]
    args += [f"{float(scale32):.9g}", str(int(bias_on)), str(int(split)), str(in_file),
             str(out_file)]
    result = run_program(exe, args)
    assert result.returncode == 0, result.stderr
    oh, ow = (h + 2 * pad - kh) // stride + 1, (wd + 2 * pad - kw) // stride + 1
    n = nb * oh * ow * ko
    raw = out_file.read_bytes()
    assert len(raw) == 2 * n
    out_loop, out_seq = raw[:n], raw[n:]
    # Bit for bit: the loop is the sequence of single instructions it stands for.
    assert out_loop == out_seq
    expected = reference(x, w, bias if bias_on else np.zeros(ko, np.int32), stride, pad,
                         scale32, relu)
    got = np.frombuffer(out_loop, dtype=np.int8).reshape(nb, oh, ow, ko)
    np.testing.assert_array_equal(got, expected)
    # Seven commands per call issued by the CPU; six of them configuration.
    head = next(s for s in result.stdout.splitlines() if s.startswith("loop_conv_ws calls"))
    calls, issued = int(head.split()[2]), int(head.split()[4])
    assert issued == 7 * calls
    line = next(s for s in result.stdout.splitlines()
                if s.startswith("loop_conv_ws ") and "calls" not in s)
    words = line.split()
    counters = {words[i]: int(words[i + 1]) for i in range(0, len(words), 2)}
    assert counters["loop_conv_ws"] == calls
    assert counters["loop_conv_ws_config"] == 6 * calls
    return result.stdout


# (NB, H, W, C, KO, KH, KW), stride, pad: the 3x3 layers' shape family at small sizes.
@pytest.mark.parametrize(("shape", "stride", "pad"), [
    ((1, 3, 3, 1, 1, 3, 3), 1, 0),
    ((1, 8, 8, 16, 16, 3, 3), 1, 1),
    ((2, 9, 11, 17, 33, 3, 3), 1, 0),
    ((1, 12, 10, 5, 20, 3, 3), 2, 1),
    ((1, 20, 19, 70, 9, 1, 1), 1, 0),
    ((1, 7, 30, 3, 70, 3, 2), 3, 1),
])
@pytest.mark.parametrize("bias_on", [False, True])
def test_loop_conv_ws_fixed_shapes(conv_exe: Path, tmp_path: Path, shape: tuple[int, ...],
                                   stride: int, pad: int, bias_on: bool) -> None:
    run_case(conv_exe, tmp_path, shape, stride, pad, True, 1 / 256, bias_on, False, sum(shape))


def test_loop_conv_ws_split_channels(conv_exe: Path, tmp_path: Path) -> None:
    """Input channels over two calls: bias and no output, then accumulate and store."""
    out = run_case(conv_exe, tmp_path, (1, 10, 9, 40, 24, 3, 3), 1, 1, False, 1 / 512, True,
                   True, 7)
    assert "loop_conv_ws calls 2 " in out


@settings(max_examples=30, deadline=None, derandomize=True)
@given(
    nb=st.integers(1, 2),
    h=st.integers(1, 14),
    wd=st.integers(1, 24),
    c=st.integers(1, 40),
    ko=st.integers(1, 40),
    kh=st.integers(1, 3),
    kw=st.integers(1, 3),
    stride=st.integers(1, 3),
    pad=st.integers(0, 2),
    relu=st.booleans(),
    scale=st.sampled_from([1.0, 1 / 64, 1 / 300, 0.0123, -1 / 256]),
    bias_on=st.booleans(),
    split=st.booleans(),
    seed=st.integers(0, 2**32 - 1),
)
def test_loop_conv_ws_random(conv_exe: Path, tmp_path_factory: pytest.TempPathFactory, nb: int,
                             h: int, wd: int, c: int, ko: int, kh: int, kw: int, stride: int,
                             pad: int, relu: bool, scale: float, bias_on: bool, split: bool,
                             seed: int) -> None:
    # tiled_conv requires kernel_dim > padding: no output row reads padding alone.
    assume(kh <= h + 2 * pad and kw <= wd + 2 * pad and pad < min(kh, kw))
    run_case(conv_exe, tmp_path_factory.mktemp("conv"), (nb, h, wd, c, ko, kh, kw), stride, pad,
             relu, scale, bias_on, split, seed)


@pytest.mark.parametrize(("case", "message"), [
    ("pool", "pooling (no_pool = 0) is not modelled"),
    ("dilation", "kernel_dilation must be 1"),
    ("config_ex", "config_ex must set A_stride = stride"),
    ("fit", "does not fit half of the accumulator"),
    ("field", "does not fit its 8-bit field"),
])
def test_loop_conv_ws_misuse(conv_exe: Path, case: str, message: str) -> None:
    result = run_program(conv_exe, ["err", case])
    assert result.returncode != 0
    assert result.sim_error is not None and "gemmini_loop_conv_ws(" in result.sim_error
    assert message in result.sim_error
