"""Gemmini's data movement: gemmini_ calls lowered to gemmini.h moves.

A call stored into a destination (Fig. 3) becomes the instruction that
writes that destination: `gemmini_mvin*` into an on-chip tile (the tile
resolved by targets/gemmini/onchip.py), `gemmini_mvout` from an accumulator
tile into the kernel's output in DRAM (a pointer and a row stride, found by
folding the destination's index arithmetic), `gemmini_matmul` into an
accumulator tile (targets/gemmini/matmul.py).  Valid rows and columns come
from the instruction's arguments, the source's extents and the destination's
windows; a partial scratchpad tile is zero-filled first where its valid part
cannot be followed to its readers, because the specification says a tile is
zero outside its valid part (docs/decisions.md #13).  Each instruction is
preceded by its configuration requirement (a marker that config.py turns
into config instructions).  A generation of moves into consecutive
scratchpad tiles becomes one move per four tiles (`block_load`).  A source that is a
row broadcast, `GEN [ p < R ] v` (a bias over the pixels), is moved with DRAM stride 0
(`broadcast_source`).  The on-chip im2col move is im2col.py's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from verisched.codegen.cexpr import ctext, ix, smax, smin
from verisched.codegen.errors import LowerError
from verisched.codegen.ir import Buf, Ctx, Dest, Emitter
from verisched.codegen.normal import access_base, show
from verisched.codegen.poly import Poly
from verisched.pybridge.instrs import InstrError, check_call
from verisched.pybridge.terms import Expr, Gen, Instr, Var, free_vars, idx_free_vars
from verisched.targets.gemmini import config as cfg
from verisched.targets.gemmini.arith import fold_divmod, prove_divmod
from verisched.targets.gemmini.instrs import ACC_OUT, COMPUTE, LOAD, ROLES, STORE, Role
from verisched.targets.gemmini.matmul import emit_matmul
from verisched.targets.gemmini.onchip import (
    DIM,
    Untrackable,
    check_mem,
    check_written,
    dram_source,
    onchip_dest,
    operand_tile,
    record_valid,
    record_written,
    rows_index,
)

if TYPE_CHECKING:
    from verisched.targets.gemmini.rules import GemminiRules

# Element types of Gemmini data: C type and size in bytes.
ELEM = {"int8": ("int8_t", 1), "int32": ("int32_t", 4)}
LD_MACRO = ("gemmini_extended_mvin", "gemmini_extended_mvin2", "gemmini_extended_mvin3")


def lower_instr(g: GemminiRules, e: Instr, dest: Dest, mode: str, ctx: Ctx, out: Emitter
                ) -> bool:
    """Store call `e` into `dest`: the move or product that writes it."""
    try:
        spec = check_call(e)
    except InstrError as exc:
        raise LowerError(f"gemmini: {exc}") from exc
    role = ROLES.get(e.name)
    if role is None:
        what = ("the output path outside gemmini_mvout" if e.name == ACC_OUT
                else "not a Gemmini instruction")
        raise LowerError(f"gemmini: {e.name} is {what}; the gemmini target emits only "
                         f"gemmini_ moves and products: {show(e)}")
    args = {p.name: a for p, a in zip(spec.params, e.args, strict=True)}
    where = f"{e.name} ({show(e)})"
    if role.kind == COMPUTE:
        return emit_matmul(g, role, args, dest, mode, ctx, out, where)
    if mode != "=":
        raise LowerError(f"gemmini: {where} is accumulated into its destination; only "
                         "gemmini_matmul accumulates (in the accumulator)")
    if role.kind == LOAD:
        return emit_load(g, role, args, dest, ctx, out, where)
    if role.kind == STORE:
        return emit_store(g, role, args, dest, ctx, out, where)
    raise LowerError(f"gemmini: {where}: unknown role {role.kind}")


def clip(p: Poly, ctx: Ctx) -> Poly:
    """max(0, min(DIM, p))."""
    return smax(smin(p, Poly.const(DIM), ctx), Poly.const(0), ctx)


def window(role: Role, args: dict, ctx: Ctx) -> tuple[Poly, Poly, Poly, Poly]:
    """Origin (r, c) of the instruction's window and its valid rows and columns,
    min(16, R - r) x min(16, C - c) clipped at 0 (the specification's guard)."""
    r, c = ix(args[role.row], ctx), ix(args[role.col], ctx)
    rows = clip(ix(args[role.rows_at], ctx) - r, ctx)
    cols = clip(ix(args[role.cols_at], ctx) - c, ctx)
    return r, c, rows, cols


def is_full(p: Poly, ctx: Ctx) -> bool:
    """Is a valid extent `p` provably a whole tile's (DIM)?"""
    return ctx.facts.le(Poly.const(DIM), p)


def broadcast_source(g: GemminiRules, arg: Expr, ctx: Ctx
                     ) -> tuple[Buf, list[Poly], Poly] | None:
    """`GEN [ p < R ] v`, `v` a row of a DRAM tensor not depending on `p` (a bias row
    broadcast over the pixels): its buffer, the row's leading indices and R.  Moved with
    DRAM stride 0, as Gemmini's conv loop moves its bias (gemmini_loop_conv.h).  None for
    any other source."""
    if not isinstance(arg, Gen) or arg.var in free_vars(arg.body) \
            or ix(arg.lo, ctx).as_const() != 0:
        return None
    base, idxs = access_base(arg.body)
    buf = ctx.tensors.get(base.name) if isinstance(base, Var) else None
    if not isinstance(buf, Buf) or buf.cname in g.onchip or len(buf.dims) != len(idxs) + 1:
        return None
    return buf, [ix(i, ctx) for i in idxs], ix(arg.hi, ctx)


def emit_load(g: GemminiRules, role: Role, args: dict, dest: Dest, ctx: Ctx, out: Emitter,
              where: str) -> bool:
    addr, mem, lead = onchip_dest(g, dest, ctx, where)
    check_mem(mem, role, where)
    r, c, rows, cols = window(role, args, ctx)
    bcast = broadcast_source(g, args[role.src], ctx)
    if bcast is not None:  # every row the same DRAM row: stride 0
        src, lead_src, nrows = bcast
        lin = rows_index([*lead_src, c], src.dims)
    else:
        src, lead_src = dram_source(g, args[role.src], ctx, f"the source of {where}")
        nrows = src.dims[-2]
        lin = rows_index([*lead_src, r, c], src.dims)
    # Reads beyond the source's extents are zero in ATL (Fig. 2); clip there too.
    rows = smin(rows, clip(nrows - r, ctx), ctx)
    cols = smin(cols, clip(src.dims[-1] - c, ctx), ctx)
    etype = "int8" if mem == "GEMMINI_SPAD" else "int32"
    g.set_input_type(src.cname, etype, where)
    esize = ELEM[etype][1]
    ld = g.ld_id_for(src.cname, mem)
    ncols = src.dims[-1]
    # In 64 bits, the type of the instruction's field: `N * 4` in int wrapped for N from
    # 2^29 on, which the entry check (N + 15 an int) let through.
    stride = "0" if bcast is not None else \
        f"(uint64_t)({ctext(ncols, ctx)}) * {esize}" if esize != 1 else ctext(ncols, ctx)
    g.require_ld(ld, (stride, "1.0f", "0"), out)
    g.ld_last[ld] = (stride, "1.0f", "0")
    buf = g.onchip[dest.buf.cname]  # type: ignore[union-attr]
    full = is_full(rows, ctx) and is_full(cols, ctx)
    # Partial tiles: record the valid part for the products that read the tile (the
    # contract of Gemmini.v, "Partial blocks"), or zero-fill it where it cannot be
    # tracked (then the tile equals its specification, zeros included).
    zero_first = False
    if not full:
        if mem == "GEMMINI_SPAD" and buf.track:
            try:
                record_valid(buf, lead, rows, cols, where)
            except Untrackable:
                zero_first = True
        elif mem == "GEMMINI_ACC":
            record_written(buf, lead, rows, cols, ctx, where)
        else:
            zero_first = True
    elif mem == "GEMMINI_ACC":
        record_written(buf, lead, rows, cols, ctx, where)
    ptr = f"&{src.cname}[{ctext(lin, ctx, wide=True)}]"  # a matrix: 64-bit offset
    if full:
        out.line(f"{LD_MACRO[ld]}({ptr}, {addr}, {DIM}, {DIM});")
        return True
    rv, cv = g.core.names.fresh("rows"), g.core.names.fresh("cols")
    with out.block(""):
        out.line(f"const int {rv} = {ctext(rows, ctx)}, {cv} = {ctext(cols, ctx)};")
        if zero_first:
            with out.block(f"if ({rv} < {DIM} || {cv} < {DIM})"):
                out.line(f"{LD_MACRO[ld]}(0, {addr}, {DIM}, {DIM});")
        with out.block(f"if ({rv} > 0 && {cv} > 0)"):
            out.line(f"{LD_MACRO[ld]}({ptr}, {addr}, {cv}, {rv});")
    return True


def dram_dest(g: GemminiRules, dest: Dest, ctx: Ctx, where: str
              ) -> tuple[str, Poly, Poly, Poly, Poly, Poly]:
    """Pointer base, element row stride and the writable rows/cols window of a tile
    destination in DRAM: (cname, lin00, stride, row_lo, row_hi, col_hi)."""
    buf = dest.buf
    if buf is None or buf.cname in g.onchip:
        raise LowerError(f"gemmini: {where} must store to DRAM")
    if len(dest.windows) != 2:
        raise LowerError(f"gemmini: {where} stores a rank-{len(dest.windows)} value, "
                         "expected a tile")
    pi, pj = Poly.var("@i"), Poly.var("@j")
    z = Poly.const(0)
    bi, conds = dest.fn([pi, pj])
    lin = fold_divmod(rows_index(bi, buf.dims))
    lin00 = lin.subst("@i", z).subst("@j", z)
    stride = lin.subst("@i", Poly.const(1)).subst("@j", z) - lin00
    if (lin - lin00 - stride * pi - pj).terms or stride.vars() & {"@i", "@j"}:
        raise LowerError(f"gemmini: {where} stores a tile whose rows are not contiguous in "
                         f"{buf.cname} (each tile row must be {DIM} consecutive elements)")
    (a0, b0), (a1, b1) = dest.windows
    row_lo, row_hi = smax(a0, z, ctx), smin(b0, Poly.const(DIM), ctx)
    col_lo, col_hi = smax(a1, z, ctx), smin(b1, Poly.const(DIM), ctx)
    nonlinear = []
    linear = []
    for f in conds:
        k = f.subst("@i", z).subst("@j", z)
        ci = f.subst("@j", z) - k
        cj = f.subst("@i", z) - k
        coefs = [part.subst(name, Poly.const(1)).as_const() if part.terms else 0
                 for part, name in ((ci, "@i"), (cj, "@j"))]
        if (f - ci - cj - k).terms or any(c is None or (c and part.vars() != {name})
                                          for c, part, name in zip(
                                              coefs, (ci, cj), ("@i", "@j"), strict=True)):
            nonlinear.append(f)
            continue
        linear.append(f)
        for coef, name in zip(coefs, ("@i", "@j"), strict=True):
            if coef == 0:
                continue
            if coef == -1:  # k - v >= 0: v < k + 1
                if name == "@i":
                    row_hi = smin(row_hi, k + 1, ctx)
                else:
                    col_hi = smin(col_hi, k + 1, ctx)
            elif coef == 1:  # v + k >= 0: v >= -k
                if name == "@i":
                    row_lo = smax(row_lo, -k, ctx)
                else:
                    col_lo = smax(col_lo, -k, ctx)
            else:
                raise LowerError(f"gemmini: {where}: cannot turn the store condition "
                                 f"{ctext(f, ctx)} >= 0 into a row/column count")
    if nonlinear:
        # Conditions through a split's quotient and remainder: they must follow from
        # the row/column bounds (e.g. q < NB from the truncation to NB * OH * OW rows).
        c2 = ctx.child()
        for v in ("@i", "@j"):
            c2.facts.bind(v)
            c2.facts.add(Poly.var(v))
            c2.facts.add(Poly.const(DIM - 1) - Poly.var(v))
        for f in linear:
            c2.facts.add(f)
        for f in nonlinear:
            if not prove_divmod(f, c2):
                raise LowerError(f"gemmini: {where}: cannot turn the store condition "
                                 f"{ctext(f, ctx)} >= 0 into a row/column count")
    if not ctx.facts.le(col_lo, z):
        raise LowerError(f"gemmini: {where} stores a tile whose first columns are cut off; "
                         "mvout always starts at a row's first column")
    return buf.cname, lin00, stride, row_lo, row_hi, col_hi


def config_arg(g: GemminiRules, args: dict, name: str | None, ctx: Ctx) -> str:
    """C text of an output-configuration argument (scale mantissa/exponent, ReLU flag)."""
    a = args[name]
    for v in idx_free_vars(a):
        g.config_params.add(v)
    return ctext(ix(a, ctx), ctx)


def scale_arg(g: GemminiRules, args: dict, sm_name: str | None, se_name: str | None,
              ctx: Ctx) -> str:
    """C text of the output scale `vs_scale(sm, se)` (sm * 2^se as a float32).  The pair
    is recorded (GemminiRules.scales): the kernel refuses at entry, with NAME_error = 2,
    a pair whose scale is not a finite float, which Gemmini's config_st cannot take."""
    sm, se = config_arg(g, args, sm_name, ctx), config_arg(g, args, se_name, ctx)
    g.scales.setdefault((sm, se), (ix(args[sm_name], ctx), ix(args[se_name], ctx)))
    return f"vs_scale({sm}, {se})"


def emit_store(g: GemminiRules, role: Role, args: dict, dest: Dest, ctx: Ctx, out: Emitter,
               where: str) -> bool:
    src_addr, mem = operand_tile(g, args[role.src], ctx, f"the source of {where}")
    if mem != "GEMMINI_ACC":
        raise LowerError(f"gemmini: the source of {where} is in {mem}; the output path "
                         "reads the accumulator")
    cname, lin00, stride, row_lo, row_hi, col_hi = dram_dest(g, dest, ctx, where)
    _, _, rows_w, cols_w = window(role, args, ctx)
    rows = smin(row_hi, rows_w, ctx) - row_lo
    cols = smin(col_hi, cols_w, ctx)
    check_written(g, args[role.src], rows + row_lo, cols, ctx, where)
    if cname == g.out_cname:
        g.out_type = "int8"
    else:
        raise LowerError(f"gemmini: {where} stores into the DRAM buffer {cname}; the output "
                         "path writes the kernel's output")
    scale = scale_arg(g, args, role.scale_m, role.scale_e, ctx)
    act = config_arg(g, args, role.act, ctx)
    st = (ctext(stride, ctx), f"({act}) ? RELU : NO_ACTIVATION", scale)
    out.line(cfg.marker("st", st))
    local = src_addr if row_lo.as_const() == 0 else \
        f"{src_addr} + (uint32_t)({ctext(row_lo, ctx)})"
    # The output has two dimensions or more: its linearised index is 64-bit.
    ptr = f"&{cname}[{ctext(lin00 + stride * row_lo, ctx, wide=True)}]"
    call = f"gemmini_extended_mvout({ptr}, {local}, {ctext(cols, ctx)}, {ctext(rows, ctx)});"
    if ctx.facts.ge0(rows - 1) and ctx.facts.ge0(cols - 1):
        out.line(call)
    else:
        with out.block(f"if ({ctext(rows, ctx)} > 0 && {ctext(cols, ctx)} > 0)"):
            out.line(call)
    (a0, b0), (a1, b1) = dest.windows
    # Outside the instruction's own window the specification is zero: covered only if
    # the window reaches the destination's.
    return (ctx.facts.le(row_lo, a0) and ctx.facts.le(b0, rows + row_lo)
            and ctx.facts.le(a1, Poly.const(0)) and ctx.facts.le(b1, cols))


def tile_loop(g: GemminiRules, e: Gen, dest: Dest,
              ctx: Ctx) -> tuple[Ctx, str, Poly, Poly, Poly] | None:
    """Into the loop `e` over consecutive tiles of `dest`: None unless its range
    `[lo, hi)` fits the destination's first window from its start; else the loop's
    context (its variable bound, named `t`, with `lo <= t < hi`), `t`, `t` as a
    polynomial, `lo` and `hi`.  Shared by the moves of several tiles at once."""
    lo, hi = ix(e.lo, ctx), ix(e.hi, ctx)
    a, b = dest.windows[0]
    if not (ctx.facts.le(a, Poly.const(0)) and ctx.facts.le(hi - lo, b)):
        return None
    t = g.core.names.fresh(e.var)
    inner = ctx.child()
    inner.idx_names[e.var] = t
    inner.facts.bind(t)
    pt = Poly.var(t)
    inner.facts.add(pt - lo)
    inner.facts.add(hi - 1 - pt)
    return inner, t, pt, lo, hi


def consecutive_tiles(g: GemminiRules, dest: Dest, inner: Ctx, pt: Poly,
                      lo: Poly) -> tuple[str, str, list[Poly]] | None:
    """The on-chip placement (`onchip_dest`: address, memory, lead indices) of the tile of
    `dest` at loop index `pt` (from `lo`), if tile `pt + 1` starts DIM rows after it, so
    that one move can fill several; else None."""
    tile = dest.peel(pt - lo)
    try:
        placed = onchip_dest(g, tile, inner, "block move")
    except LowerError:
        return None
    z = Poly.const(0)
    dims = dest.buf.dims[:-1]  # type: ignore[union-attr]
    row_t = rows_index(tile.fn([z, z])[0][:-1], dims)
    row_n = rows_index(dest.peel(pt - lo + 1).fn([z, z])[0][:-1], dims)
    if (row_n - row_t - Poly.const(DIM)).terms:
        return None
    return placed


def block_load(g: GemminiRules, e: Gen, dest: Dest, ctx: Ctx, out: Emitter) -> bool:
    """`GEN [ t ] gemmini_mvin v r (16 t + c0) R C` into consecutive scratchpad tiles:
    one mvin of up to 4 blocks (64 int8 columns, MAX_BYTES) per 4 tiles, the blocks
    DIM rows apart (config_ld's block stride).  Same data as one move per tile; the
    valid part of each tile is recorded as for single moves.  False when the pattern
    does not apply (the caller then lowers tile by tile)."""
    call = e.body
    assert isinstance(call, Instr)
    role = ROLES.get(call.name)
    if role is None or role.kind != LOAD or role.memory != "GEMMINI_SPAD":
        return False
    spec = check_call(call)
    args = {p.name: a for p, a in zip(spec.params, call.args, strict=True)}
    buf = g.onchip[dest.buf.cname]  # type: ignore[union-attr]
    if not buf.track or buf.valid is not None:
        return False
    entered = tile_loop(g, e, dest, ctx)
    if entered is None:
        return False
    inner, t, pt, lo, hi = entered
    if any(t in ix(args[n], inner).vars() for n in (role.row, role.rows_at,
                                                         role.cols_at)):
        return False
    if e.var in free_vars(args[role.src]):  # the source must not move with the tile
        return False
    col = ix(args[role.col], inner)
    c0 = col.subst(t, Poly.const(0))
    if (col - c0 - pt.scale(DIM)).terms:
        return False
    placed = consecutive_tiles(g, dest, inner, pt, lo)
    if placed is None:
        return False
    addr_t, mem, lead = placed
    where = f"{call.name} ({show(call)})"
    src, lead_src = dram_source(g, args[role.src], inner, f"the source of {where}")
    r, c, rows, cols = window(role, args, inner)
    rows = smin(rows, clip(src.dims[-2] - r, inner), inner)
    cols = smin(cols, clip(src.dims[-1] - c, inner), inner)
    try:
        record_valid(buf, lead, rows, cols, where)
    except Untrackable:
        return False
    g.set_input_type(src.cname, "int8", where)
    ld = g.ld_id_for(src.cname, mem)
    stride = ctext(src.dims[-1], ctx)
    g.require_ld(ld, (stride, "1.0f", "0"), out)
    g.ld_last[ld] = (stride, "1.0f", "0")
    blocks = cfg.MAX_BYTES // DIM
    # Columns of up to `blocks` tiles from column c(t): clipped at C, the source, and
    # the generation's last tile.
    span = smin(ix(args[role.cols_at], inner) - c, src.dims[-1] - c, inner)
    span = smin(span, (hi - pt).scale(DIM), inner)
    span = smax(smin(span, Poly.const(blocks * DIM), inner), Poly.const(0),
                     inner)
    lin = rows_index([*lead_src, r, c], src.dims)
    rv, cv = g.core.names.fresh("rows"), g.core.names.fresh("cols")
    with out.block(f"for (int {t} = {ctext(lo, ctx)}; {t} < {ctext(hi, ctx)}; "
                   f"{t} += {blocks})"):
        out.line(f"const int {rv} = {ctext(rows, inner)}, {cv} = {ctext(span, inner)};")
        with out.block(f"if ({rv} > 0 && {cv} > 0)"):
            out.line(f"{LD_MACRO[ld]}(&{src.cname}[{ctext(lin, inner, wide=True)}], {addr_t}, "
                     f"{cv}, {rv});")
    return True
