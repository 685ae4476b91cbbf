"""The hardware conv loop instruction gemmini_loop_conv_ws, lowered.

`gemmini_loop_conv_ws sm se act x w bias NB H W C KO KH KW`
(coq/Targets/GemminiLoopConv.v) is by definition the per-tile program of single
instructions; GemminiConv.v proves the layer equal to it (qconv_loop_conv_ws) and
derives `qconv_loop`.  Here: the registry's specification is Coq's definition; the
lowered kernel (targets/gemmini/conv_loop.py: hardware conv loops over tiles, the
input moved pixel by pixel, no im2col matrix in DRAM) agrees with numpy, with the
reference interpreter and with the per-tile program lowered instruction by
instruction, on sizes that are not multiples of 16, including channel counts too
large for one hardware loop; and it issues far fewer instructions.
"""

from __future__ import annotations

import numpy as np
import pytest
from gemmini_checks import conv_acc, specs_agree_with_coq
from gemmini_reference import quantize

from verisched import pipeline
from verisched.codegen.errors import KernelCallError, LowerError
from verisched.pybridge.coqterm import parse_program
from verisched.pybridge.instrs import alpha_equal
from verisched.pybridge.interp import evaluate
from verisched.pybridge.session import REPO_ROOT
from verisched.pybridge.terms import IVar
from verisched.targets.gemmini import build
from verisched.targets.gemmini.instrs import split_scale
from verisched.targets.gemmini.lower import lower_gemmini
from verisched.targets.gemmini.sim import compile_program, run_program

NB, H, W, C, KO, KH, KW = (IVar(v) for v in ("NB", "H", "W", "C", "KO", "KH", "KW"))
CONV = "gemmini_loop_conv_ws sm se act x w bias NB H W C KO KH KW"
ENV = {"x": (NB, H, W, C), "w": (KH, KW, C, KO), "bias": (KO,)}
INSTR_KEYS = ("config_ex", "config_ld", "config_st", "mvin", "mvin2", "mvin3", "mvout",
              "preload", "compute_preloaded", "compute_accumulated", "flush", "fence")


def issued(c: dict[str, int]) -> int:
    """Instructions the CPU issued: single ones plus seven per conv loop (six per matmul
    loop), not what the loops unrolled."""
    return sum(c[k] for k in INSTR_KEYS) + c["loop_ws"] + c["loop_ws_config"] \
        + c["loop_conv_ws"] + c["loop_conv_ws_config"] - c["loop_unrolled"]


def run(kernel, shape: tuple[int, ...], scale: float, relu: bool, seed: int):
    nb, h, wd, c, ko, kh, kw = shape
    rng = np.random.default_rng(seed)
    ins = {"x": rng.integers(-128, 128, (nb, h, wd, c), dtype=np.int8),
           "w": rng.integers(-128, 128, (kh, kw, c, ko), dtype=np.int8),
           "bias": rng.integers(-2**16, 2**16, (ko,), dtype=np.int32)}
    sm, se = split_scale(scale)
    sizes = {"NB": nb, "H": h, "W": wd, "C": c, "KO": ko, "KH": kh, "KW": kw, "sm": sm,
             "se": se, "act": int(relu)}
    res = build.run(kernel, ins, sizes)
    want = quantize(conv_acc(ins["x"], ins["w"], ins["bias"]), scale, relu)
    np.testing.assert_array_equal(res.out, want)
    return res, ins, sizes


def test_conv_loop_spec_agrees_with_coq(coq) -> None:
    """The registry's template is GemminiLoopConv.v's definition (printed, parsed back)."""
    specs_agree_with_coq(coq, "Targets.GemminiLoopConv",
                         "(x w : Z -> Z -> Z -> Z -> gint) (bias : Z -> gint) "
                         "(NB H W C KO KH KW sm se : Z) (act : bool)", [CONV])


# (NB, H, W, C, KO, KH, KW)
@pytest.mark.parametrize("shape", [(1, 3, 3, 1, 1, 3, 3), (1, 5, 7, 3, 5, 3, 3),
                                   (2, 9, 20, 17, 33, 3, 3), (1, 6, 18, 40, 70, 3, 2),
                                   (1, 4, 4, 16, 16, 1, 1)])
def test_conv_loop_kernel_matches_per_tile_program(shape) -> None:
    """The kernel against numpy and against the interpreter, which evaluates the
    specification: the per-tile program of single instructions (the bias broadcast is a
    generation, not a DRAM tensor, so that program is not lowered on its own)."""
    loop = parse_program(CONV)
    kernel = lower_gemmini(loop, ENV, name="convws")
    assert any("gemmini_loop_conv_ws(" in s for s in kernel.body)
    res, ins, sizes = run(kernel, shape, 1 / 701, True, seed=sum(shape))
    got = evaluate(loop, {a: v.astype(np.int64) for a, v in ins.items()}, sizes, np.int64)
    np.testing.assert_array_equal(got, res.out)
    c = res.counters
    assert c["loop_conv_ws"] >= 1 and c["loop_conv_ws_config"] == 6 * c["loop_conv_ws"]
    nb, h, wd, cc, ko, kh, kw = shape
    assert c["macs_useful"] == nb * (h - kh + 1) * (wd - kw + 1) * ko * kh * kw * cc
    # The CPU issued the configuration and seven commands per loop, nothing else.
    assert issued(c) == c["config_ex"] + c["config_st"] + c["fence"] + c["flush"] \
        + 7 * c["loop_conv_ws"], c


@pytest.mark.parametrize("shape", [(1, 10, 10, 300, 40, 3, 3), (1, 40, 40, 16, 16, 3, 3)])
def test_conv_loop_kernel_large_tiles(shape) -> None:
    """Channels too many for one hardware loop (split, accumulating) and an image too
    large for one tile: against numpy."""
    kernel = lower_gemmini(parse_program(CONV), ENV, name="convws")
    res, _, _ = run(kernel, shape, 1 / 4096, False, seed=3)
    assert res.counters["loop_conv_ws"] > 1


def test_a_large_kernel_gets_a_smaller_tile_and_one_too_large_is_refused(tmp_path) -> None:
    """22 x 22 taps over 16 channels: no tile of 16 input channels fits half the
    scratchpad, one of fewer does (the kernel called abort() for these valid sizes); 65
    x 65 taps fit no tile at all: refused at the kernel's entry, as a requirement the C
    file states (error 2, the output untouched), and by the Python side, named."""
    kernel = lower_gemmini(parse_program(CONV), ENV, name="convws",
                           sizes=["NB", "H", "W", "C", "KO", "KH", "KW", "sm", "se", "act"])
    res, _, _ = run(kernel, (1, 22, 22, 16, 16, 22, 22), 1 / 4096, False, seed=5)
    assert res.counters["loop_conv_ws"] == 2  # 8 input channels a call
    c_file = build.render(kernel, harness=False)
    assert [t for t, _ in kernel.requirements] == [
        "(stride + KH - 1) * (stride + KW - 1) + KH * KW <= 8192, one output pixel's window "
        "and weights in half the scratchpad (gemmini_loop_conv_ws)"]
    assert "abort()" not in c_file
    sizes = dict(NB=1, H=65, W=65, C=1, KO=16, KH=65, KW=65, sm=1, se=0, act=0)
    with pytest.raises(KernelCallError, match=r"break the requirement \(stride \+ KH - 1\)"):
        build.shapes(kernel, sizes)
    calls = [f"convws(x, w, b, 1, {hk}, {hk}, {c}, 16, {hk}, {hk}, 1, 0, 0, o)"
             for hk, c in ((65, 1), (22, 16))]
    got = _call_from_c(tmp_path, kernel, c_file, "x[65 * 65 * 16], w[65 * 65 * 16 * 16], o[16]",
                       calls)
    assert got == ["2 7", "0 0"]  # zero inputs: 0


def _call_from_c(tmp_path, kernel, c_file: str, arrays: str, calls: list[str]) -> list[str]:
    """Each call from a C caller built with ASan and UBSan, the output first filled with
    7s: `convws_error` and the output's first element after each."""
    (tmp_path / "convws.c").write_text(c_file)
    (tmp_path / "convws.h").write_text(build.header(kernel))
    lines = ['#include <stdio.h>', '#include <string.h>', '#include "convws.h"',
             "int main(void) {", f"  static int8_t {arrays};", "  static int32_t b[16];"]
    for call in calls:
        lines += ["  memset(o, 7, sizeof o);", f"  {call};",
                  '  printf("%d %d\\n", convws_error, o[0]);']
    (tmp_path / "caller.c").write_text("\n".join([*lines, "  return 0;", "}"]) + "\n")
    exe = compile_program([tmp_path / "caller.c", tmp_path / "convws.c"], tmp_path / "caller",
                          cflags=["-fsanitize=address,undefined", "-g"])
    got = run_program(exe, [])
    assert got.returncode == 0, got.stderr
    return got.stdout.split("\n")[:len(calls)]


def test_an_output_scale_that_is_not_a_finite_float_is_refused(tmp_path) -> None:
    """sm * 2^se beyond float32 (1 * 2^128, INT_MAX * 2^120): config_st took an infinity
    and the simulator aborted (SIGABRT, "scale must be finite"), found only after the
    build.  The kernel now refuses it at its entry (error 2, the output untouched) and the
    Python side first, naming the scale; 2^127 and 2^-1000 (zero) still run."""
    kernel = lower_gemmini(parse_program(CONV), ENV, name="convws",
                           sizes=["NB", "H", "W", "C", "KO", "KH", "KW", "sm", "se", "act"])
    base = dict(NB=1, H=3, W=3, C=1, KO=16, KH=1, KW=1, act=0)
    for sm, se in ((1, 128), (2147483647, 120), (-3, 127)):
        with pytest.raises(KernelCallError, match=rf"output scale sm \* 2\^se = {sm} \* "
                                                  rf"2\^{se} is not a finite float32"):
            build.shapes(kernel, {**base, "sm": sm, "se": se})
    for sm, se in ((1, 127), (1, -1000), (2**24 - 1, -30), (1 - 2**24, 0)):
        build.shapes(kernel, {**base, "sm": sm, "se": se})
    # A significand a float cannot hold (|sm| >= 2^24, gemmini_scale_ok): rounded by
    # (float)sm, the kernel would scale by another number than the proved one.
    for sm in (2**24, -2**24, 2**24 + 1):
        with pytest.raises(KernelCallError, match=rf"= {sm} \* 2\^-30 has a significand "
                                                  rf"sm = {sm} not below 2\^24 in magnitude"):
            build.shapes(kernel, {**base, "sm": sm, "se": -30})
    calls = [f"convws(x, w, b, 1, 3, 3, 1, 16, 1, 1, {sm}, {se}, 0, o)"
             for sm, se in ((1, 128), (2147483647, 120), (1, 127), (1, -1000),
                            (16777217, -30), (-16777216, -30), (16777215, -30))]
    got = _call_from_c(tmp_path, kernel, build.render(kernel, harness=False),
                       "x[9], w[16], o[9 * 16]", calls)
    assert got == ["2 7", "2 7", "0 0", "0 0", "2 7", "2 7", "0 0"]
    # The test itself, in a file built with -ffast-math: `x - x == 0` was folded to true
    # there (-ffinite-math-only), so an infinite scale passed; it reads the bits now.
    (tmp_path / "fm.c").write_text(
        '#include "convws.c"\n#include <stdio.h>\n'
        "int main(void) { volatile int sm = 1, big = 128, huge = 200, ok = 127;\n"
        '  printf("%d %d %d\\n", vs_scale_finite(sm, big), vs_scale_finite(sm, huge),\n'
        "         vs_scale_finite(sm, ok)); return 0; }\n")
    exe = compile_program([tmp_path / "fm.c"], tmp_path / "fm", cflags=["-O2", "-ffast-math"])
    assert run_program(exe, []).stdout.split() == ["0", "0", "1"]


def test_derived_conv_loop_kernel(coq) -> None:
    """GemminiConv.v's qconv_loop, replayed: the layer rewritten into its unrolling, then
    `use_instr gemmini_loop_conv_ws`; lowered to hardware conv loops; against numpy."""
    dp = pipeline.load(REPO_ROOT / "coq/Examples/GemminiConv.v", "qconv_loop")
    checked = pipeline.check(dp)
    assert alpha_equal(checked.program.expr, parse_program(CONV))
    lowered = pipeline.lower(checked, "gemmini")
    kernel = lowered.kernel
    # the hardware loop's requirement, stated with the derivation's hypotheses
    assert "qconv_loop requires (stride + KH - 1) * (stride + KW - 1) + KH * KW <= 8192" \
        in pipeline.render(lowered).c
    for shape in [(1, 8, 9, 20, 24, 3, 3), (2, 5, 5, 3, 17, 3, 3)]:
        res, _, _ = run(kernel, shape, 1 / 97, False, seed=sum(shape))
        assert res.counters["loop_conv_ws"] >= 1
        # No im2col matrix: the input moves hold each pixel's channels once per tile.
        assert res.counters["mvin"] > 0


def test_conv_loop_needs_the_whole_output() -> None:
    prog = parse_program(f"GEN [ i < 2 ] ({CONV})")
    with pytest.raises(LowerError, match="must be the whole program"):
        lower_gemmini(prog, ENV, name="bad")


def test_conv_loop_operands_must_be_whole_tensors() -> None:
    env = dict(ENV, w=(KH, KW, KO, C))
    with pytest.raises(LowerError, match="must have extents"):
        lower_gemmini(parse_program(CONV), env, name="bad")


def test_sizes_no_buffer_could_have_are_refused(tmp_path) -> None:
    """NB x 2^16 x 2^16 x 16 int8s (2^67 bytes at NB = INT_MAX): every extent an int, but
    no caller's buffer so large; the kernel refuses it at entry (error 2, the output
    untouched) rather than form offsets past what a pointer addresses, and the Python
    side first, naming the buffer.  A size that fits still runs."""
    kernel = lower_gemmini(parse_program(CONV), ENV, name="convws",
                           sizes=["NB", "H", "W", "C", "KO", "KH", "KW", "sm", "se", "act"])
    huge = dict(NB=2**31 - 1, H=2**16, W=2**16, C=16, KO=16, KH=1, KW=1, sm=1, se=0, act=0)
    with pytest.raises(KernelCallError, match=r"output of shape \(2147483647, 65536, 65536, "
                                              r"16\) is too large"):
        build.shapes(kernel, huge)
    calls = ["convws(x, w, b, 2147483647, 65536, 65536, 16, 16, 1, 1, 1, 0, 0, o)",
             "convws(x, w, b, 1, 3, 3, 1, 16, 1, 1, 1, 0, 0, o)"]
    got = _call_from_c(tmp_path, kernel, build.render(kernel, harness=False),
                       "x[9 * 16], w[16 * 16], o[9 * 16]", calls)
    assert got == ["2 7", "0 0"]
