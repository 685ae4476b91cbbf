"""`verisched bench gemmini`: ResNet-50 layers on Gemmini, ours against Exo, by counters.

Layers (batch 4, the Exo thesis's Gemmini evaluation, Sec. 7.1, Fig. 7-1:
"tensor shapes ... from those in a ResNet-50 DNN with a batch-size of four"):
  matmuls (M x K -> N):  fc 4 x 2048 -> 1000, and the 1x1 convolutions as matmuls
    res2 (4*56*56) x 64 -> 256, res3 (4*28*28) x 128 -> 512,
    res4 (4*14*14) x 256 -> 1024, res5 (4*7*7) x 512 -> 2048;
  3x3 convolutions (stride 1; the input is given padded, so the output keeps its size):
    res2 56x56 64 -> 64, res3 28x28 128 -> 128, res4 14x14 256 -> 256, res5 7x7 512 -> 512;
  the downsampling 3x3 convolution of res3 (stride 2, padding 1): 56x56 128 -> 28x28 128
    ("res3 3x3/2"), where only the strided rows of ours apply (the others are stride 1
    without padding and say n/a).

Contenders, run in the same invocation on the functional simulator
(src/verisched/targets/gemmini/include/gemmini.h; it has no timing model, so
the comparison is by its counters: instructions by kind, bytes moved):
  ours  the derivations of coq/Examples/GemminiMatmul.v (qmatmul_nobias_gemmini,
        the layer without bias, as Exo's) and GemminiConv.v (qconv_gemmini: im2col
        in DRAM by the CPU, then the matmul schedule; with a bias, loaded into the
        accumulator), replayed through the bridge and lowered by the gemmini target;
  ours panel  GemminiMatmul.v's qmatmul_gemmini_panel (matmul layers): A staged once per
        16-row block as a panel of every K block (moved 64 columns at a time by the
        lowering) and reused by every column block; it has a bias (int32, loaded into
        the accumulator: its bytes are a separate column); K is fixed per layer (the
        panel's rows must be static), as Exo's partial_eval fixes all sizes;
  exo   Exo's own Gemmini code (exo-lang, exo.platforms.gemmini's standard matmul
        schedule, benchmarks/gemmini_exo.py) for the same matmul; a convolution is
        given to it as the matmul of its im2col matrix (computed on the host and
        not counted, as ours is not either).  Exo's schedule needs M a multiple of
        16 and N, K of 64: other shapes run zero-padded, and the padding is counted.
  ours staged  GemminiMatmul.v's qmatmul_gemmini_staged: all of B staged once, A as a row
        panel per row block, so every block of A and B is moved in exactly once; its
        hypotheses (cdiv K 16 <= 16, cdiv N 16 <= 63: B fits the scratchpad) hold only for
        some layers, the others say so; K and N fixed per layer;
  loop_ws (ours)  GemminiMatmul.v's qmatmul_nobias_loop: the layer as ONE instruction,
        gemmini_loop_ws (coq/Targets/GemminiLoop.v: its specification is the per-tile program
        it unrolls into), lowered to Gemmini's hardware loop over blocks of output tiles; a
        convolution as the matmul of its im2col matrix (host, not counted, as for Exo), no
        bias.  "instrs" counts what the CPU issues (six
        per hardware loop); the per-kind columns count what the accelerator executes,
        unrolled loops included;
  loop_conv_ws (ours)  GemminiConv.v's qconv_loop (3x3 convolutions): the layer, with its
        bias, as ONE instruction, gemmini_loop_conv_ws (coq/Targets/GemminiLoopConv.v),
        lowered to Gemmini's hardware conv loops over tiles (targets/gemmini/conv_loop.py):
        the loop moves each input pixel into the scratchpad itself (on-chip im2col), so
        there is no im2col matrix in DRAM, on the host or anywhere; seven CPU-issued
        instructions per hardware loop.  Against the row "ours" of the same layer (the same
        convolution and bias without the loop: im2col in DRAM, single instructions), this
        is the count of instructions with and without it.  On "res3 3x3/2" the row is
        GemminiConv.v's qconv_strided_loop (gemmini_loop_conv_ws_strided: the stride and
        the padding passed to the hardware loop), and Exo and loop_ws get the matmul of the
        strided, padded im2col matrix;
  im2col on chip (ours)  GemminiConv.v's qconv_im2col (3x3 convolutions): the layer, with
        its bias, in single instructions with the im2col on chip: each A tile is 16
        consecutive output pixels (across output-row ends, so every tile but the last is
        full and the computes are at the bound) moved straight from the NHWC input by
        gemmini_mvin_im2col, one mvin per run of consecutive pixels and 64 channels
        (targets/gemmini/im2col.py); the weights staged once per block of NJ column tiles
        (NJ the most the scratchpad holds, balanced over the blocks: `im2col_nj`) and
        reused by every pixel tile; the bias broadcast by stride-0 moves.  C, KH, KW and
        NJ are fixed per layer (the staged weights' rows are static).  On "res3 3x3/2" the
        row is GemminiConv.v's qconv_strided_im2col (gemmini_mvin_im2col_strided: pixels
        st C apart per mvin, the padding zero-filled from DRAM address 0);
Every output is checked bit for bit against numpy before its counters are used.
The minimum of compute instructions is the utilization bound ceil(M/16) *
ceil(N/16) * ceil(K/16); the minimum bytes are each input read once.
Writes gemmini.md, gemmini.json (the counters the chart shows) and gemmini.png into
--out-dir atomically.
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as cm  # noqa: E402
import _plots  # noqa: E402
import gemmini_exo as exo_peer  # noqa: E402
from gemmini_reference import (  # noqa: E402
    matmul_acc,
    min_computes,
    min_dram_bytes,
    quantize,
)

from verisched import pipeline  # noqa: E402
from verisched.codegen.errors import PreconditionError  # noqa: E402
from verisched.pybridge.session import REPO_ROOT  # noqa: E402
from verisched.targets.gemmini.instrs import split_scale  # noqa: E402
from verisched.targets.gemmini.sim import GemminiSimError  # noqa: E402


@dataclass
class Run:
    """One run of a kernel on the simulator: its output and the simulator's counters."""

    out: np.ndarray
    counters: dict[str, int]


# Shown by `verisched bench --help` (read without importing this module).
PEERS = "Exo's Gemmini code (PyPI exo-lang; optional)"
DURATION = "about 5 min (282 s measured, with Exo)"


def run_kernel(kernel, inputs: dict, sizes: dict) -> Run:
    out = kernel.call(inputs, sizes)
    return Run(out, dict(kernel.counters))


@dataclass(frozen=True)
class Layer:
    """A layer; a convolution is NB images of H x W x C (padded input) and a KHxKW kernel."""

    name: str
    kind: str  # "matmul" | "conv"
    m: int
    n: int
    k: int
    conv: tuple[int, int, int, int, int, int, int] | None = None  # NB, H, W, C, KO, KH, KW
    stride: int = 1
    pad: int = 0  # zero padding of a convolution (0: the input is given padded)

    @property
    def out_hw(self) -> tuple[int, int]:
        """A convolution's output rows and columns."""
        _nb, h, w, _c, _ko, kh, kw = self.conv  # type: ignore[misc]
        return ((h + 2 * self.pad - kh) // self.stride + 1,
                (w + 2 * self.pad - kw) // self.stride + 1)


def conv_layer(name: str, out: int, c: int, ko: int, nb: int = 4, kh: int = 3) -> Layer:
    h = out + kh - 1
    return Layer(name, "conv", nb * out * out, ko, kh * kh * c, (nb, h, h, c, ko, kh, kh))


LAYERS = [
    Layer("fc", "matmul", 4, 1000, 2048),
    Layer("res2 1x1", "matmul", 4 * 56 * 56, 256, 64),
    Layer("res3 1x1", "matmul", 4 * 28 * 28, 512, 128),
    Layer("res4 1x1", "matmul", 4 * 14 * 14, 1024, 256),
    Layer("res5 1x1", "matmul", 4 * 7 * 7, 2048, 512),
    conv_layer("res2 3x3", 56, 64, 64),
    conv_layer("res3 3x3", 28, 128, 128),
    conv_layer("res4 3x3", 14, 256, 256),
    conv_layer("res5 3x3", 7, 512, 512),
    # res3's first 3x3 (ResNet-50 v1.5 downsamples there): 56x56 -> 28x28, stride 2, pad 1.
    Layer("res3 3x3/2", "conv", 4 * 28 * 28, 128, 9 * 128, (4, 56, 56, 128, 128, 3, 3),
          stride=2, pad=1),
]

INSTR_KEYS = ("config_ex", "config_ld", "config_st", "mvin", "mvin2", "mvin3", "mvout",
              "preload", "compute_preloaded", "compute_accumulated", "flush", "fence")


@dataclass
class Result:
    impl: str
    counters: dict[str, int]
    note: str = ""
    extra: dict[str, object] = field(default_factory=dict)

    @property
    def instructions(self) -> int:
        """Instructions the CPU issued: the single ones, and six per gemmini_loop_ws (five
        configuration commands and the loop), seven per gemmini_loop_conv_ws, not the single
        instructions the loops unrolled into (the per-kind counters include those)."""
        return sum(self.counters.get(k, 0) for k in INSTR_KEYS) + self.loop_instructions \
            - self.counters.get("loop_unrolled", 0)

    @property
    def loop_instructions(self) -> int:
        """The hardware loops' own instructions (gemmini_loop_ws, gemmini_loop_conv_ws and
        their configuration commands)."""
        return self.get("loop_ws", "loop_ws_config", "loop_conv_ws", "loop_conv_ws_config")

    def get(self, *keys: str) -> int:
        return sum(self.counters.get(k, 0) for k in keys)


def im2col(x: np.ndarray, kh: int, kw: int, st: int = 1, pd: int = 0) -> np.ndarray:
    """NHWC input -> (N*OH*OW) x (KH*KW*C), rows in (n, q, p) order, columns (s, r, c);
    stride st, zero padding pd."""
    nb, h, w, c = x.shape
    oh, ow = (h + 2 * pd - kh) // st + 1, (w + 2 * pd - kw) // st + 1
    xp = np.zeros((nb, h + 2 * pd, w + 2 * pd, c), dtype=x.dtype)
    xp[:, pd:pd + h, pd:pd + w, :] = x
    cols = np.empty((nb, oh, ow, kh, kw, c), dtype=x.dtype)
    for s in range(kh):
        for r in range(kw):
            cols[:, :, :, s, r, :] = xp[:, s:s + st * (oh - 1) + 1:st,
                                        r:r + st * (ow - 1) + 1:st, :]
    return cols.reshape(nb * oh * ow, kh * kw * c)


def scale_for(k: int) -> float:
    """An output scale that keeps most outputs inside int8 (so rounding is exercised)."""
    return float(np.float32(1.0 / (64.0 * np.sqrt(k))))


def loop_ws_result(layer: Layer, kernel, a: np.ndarray, b: np.ndarray, scale: float,
                   relu: bool) -> Result:
    """The loop row: GemminiMatmul.v's qmatmul_nobias_loop (the layer as one gemmini_loop_ws
    instruction, coq/Targets/GemminiLoop.v), lowered to hardware loops over blocks of output
    tiles (targets/gemmini/loops.py), on the matmul (a convolution's im2col matrix, built on
    the host and not counted, as for Exo), no bias, checked against numpy."""
    sm, se = split_scale(scale)
    sizes = {"M": a.shape[0], "N": b.shape[1], "K": a.shape[1], "sm": sm, "se": se,
             "act": int(relu)}
    res = run_kernel(kernel, {"A": a, "B": b}, sizes)
    if not np.array_equal(res.out, quantize(matmul_acc(a, b), scale, relu)):
        raise SystemExit(f"bench gemmini: ours (loop_ws) is WRONG on {layer.name}")
    note = (f"{res.counters.get('loop_ws', 0)} hardware loops, unrolled by Gemmini into "
            f"{res.counters.get('loop_unrolled', 0)} instructions")
    if layer.kind == "conv":
        note += "; im2col on the host, no bias (as Exo)"
    return Result("loop_ws (ours)", res.counters, note)


def loop_conv_ws_result(layer: Layer, kernel, inputs: dict, sizes: dict,
                        want: np.ndarray) -> Result:
    """The conv loop row: GemminiConv.v's qconv_loop (the layer with its bias as one
    gemmini_loop_conv_ws instruction, coq/Targets/GemminiLoopConv.v), lowered to hardware
    conv loops (targets/gemmini/conv_loop.py), checked against numpy."""
    res = run_kernel(kernel, inputs, sizes)
    if not np.array_equal(res.out.reshape(want.shape), want):
        raise SystemExit(f"bench gemmini: ours (loop_conv_ws) is WRONG on {layer.name}")
    note = (f"{res.counters.get('loop_conv_ws', 0)} hardware conv loops, unrolled by Gemmini "
            f"into {res.counters.get('loop_unrolled', 0)} instructions; with bias, no im2col "
            "matrix (on-chip)")
    if layer.stride != 1 or layer.pad:
        note += (f"; qconv_strided_loop: stride {layer.stride}, padding {layer.pad} passed to "
                 "the loop")
    return Result("loop_conv_ws (ours)", res.counters, note)


def im2col_nj(layer: Layer) -> int:
    """Column tiles per weight block of qconv_im2col: as many as the scratchpad holds
    (its hypothesis KH KW cdiv(C, 16) NJ <= 1020, at most 64 for the accumulator, at
    most the layer's), then spread evenly over the blocks that takes."""
    _nb, _h, _w, c, ko, kh, kw = layer.conv  # type: ignore[misc]
    tiles = -(-ko // 16)
    most = max(1, min(64, 1020 // (kh * kw * -(-c // 16)), tiles))
    blocks = -(-tiles // most)
    return -(-tiles // blocks)


def im2col_result(layer: Layer, kernel, inputs: dict, sizes: dict, want: np.ndarray,
                  nj: int) -> Result:
    """The on-chip im2col row: GemminiConv.v's qconv_im2col (gemmini_mvin_im2col tiles of
    16 pixels across row ends, weights staged per block of NJ column tiles), checked
    against numpy."""
    res = run_kernel(kernel, inputs, {k: v for k, v in sizes.items()
                                      if k not in ("C", "KH", "KW")})
    if not np.array_equal(res.out.reshape(want.shape), want):
        raise SystemExit(f"bench gemmini: ours (im2col on chip) is WRONG on {layer.name}")
    blocks = -(-layer.n // (16 * nj))
    note = (f"NJ = {nj}: weights staged once per block of {nj} column tiles ({blocks} "
            f"block{'s' if blocks > 1 else ''}); the pixels moved on chip, one mvin per row "
            "piece; with bias, no im2col matrix")
    if strided(layer):
        note += (f"; qconv_strided_im2col: stride {layer.stride}, padding {layer.pad}, the "
                 "pixels in the padding zero-filled from DRAM address 0")
    return Result("im2col on chip (ours)", res.counters, note)


def strided(layer: Layer) -> bool:
    """A convolution with a stride or a padding (only the strided conv loop row applies)."""
    return layer.kind == "conv" and (layer.stride != 1 or layer.pad != 0)


STRIDE1_ONLY = ("n/a: {} is derived for stride 1 without padding (the input given padded); "
                "this layer has a stride and a padding")


def run_layer(layer: Layer, kernels: dict, use_exo: bool,
              seed: int) -> tuple[list[Result], str]:
    rng = np.random.default_rng(seed)
    scale = scale_for(layer.k)
    sm, se = split_scale(scale)
    relu = True
    results: list[Result] = []
    if layer.kind == "matmul":
        a = rng.integers(-128, 128, (layer.m, layer.k), dtype=np.int8)
        b = rng.integers(-128, 128, (layer.k, layer.n), dtype=np.int8)
        want = quantize(matmul_acc(a, b), scale, relu)
        kernel = kernels["matmul"]
        sizes = {"M": layer.m, "N": layer.n, "K": layer.k, "sm": sm, "se": se, "act": 1}
        ours = run_kernel(kernel, {"A": a, "B": b}, sizes)
        got = ours.out
    else:
        nb, h, w, c, ko, kh, kw = layer.conv  # type: ignore[misc]
        x = rng.integers(-128, 128, (nb, h, w, c), dtype=np.int8)
        wt = rng.integers(-128, 128, (kh, kw, c, ko), dtype=np.int8)
        bias = rng.integers(-2**12, 2**12, (ko,), dtype=np.int32)
        a = im2col(x, kh, kw, layer.stride, layer.pad)
        b = wt.reshape(kh * kw * c, ko)
        want = quantize(matmul_acc(a, b) + bias, scale, relu)
        sizes = {"NB": nb, "H": h, "W": w, "C": c, "KO": ko, "KH": kh, "KW": kw,
                 "sm": sm, "se": se, "act": 1}
        ours = None if strided(layer) else \
            run_kernel(kernels["conv"], {"x": x, "w": wt, "bias": bias}, sizes)
        got = want if ours is None else ours.out.reshape(layer.m, layer.n)
    if not np.array_equal(got, want):
        raise SystemExit(f"bench gemmini: ours is WRONG on {layer.name} "
                         f"({int((got != want).sum())} elements differ)")
    results.append(Result("ours", {}, STRIDE1_ONLY.format("qconv_gemmini")) if ours is None
                   else Result("ours", ours.counters,
                               "with bias (DRAM->acc)" if layer.kind == "conv" else ""))
    if layer.kind == "matmul" and "panel" in kernels:
        pk = kernels["panel"](layer.k)
        if isinstance(pk, str):
            results.append(Result("ours panel", {}, pk))
        else:
            d = rng.integers(-2**12, 2**12, (layer.m, layer.n), dtype=np.int32)
            psizes = {"M": layer.m, "N": layer.n, "sm": sm, "se": se, "act": 1}
            pres = run_kernel(pk, {"A": a, "B": b, "D": d}, psizes)
            if not np.array_equal(pres.out, quantize(matmul_acc(a, b) + d, scale, relu)):
                raise SystemExit(f"bench gemmini: ours (panel) is WRONG on {layer.name}")
            results.append(Result("ours panel", pres.counters, "with bias (DRAM->acc)"))
    if layer.kind == "matmul" and "staged" in kernels:
        sk = kernels["staged"](layer.k, layer.n)
        if isinstance(sk, str):
            results.append(Result("ours staged", {}, sk))
        else:
            d = rng.integers(-2**12, 2**12, (layer.m, layer.n), dtype=np.int32)
            ssizes = {"M": layer.m, "sm": sm, "se": se, "act": 1}
            sres = run_kernel(sk, {"A": a, "B": b, "D": d}, ssizes)
            if not np.array_equal(sres.out, quantize(matmul_acc(a, b) + d, scale, relu)):
                raise SystemExit(f"bench gemmini: ours (staged) is WRONG on {layer.name}")
            results.append(Result("ours staged", sres.counters, "with bias (DRAM->acc)"))
    if "loop_ws" in kernels:
        results.append(loop_ws_result(layer, kernels["loop_ws"], a, b, scale, relu))
    # The strided rows (conv loop, on-chip im2col) take the stride and the padding too.
    conv_sizes = {**sizes, "st": layer.stride, "pd": layer.pad} if strided(layer) else sizes
    if layer.kind == "conv" and "loop_conv_ws" in kernels:
        results.append(loop_conv_ws_result(
            layer, kernels["loop_conv_strided" if strided(layer) else "loop_conv_ws"],
            {"x": x, "w": wt, "bias": bias}, conv_sizes, want))
    if layer.kind == "conv" and "im2col" in kernels:
        nj = im2col_nj(layer)
        ik = kernels["im2col_strided" if strided(layer) else "im2col"](c, kh, kw, nj)
        if isinstance(ik, str):
            results.append(Result("im2col on chip (ours)", {}, ik))
        else:
            results.append(im2col_result(layer, ik, {"x": x, "w": wt, "bias": bias},
                                         conv_sizes, want, nj))
    note = ""
    if use_exo:
        t0 = time.perf_counter()
        try:
            ex = exo_peer.run_layer(a, b, scale, relu)
        except GemminiSimError as exc:
            # E.g. its schedule's B buffer (K/64 blocks of 16x64) outgrows the scratchpad.
            why = str(exc).split("gemmini-sim error: ")[-1].strip()
            results.append(Result("exo", {}, f"FAILED: {why}"))
            return results, why
        if layer.kind == "conv":
            want = quantize(matmul_acc(a, b), scale, relu)  # Exo's layer has no bias
        if not np.array_equal(ex.out, want):
            raise SystemExit(f"bench gemmini: Exo's code is WRONG on {layer.name}")
        pad = "" if ex.padded == (layer.m, layer.n, layer.k) else \
            "padded to {}x{}x{}".format(*ex.padded)
        results.append(Result("exo", ex.counters, pad,
                              {"seconds": time.perf_counter() - t0}))
        note = pad
    return results, note


def computes(r: Result) -> int:
    """Compute instructions the accelerator executed (unrolled loops included)."""
    return r.get("compute_preloaded", "compute_accumulated")


def dram_in(r: Result) -> int:
    """Bytes moved in from DRAM, into the scratchpad and into the accumulator (the bias)."""
    return r.get("dram_to_spad_bytes", "dram_to_acc_bytes")


def explain_computes(layer: Layer, ours: Result) -> list[str]:
    """Why a row's compute count is above the utilization bound (the conv loop's rows).

    Gemmini's conv loop computes one output row's pixels per compute instruction: the
    unroller's compute tile is I = min(ocols - ocol, DIM) pixels of the row (gemmini.h
    sp_tiled_conv and LoopConv.scala), never pixels of two rows; so when the output width
    OW is not a multiple of 16, each row ends in a partial tile, and the count is
    ceil(OW / 16) / (OW / 16) times the bound over the flattened M = NB OH OW.  No choice
    of the loop's arguments changes that; the single-instruction schedule that assembles
    a 16-row tile from pieces of several rows (`im2col on chip (ours)`, qconv_im2col)
    reaches the bound."""
    bound = min_computes(layer.m, layer.n, layer.k)
    got = computes(ours)
    if got <= bound or layer.conv is None or ours.impl != "loop_conv_ws (ours)":
        return [f"{layer.name}, {ours.impl}: {got} computes, {got / bound:.2f}x the bound "
                f"{bound}."] if got > bound else []
    nb = layer.conv[0]
    oh, ow = layer.out_hw
    per_row = -(-ow // 16)
    return [f"{layer.name}, {ours.impl}: {got} computes, {got / bound:.2f}x the bound {bound}: "
            f"the hardware conv loop's compute tile holds pixels of one output row only "
            f"(LoopConv.scala / gemmini.h sp_tiled_conv: I = min(ocols - ocol, DIM)), and "
            f"each of the {nb * oh} output rows is {ow} pixels wide: {per_row} tile(s) per "
            f"row where {ow}/16 = {ow / 16:.2f} would do.  "
            "The `im2col on chip (ours)` row (single instructions, tiles of 16 pixels "
            "across row ends, moved on chip one row piece per mvin" +
            (", the padding zero-filled" if strided(layer) else "") +
            ") and the `loop_ws (ours)` row (im2col on the host) are at the bound."]


# The rows that keep a convolution's im2col on chip (no im2col matrix in DRAM).
ONCHIP = ("loop_conv_ws (ours)", "im2col on chip (ours)")


def verdict(layer: Layer, results: list[Result]) -> str:
    """One markdown row: which derived rows meet the issue's bar on this layer (instructions
    <= Exo's, DRAM bytes in <= Exo's, computes at the bound), and which of them keep the
    im2col on chip (a convolution's bar)."""
    bound = min_computes(layer.m, layer.n, layer.k)
    exo = next((r for r in results if r.impl == "exo" and r.counters), None)
    ok = [r.impl for r in results if r.impl != "exo" and r.counters
          and computes(r) == bound
          and (exo is None or (r.instructions <= exo.instructions
                               and dram_in(r) <= dram_in(exo)))]
    onchip = "-" if layer.kind != "conv" else (
        ", ".join(f"`{i}`" for i in ok if i in ONCHIP) or
        "none (the conv loop's computes: see below)")
    exo_txt = ("failed" if exo is None and any(r.impl == "exo" for r in results)
               else "not run" if exo is None else f"{exo.instructions} instrs, "
               f"{dram_in(exo)} B in")
    return (f"| {layer.name} | {exo_txt} | {', '.join(f'`{i}`' for i in ok) or 'none'} "
            f"| {onchip} |")


def explain(layer: Layer, ours: Result, exo: Result | None) -> list[str]:
    """Where the counts differ, and why, from the schedules' shapes."""
    if exo is None:
        return []
    m, n, k = layer.m, layer.n, layer.k
    who = f"{layer.name}, {ours.impl}"
    panel = ours.impl == "ours panel"
    out = []
    o_in, e_in = ours.get("dram_to_spad_bytes"), exo.get("dram_to_spad_bytes")
    if o_in > e_in:
        a_ours = m * k * (1 if panel else -(-n // 16))
        out.append(f"{who}: moves {o_in / e_in:.2f}x Exo's bytes into the scratchpad: this "
                   f"schedule loads each 16x16 block of A once per 16-column block of the "
                   f"output ({a_ours / 1e6:.1f} MB of A), Exo's loads a 16x64 panel once per "
                   f"64 columns; both reload B once per 16-row block.")
    o_i, e_i = ours.instructions, exo.instructions
    if o_i > e_i:
        o_mv = ours.get("mvin", "mvin2", "mvin3")
        e_mv = exo.get("mvin", "mvin2", "mvin3")
        b_moves = -(-m // 16) * -(-n // 16) * -(-k // 16)
        if ours.impl == "ours staged":
            why = "every block of A and B is moved once, B one 16x16 block per move"
        elif panel:
            why = (f"B is moved one 16x16 block per product ({b_moves} moves) where Exo moves "
                   f"16x64 blocks (a quarter as many)")
        else:
            why = "A and B are moved one 16x16 block per product where Exo moves 16x64 blocks"
        tiles = -(-m // 16) * -(-n // 16)
        bias = (f"; the bias adds {tiles} moves into the accumulator"
                if ours.impl != "ours" else "")
        out.append(f"{who}: issues {o_i / e_i:.2f}x Exo's instructions ({o_mv} moves-in vs "
                   f"{e_mv}): {why}{bias}; we issue no zeroing moves (Exo: 4 per output "
                   "block) and exactly the minimum of products.")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="verisched bench gemmini",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("--layers", nargs="+", default=None, choices=[x.name for x in LAYERS],
                    metavar="LAYER",
                    help="subset of layer names (default: all): " +
                         ", ".join(repr(x.name) for x in LAYERS))
    ap.add_argument("--no-exo", action="store_true", help="ours only")
    ap.add_argument("--seed", type=cm.seed_int, default=0)
    ap.add_argument("--out-dir", type=cm.out_dir_arg, default=str(cm.RESULTS_DIR))
    args = ap.parse_args(argv)
    layers = [x for x in LAYERS if args.layers is None or x.name in args.layers]
    use_exo = not args.no_exo
    if use_exo and not exo_peer.available():
        print("bench gemmini: exo-lang is not installed (pip install exo-lang); running ours "
              "only")
        use_exo = False
    started = datetime.datetime.now(datetime.timezone.utc)
    t_start = time.perf_counter()
    print("replaying coq/Examples/GemminiMatmul.v and GemminiConv.v ...", flush=True)
    ex = REPO_ROOT / "coq" / "Examples"
    mm = pipeline.load_many(ex / "GemminiMatmul.v",
                            ["qmatmul_nobias_gemmini", "qmatmul_gemmini_panel",
                             "qmatmul_gemmini_staged", "qmatmul_nobias_loop"])
    cv = pipeline.load_many(ex / "GemminiConv.v", ["qconv_gemmini", "qconv_loop",
                                                   "qconv_im2col", "qconv_strided_loop",
                                                   "qconv_strided_im2col"])

    def build_ours(dp: pipeline.DerivedProgram, name: str,
                   fix: dict[str, int] | None = None) -> object:
        """Our kernel for `dp` with `fix`, or why its hypotheses exclude those sizes."""
        try:
            checked = pipeline.check(dp, fix=fix, name=name)
        except PreconditionError as exc:
            return f"n/a: {str(exc).split('violates ', 1)[-1].split(' of ', 1)[0]} excludes " \
                   f"{', '.join(f'{k}={v}' for k, v in (fix or {}).items())}"
        return pipeline.compile_checked(checked, "gemmini")

    def im2col_kernel(derivation: str, name: str):
        """An on-chip im2col kernel per layer: C, KH, KW and NJ fixed (static rows)."""
        return lambda c, kh, kw, nj: build_ours(cv[derivation], name,
                                                {"C": c, "KH": kh, "KW": kw, "NJ": nj})

    kernels = {"matmul": build_ours(mm["qmatmul_nobias_gemmini"], "ours_matmul"),
               "conv": build_ours(cv["qconv_gemmini"], "ours_conv"),
               "loop_conv_ws": build_ours(cv["qconv_loop"], "ours_loop_conv"),
               "loop_conv_strided": build_ours(cv["qconv_strided_loop"], "ours_loop_conv_st"),
               "panel": lambda k: build_ours(mm["qmatmul_gemmini_panel"], "ours_panel",
                                             {"K": k}),
               "staged": lambda k, n: build_ours(mm["qmatmul_gemmini_staged"], "ours_staged",
                                                 {"K": k, "N": n}),
               "loop_ws": build_ours(mm["qmatmul_nobias_loop"], "ours_loop"),
               "im2col": im2col_kernel("qconv_im2col", "ours_im2col"),
               "im2col_strided": im2col_kernel("qconv_strided_im2col", "ours_im2col_st")}
    headers = ["layer", "M x N x K", "impl", "instrs", "loop instrs", "mvin", "preload+compute",
               "mvout",
               "config", "DRAM->spad B", "DRAM->acc B", "acc->DRAM B", "computes / min",
               "note"]
    rows: list[list[str]] = []
    notes: list[str] = []
    summary: list[tuple[Layer, list[Result]]] = []
    verdicts: list[str] = []
    estimate = cm.Estimate(len(layers))
    for i, layer in enumerate(layers):
        estimate.next(f"{layer.name}: {layer.m} x {layer.n} x {layer.k}")
        results, _ = run_layer(layer, kernels, use_exo, args.seed + i)
        bound = min_computes(layer.m, layer.n, layer.k)
        for r in results:
            if not r.counters:
                rows.append([layer.name, f"{layer.m} x {layer.n} x {layer.k}", r.impl,
                             *(["-"] * 10), r.note])
                continue
            comp = computes(r)
            rows.append([layer.name, f"{layer.m} x {layer.n} x {layer.k}", r.impl,
                         f"{r.instructions}", f"{r.loop_instructions}",
                         f"{r.get('mvin', 'mvin2', 'mvin3')}",
                         f"{r.get('preload') + comp}", f"{r.get('mvout')}",
                         f"{r.get('config_ex', 'config_ld', 'config_st')}",
                         f"{r.get('dram_to_spad_bytes')}", f"{r.get('dram_to_acc_bytes')}",
                         f"{r.get('acc_to_dram_bytes')}", f"{comp} / {bound}", r.note])
        exo = next((r for r in results if r.impl == "exo" and r.counters), None)
        summary.append((layer, results))
        for r in results:
            if r.impl != "exo" and r.counters:
                notes += explain(layer, r, exo) + explain_computes(layer, r)
        verdicts.append(verdict(layer, results))
    elapsed = time.perf_counter() - t_start
    print()
    print(cm.text_table(headers, rows))
    if notes:
        print("\nWhere ours costs more than Exo, or computes more than the bound:")
        for s in notes:
            print(" -", s)
    min_lines = []
    for layer, _ in summary:
        spad, acc = min_dram_bytes(layer.m, layer.n, layer.k)
        min_lines.append(f"| {layer.name} | {min_computes(layer.m, layer.n, layer.k)} | {spad} "
                         f"| {acc} |")
    md = [
        "# Gemmini: ResNet-50 layers (batch 4), ours vs Exo",
        "",
        f"Run {started:%Y-%m-%d %H:%M} UTC at commit {cm.source_revision()}, "
        f"{elapsed:.0f} s, on the functional simulator "
        "(instruction and byte counters; no timing model).  Command: "
        "`verisched bench gemmini" + (" --no-exo" if not use_exo else "")
        + "`.",
        "",
        "Ours: coq/Examples/GemminiMatmul.v `qmatmul_nobias_gemmini` (matmuls) and "
        "GemminiConv.v `qconv_gemmini` (3x3 convolutions via im2col in DRAM, with an int32 "
        "bias loaded into the accumulator), replayed and lowered by the gemmini target.  "
        "Exo: exo-lang's Gemmini platform, its standard matmul schedule (16x64 output "
        "blocks, 64-deep reduction blocks), on the same matmul or the convolution's im2col "
        "matrix (no bias); shapes that are not multiples run zero-padded.  Every output was "
        "checked bit for bit against numpy.  Rows `loop_ws (ours)`: GemminiMatmul.v "
        "`qmatmul_nobias_loop`, the layer as one "
        "`gemmini_loop_ws` instruction (coq/Targets/GemminiLoop.v), lowered to Gemmini's "
        "hardware loops; `instrs` counts the instructions the CPU issues (six per hardware "
        "loop, column `loop instrs`), the per-kind columns what the accelerator executes, "
        "unrolled loops included.  Rows `loop_conv_ws (ours)` (3x3 layers): GemminiConv.v "
        "`qconv_loop`, the layer with its bias as one `gemmini_loop_conv_ws` instruction "
        "(coq/Targets/GemminiLoopConv.v), lowered to hardware conv loops that move the "
        "input pixels themselves (on-chip im2col: no im2col matrix in DRAM); seven "
        "CPU-issued instructions per loop.  The same layer's `ours` row is it without the "
        "loop (im2col in DRAM, single instructions).  Rows `im2col on chip (ours)` (3x3 "
        "layers): GemminiConv.v `qconv_im2col`, the layer with its bias in single "
        "instructions, the im2col on chip: A tiles of 16 consecutive output pixels across "
        "output-row ends moved from the NHWC input by `gemmini_mvin_im2col` "
        "(coq/Targets/Gemmini.v; one `mvin` per run of consecutive pixels, 64 channels "
        "each), the weights staged once per block of NJ column tiles and reused by every "
        "pixel tile; C, KH, KW and NJ fixed per layer.  Layer `res3 3x3/2`: res3's "
        "downsampling 3x3 convolution (56x56 -> 28x28, stride 2, padding 1); its "
        "`loop_conv_ws (ours)` row is GemminiConv.v `qconv_strided_loop`, the layer as one "
        "`gemmini_loop_conv_ws_strided` instruction (the stride and the padding passed to "
        "the hardware loop, the padding moved in as zeros); `loop_ws (ours)` and Exo get the "
        "matmul of its strided, padded im2col matrix (host, not counted); `ours` and "
        "`im2col on chip (ours)` are derived for stride 1 without padding: n/a.",
        "",
        cm.md_table(headers, rows),
        "",
        "Lower bounds (every schedule): computes = ceil(M/16) ceil(N/16) ceil(K/16); bytes = "
        "each input once, each output once.",
        "",
        "| layer | min computes | min DRAM->spad B | min acc->DRAM B |",
        "| --- | --- | --- | --- |",
        *min_lines,
        "",
        "## The bar, per layer",
        "",
        "Derived rows with instructions <= Exo's, bytes moved in from DRAM (scratchpad and "
        "accumulator) <= Exo's, and computes at the bound (where Exo failed or was not run, "
        "the bound alone); for a 3x3 layer, also which of them moves the pixels on chip.",
        "",
        "| layer | Exo | rows meeting the bar | ... with on-chip im2col |",
        "| --- | --- | --- | --- |",
        *verdicts,
        "",
    ]
    if notes:
        md += ["## Where ours costs more than Exo, or computes more than the bound", "",
               *[f"- {s}" for s in notes], ""]
    fig = plot(summary, Path(args.out_dir),
               "" if use_exo else "Exo was not run (--no-exo, or exo-lang not installed)")
    for p in cm.write_outputs(Path(args.out_dir), "gemmini", "\n".join(md), fig):
        print(f"wrote {p}")
    return 0


def plot(summary: list[tuple[Layer, list[Result]]], out_dir: Path, exo_note: str = ""):
    """Save the counters the chart needs as gemmini.json (so it can be redrawn:
    benchmarks/_plots.py gemmini) and draw it (benchmarks/_plots.py)."""
    data = {"commit": cm.source_revision(), "exo_note": exo_note, "layers": [
        {"name": layer.name, "m": layer.m, "n": layer.n, "k": layer.k,
         "results": [{"impl": r.impl, "note": r.note,
                      "instructions": r.instructions if r.counters else None,
                      "dram_to_spad_bytes": r.get("dram_to_spad_bytes") if r.counters
                      else None, "counters": r.counters} for r in results]}
        for layer, results in summary]}
    out_dir.mkdir(parents=True, exist_ok=True)
    cm.atomic_write(out_dir / "gemmini.json", json.dumps(data, indent=1))
    return _plots.gemmini(data)


if __name__ == "__main__":
    raise SystemExit(main())
