"""The hardware conv loop with a stride and a zero padding, derived and lowered.

`gemmini_loop_conv_ws_strided sm se act x w bias NB H W C KO KH KW st pd`
(coq/Targets/GemminiLoopConv.v) is the per-tile program of single instructions whose A
blocks read the image row's pixels `st` apart, zero in the padding; GemminiConv.v proves
the strided, padded layer `qconv_strided` equal to it and derives `qconv_strided_loop`.
Here: the registry's specification is Coq's definition; the replayed derivation, lowered
(targets/gemmini/conv_loop.py: the stride and the paddings passed to the real macro's
arguments, tile by tile) and run on the simulator, equals numpy and the reference
interpreter (on the derived program, i.e. the per-tile specification, and on the
original layer) bit for bit, for strides 1-3, paddings 0-2, pixels and channels not
multiples of 16, ReLU on and off; tiles over columns and over input channels; no read
leaves the input under AddressSanitizer; sizes outside the hardware's range are refused
with a message naming the cause.
"""

from __future__ import annotations

import re
from dataclasses import replace

import numpy as np
import pytest
from gemmini_checks import conv_acc, out_dims, specs_agree_with_coq
from gemmini_reference import quantize

from verisched import pipeline
from verisched.cli import main
from verisched.codegen.errors import KernelCallError, LowerError, PreconditionError
from verisched.pybridge.coqterm import parse_program
from verisched.pybridge.instrs import alpha_equal
from verisched.pybridge.interp import evaluate
from verisched.pybridge.session import REPO_ROOT
from verisched.pybridge.terms import IVar
from verisched.targets.gemmini import build
from verisched.targets.gemmini.instrs import split_scale
from verisched.targets.gemmini.lower import lower_gemmini
from verisched.targets.gemmini.sim import compile_program, run_program
from verisched.targets.gemmini.target import GemminiRunner

CONV = "gemmini_loop_conv_ws_strided sm se act x w bias NB H W C KO KH KW st pd"
NB, H, W, C, KO, KH, KW = (IVar(v) for v in ("NB", "H", "W", "C", "KO", "KH", "KW"))
ENV = {"x": (NB, H, W, C), "w": (KH, KW, C, KO), "bias": (KO,)}
GEMMINI_CONV = REPO_ROOT / "coq/Examples/GemminiConv.v"


def inputs(shape: tuple[int, ...], seed: int) -> dict[str, np.ndarray]:
    nb, h, wd, c, ko, kh, kw = shape
    rng = np.random.default_rng(seed)
    return {"x": rng.integers(-128, 128, (nb, h, wd, c), dtype=np.int8),
            "w": rng.integers(-128, 128, (kh, kw, c, ko), dtype=np.int8),
            "bias": rng.integers(-2**16, 2**16, (ko,), dtype=np.int32)}


def sizes_of(shape: tuple[int, ...], st: int, pd: int, scale: float, relu: bool
             ) -> dict[str, int]:
    nb, h, wd, c, ko, kh, kw = shape
    sm, se = split_scale(scale)
    return {"NB": nb, "H": h, "W": wd, "C": c, "KO": ko, "KH": kh, "KW": kw, "st": st,
            "pd": pd, "sm": sm, "se": se, "act": int(relu)}


def run(kernel, shape: tuple[int, ...], st: int, pd: int, scale: float, relu: bool,
        seed: int, exe=None):
    """Run on the simulator (a built kernel, which checks its preconditions first, or a
    lowered one); the output must be numpy's, bit for bit.  Returns the output, the
    simulator's counters, the inputs and the sizes."""
    ins = inputs(shape, seed)
    sizes = sizes_of(shape, st, pd, scale, relu)
    if isinstance(kernel, GemminiRunner):
        out, counters = kernel.call(ins, sizes), kernel.counters
    else:
        res = build.run(kernel, ins, sizes, exe=exe)
        out, counters = res.out, res.counters
    want = quantize(conv_acc(ins["x"], ins["w"], ins["bias"], st, pd), scale, relu)
    np.testing.assert_array_equal(out, want)
    return out, counters, ins, sizes


def test_strided_spec_agrees_with_coq(coq) -> None:
    """The registry's template is GemminiLoopConv.v's definition (printed, parsed back)."""
    specs_agree_with_coq(coq, "Targets.GemminiLoopConv",
                         "(x w : Z -> Z -> Z -> Z -> gint) (bias : Z -> gint) "
                         "(NB H W C KO KH KW st pd sm se : Z) (act : bool)", [CONV])


@pytest.fixture(scope="module")
def derived(coq):
    return pipeline.load(GEMMINI_CONV, "qconv_strided_loop")


@pytest.fixture(scope="module")
def kernel(derived):
    checked = pipeline.check(derived)
    assert alpha_equal(checked.program.expr, parse_program(CONV))
    built = pipeline.compile_checked(checked, "gemmini")
    assert isinstance(built, GemminiRunner)
    return built


# (NB, H, W, C, KO, KH, KW), stride, padding, ReLU: strides 1-3 and paddings 0-2 (below
# KH and KW), pixels and channels mostly not multiples of 16.
CASES = [
    ((1, 6, 5, 7, 9, 3, 3), 1, 0, False),
    ((1, 9, 11, 17, 33, 3, 3), 1, 1, True),
    ((2, 8, 9, 33, 17, 3, 3), 1, 2, False),
    ((1, 14, 17, 5, 20, 3, 3), 2, 0, True),
    ((2, 13, 11, 19, 21, 3, 3), 2, 1, False),
    ((1, 10, 13, 18, 35, 5, 3), 2, 2, True),
    ((1, 12, 10, 20, 18, 3, 3), 3, 2, False),
    ((1, 7, 30, 3, 70, 3, 2), 3, 1, True),
    ((1, 20, 19, 40, 9, 1, 1), 3, 0, True),
    ((3, 5, 4, 2, 3, 2, 2), 2, 1, False),
]


@pytest.mark.parametrize(("shape", "st", "pd", "relu"), CASES)
def test_derived_strided_kernel(derived, kernel, shape, st, pd, relu) -> None:
    """Replayed, lowered, run: numpy, and the interpreter on the derived program (the
    per-tile specification) and on the original layer, bit for bit; the CPU issues the
    configuration and seven commands per hardware loop, and the array computes exactly the
    layer's products (padding included: the hardware multiplies the zeros it moved)."""
    out, c, ins, sizes = run(kernel, shape, st, pd, 1 / 301, relu, seed=sum(shape) + st + pd)
    ints = {a: v.astype(np.int64) for a, v in ins.items()}
    for prog in (derived.expr, derived.original):
        got = evaluate(prog, ints, sizes, np.int64)
        np.testing.assert_array_equal(got, out)
    nb, h, wd, cc, ko, kh, kw = shape
    oh, ow = out_dims(h, wd, kh, kw, st, pd)
    assert c["loop_conv_ws"] >= 1 and c["loop_conv_ws_config"] == 6 * c["loop_conv_ws"]
    assert c["macs_useful"] == nb * oh * ow * ko * kh * kw * cc
    single = ("config_ex", "config_ld", "config_st", "mvin", "mvin2", "mvin3", "mvout",
              "preload", "compute_preloaded", "compute_accumulated")
    issued = sum(c[k] for k in single) - c["loop_unrolled"]
    assert issued == c["config_ex"] + c["config_st"], c


# Tiles over columns (OW over what half of the accumulator holds for one row) and over
# input channels (too many for one loop, accumulated over calls), strided and padded, so
# windows with and without each of the four paddings occur.
LARGE = [((1, 4, 1201, 5, 7, 3, 3), 2, 1), ((1, 10, 10, 300, 40, 3, 3), 2, 1),
         ((1, 70, 70, 16, 16, 3, 3), 3, 2), ((1, 5, 600, 8, 16, 3, 3), 1, 1)]


@pytest.mark.parametrize(("shape", "st", "pd"), LARGE)
def test_strided_kernel_large_tiles(shape, st, pd) -> None:
    """The instruction lowered on its own: several hardware loops per layer, against
    numpy."""
    k = lower_gemmini(parse_program(CONV), ENV, name="convst")
    run(k, shape, st, pd, 1 / 4096, False, seed=5)
    counters = run(k, shape, st, pd, 1 / 4096, True, seed=6)[1]
    assert counters["loop_conv_ws"] > 1


def test_no_read_outside_the_input_under_sanitizers(derived, tmp_path) -> None:
    """The kernel built with AddressSanitizer and UBSan (the driver allocates each input
    with its exact size; the simulator reads the DRAM operands through the pointers the
    kernel passes): no tile's window reads outside the input, with paddings on every
    side, column tiles and strides whose window ends past the image."""
    lw = pipeline.lower(pipeline.check(derived, name="asan"), "gemmini").kernel
    src = tmp_path / "k.c"
    src.write_text(build.render(lw))
    exe = compile_program([src], tmp_path / "k.exe", cflags=[
        "-O1", "-g", "-fsanitize=address,undefined", "-fno-sanitize-recover=all",
        "-DVERISCHED_GEMMINI_DRIVER"])
    for shape, st, pd in [((2, 13, 11, 19, 21, 3, 3), 2, 1), ((1, 4, 1201, 5, 7, 3, 3), 2, 1),
                          ((1, 12, 10, 20, 18, 3, 3), 3, 2), ((1, 3, 3, 1, 1, 3, 3), 3, 2)]:
        run(lw, shape, st, pd, 1 / 97, False, seed=7, exe=exe)


@pytest.mark.parametrize(("change", "message"), [
    ({"pd": 3}, "HpdH : pd < KH"),
    ({"KW": 2, "pd": 2}, "HpdW : pd < KW"),
    ({"H": 2, "KH": 5, "pd": 1}, "HH : KH <= H + 2 * pd"),
    ({"st": 0}, "Hst : 0 < st"),
    ({"pd": -1}, "Hpd : 0 <= pd"),
])
def test_sizes_outside_the_hypotheses_are_refused(kernel, change, message) -> None:
    """The section's hypotheses are the kernel's preconditions, checked before the
    simulator runs (pd < KH, KW: Gemmini's tiled_conv needs kernel_dim > padding)."""
    shape = (1, 9, 11, 17, 33, 3, 3)
    sizes = {**sizes_of(shape, 2, 1, 1 / 64, False), **change}
    with pytest.raises(PreconditionError, match=re.escape(message)):
        kernel.call(inputs(shape, 0), sizes)


@pytest.mark.parametrize(("st", "pd", "shape", "message"), [
    (1, 3, (1, 9, 11, 17, 33, 3, 3), "padding < KH"),
    (2, -1, (1, 9, 11, 17, 33, 3, 3), "0 <= padding"),
    (256, 0, (1, 300, 300, 1, 1, 1, 1), "stride <= 255"),
])
def test_unsupported_stride_or_padding_stops_the_kernel(st, pd, shape, message,
                                                         tmp_path) -> None:
    """Without the derivation's preconditions (the instruction lowered on its own) the
    kernel itself refuses what the hardware loop cannot do, before any instruction: its
    requirements, stated by the lowering, are refused by the Python side by name and by
    the kernel's entry check with error 2 (it called abort())."""
    k = lower_gemmini(parse_program(CONV), ENV, name="convbad")
    sizes = sizes_of(shape, st, pd, 1 / 64, False)
    want = f"break the requirement {message} (gemmini_loop_conv_ws_strided)"
    with pytest.raises(KernelCallError, match=re.escape(want)):
        build.run(k, inputs(shape, 0), sizes)
    # The driver without its own check of the requirements: the kernel's entry refuses.
    src = build.render(replace(k, assumptions_c=[]))
    assert "abort()" not in src
    (tmp_path / "k.c").write_text(src)
    exe = compile_program([tmp_path / "k.c"], tmp_path / "k.exe",
                          cflags=["-O1", "-DVERISCHED_GEMMINI_DRIVER"])
    files, data = [], inputs(shape, 0)
    for name, _, _, _ in k.inputs:  # in the driver's order
        (tmp_path / f"{name}.bin").write_bytes(data[name].tobytes())
        files.append(str(tmp_path / f"{name}.bin"))
    res = run_program(exe, [str(sizes[a]) for a, _ in k.sizes] + files
                      + [str(tmp_path / "out.bin")])
    assert res.returncode == 2 and "the kernel refused the sizes (error 2)" in res.stderr, \
        res.stderr


def test_strided_loop_needs_the_whole_output() -> None:
    with pytest.raises(LowerError, match="must be the whole program"):
        lower_gemmini(parse_program(f"GEN [ i < 2 ] ({CONV})"), ENV, name="bad")


def test_run_command(derived, capsys) -> None:
    """`verisched run` on the derivation: checked against the interpreter on the derived
    and the original program; sizes breaking a hypothesis are one line on stderr."""
    args = ["run", str(GEMMINI_CONV), "--derivation", "qconv_strided_loop", "--target",
            "gemmini", "--size", "NB=2", "--size", "H=13", "--size", "W=11", "--size", "C=19",
            "--size", "KO=21", "--size", "KH=3", "--size", "KW=3", "--size", "st=2",
            "--size", "sm=1", "--size", "se=-8", "--size", "act=1"]
    assert main([*args, "--size", "pd=1", "--check"]) == 0
    out = capsys.readouterr().out
    assert "reference interpreter on the original program: OK" in out
    assert main([*args, "--size", "pd=3"]) == 1
    err = capsys.readouterr().err
    assert "violate the precondition HpdH : pd < KH" in err and "Traceback" not in err
