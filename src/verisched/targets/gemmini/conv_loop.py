"""Gemmini's convolution loop instruction: `gemmini_loop_conv_ws` calls lowered to gemmini.h.

The ATL instructions `gemmini_loop_conv_ws sm se act x w bias NB H W C KO KH KW`
(stride 1, no padding) and `gemmini_loop_conv_ws_strided ... KH KW st pd` (stride
`st`, zero padding `pd`; coq/Targets/GemminiLoopConv.v) are a whole quantized
convolution layer (NHWC input `x`, weights `w` as KH x KW x C x KO, an int32 bias
per output channel), by definition the program of single instructions the
hardware conv loop unrolls into.  The hardware moves each input pixel of a tile's
padded window into the scratchpad once (zeros in the padding) and reads the
pixels of every output block from there, `stride` rows apart (the on-chip
im2col), so no im2col matrix exists in DRAM.

One hardware call covers a tile of (output rows, output columns, output
channels, input channels) that fits: its input window (`rows * st + KH - 1` by
`cols * st + KW - 1` pixels, as LoopConv.scala and gemmini.h's `sp_tiled_conv`
size it, padding included) and weights in half of the scratchpad, its outputs in
half of the accumulator (the hardware double-buffers two loops;
include/gemmini_loop_conv.h checks the same).  The lowering emits host loops over
such tiles, one `gemmini_loop_conv_ws` each (seven RoCC commands), with the
tile's pointers and paddings computed as Gemmini's `tiled_conv` does: the input
pointer at the window's first pixel inside the image, `upad`/`lpad` the window's
rows/columns above/left of the image, `dpad`/`rpad` those past its end (so the
hardware reads only pixels of the image); input channels too many for one call
are split over calls that accumulate (the first loads the bias, the last
stores).  The tile is chosen at run time (the sizes are kernel arguments):
fewest calls, then fewest bytes moved into the scratchpad.  The hardware needs
`1 <= st <= 255`, `0 <= pd < KH, KW` (tiled_conv: `kernel_dim > padding`, no
window in the padding alone) and `pd + st <= 256` (the 8-bit `dpad`, at most
`pd + st - 1`); the kernel checks them (a derivation states them as hypotheses,
checked before every call).  The padding may be 0, so it is an integer
parameter that is not a size (lower.config_names).

Configuration: the loop's loaders configure their own load ids (so the load
configuration is clobbered; the loop is the whole program, so nothing after it
reads it); the execute configuration (weight-stationary, A_stride = the
stride) and the store configuration (stride KO bytes, activation, scale)
are required through config.py's markers like any other.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from verisched.codegen.cexpr import ctext, ix
from verisched.codegen.errors import LowerError
from verisched.codegen.ir import Buf, Ctx, Dest, Emitter
from verisched.codegen.normal import show
from verisched.codegen.poly import Poly, binop
from verisched.pybridge.terms import Expr, Instr, Var
from verisched.targets.gemmini import config as cfg
from verisched.targets.gemmini.loops import loop_call, same
from verisched.targets.gemmini.moves import config_arg, scale_arg

if TYPE_CHECKING:
    from verisched.targets.gemmini.rules import GemminiRules

LOOP_CONV_WS = "gemmini_loop_conv_ws"
LOOP_CONV_WS_STRIDED = "gemmini_loop_conv_ws_strided"
CONV_LOOPS = (LOOP_CONV_WS, LOOP_CONV_WS_STRIDED)
HALF_ACC = cfg.ACC_ROWS // 2
HALF_SPAD = cfg.SPAD_ROWS // 2


def _tensor(g: GemminiRules, arg: Expr, dims: list[Poly], ctx: Ctx, what: str) -> Buf:
    """The DRAM tensor argument `arg`, which must be a whole input of extents `dims` (the
    loop addresses it with its own strides)."""
    if not isinstance(arg, Var):
        raise LowerError(f"gemmini: {what} must be a whole DRAM tensor: {show(arg)}")
    buf = ctx.tensors.get(arg.name)
    if not isinstance(buf, Buf) or buf.cname in g.onchip:
        raise LowerError(f"gemmini: {what} {show(arg)} is not a DRAM tensor")
    if len(buf.dims) != len(dims) or not all(
            same(a, b, ctx) for a, b in zip(buf.dims, dims, strict=True)):
        raise LowerError(f"gemmini: {what} must have extents "
                         f"{' x '.join(ctext(d, ctx) for d in dims)}: {show(arg)}")
    return buf


def _extent(b: Poly, d: Poly, ctx: Ctx) -> bool:
    """Is the extent `b` the extent `d`, or `max(0, d)` (how an output extent that may be
    negative, such as H - KH + 1, is stated when no hypothesis bounds it)?"""
    if same(b, d, ctx):
        return True
    if len(b.terms) != 1 or b.terms[0][1] != 1 or len(b.terms[0][0]) != 1:
        return False
    atom = b.terms[0][0][0]
    return atom.op == "max" and len(atom.args) == 2 and any(
        x.as_const() == 0 and same(y, d, ctx) for x, y in (atom.args, atom.args[::-1]))


def _whole_output(g: GemminiRules, dest: Dest, dims: list[Poly], ctx: Ctx) -> bool:
    """Is `dest` all of the kernel's output, laid out as it is indexed, of extents `dims`?"""
    if dest.buf is None or dest.buf.cname != g.out_cname or len(dest.windows) != len(dims):
        return False
    if not all(a.as_const() == 0 and _extent(b, d, ctx)
               for (a, b), d in zip(dest.windows, dims, strict=True)):
        return False
    vs = [Poly.var(f"vs_conv_{k}") for k in range(len(dims))]
    idx, conds = dest.fn(vs)
    return not conds and len(idx) == len(dims) and all(
        (i - v).as_const() == 0 for i, v in zip(idx, vs, strict=True))


def lower_conv_loop(g: GemminiRules, e: Instr, dest: Dest, mode: str, ctx: Ctx,
                    out: Emitter) -> bool:
    """Store `gemmini_loop_conv_ws[_strided] ...` into the kernel's output: hardware conv
    loops over tiles (module docstring).  Returns True: every output element is written."""
    args, where = loop_call(e, mode)
    nb, h, w_, c, ko, kh, kw = (ix(args[v], ctx)
                                for v in ("NB", "H", "W", "C", "KO", "KH", "KW"))
    strided = e.name == LOOP_CONV_WS_STRIDED
    st, pd = ((ix(args["st"], ctx), ix(args["pd"], ctx)) if strided
              else (Poly.const(1), Poly.const(0)))
    # (H + 2 pd - KH) / st + 1 (Z's floor division); H - KH + 1 at st = 1, pd = 0.
    oh = binop("/", h + pd.scale(2) - kh, st) + Poly.const(1)
    ow = binop("/", w_ + pd.scale(2) - kw, st) + Poly.const(1)
    if not _whole_output(g, dest, [nb, oh, ow, ko], ctx):
        raise LowerError(f"gemmini: {where} must be the whole program: it stores the kernel's "
                         "whole output, NB x OH x OW x KO")
    x = _tensor(g, args["x"], [nb, h, w_, c], ctx, f"x of {where}")
    w = _tensor(g, args["w"], [kh, kw, c, ko], ctx, f"w of {where}")
    bias = _tensor(g, args["bias"], [ko], ctx, f"bias of {where}")
    for buf, etype in ((x, "int8"), (w, "int8"), (bias, "int32")):
        g.set_input_type(buf.cname, etype, where)
    g.out_type = "int8"
    scale, act = scale_arg(g, args, "sm", "se", ctx), config_arg(g, args, "act", ctx)
    dims = (nb, h, w_, c, ko, kh, kw, st, pd)
    NB, H, W, C, KO, KH, KW, ST, PD = (f"(long)({ctext(p, ctx)})" for p in dims)
    nm = {v: g.core.names.fresh(f"vs_cw_{v}") for v in
          ("OH", "OW", "pr", "pc", "po", "pk", "best", "r", "cl", "o", "k", "cost", "rows",
           "cols", "ochs", "kchs", "b", "r0", "c0", "o0", "k0", "calls", "tiles", "irow",
           "icol", "upad", "dpad", "lpad", "rpad")}
    OH, OW = nm["OH"], nm["OW"]
    out.line(f"/* {e.name}: hardware conv loops over tiles (conv_loop.py) */")
    # In 64 bits, Z's floor division (vs_cdiv: x / 0 = 0), whatever the int arguments.
    (oh_c, ow_c) = ((f"vs_cdiv({n} + 2 * {PD} - {k}, {ST}) + 1" for n, k in ((H, KH), (W, KW)))
                    if strided else (f"{H} - {KH} + 1", f"{W} - {KW} + 1"))
    out.line(f"const long {OH} = {oh_c}, {OW} = {ow_c};")
    _require(g, e.name, c, kh, kw, st, pd, strided, ctx)
    some = f"{NB} > 0 && {OH} > 0 && {OW} > 0 && {KO} > 0"
    with out.block(f"if ({some})"):
        _choose_tile(out, nm, KH, KW, C, KO, ST)
        out.line(cfg.marker("ex", ("WEIGHT_STATIONARY", "NO_ACTIVATION", "0",
                                   f"(int){ST}" if strided else "1", "0", "0")))
        out.line(cfg.marker("st", (f"(size_t){KO}", f"({act}) ? RELU : NO_ACTIVATION",
                                   scale)))
        b, r0, c0, o0, k0 = (nm[v] for v in ("b", "r0", "c0", "o0", "k0"))
        # long, as OH, OW and the tile: `r0 += pr` may pass INT_MAX at its last step
        # where OH is within pr of it.
        with out.block(f"for (long {b} = 0; {b} < {NB}; {b}++)"):
            with out.block(f"for (long {r0} = 0; {r0} < {OH}; {r0} += {nm['pr']})"):
                with out.block(f"for (long {c0} = 0; {c0} < {OW}; {c0} += {nm['pc']})"):
                    with out.block(f"for (long {o0} = 0; {o0} < {KO}; {o0} += {nm['po']})"):
                        with out.block(f"for (long {k0} = 0; {k0} < {C}; {k0} += {nm['pk']})"):
                            _call(out, nm, g.out_cname, x.cname, w.cname, bias.cname, act,
                                  (NB, H, W, C, KO, KH, KW, ST, PD))
    return True


def _require(g: GemminiRules, name: str, c: Poly, kh: Poly, kw: Poly, st: Poly, pd: Poly,
             strided: bool, ctx: Ctx) -> None:
    """What the hardware loop's code needs of the sizes, for the kernel's entry check
    (GemminiRules.requirements; a caller who breaks one gets NAME_error = 2, where the
    kernel called abort()): C, KH and KW positive (the lowering does not store a bias
    alone); the stride and padding in the instruction's fields (module docstring); and
    the least tile, one output pixel of one input channel, in half of the scratchpad:
    its window `(st + KH - 1) * (st + KW - 1)` pixels and `KH * KW` weight rows."""
    one = Poly.const(1)
    need = [("C >= 1", c - one), ("KH >= 1", kh - one), ("KW >= 1", kw - one)]
    if strided:
        need += [("1 <= stride", st - one), ("stride <= 255", Poly.const(255) - st),
                 ("0 <= padding", pd), ("padding < KH", kh - pd - one),
                 ("padding < KW", kw - pd - one),
                 ("padding + stride <= 256", Poly.const(256) - pd - st)]
    window = (st + kh - one) * (st + kw - one)
    need.append((f"(stride + KH - 1) * (stride + KW - 1) + KH * KW <= {HALF_SPAD}, one "
                 "output pixel's window and weights in half the scratchpad",
                 Poly.const(HALF_SPAD) - window - kh * kw))
    need = [(f"{t} ({name})", f) for t, f in need]
    g.requirements += [(t, f) for t, f in need if not ctx.facts.ge0(f)]  # what is not known


def _choose_tile(out: Emitter, nm: dict[str, str], KH: str, KW: str, C: str, KO: str,
                 ST: str) -> None:
    """C choosing the tile (rows pr, columns pc, output channels po, input channels pk):
    what fits one hardware loop, its input window `r * ST + KH - 1` by `cl * ST + KW - 1`
    pixels (padding included: the hardware moves it in as zeros), with the fewest calls,
    then the fewest bytes moved in."""
    OH, OW, best, cost = nm["OH"], nm["OW"], nm["best"], nm["cost"]
    r, cl, o, k = nm["r"], nm["cl"], nm["o"], nm["k"]
    out.line(f"long {nm['pr']} = 0, {nm['pc']} = 0, {nm['po']} = 0, {nm['pk']} = 0;")
    out.line(f"unsigned long long {best} = ~0ull;")
    d = cfg.DIM
    # Output channels and input channels in blocks of DIM; columns all, or DIM multiples.
    with out.block(f"for (long {o} = {KO} < {d} ? {KO} : {d}; ; "
                   f"{o} = {o} + {d} < {KO} ? {o} + {d} : {KO})"):
        with out.block(f"for (long {k} = {C} < {d} ? {C} : {d}; ; "
                       f"{k} = {k} + {d} < {C} ? {k} + {d} : {C})"):
            with out.block(f"for (long {cl} = {OW} < {d} ? {OW} : {d}; ; "
                           f"{cl} = {cl} + {d} < {OW} ? {cl} + {d} : {OW})"):
                with out.block(f"for (long {r} = 1; {r} <= {OH}; {r}++)"):
                    ob, kb = f"(({o} + {d - 1}) / {d})", f"(({k} + {d - 1}) / {d})"
                    window = f"({r} * {ST} + {KH} - 1) * ({cl} * {ST} + {KW} - 1)"
                    acc = f"{ob} * {r} * {cl}"
                    spad = f"{kb} * {window} + {ob} * {KH} * {KW} * {k}"
                    out.line(f"if ({acc} > {HALF_ACC} || {spad} > {HALF_SPAD}) break;")
                    tiles = (f"(unsigned long long)(({OH} + {r} - 1) / {r}) * "
                             f"(({OW} + {cl} - 1) / {cl}) * (({KO} + {o} - 1) / {o})")
                    out.line(f"unsigned long long {nm['tiles']} = {tiles};")
                    out.line(f"unsigned long long {nm['calls']} = {nm['tiles']} * "
                             f"(unsigned long long)(({C} + {k} - 1) / {k});")
                    moved = (f"{nm['tiles']} * (unsigned long long)({window} * {C} + "
                             f"{KH} * {KW} * {C} * {o})")
                    out.line(f"unsigned long long {cost} = {nm['calls']} * 1000000000ull + "
                             f"{moved};")
                    with out.block(f"if ({cost} < {best})"):
                        out.line(f"{best} = {cost}; {nm['pr']} = {r}; {nm['pc']} = {cl}; "
                                 f"{nm['po']} = {o}; {nm['pk']} = {k};")
                out.line(f"if ({cl} == {OW}) break;")
            out.line(f"if ({k} == {C}) break;")
        out.line(f"if ({o} == {KO}) break;")
    # None fits with 16 input channels, or with min(OW, 16) columns: one output row and
    # fewer of both (Gemmini's tiled_conv_auto shrinks its tile down to 1 of each).  The
    # entry check's requirement (_require) is that the least tile, 1 and 1, fits.
    with out.block(f"for (long {k} = {C} < {d} ? {C} : {d}; {nm['pr']} == 0 && {k} >= 1; "
                   f"{k}--)"):
        with out.block(f"for (long {cl} = {OW} < {d} ? {OW} : {d}; {nm['pr']} == 0 && "
                       f"{cl} >= 1; {cl}--)"):
            window = f"({ST} + {KH} - 1) * ({cl} * {ST} + {KW} - 1)"
            with out.block(f"if ({window} + {KH} * {KW} * {k} <= {HALF_SPAD})"):
                out.line(f"{nm['pr']} = 1; {nm['pc']} = {cl}; "
                         f"{nm['po']} = {KO} < {d} ? {KO} : {d}; {nm['pk']} = {k};")


def _call(out: Emitter, nm: dict[str, str], out_c: str, x: str, w: str, bias: str, act: str,
          sizes: tuple[str, ...]) -> None:
    """One hardware loop over the tile at (b, r0, c0, o0, k0), its pointers and paddings
    as Gemmini's tiled_conv passes them (the input at the window's first pixel inside the
    image; the paddings the window's rows and columns outside it, which the hardware moves
    in as zeros; every pixel it reads is in the image: `pd < KH, KW` puts each window's
    first row and column inside it)."""
    NB, H, W, C, KO, KH, KW, ST, PD = sizes
    b, r0, c0, o0, k0 = (nm[v] for v in ("b", "r0", "c0", "o0", "k0"))
    OH, OW = nm["OH"], nm["OW"]
    rows, cols, ochs, kchs = nm["rows"], nm["cols"], nm["ochs"], nm["kchs"]
    irow, icol, upad, dpad, lpad, rpad = (nm[v] for v in
                                          ("irow", "icol", "upad", "dpad", "lpad", "rpad"))
    for v, o, tot, t in ((rows, r0, OH, "pr"), (cols, c0, OW, "pc"), (ochs, o0, KO, "po"),
                         (kchs, k0, C, "pk")):
        out.line(f"const long {v} = {tot} - {o} < {nm[t]} ? {tot} - {o} : {nm[t]};")
    # The padded window: rows [irow, irow + rows * ST + KH - 1), likewise columns.
    out.line(f"const long {irow} = {r0} * {ST} - {PD}, {icol} = {c0} * {ST} - {PD};")
    out.line(f"const long {upad} = {irow} < 0 ? -{irow} : 0, "
             f"{lpad} = {icol} < 0 ? -{icol} : 0;")
    for pad, start, n, k, lim in ((dpad, irow, rows, KH, H), (rpad, icol, cols, KW, W)):
        end = f"{start} + {n} * {ST} + {k} - 1"
        out.line(f"const long {pad} = {end} > {lim} ? {end} - {lim} : 0;")
    in_ptr = (f"&{x}[(({b} * {H} + {irow} + {upad}) * {W} + {icol} + {lpad}) * {C} + "
              f"{k0}]")
    w_ptr = f"&{w}[(long){k0} * {KO} + {o0}]"
    o_ptr = (f"({k0} + {kchs} == {C} ? (void *)&{out_c}[(({b} * {OH} + {r0}) * {OW} + {c0}) * "
             f"{KO} + {o0}] : NULL)")
    b_ptr = f"({k0} == 0 ? (const void *)&{bias}[{o0}] : NULL)"
    # kernel_dim: the hardware reads it as the weights' DRAM row length in kernel columns.
    out.line(f"gemmini_loop_conv_ws({NB}, {H}, {W}, {C}, {KO}, {OH}, {OW}, {OH}, {OW}, {ST}, "
             f"{PD}, {KW}, 1, 1, 1, 0, 1, {rows}, {cols}, {ochs}, {KH}, {KW}, {kchs}, {lpad}, "
             f"{rpad}, {upad}, {dpad}, 0, 0, 0, 0, {rows}, {cols}, {w_ptr}, {o_ptr}, {b_ptr}, "
             f"{in_ptr}, 0, 1, 0, 0, 0, ({act}) ? RELU : NO_ACTIVATION, 0, 0, 0, 0, 0, {C}, "
             f"{KO}, {KO}, 0, 0, 0)")
