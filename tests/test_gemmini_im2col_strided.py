"""The on-chip im2col of a strided, padded conv: `gemmini_mvin_im2col_strided` and
GemminiConv.v's `qconv_strided_im2col`, lowered.

`gemmini_mvin_im2col_strided x NB H W C OH OW st pd s r m c` (coq/Targets/Gemmini.v)
is the A tile of 16 output pixels m .. m+15 (flattened over NB x OH x OW) at kernel
offset (s, r) of a convolution with stride st and zero padding pd: output pixel
(n, oh, ow) reads x[n][oh st + s - pd][ow st + r - pd], zero in the padding.
targets/gemmini/im2col.py moves each row piece's pixels inside the image with one mvin
(DRAM stride st C) and zero-fills the pixels in the padding from DRAM address 0.  Here:
the registry's specification is Coq's definition; the replayed derivation, lowered and
run on the simulator, equals numpy and the reference interpreter (on the derived and the
original program) bit for bit at strides 1-3 and paddings 0-2, on sizes where the
pixels, channels and output channels are not multiples of 16 and C not of 64; the input
moves and zero fills are exactly the model's below, the products one per tile triple;
no read leaves the input under AddressSanitizer; a stride not provably >= 1 is refused.
"""

from __future__ import annotations

import numpy as np
import pytest
from gemmini_checks import conv_acc, out_dims, sanitized_exe, specs_agree_with_coq
from gemmini_reference import quantize
from test_gemmini_im2col import WENV, WINDOW, cdiv, loader

from verisched import pipeline
from verisched.codegen.errors import LowerError
from verisched.pybridge.coqterm import parse_program
from verisched.pybridge.interp import evaluate
from verisched.pybridge.session import REPO_ROOT
from verisched.targets.gemmini import build
from verisched.targets.gemmini.instrs import split_scale
from verisched.targets.gemmini.lower import lower_gemmini

CALL = "gemmini_mvin_im2col_strided x NB H W C OH OW st pd s r m c"


def moves(nb: int, h: int, wd: int, kh: int, kw: int, st: int, pd: int) -> tuple[int, int]:
    """(mvins of x, zero-filling mvins) per channel group and weight block, summed over
    the kernel offsets and the 16-pixel tiles: each tile is cut into row pieces where it
    crosses an output row's end, and a piece is one mvin of its pixels inside the image
    and one zero fill per run of pixels in the padding on either side of them."""
    oh, ow = out_dims(h, wd, kh, kw, st, pd)
    m = nb * oh * ow
    loads = zeros = 0
    for s in range(kh):
        for r in range(kw):
            for t0 in range(0, m, 16):
                i = t0
                while i < min(t0 + 16, m):
                    q, o = divmod(i, ow)
                    n = min(ow - o, min(t0 + 16, m) - i)
                    inside = [0 <= (q % oh) * st + s - pd < h and 0 <= c * st + r - pd < wd
                              for c in range(o, o + n)]
                    if any(inside):
                        first, last = inside.index(True), n - inside[::-1].index(True)
                        assert all(inside[first:last])  # the pixels inside: one run
                        loads += 1
                        zeros += (first > 0) + (last < n)
                    else:
                        zeros += 1
                    i += n
    return loads, zeros


def test_strided_im2col_spec_agrees_with_coq(coq) -> None:
    """The registry's template is Gemmini.v's definition (printed, parsed back)."""
    specs_agree_with_coq(coq, "Targets.Gemmini",
                         "(x : Z -> Z -> Z -> Z -> gint) (NB H W C OH OW st pd s r m c : Z)",
                         [CALL])


@pytest.fixture(scope="module")
def derived(coq):
    return pipeline.load(REPO_ROOT / "coq/Examples/GemminiConv.v", "qconv_strided_im2col")


def inputs(shape: tuple[int, ...], seed: int) -> dict[str, np.ndarray]:
    nb, h, wd, c, ko, kh, kw = shape[:7]
    rng = np.random.default_rng(seed)
    return {"x": rng.integers(-128, 128, (nb, h, wd, c), dtype=np.int8),
            "w": rng.integers(-128, 128, (kh, kw, c, ko), dtype=np.int8),
            "bias": rng.integers(-2**16, 2**16, (ko,), dtype=np.int32)}


# (NB, H, W, C, KO, KH, KW, NJ, st, pd): ResNet-50's downsampling shape scaled down
# (3x3, stride 2, padding 1), strides 1 and 3, paddings 0 and 2 (a window may lie in
# the padding alone), output rows of 1 to 8 pixels, pixels, channels and output
# channels mostly not multiples of 16, C not a multiple of 64, partial blocks of NJ.
SHAPES = [(2, 9, 11, 20, 33, 3, 3, 2, 2, 1), (1, 14, 14, 70, 40, 3, 3, 1, 2, 1),
          (1, 7, 6, 17, 16, 3, 3, 1, 1, 1), (2, 10, 9, 16, 18, 3, 2, 2, 3, 2),
          (1, 5, 13, 33, 5, 1, 3, 1, 2, 0), (3, 4, 4, 8, 20, 2, 2, 2, 1, 0),
          (1, 1, 9, 12, 7, 3, 3, 1, 2, 2)]


@pytest.mark.parametrize("shape", SHAPES)
def test_derived_strided_im2col_kernel(derived, shape) -> None:
    """Replayed, fixed (C, KH, KW, NJ), lowered, run on the simulator: numpy, the
    interpreter on the derived and the original program, bit for bit; the mvins of x
    and the zero fills are the model's, one product per (pixel tile, column tile,
    kernel offset, channel tile)."""
    nb, h, wd, c, ko, kh, kw, nj, st, pd = shape
    relu = sum(shape) % 2 == 0
    fixed = {"C": c, "KH": kh, "KW": kw, "NJ": nj}
    checked = pipeline.check(derived, fix=fixed, name="im2col_st")
    kernel = pipeline.lower(checked, "gemmini").kernel
    ins = inputs(shape, sum(shape))
    sm, se = split_scale(1 / 97)
    sizes = {"NB": nb, "H": h, "W": wd, "KO": ko, "st": st, "pd": pd, "sm": sm, "se": se,
             "act": int(relu)}
    res = build.run(kernel, ins, sizes)
    want = quantize(conv_acc(ins["x"], ins["w"], ins["bias"], st, pd), 1 / 97, relu)
    np.testing.assert_array_equal(res.out, want)
    ints = {a: v.astype(np.int64) for a, v in ins.items()}
    for prog in (derived.expr, derived.original):
        got = evaluate(prog, ints, {**sizes, **fixed}, np.int64)
        np.testing.assert_array_equal(got, want)
    oh, ow = out_dims(h, wd, kh, kw, st, pd)
    m = nb * oh * ow
    per = cdiv(ko, 16 * nj) * cdiv(c, 64)  # weight blocks x 64-channel groups
    loads, zeros = moves(nb, h, wd, kh, kw, st, pd)
    cnt = res.counters
    mv = loader(kernel.body, "x")
    # The zero fills go through the same mvin macro as x's pixels.
    assert cnt[mv] == per * (loads + zeros), cnt
    computes = cnt["compute_preloaded"] + cnt["compute_accumulated"]
    assert computes == cdiv(m, 16) * cdiv(ko, 16) * kh * kw * cdiv(c, 16)


def test_the_padding_is_zero_filled_not_read(derived) -> None:
    """3x3, stride 2, padding 1 on a 3x3 image: 4 output pixels in one tile.  Every
    pixel x holds is moved exactly where a window covers it (bytes from DRAM: the
    pixels' channels, per kernel offset), and the rest of each tile is zero-filled."""
    shape = (1, 3, 3, 8, 4, 3, 3, 1, 2, 1)
    checked = pipeline.check(derived, fix={"C": 8, "KH": 3, "KW": 3, "NJ": 1}, name="pad")
    kernel = pipeline.lower(checked, "gemmini").kernel
    ins = inputs(shape, 0)
    sm, se = split_scale(1 / 64)
    res = build.run(kernel, ins, {"NB": 1, "H": 3, "W": 3, "KO": 4, "st": 2, "pd": 1,
                                  "sm": sm, "se": se, "act": 0})
    np.testing.assert_array_equal(res.out, quantize(
        conv_acc(ins["x"], ins["w"], ins["bias"], 2, 1), 1 / 64, False))
    # Output (q, p) at offset (s, r) reads (2q + s - 1, 2p + r - 1): inside the 3x3
    # image 16 times over the 9 offsets and 4 pixels (each row s: 1 + 2 + 1 pixel
    # rows, each column likewise), 36 - 16 = 20 pixels zero-filled.
    inside = sum(0 <= 2 * q + s - 1 < 3 and 0 <= 2 * p + r - 1 < 3
                 for s in range(3) for r in range(3) for q in range(2) for p in range(2))
    assert inside == 16
    weights = 3 * 3 * 8 * 4
    assert res.counters["dram_to_spad_bytes"] == inside * 8 + weights
    # Zero rows: the 20 padded pixels, once each (8 channels: one 16-column block).
    assert res.counters["zero_fill_rows"] == 36 - inside
    assert moves(1, 3, 3, 3, 3, 2, 1) == (12, 14)
    assert res.counters[loader(kernel.body, "x")] == 12 + 14


@pytest.mark.parametrize("shape", [(2, 9, 11, 20, 33, 3, 3, 2, 2, 1),
                                   (1, 5, 7, 100, 7, 3, 1, 1, 3, 2)])
def test_no_read_outside_the_input_under_sanitizers(derived, shape, tmp_path) -> None:
    """The kernel built with AddressSanitizer and UBSan (each input allocated with its
    exact size, the simulator reading DRAM through the kernel's pointers): no piece reads
    outside the input, at the image's edges, with paddings of 1 and 2."""
    nb, h, wd, c, ko, kh, kw, nj, st, pd = shape
    checked = pipeline.check(derived, fix={"C": c, "KH": kh, "KW": kw, "NJ": nj}, name="asan")
    kernel = pipeline.lower(checked, "gemmini").kernel
    exe = sanitized_exe(kernel, tmp_path)
    ins = inputs(shape, 7)
    sm, se = split_scale(1 / 97)
    res = build.run(kernel, ins, {"NB": nb, "H": h, "W": wd, "KO": ko, "st": st, "pd": pd,
                                  "sm": sm, "se": se, "act": 0}, exe=exe)
    np.testing.assert_array_equal(res.out, quantize(
        conv_acc(ins["x"], ins["w"], ins["bias"], st, pd), 1 / 97, False))


def test_a_stride_not_provably_positive_is_refused() -> None:
    """The pieces divide by the stride: a literal stride 0 is refused, naming the fact."""
    prog = parse_program(WINDOW.replace("gemmini_mvin_im2col x NB H W C OH OW 0 0",
                                        "gemmini_mvin_im2col_strided x NB H W C OH OW 0 0 0 0"))
    with pytest.raises(LowerError, match=r"cannot prove st >= 1"):
        lower_gemmini(prog, WENV, name="bad")
