"""Gemmini's convolution loop instruction: `gemmini_loop_conv_ws` calls lowered to gemmini.h.

The ATL instruction `gemmini_loop_conv_ws sm se act x w bias NB H W C KO KH KW`
(coq/Targets/GemminiLoopConv.v) is a whole quantized convolution layer (NHWC
input `x`, weights `w` as KH x KW x C x KO, an int32 bias per output channel,
stride 1, no padding), by definition the program of single instructions the
hardware conv loop unrolls into.  The hardware moves each input pixel of a
tile into the scratchpad once and reads the pixels of every output block from
there (the on-chip im2col), so no im2col matrix exists in DRAM.

One hardware call covers a tile of (output rows, output columns, output
channels, input channels) that fits: its input window and weights in half of
the scratchpad, its outputs in half of the accumulator (the hardware
double-buffers two loops; include/gemmini_loop_conv.h checks the same).  The
lowering emits host loops over such tiles, one `gemmini_loop_conv_ws` each
(seven RoCC commands); input channels too many for one call are split over
calls that accumulate (the first loads the bias, the last stores), as
Gemmini's `tiled_conv` does.  The tile is chosen at run time (the sizes are
kernel arguments): fewest calls, then fewest bytes moved into the scratchpad.

Configuration: the loop's loaders configure their own load ids (so the load
configuration is clobbered; the loop is the whole program, so nothing after it
reads it); the execute configuration (weight-stationary, A_stride = the
stride = 1) and the store configuration (stride KO bytes, activation, scale)
are required through config.py's markers like any other.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from verisched.codegen.cexpr import ctext, ix
from verisched.codegen.errors import LowerError
from verisched.codegen.ir import Buf, Ctx, Dest, Emitter
from verisched.codegen.normal import show
from verisched.codegen.poly import Poly
from verisched.pybridge.terms import Expr, Instr, Var
from verisched.targets.gemmini import config as cfg
from verisched.targets.gemmini.loops import loop_call, same
from verisched.targets.gemmini.moves import config_arg

if TYPE_CHECKING:
    from verisched.targets.gemmini.rules import GemminiRules

LOOP_CONV_WS = "gemmini_loop_conv_ws"
EX_WS = ("WEIGHT_STATIONARY", "NO_ACTIVATION", "0", "1", "0", "0")
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
    """Store `gemmini_loop_conv_ws ...` into the kernel's output: hardware conv loops over
    tiles (module docstring).  Returns True: every output element is written."""
    args, where = loop_call(e, mode)
    nb, h, w_, c, ko, kh, kw = (ix(args[v], ctx)
                                for v in ("NB", "H", "W", "C", "KO", "KH", "KW"))
    oh, ow = h - kh + Poly.const(1), w_ - kw + Poly.const(1)
    if not _whole_output(g, dest, [nb, oh, ow, ko], ctx):
        raise LowerError(f"gemmini: {where} must be the whole program: it stores the kernel's "
                         "whole output, NB x (H - KH + 1) x (W - KW + 1) x KO")
    x = _tensor(g, args["x"], [nb, h, w_, c], ctx, f"x of {where}")
    w = _tensor(g, args["w"], [kh, kw, c, ko], ctx, f"w of {where}")
    bias = _tensor(g, args["bias"], [ko], ctx, f"bias of {where}")
    for buf, etype in ((x, "int8"), (w, "int8"), (bias, "int32")):
        g.set_input_type(buf.cname, etype, where)
    g.out_type = "int8"
    sm, se, act = (config_arg(g, args, v, ctx) for v in ("sm", "se", "act"))
    NB, H, W, C, KO, KH, KW = (f"(long)({ctext(p, ctx)})" for p in (nb, h, w_, c, ko, kh, kw))
    nm = {v: g.core.names.fresh(f"vs_cw_{v}") for v in
          ("OH", "OW", "pr", "pc", "po", "pk", "best", "r", "cl", "o", "k", "cost", "rows",
           "cols", "ochs", "kchs", "b", "r0", "c0", "o0", "k0", "calls", "tiles")}
    OH, OW = nm["OH"], nm["OW"]
    out.line(f"/* {e.name}: hardware conv loops over tiles (conv_loop.py) */")
    out.line(f"const long {OH} = {H} - {KH} + 1, {OW} = {W} - {KW} + 1;")
    with out.block(f"if ({NB} > 0 && {OH} > 0 && {OW} > 0 && {KO} > 0 && "
                   f"({C} <= 0 || {KH} <= 0 || {KW} <= 0))"):
        out.line(f'fprintf(stderr, "{e.name}: C, KH and KW must be positive (the loop '
                 'lowering does not store a bias alone)\\n");')
        out.line("abort();")
    with out.block(f"if ({NB} > 0 && {OH} > 0 && {OW} > 0 && {KO} > 0)"):
        _choose_tile(out, nm, KH, KW, C, KO)
        out.line(cfg.marker("ex", EX_WS))
        out.line(cfg.marker("st", (f"(size_t){KO}", f"({act}) ? RELU : NO_ACTIVATION",
                                   f"vs_scale({sm}, {se})")))
        b, r0, c0, o0, k0 = (nm[v] for v in ("b", "r0", "c0", "o0", "k0"))
        with out.block(f"for (int {b} = 0; {b} < {NB}; {b}++)"):
            with out.block(f"for (int {r0} = 0; {r0} < {OH}; {r0} += (int){nm['pr']})"):
                with out.block(f"for (int {c0} = 0; {c0} < {OW}; {c0} += (int){nm['pc']})"):
                    with out.block(f"for (int {o0} = 0; {o0} < {KO}; "
                                   f"{o0} += (int){nm['po']})"):
                        with out.block(f"for (int {k0} = 0; {k0} < {C}; "
                                       f"{k0} += (int){nm['pk']})"):
                            _call(out, nm, g.out_cname, x.cname, w.cname, bias.cname, act,
                                  NB, H, W, C, KO, KH, KW)
    return True


def _choose_tile(out: Emitter, nm: dict[str, str], KH: str, KW: str, C: str, KO: str) -> None:
    """C choosing the tile (rows pr, columns pc, output channels po, input channels pk):
    what fits one hardware loop, with the fewest calls, then the fewest bytes moved in."""
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
                    acc = f"{ob} * {r} * {cl}"
                    spad = (f"{kb} * ({r} + {KH} - 1) * ({cl} + {KW} - 1) + "
                            f"{ob} * {KH} * {KW} * {k}")
                    out.line(f"if ({acc} > {HALF_ACC} || {spad} > {HALF_SPAD}) break;")
                    tiles = (f"(unsigned long long)(({OH} + {r} - 1) / {r}) * "
                             f"(({OW} + {cl} - 1) / {cl}) * (({KO} + {o} - 1) / {o})")
                    out.line(f"unsigned long long {nm['tiles']} = {tiles};")
                    out.line(f"unsigned long long {nm['calls']} = {nm['tiles']} * "
                             f"(unsigned long long)(({C} + {k} - 1) / {k});")
                    moved = (f"{nm['tiles']} * (unsigned long long)(({r} + {KH} - 1) * "
                             f"({cl} + {KW} - 1) * {C} + {KH} * {KW} * {C} * {o})")
                    out.line(f"unsigned long long {cost} = {nm['calls']} * 1000000000ull + "
                             f"{moved};")
                    with out.block(f"if ({cost} < {best})"):
                        out.line(f"{best} = {cost}; {nm['pr']} = {r}; {nm['pc']} = {cl}; "
                                 f"{nm['po']} = {o}; {nm['pk']} = {k};")
                out.line(f"if ({cl} == {OW}) break;")
            out.line(f"if ({k} == {C}) break;")
        out.line(f"if ({o} == {KO}) break;")
    with out.block(f"if ({nm['pr']} == 0)"):
        out.line('fprintf(stderr, "gemmini_loop_conv_ws: no tile of one output row fits the '
                 'scratchpad (KH * KW * C too large)\\n");')
        out.line("abort();")


def _call(out: Emitter, nm: dict[str, str], out_c: str, x: str, w: str, bias: str, act: str,
          NB: str, H: str, W: str, C: str, KO: str, KH: str, KW: str) -> None:
    """One hardware loop over the tile at (b, r0, c0, o0, k0): the pointers offset to the
    tile as sp_tiled_conv passes them; no padding (the window is inside the image)."""
    b, r0, c0, o0, k0 = (nm[v] for v in ("b", "r0", "c0", "o0", "k0"))
    OH, OW = nm["OH"], nm["OW"]
    rows, cols, ochs, kchs = nm["rows"], nm["cols"], nm["ochs"], nm["kchs"]
    for v, o, tot, t in ((rows, r0, OH, "pr"), (cols, c0, OW, "pc"), (ochs, o0, KO, "po"),
                         (kchs, k0, C, "pk")):
        out.line(f"const long {v} = {tot} - {o} < {nm[t]} ? {tot} - {o} : {nm[t]};")
    in_ptr = f"&{x}[(({b} * {H} + {r0}) * {W} + {c0}) * {C} + {k0}]"
    w_ptr = f"&{w}[(long){k0} * {KO} + {o0}]"
    o_ptr = (f"({k0} + {kchs} == {C} ? (void *)&{out_c}[(({b} * {OH} + {r0}) * {OW} + {c0}) * "
             f"{KO} + {o0}] : NULL)")
    b_ptr = f"({k0} == 0 ? (const void *)&{bias}[{o0}] : NULL)"
    # kernel_dim: the hardware reads it as the weights' DRAM row length in kernel columns.
    out.line(f"gemmini_loop_conv_ws({NB}, {H}, {W}, {C}, {KO}, {OH}, {OW}, {OH}, {OW}, 1, 0, "
             f"{KW}, 1, 1, 1, 0, 1, {rows}, {cols}, {ochs}, {KH}, {KW}, {kchs}, 0, 0, 0, 0, "
             f"0, 0, 0, 0, {rows}, {cols}, {w_ptr}, {o_ptr}, {b_ptr}, {in_ptr}, 0, 1, 0, 0, "
             f"0, ({act}) ? RELU : NO_ACTIVATION, 0, 0, 0, 0, 0, {C}, {KO}, {KO}, 0, 0, 0)")
