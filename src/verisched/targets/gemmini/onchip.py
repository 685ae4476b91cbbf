"""Gemmini's on-chip memories: buffers with static rows, and tiles inside them.

An on-chip let (`in_mem GEMMINI_SPAD` / `GEMMINI_ACC`, coq/Targets/Instr.v)
of extents d1 x ... x dk needs dk = DIM and constant extents; it occupies
d1 * ... * d(k-1) consecutive rows, handed out as a stack (free again after
the let's body) and checked against the scratchpad's 16384 and the
accumulator's 1024 rows at lowering time (docs/decisions.md #16: no
allocation at run time).  Its C name holds the local address of its first
row (bit 31 set in the accumulator).

A tile destination or operand is resolved here to a local address (row
arithmetic), checked to be DIM whole consecutive rows; a DRAM operand to its
buffer and leading indices.  What is known of a tile's contents is recorded
per buffer: the valid rows and columns of scratchpad tiles filled by one
move each (so products read only them), and the part of an accumulator
tile its first writer wrote (so `mvout` reads only written rows).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from verisched.codegen.cexpr import ctext, ix
from verisched.codegen.errors import LowerError
from verisched.codegen.hooks import LetBody
from verisched.codegen.ir import Buf, Ctx, Dest, Emitter, whole
from verisched.codegen.normal import access_base, show
from verisched.codegen.poly import Poly
from verisched.pybridge.terms import Expr, Gen, Guard, Instr, Let, Var
from verisched.targets.gemmini import config as cfg
from verisched.targets.gemmini.arith import le
from verisched.targets.gemmini.instrs import LOAD, ROLES, Role

if TYPE_CHECKING:
    from verisched.targets.gemmini.rules import GemminiRules

DIM = cfg.DIM
ONCHIP = {"GEMMINI_SPAD": cfg.SPAD_ROWS, "GEMMINI_ACC": cfg.ACC_ROWS}


@dataclass
class OnChip:
    """An on-chip buffer: its memory, its rows, and what is known of its tiles' contents.

    `valid`: for a scratchpad buffer filled by one move per tile, the valid rows and
    columns of the tile at lead indices `lead` (C loop variables, each with an offset:
    the tile at lead index v + off), as polynomials; None when every tile is zero-padded
    to the full 16 x 16 in the scratchpad instead.  `written`: for an accumulator
    buffer, the rows and columns its first (overwriting) writer writes, over variables
    in scope at the let and the lead indices `written_lead` (as for `valid`: a buffer
    of several tiles, each first written in a loop over them); None if unknown."""

    memory: str
    rows: int
    track: bool = False
    lead: tuple[tuple[str, int], ...] = ()
    valid: tuple[Poly, Poly] | None = None
    written: tuple[Poly, Poly] | None = None
    written_lead: tuple[tuple[str, int], ...] = ()
    scope: frozenset[str] = frozenset()


class Untrackable(Exception):
    """A partial scratchpad tile whose valid part cannot be followed to its readers."""


def single_move(value: Expr) -> bool:
    """Is `value` generations and guards around exactly one move (one mvin per tile)?"""
    while isinstance(value, (Gen, Guard)):
        value = value.body
    return isinstance(value, Instr) and value.name in ROLES and ROLES[value.name].kind == LOAD


def onchip_let(g: GemminiRules, e: Let, memory: str, value: Expr, ctx: Ctx, out: Emitter,
               body: LetBody) -> bool:
    """Let `e` with `value` placed in `memory`: rows assigned (refused beyond capacity),
    filled by the value's moves (zeroed first where they do not cover it), `body` run."""
    dims = g.core.shape(value, ctx)
    where = f"let {e.var} in {memory}"
    if not dims:
        raise LowerError(f"gemmini: {where} is not a tensor: {show(e.value)}")
    consts = [d.as_const() for d in dims]
    if any(c is None for c in consts):
        ext = " x ".join(ctext(d, ctx) for d in dims)
        raise LowerError(f"gemmini: {where} has symbolic extents {ext}; on-chip buffers "
                         "need constant extents (fix the tile sizes, e.g. --fix)")
    if consts[-1] != DIM:
        raise LowerError(f"gemmini: {where} has last extent {consts[-1]}; a scratchpad or "
                         f"accumulator row holds exactly {DIM} elements")
    rows = 1
    for c in consts[:-1]:
        rows *= max(c or 0, 0)
    cap = ONCHIP[memory]
    if g.top[memory] + rows > cap:
        raise LowerError(f"gemmini: {where} needs {rows} rows ({' x '.join(map(str, consts))})"
                         f" but only {cap - g.top[memory]} of the {cap} rows of "
                         f"{memory} are free here: tile the program so each staged buffer "
                         "fits")
    name = g.core.names.fresh(e.var)
    base = g.top[memory]
    g.top[memory] += rows
    g.peak[memory] = max(g.peak[memory], g.top[memory])
    addr = base | (cfg.ACC_BIT if memory == "GEMMINI_ACC" else 0)
    buf = Buf(name, tuple(Poly.const(c) for c in consts))  # type: ignore[arg-type]
    g.onchip[name] = OnChip(memory, rows, track=single_move(value),
                            scope=frozenset(ctx.idx_names.values()))
    c2 = ctx.child()
    c2.tensors[e.var] = buf
    try:
        with out.block(""):
            out.line(f"const uint32_t {name} = 0x{addr:x}u; /* {memory}, {rows} rows */")
            dest = whole(buf)
            covered = g.core.lower(value, dest, "=", ctx, out)
            if not covered:
                zero_onchip(g, dest, ctx, out)
            res = body(c2, out)
    finally:
        g.top[memory] -= rows
    return res


def zero_onchip(g: GemminiRules, dest: Dest, ctx: Ctx, out: Emitter) -> None:
    """Zero a whole on-chip buffer with mvin from DRAM address 0 (rows of DIM)."""
    assert dest.buf is not None
    rows = g.onchip[dest.buf.cname].rows
    macro = g.zero_loader(out)
    for r0 in range(0, rows, DIM):
        n = min(DIM, rows - r0)
        out.line(f"{macro}(0, {dest.buf.cname} + {r0}, {DIM}, {n});")


def zero_tile(g: GemminiRules, dest: Dest, ctx: Ctx, out: Emitter) -> None:
    """Zero one DIM x DIM tile with a move from DRAM address 0."""
    addr, mem, lead = onchip_dest(g, dest, ctx, "zeroing")
    if mem == "GEMMINI_ACC":
        record_written(g.onchip[dest.buf.cname], lead, Poly.const(DIM),  # type: ignore
                       Poly.const(DIM), ctx, "zeroing")
    macro = g.zero_loader(out)
    out.line(f"{macro}(0, {addr}, {DIM}, {DIM});")


def onchip_dest(g: GemminiRules, dest: Dest, ctx: Ctx, what: str
                ) -> tuple[str, str, list[Poly]]:
    """Local address of the tile `dest` stands for, its memory and its lead indices."""
    if dest.buf is None or dest.buf.cname not in g.onchip:
        raise LowerError(f"gemmini: {what} must write an on-chip buffer")
    if len(dest.windows) != 2:
        raise LowerError(f"gemmini: {what} writes a rank-{len(dest.windows)} destination, "
                         "expected a 16 x 16 tile")
    for a, b in dest.windows:
        if not (ctx.facts.le(a, Poly.const(0)) and ctx.facts.le(Poly.const(DIM), b)):
            raise LowerError(f"gemmini: {what} writes only part of a tile "
                             f"([{ctext(a, ctx)}, {ctext(b, ctx)}))")
    pi, pj = Poly.var("@i"), Poly.var("@j")
    bi, conds = dest.fn([pi, pj])
    if conds:
        raise LowerError(f"gemmini: {what} writes an on-chip tile under a condition")
    row = rows_index(bi[:-1], dest.buf.dims[:-1])
    row0 = row.subst("@i", Poly.const(0)).subst("@j", Poly.const(0))
    if (bi[-1] - pj).terms or (row - row0 - pi).terms:
        raise LowerError(f"gemmini: {what} writes a tile that is not {DIM} consecutive "
                         f"whole rows of {dest.buf.cname}")
    lead = [p.subst("@i", Poly.const(0)).subst("@j", Poly.const(0)) for p in bi[:-2]]
    return tile_addr(dest.buf.cname, row0, ctx), g.onchip[dest.buf.cname].memory, lead


def rows_index(idx: list[Poly], dims: tuple[Poly, ...]) -> Poly:
    """Row-major offset of `idx` in extents `dims` (as many of each)."""
    lin = Poly.const(0)
    for i, d in zip(idx, dims, strict=True):
        lin = lin * d + i
    return lin


def tile_addr(cname: str, row: Poly, ctx: Ctx) -> str:
    """C text of the local address `row` rows after buffer `cname`'s first."""
    if row.as_const() == 0:
        return cname
    return f"{cname} + (uint32_t)({ctext(row, ctx)})"


def operand_tile(g: GemminiRules, arg: Expr, ctx: Ctx, what: str) -> tuple[str, str]:
    """Local address and memory of an on-chip tile operand (`a` or `a _[io] _[ko]`)."""
    base, idxs = access_base(arg)
    if not isinstance(base, Var):
        raise LowerError(f"gemmini: {what} is not a buffer access: {show(arg)}")
    buf = ctx.tensors.get(base.name)
    if not isinstance(buf, Buf) or buf.cname not in g.onchip:
        raise LowerError(f"gemmini: {what} {show(arg)} is not in the scratchpad or "
                         "accumulator (stage it in an in_mem let)")
    if len(buf.dims) != len(idxs) + 2:
        raise LowerError(f"gemmini: {what} {show(arg)} is not a tile (rank "
                         f"{len(buf.dims) - len(idxs)})")
    rows_c = buf.dims[-2].as_const()
    if rows_c is None or rows_c > DIM:
        raise LowerError(f"gemmini: {what} {show(arg)} has more than {DIM} rows")
    row = rows_index([ix(i, ctx) for i in idxs] + [Poly.const(0)], buf.dims[:-1])
    return tile_addr(buf.cname, row, ctx), g.onchip[buf.cname].memory


def dram_source(g: GemminiRules, arg: Expr, ctx: Ctx, what: str
                ) -> tuple[Buf, list[Poly]]:
    """A DRAM tensor argument (`A` or `A _[b]`): its buffer and the fixed leading indices."""
    base, idxs = access_base(arg)
    if not isinstance(base, Var):
        raise LowerError(f"gemmini: {what} is not a tensor in DRAM: {show(arg)}")
    buf = ctx.tensors.get(base.name)
    if not isinstance(buf, Buf):
        raise LowerError(f"gemmini: {what} {show(arg)} is not a DRAM tensor")
    if buf.cname in g.onchip:
        raise LowerError(f"gemmini: {what} {show(arg)} is already on chip; a move reads DRAM")
    if len(buf.dims) != len(idxs) + 2:
        raise LowerError(f"gemmini: {what} {show(arg)} must be a matrix (rank 2), "
                         f"found rank {len(buf.dims) - len(idxs)}")
    return buf, [ix(i, ctx) for i in idxs]


def lead_vars(lead: list[Poly]) -> tuple[tuple[str, int], ...] | None:
    """Lead indices as (loop variable, offset) pairs; None unless each index is a single
    variable plus a constant."""
    vars_: list[tuple[str, int]] = []
    for p in lead:
        names = [v for v in p.vars() if (p - Poly.var(v)).as_const() is not None]
        if len(names) != 1:
            return None
        v = names[0]
        vars_.append((v, (p - Poly.var(v)).as_const() or 0))
    return tuple(vars_)


def at_lead(p: Poly, lead: tuple[tuple[str, int], ...], idxs: list, ctx: Ctx) -> Poly:
    """`p`, recorded over the lead variables, at the tile the indices `idxs` select."""
    for (v, off), i in zip(lead, idxs, strict=True):
        p = p.subst(v, ix(i, ctx) - off)
    return p


def record_valid(buf: OnChip, lead: list[Poly], rows: Poly, cols: Poly, where: str) -> None:
    """Remember the valid part of the tiles of `buf` as a function of the lead indices,
    which must be loop variables plus constants (one move per tile)."""
    vars_ = lead_vars(lead)
    if vars_ is None:
        raise Untrackable(where)
    if buf.valid is not None and (buf.lead, buf.valid) != (vars_, (rows, cols)):
        raise Untrackable(where)
    buf.lead, buf.valid = vars_, (rows, cols)


def record_written(buf: OnChip, lead: list[Poly], rows: Poly, cols: Poly, ctx: Ctx,
                   where: str) -> None:
    """The rows/cols the first writer of an accumulator tile writes (for mvout), over
    the variables in scope at the let and the tile's lead indices."""
    if buf.written is None:
        vars_ = lead_vars(lead)
        ok = vars_ is not None and \
            (rows.vars() | cols.vars()) <= buf.scope | {v for v, _ in vars_}
        buf.written = (rows, cols) if ok else (Poly.const(-1), Poly.const(-1))
        buf.written_lead = vars_ if ok and vars_ else ()


def tile_extent(g: GemminiRules, arg: Expr, ctx: Ctx) -> tuple[Poly, Poly]:
    """Valid rows and columns of a scratchpad tile operand (16 x 16 when zero-padded)."""
    base, idxs = access_base(arg)
    buf = ctx.tensors.get(base.name)  # type: ignore[union-attr]
    info = g.onchip[buf.cname]  # type: ignore[union-attr]
    if info.valid is None:
        return Poly.const(DIM), Poly.const(DIM)
    rows, cols = info.valid
    return at_lead(rows, info.lead, idxs, ctx), at_lead(cols, info.lead, idxs, ctx)


def check_written(g: GemminiRules, arg: Expr, rows: Poly, cols: Poly, ctx: Ctx,
                  where: str) -> None:
    """mvout reads accumulator rows x cols: they must have been written (an accumulator
    tile is only written where its first writer's operands were valid)."""
    base, idxs = access_base(arg)
    buf = ctx.tensors.get(base.name)  # type: ignore[union-attr]
    info = g.onchip[buf.cname]  # type: ignore[union-attr]
    w = info.written
    if w is not None and info.written_lead:
        lead = info.written_lead
        w = (at_lead(w[0], lead, idxs, ctx), at_lead(w[1], lead, idxs, ctx))
    if w is None:
        raise LowerError(f"gemmini: {where} reads an accumulator tile that nothing "
                         "overwrote first (no gemmini_mvin_acc or first product)")
    if not (le(rows, w[0], ctx) and le(cols, w[1], ctx)):
        raise LowerError(f"gemmini: {where} reads {ctext(rows, ctx)} x {ctext(cols, ctx)} "
                         f"of its accumulator tile, which is only known to be written "
                         f"{ctext(w[0], ctx)} x {ctext(w[1], ctx)}")


def check_mem(mem: str, role: Role, where: str) -> None:
    """The instruction writes the memory its destination is in."""
    if mem != role.memory:
        raise LowerError(f"gemmini: {where} writes {role.memory}, but its destination is "
                         f"in {mem}")
