"""Gemmini's on-chip im2col: `gemmini_mvin_im2col` lowered to one mvin per row piece.

`gemmini_mvin_im2col x NB H W C OH OW s r m c` (coq/Targets/Gemmini.v) is the A
tile of a stride-1 convolution for the 16 output pixels m .. m+15 (flattened over
the NB x OH x OW output grid) at kernel offset (s, r): row i is the input pixel
x[n][oh + s][ow + r] that output pixel m + i = (n, oh, ow) reads, columns the
channels c .. c+15.  Consecutive output pixels of one output row read consecutive
input pixels, C elements apart in the NHWC input, so the tile is a few runs of
consecutive pixels ("row pieces"), broken where the 16 pixels cross the end of an
output row (an image's end is a row's end).  Each piece is ONE mvin: DRAM stride C
(config_ld), rows = the piece's length, cols = the channels.  The pieces are found
at run time (the sizes are kernel arguments):

    for (i = 0; i < rows; i += len) {
      t = m + i; ow = t mod OW; oh = (t / OW) mod OH; n = t / OW / OH;
      len = min(OW - ow, rows - i);
      mvin(&x[n][oh + s][ow + r][c], tile + i, cols, len);
    }

`rows` = min(16, NB OH OW - m) (the rows past the last output pixel are neither
read nor moved; products read only `rows` rows, Gemmini.v "Partial blocks").  A
generation of such tiles over consecutive channel blocks, `GEN [ t < n ]
gemmini_mvin_im2col ... (16 t + c0)`, into consecutive scratchpad tiles moves up to
four tiles (64 int8 columns, MAX_BYTES) per piece, the blocks DIM rows apart
(config_ld's block stride), as moves.block_load does for matrices.

Every read is in bounds because the lowering proves, from the kernel's facts, what
makes the read's bounds (the second half of the specification's guard) hold on every
row: the extents NB, H, W, C are x's, 0 <= s, s + OH <= H, 0 <= r, r + OW <= W,
m >= 0, c >= 0, and NB, OH, OW >= 0 (so a tile has rows only when the grid is not
empty); a call for which it cannot is refused, naming the fact.

`gemmini_mvin_im2col_strided x NB H W C OH OW st pd s r m c` is the same tile for a
convolution with stride st and zero padding pd: output pixel (n, oh, ow) reads
x[n][oh st + s - pd][ow st + r - pd], zero in the padding.  A row piece's pixels are
st C elements apart (the load's DRAM stride), and the ones inside the image are one
run of it: per piece, the output columns [lo, hi) whose input column is inside the
image, and nothing when its input row is outside, are found at run time, and the piece
is at most three mvins, the padding before and after as mvins from DRAM address 0
(zeros, Gemmini's README):

    ih = oh st + s - pd;  lo = hi = ow + len;
    if (0 <= ih < H) {
      lo = clamp(first ow' with ow' st + r - pd >= 0, ow, ow + len);
      hi = clamp(first ow' with ow' st + r - pd >= W, lo, ow + len);
    }
    mvin(0, tile + i, cols, lo - ow);                                 if lo > ow
    mvin(&x[n][ih][lo st + r - pd][c], tile + i + lo - ow, cols, hi - lo);   if hi > lo
    mvin(0, tile + i + hi - ow, cols, ow + len - hi);                 if ow + len > hi

Every read is inside the input whatever the sizes: the row and the columns are checked
at run time, so the lowering only needs m >= 0, c >= 0, NB, OH, OW >= 0, st >= 1 and
the extents to be x's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from verisched.codegen.cexpr import ctext, ix, smax, smin
from verisched.codegen.errors import LowerError
from verisched.codegen.ir import Buf, Ctx, Dest, Emitter
from verisched.codegen.normal import access_base, show
from verisched.codegen.poly import Poly
from verisched.pybridge.instrs import InstrError, check_call
from verisched.pybridge.terms import Gen, Instr, Var, free_vars, idx_free_vars, is_idx
from verisched.targets.gemmini import config as cfg
from verisched.targets.gemmini.instrs import IM2COL, IM2COL_STRIDED
from verisched.targets.gemmini.moves import LD_MACRO, clip, consecutive_tiles, tile_loop
from verisched.targets.gemmini.onchip import (
    DIM,
    Untrackable,
    onchip_dest,
    record_valid,
)

if TYPE_CHECKING:
    from verisched.targets.gemmini.rules import GemminiRules

__all__ = ["IM2COL", "IM2COL_STRIDED", "IM2COLS", "emit_im2col", "block_im2col"]

# The on-chip im2col moves this module lowers.
IM2COLS = (IM2COL, IM2COL_STRIDED)


@dataclass(frozen=True)
class Tile:
    """One call's geometry, as polynomials over the kernel's C names."""

    x: Buf
    p: dict[str, Poly]  # the index parameters NB H W C OH OW (st pd) s r m c
    rows: Poly          # valid rows: min(16, NB OH OW - m), at least 0
    strided: bool       # gemmini_mvin_im2col_strided (st, pd in p)


def _args(e: Instr) -> dict[str, object]:
    try:
        spec = check_call(e)
    except InstrError as exc:
        raise LowerError(f"gemmini: {exc}") from exc
    return {p.name: a for p, a in zip(spec.params, e.args, strict=True)}


def _tile(g: GemminiRules, e: Instr, ctx: Ctx, where: str) -> Tile:
    """The call's input tensor and parameters, with the facts that keep its reads in
    bounds proved (module docstring), else a LowerError naming the missing one."""
    args = _args(e)
    base, idxs = access_base(args["x"])  # type: ignore[arg-type]
    buf = ctx.tensors.get(base.name) if isinstance(base, Var) else None
    if idxs or not isinstance(buf, Buf) or buf.cname in g.onchip or len(buf.dims) != 4:
        raise LowerError(f"gemmini: the input of {where} must be a whole 4-D tensor in "
                         f"DRAM (NHWC): {show(args['x'])}")  # type: ignore[arg-type]
    strided = e.name == IM2COL_STRIDED
    keys = ("NB", "H", "W", "C", "OH", "OW", *(("st", "pd") if strided else ()), "s", "r",
            "m", "c")
    p = {k: ix(args[k], ctx) for k in keys}  # type: ignore[arg-type]
    f = ctx.facts
    for k, d in zip(("NB", "H", "W", "C"), buf.dims, strict=True):
        if not (f.le(p[k], d) and f.le(d, p[k])):
            raise LowerError(f"gemmini: {where}: its extent {k} = {ctext(p[k], ctx)} is not "
                             f"provably the input's ({ctext(d, ctx)})")
    needed = (("m >= 0", p["m"]), ("c >= 0", p["c"]), ("NB >= 0", p["NB"]),
              ("OH >= 0", p["OH"]), ("OW >= 0", p["OW"]))
    if strided:  # the row and the columns are checked at run time (module docstring)
        needed += (("st >= 1", p["st"] - Poly.const(1)),)
    else:
        needed += (("s >= 0", p["s"]), ("r >= 0", p["r"]),
                   ("s + OH <= H", p["H"] - p["s"] - p["OH"]),
                   ("r + OW <= W", p["W"] - p["r"] - p["OW"]))
    for text, q in needed:
        if not f.ge0(q):
            raise LowerError(f"gemmini: {where}: cannot prove {text} ({ctext(q, ctx)} >= 0), "
                             "which keeps every pixel it moves inside the input")
    rows = clip(p["NB"] * p["OH"] * p["OW"] - p["m"], ctx)
    return Tile(buf, p, rows, strided)


def _configure(g: GemminiRules, t: Tile, ctx: Ctx, out: Emitter, where: str) -> int:
    """The load id of the input (stride C int8 elements, st C when strided), configured;
    its mvin macro's id."""
    g.set_input_type(t.x.cname, "int8", where)
    ld = g.ld_id_for(t.x.cname, "GEMMINI_SPAD")
    stride = t.p["st"] * t.x.dims[3] if t.strided else t.x.dims[3]
    value = (ctext(stride, ctx), "1.0f", "0")
    g.require_ld(ld, value, out)
    g.ld_last[ld] = value
    return ld


def _pieces(g: GemminiRules, t: Tile, ld: int, addr: str, c: Poly, rv: str, cv: str,
            ctx: Ctx, out: Emitter) -> None:
    """The run-time loop over the row pieces of one tile (or block of tiles): rows `rv`,
    columns `cv` (C names), channel origin `c`, scratchpad address `addr`."""
    p = t.p
    txt = {k: f"({ctext(v, ctx)})" for k, v in p.items()}
    dims = [f"({ctext(d, ctx)})" for d in t.x.dims]
    n = {k: g.core.names.fresh(f"px_{k}") for k in ("i", "t", "q", "n", "oh", "ow", "len")}
    with out.block(f"for (int {n['i']} = 0; {n['i']} < {rv}; )"):
        out.line(f"const int64_t {n['t']} = (int64_t){txt['m']} + {n['i']};")
        out.line(f"const int64_t {n['q']} = {n['t']} / {txt['OW']}, "
                 f"{n['n']} = {n['q']} / {txt['OH']};")
        out.line(f"const int {n['ow']} = (int)({n['t']} - {n['q']} * {txt['OW']}), "
                 f"{n['oh']} = (int)({n['q']} - {n['n']} * {txt['OH']});")
        # The piece ends at the output row's end or the tile's last valid row.
        out.line(f"const int {n['len']} = {txt['OW']} - {n['ow']} < {rv} - {n['i']} ? "
                 f"{txt['OW']} - {n['ow']} : {rv} - {n['i']};")
        if t.strided:
            _strided_piece(g, t, ld, addr, c, cv, n, txt, dims, ctx, out)
        else:
            pixel = (f"(({n['n']} * {dims[1]} + {n['oh']} + {txt['s']}) * {dims[2]} + "
                     f"{n['ow']} + {txt['r']}) * {dims[3]} + ({ctext(c, ctx, wide=True)})")
            out.line(f"{LD_MACRO[ld]}(&{t.x.cname}[{pixel}], {addr} + (uint32_t){n['i']}, "
                     f"{cv}, {n['len']});")
        out.line(f"{n['i']} += {n['len']};")


def _strided_piece(g: GemminiRules, t: Tile, ld: int, addr: str, c: Poly, cv: str,
                   n: dict[str, str], txt: dict[str, str], dims: list[str], ctx: Ctx,
                   out: Emitter) -> None:
    """One row piece of a strided, padded tile (module docstring): the output columns
    [lo, hi) whose input pixel is inside the image, one mvin of them (DRAM stride st C)
    and a zero-filling mvin for the padding on either side."""
    v = {k: g.core.names.fresh(f"px_{k}") for k in ("ih", "lo", "hi", "a", "b", "end")}
    st, mv = txt["st"], LD_MACRO[ld]
    out.line(f"const int64_t {v['ih']} = (int64_t){n['oh']} * {st} + {txt['s']} - {txt['pd']};")
    out.line(f"const int64_t {v['end']} = (int64_t){n['ow']} + {n['len']};")
    out.line(f"int64_t {v['lo']} = {v['end']}, {v['hi']} = {v['end']};")
    with out.block(f"if ({v['ih']} >= 0 && {v['ih']} < {dims[1]})"):
        # Input column ow' st + r - pd: inside [0, W) for ow' in [ceil(a / st), b / st].
        out.line(f"const int64_t {v['a']} = (int64_t){txt['pd']} - {txt['r']}, "
                 f"{v['b']} = (int64_t){dims[2]} - 1 + {txt['pd']} - {txt['r']};")
        out.line(f"{v['lo']} = {v['a']} <= 0 ? 0 : ({v['a']} + {st} - 1) / {st};")
        out.line(f"{v['hi']} = {v['b']} < 0 ? 0 : {v['b']} / {st} + 1;")
        out.line(f"if ({v['lo']} < {n['ow']}) {v['lo']} = {n['ow']};")
        out.line(f"if ({v['lo']} > {v['end']}) {v['lo']} = {v['end']};")
        out.line(f"if ({v['hi']} > {v['end']}) {v['hi']} = {v['end']};")
        out.line(f"if ({v['hi']} < {v['lo']}) {v['hi']} = {v['lo']};")
    row = f"{addr} + (uint32_t){n['i']}"
    with out.block(f"if ({v['lo']} > {n['ow']})"):
        out.line(f"{mv}(0, {row}, {cv}, (int)({v['lo']} - {n['ow']}));")
    with out.block(f"if ({v['hi']} > {v['lo']})"):
        pixel = (f"(({n['n']} * {dims[1]} + {v['ih']}) * {dims[2]} + {v['lo']} * {st} + "
                 f"{txt['r']} - {txt['pd']}) * {dims[3]} + ({ctext(c, ctx, wide=True)})")
        out.line(f"{mv}(&{t.x.cname}[{pixel}], {row} + (uint32_t)({v['lo']} - {n['ow']}), "
                 f"{cv}, (int)({v['hi']} - {v['lo']}));")
    with out.block(f"if ({v['end']} > {v['hi']})"):
        out.line(f"{mv}(0, {row} + (uint32_t)({v['hi']} - {n['ow']}), {cv}, "
                 f"(int)({v['end']} - {v['hi']}));")


def emit_im2col(g: GemminiRules, e: Instr, dest: Dest, mode: str, ctx: Ctx, out: Emitter
                ) -> bool:
    """One `gemmini_mvin_im2col` tile stored into a scratchpad tile."""
    where = f"{e.name} ({show(e)})"
    if mode != "=":
        raise LowerError(f"gemmini: {where} is accumulated into its destination; only "
                         "gemmini_matmul accumulates (in the accumulator)")
    addr, mem, lead = onchip_dest(g, dest, ctx, where)
    if mem != "GEMMINI_SPAD":
        raise LowerError(f"gemmini: {where} writes GEMMINI_SPAD, but its destination is in "
                         f"{mem}")
    t = _tile(g, e, ctx, where)
    cols = clip(t.p["C"] - t.p["c"], ctx)
    ld = _configure(g, t, ctx, out, where)
    zero_first = not g.onchip[dest.buf.cname].track  # type: ignore[union-attr]
    if not zero_first:
        try:
            record_valid(g.onchip[dest.buf.cname], lead, t.rows, cols, where)  # type: ignore
        except Untrackable:
            zero_first = True
    rv, cv = g.core.names.fresh("rows"), g.core.names.fresh("cols")
    with out.block(""):
        out.line(f"const int {rv} = {ctext(t.rows, ctx)}, {cv} = {ctext(cols, ctx)};")
        if zero_first:  # the specification's zeros outside the valid part
            with out.block(f"if ({rv} < {DIM} || {cv} < {DIM})"):
                out.line(f"{LD_MACRO[ld]}(0, {addr}, {DIM}, {DIM});")
        with out.block(f"if ({cv} > 0)"):
            _pieces(g, t, ld, addr, t.p["c"], rv, cv, ctx, out)
    return True


def block_im2col(g: GemminiRules, e: Gen, dest: Dest, ctx: Ctx, out: Emitter) -> bool:
    """`GEN [ t < n ] gemmini_mvin_im2col ... (16 t + c0)` into consecutive scratchpad
    tiles: the pieces of up to four tiles (64 columns) per mvin.  False when the pattern
    does not apply (the caller then lowers tile by tile)."""
    call = e.body
    assert isinstance(call, Instr) and call.name in IM2COLS
    buf = g.onchip[dest.buf.cname]  # type: ignore[union-attr]
    if buf.memory != "GEMMINI_SPAD" or not buf.track or buf.valid is not None:
        return False
    args = _args(call)
    if any(e.var in (idx_free_vars(a) if is_idx(a) else free_vars(a))  # type: ignore
           for k, a in args.items() if k != "c"):  # only the channel moves with the tile
        return False
    entered = tile_loop(g, e, dest, ctx)
    if entered is None:
        return False
    inner, tv, pt, lo, hi = entered
    col = ix(args["c"], inner)  # type: ignore[arg-type]
    if (col - col.subst(tv, Poly.const(0)) - pt.scale(DIM)).terms:
        return False
    placed = consecutive_tiles(g, dest, inner, pt, lo)
    if placed is None:
        return False
    addr, _, lead = placed
    where = f"{call.name} ({show(call)})"
    t = _tile(g, call, inner, where)
    try:
        record_valid(buf, lead, t.rows, clip(t.p["C"] - col, inner), where)
    except Untrackable:
        return False
    ld = _configure(g, t, ctx, out, where)
    blocks = cfg.MAX_BYTES // DIM
    # Columns of up to `blocks` tiles from channel c(t): clipped at C and the last tile.
    span = smin(t.p["C"] - col, (hi - pt).scale(DIM), inner)
    span = smax(smin(span, Poly.const(blocks * DIM), inner), Poly.const(0), inner)
    rv, cv = g.core.names.fresh("rows"), g.core.names.fresh("cols")
    with out.block(f"for (int {tv} = {ctext(lo, ctx)}; {tv} < {ctext(hi, ctx)}; "
                   f"{tv} += {blocks})"):
        out.line(f"const int {rv} = {ctext(t.rows, inner)}, {cv} = {ctext(span, inner)};")
        with out.block(f"if ({cv} > 0)"):
            _pieces(g, t, ld, addr, col, rv, cv, inner, out)
    return True
