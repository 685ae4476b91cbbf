"""The on-chip im2col: `gemmini_mvin_im2col` and GemminiConv.v's `qconv_im2col`, lowered.

`gemmini_mvin_im2col x NB H W C OH OW s r m c` (coq/Targets/Gemmini.v) is the A tile
of 16 output pixels m .. m+15 (flattened over NB x OH x OW, so a tile crosses the
ends of output rows) at kernel offset (s, r), read from the NHWC input itself;
targets/gemmini/im2col.py issues one mvin per run of consecutive pixels ("row
piece").  GemminiConv.v derives `qconv_im2col` (the layer with the weights staged per
block of NJ column tiles and the pixels moved on chip).  Here: the registry's
specification is Coq's definition; the replayed derivation, lowered and run on the
simulator, equals numpy and the reference interpreter (on the derived and the
original program) bit for bit, on sizes where the pixels, channels and output
channels are not multiples of 16 and C is not a multiple of 64, ReLU on and off; the
input moves are exactly one per row piece, the products one per tile triple; no read
leaves the input under AddressSanitizer; a single-tile program and the refusals of calls
whose reads cannot be proved in bounds.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from gemmini_checks import conv_acc, sanitized_exe, specs_agree_with_coq
from gemmini_reference import quantize

from verisched import pipeline
from verisched.codegen.errors import LowerError
from verisched.pybridge.coqterm import parse_program
from verisched.pybridge.interp import evaluate
from verisched.pybridge.session import REPO_ROOT
from verisched.pybridge.terms import IVar, PCmp
from verisched.targets.gemmini import build
from verisched.targets.gemmini.instrs import split_scale
from verisched.targets.gemmini.lower import lower_gemmini

CALL = "gemmini_mvin_im2col x NB H W C OH OW s r m c"


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


def row_pieces(m: int, ow: int) -> int:
    """Runs of consecutive pixels over all 16-pixel tiles of m output pixels, rows of
    ow pixels: each tile is cut where it crosses the end of an output row."""
    return sum(len({p // ow for p in range(t, min(t + 16, m))}) for t in range(0, m, 16))


def loader(body: list[str], tensor: str) -> str:
    """The counter of the mvin macro that moves `tensor` (one load id per tensor)."""
    for line in body:
        hit = re.search(r"gemmini_extended_(mvin\d?)\(&" + tensor + r"\[", line)
        if hit:
            return hit.group(1)
    raise AssertionError(f"no mvin of {tensor}")


def test_im2col_spec_agrees_with_coq(coq) -> None:
    """The registry's template is Gemmini.v's definition (printed, parsed back)."""
    specs_agree_with_coq(coq, "Targets.Gemmini",
                         "(x : Z -> Z -> Z -> Z -> gint) (NB H W C OH OW s r m c : Z)", [CALL])


@pytest.fixture(scope="module")
def derived(coq):
    return pipeline.load(REPO_ROOT / "coq/Examples/GemminiConv.v", "qconv_im2col")


# (NB, H, W, C, KO, KH, KW, NJ): pixels, channels and output channels mostly not
# multiples of 16, C not a multiple of 64, partial last blocks of NJ column tiles.
SHAPES = [(1, 4, 5, 3, 5, 3, 3, 1), (2, 9, 20, 17, 33, 3, 3, 2), (3, 7, 6, 70, 50, 2, 3, 2),
          (1, 6, 18, 40, 70, 3, 2, 3), (1, 4, 4, 16, 16, 1, 1, 1), (2, 5, 9, 48, 20, 3, 3, 1)]


@pytest.mark.parametrize("shape", SHAPES)
def test_derived_im2col_kernel(derived, shape) -> None:
    """Replayed, fixed (C, KH, KW, NJ: the staged weights' rows), lowered, run on the
    simulator: numpy, the interpreter on the derived and the original program, bit for
    bit; one input move per row piece and one product per (pixel tile, column tile,
    kernel offset, channel tile)."""
    nb, h, wd, c, ko, kh, kw, nj = shape
    relu = sum(shape) % 2 == 0
    fixed = {"C": c, "KH": kh, "KW": kw, "NJ": nj}
    checked = pipeline.check(derived, fix=fixed, name="im2col")
    kernel = pipeline.lower(checked, "gemmini").kernel
    rng = np.random.default_rng(sum(shape))
    ins = {"x": rng.integers(-128, 128, (nb, h, wd, c), dtype=np.int8),
           "w": rng.integers(-128, 128, (kh, kw, c, ko), dtype=np.int8),
           "bias": rng.integers(-2**16, 2**16, (ko,), dtype=np.int32)}
    scale = 1 / 97
    sm, se = split_scale(scale)
    sizes = {"NB": nb, "H": h, "W": wd, "KO": ko, "sm": sm, "se": se, "act": int(relu)}
    res = build.run(kernel, ins, sizes)
    want = quantize(conv_acc(ins["x"], ins["w"], ins["bias"]), scale, relu)
    np.testing.assert_array_equal(res.out, want)
    ints = {a: v.astype(np.int64) for a, v in ins.items()}
    for prog in (derived.expr, derived.original):
        got = evaluate(prog, ints, {**sizes, **fixed}, np.int64)
        np.testing.assert_array_equal(got, want)
    oh, ow = h - kh + 1, wd - kw + 1
    m = nb * oh * ow
    blocks = cdiv(ko, 16 * nj)
    cnt = res.counters
    assert cnt[loader(kernel.body, "x")] == \
        blocks * kh * kw * cdiv(c, 64) * row_pieces(m, ow), cnt
    computes = cnt["compute_preloaded"] + cnt["compute_accumulated"]
    assert computes == cdiv(m, 16) * cdiv(ko, 16) * kh * kw * cdiv(c, 16)


@pytest.mark.parametrize("shape", [(2, 9, 20, 17, 33, 3, 3, 2), (1, 17, 3, 100, 7, 1, 3, 1)])
def test_no_read_outside_the_input_under_sanitizers(derived, shape, tmp_path) -> None:
    """The kernel built with AddressSanitizer and UBSan (the driver allocates each input
    with its exact size, and the simulator reads the DRAM operands through the kernel's
    pointers): no row piece reads outside the input, at sizes whose last pixel tile is
    partial and whose channels end inside a 64-column move."""
    nb, h, wd, c, ko, kh, kw, nj = shape
    checked = pipeline.check(derived, fix={"C": c, "KH": kh, "KW": kw, "NJ": nj}, name="asan")
    kernel = pipeline.lower(checked, "gemmini").kernel
    exe = sanitized_exe(kernel, tmp_path)
    rng = np.random.default_rng(7)
    ins = {"x": rng.integers(-128, 128, (nb, h, wd, c), dtype=np.int8),
           "w": rng.integers(-128, 128, (kh, kw, c, ko), dtype=np.int8),
           "bias": rng.integers(-2**16, 2**16, (ko,), dtype=np.int32)}
    sm, se = split_scale(1 / 97)
    res = build.run(kernel, ins, {"NB": nb, "H": h, "W": wd, "KO": ko, "sm": sm, "se": se,
                                  "act": 0}, exe=exe)
    np.testing.assert_array_equal(res.out, quantize(
        conv_acc(ins["x"], ins["w"], ins["bias"]), 1 / 97, False))


def test_row_pieces_on_a_small_shape(derived) -> None:
    """Output rows of 5 pixels: the 16 pixels of the first tile are 4 pieces (5, 5, 5,
    1), of the second (m = 30: pixels 16 .. 29) 3; each is one mvin of x per kernel
    offset."""
    checked = pipeline.check(derived, fix={"C": 8, "KH": 1, "KW": 1, "NJ": 1}, name="pieces")
    kernel = pipeline.lower(checked, "gemmini").kernel
    rng = np.random.default_rng(0)
    ins = {"x": rng.integers(-128, 128, (2, 3, 5, 8), dtype=np.int8),
           "w": rng.integers(-128, 128, (1, 1, 8, 4), dtype=np.int8),
           "bias": rng.integers(-99, 99, (4,), dtype=np.int32)}
    sm, se = split_scale(1 / 64)
    res = build.run(kernel, ins, {"NB": 2, "H": 3, "W": 5, "KO": 4, "sm": sm, "se": se,
                                  "act": 0})
    np.testing.assert_array_equal(res.out, quantize(
        conv_acc(ins["x"], ins["w"], ins["bias"]), 1 / 64, False))
    assert row_pieces(30, 5) == 4 + 3
    assert res.counters[loader(kernel.body, "x")] == 7
    # Each piece moves its pixels' 8 channels once: the input, exactly.
    assert res.counters["dram_to_spad_bytes"] == 2 * 3 * 5 * 8 + 8 * 4


# A 1x1 convolution of the top-left OH x OW window, one im2col tile per 16-channel
# block (no generation over channel tiles: the single-tile lowering), as a matmul.
WINDOW = """trunc_r (NB * OH * OW) (flatten (cdiv (NB * OH * OW) 16) 16
  (GEN [ io < cdiv (NB * OH * OW) 16 ]
    transpose KO 16 (trunc_r KO (flatten (cdiv KO 16) 16 (GEN [ jo < cdiv KO 16 ]
      transpose 16 16
        (tlet c := in_mem GEMMINI_ACC
           (SUM [ ko < cdiv C 16 ]
              tlet a := in_mem GEMMINI_SPAD
                (gemmini_mvin_im2col x NB H W C OH OW 0 0 (io * 16) (ko * 16)) in
              tlet b := in_mem GEMMINI_SPAD (gemmini_mvin B (ko * 16) (jo * 16) C KO) in
              gemmini_matmul a b) in
         gemmini_mvout sm se act c (io * 16) (jo * 16) (NB * OH * OW) KO))))))"""
WENV = {"x": tuple(IVar(v) for v in ("NB", "H", "W", "C")), "B": (IVar("C"), IVar("KO"))}
INSIDE = (PCmp("<=", IVar("OH"), IVar("H")), PCmp("<=", IVar("OW"), IVar("W")))


@pytest.mark.parametrize("dims", [(2, 7, 9, 20, 18, 5, 6), (1, 3, 3, 16, 16, 3, 3),
                                  (3, 4, 11, 33, 5, 2, 10)])
def test_single_tile_moves(dims) -> None:
    """Tile by tile (partial channel tiles tracked to the products): numpy and the
    interpreter."""
    nb, h, wd, c, ko, oh, ow = dims
    prog = parse_program(WINDOW)
    kernel = lower_gemmini(prog, WENV, name="window", assume=INSIDE)
    rng = np.random.default_rng(sum(dims))
    ins = {"x": rng.integers(-128, 128, (nb, h, wd, c), dtype=np.int8),
           "B": rng.integers(-128, 128, (c, ko), dtype=np.int8)}
    sm, se = split_scale(1 / 50)
    sizes = {"NB": nb, "H": h, "W": wd, "C": c, "KO": ko, "OH": oh, "OW": ow, "sm": sm,
             "se": se, "act": 1}
    res = build.run(kernel, ins, sizes)
    a = ins["x"][:, :oh, :ow, :].reshape(-1, c).astype(np.int64)
    want = quantize(a @ ins["B"].astype(np.int64), 1 / 50, True)
    np.testing.assert_array_equal(res.out, want)
    got = evaluate(prog, {k: v.astype(np.int64) for k, v in ins.items()}, sizes, np.int64)
    np.testing.assert_array_equal(got, want)
    m = nb * oh * ow
    assert res.counters[loader(kernel.body, "x")] == cdiv(c, 16) * cdiv(ko, 16) \
        * row_pieces(m, ow)


def test_reads_not_provably_inside_the_input_are_refused() -> None:
    """Without OH <= H the pixels a tile moves may leave the input: refused, naming the
    fact the lowering needs."""
    with pytest.raises(LowerError, match=r"cannot prove s \+ OH <= H"):
        lower_gemmini(parse_program(WINDOW), WENV, name="bad", assume=INSIDE[1:])


def test_input_must_be_a_whole_nhwc_tensor() -> None:
    env = dict(WENV, x=tuple(IVar(v) for v in ("NB", "H", "W", "C", "C")))
    prog = parse_program(WINDOW.replace("im2col x ", "im2col (x _[ 0 ]) "))
    with pytest.raises(LowerError, match="must be a whole 4-D tensor"):
        lower_gemmini(prog, env, name="bad", assume=INSIDE)


def test_extents_must_be_the_inputs() -> None:
    prog = parse_program(WINDOW.replace("x NB H W C OH", "x NB W H C OH"))
    with pytest.raises(LowerError, match="is not provably the input's"):
        lower_gemmini(prog, WENV, name="bad", assume=INSIDE)
