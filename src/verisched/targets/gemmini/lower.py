"""Lowering of derived programs with gemmini_ instructions to C for Gemmini's gemmini.h.

The program is a derived ATL term whose staged buffers are lets placed in
`GEMMINI_SPAD` / `GEMMINI_ACC` (`in_mem`, coq/Targets/Instr.v) and whose data
movement and arithmetic are calls of gemmini_ instructions (instrs.py).
Everything else -- generations, sums, guards, reshapes, DRAM lets -- is
lowered by the scalar lowering (codegen/lower.py, paper Fig. 3 and 6), whose
destinations (a buffer plus an index function and windows) tell each
instruction where its tile goes.  This module adds, Exo-style (thesis Sec.
3.2: memories, instructions, configuration state):

- On-chip lets: a buffer of extents d1 x ... x dk with dk = DIM occupies
  d1 * ... * d(k-1) consecutive rows, assigned statically (a stack: a let's
  rows are free again after its body), checked against the scratchpad's
  16384 and the accumulator's 1024 rows.  Its C name holds the local address
  of its first row (bit 31 set in the accumulator).
- Instructions: a tile destination or operand is resolved to a local address
  (row arithmetic) and checked to be whole consecutive rows; a DRAM side to
  a pointer and a row stride in bytes.  Valid rows and columns come from the
  instruction's arguments, the source's extents and the destination's
  windows; partial scratchpad tiles are zero-filled first, because the
  specification says a tile is zero outside its valid part.
- Matmul accumulation: `SUM [k] matmul a b` into an accumulator tile
  overwrites on the first iteration and accumulates (address bit 30) on the
  others, so no zeroing instruction is needed.
- Configuration: each instruction is preceded by a requirement marker;
  config.place_configs turns them into config instructions, emitted only
  where the needed value differs from the current one and hoisted out of
  loops that do not change it.

Bad input is refused with the subterm and the reason: float element types,
on-chip buffers with symbolic or too large extents or a last extent other
than DIM, tiles that are not whole consecutive rows, instructions whose
destination is in the wrong memory, and scalar arithmetic outside
instructions.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from verisched.codegen.errors import LowerError
from verisched.codegen.lower import Buf, Ctx, Dest, Emitter, Lowerer
from verisched.codegen.normal import access_base, show, show_pred
from verisched.codegen.poly import Poly
from verisched.codegen.prover import Facts
from verisched.pybridge.instrs import InstrError, check_call, instantiate
from verisched.pybridge.terms import (
    Expr,
    Instr,
    Let,
    Mem,
    Pred,
    SBin,
    Shape,
    Sum,
    Var,
    free_vars,
    idx_free_vars,
    pred_free_vars,
)
from verisched.targets.gemmini import config as cfg
from verisched.targets.gemmini.instrs import (
    COMPUTE,
    LOAD,
    ROLES,
    STORE_FULL,
    STORE_SPAD,
    ZERO,
    Role,
)

DIM = cfg.DIM
ONCHIP = {"GEMMINI_SPAD": cfg.SPAD_ROWS, "GEMMINI_ACC": cfg.ACC_ROWS}
ELEM = {"int8": ("int8_t", 1), "int32": ("int32_t", 4)}
LD_MACRO = ("gemmini_extended_mvin", "gemmini_extended_mvin2", "gemmini_extended_mvin3")
# Execute config: weight-stationary, no activation, no shift, A_stride 1, no transposes.
EX_WS = ("WEIGHT_STATIONARY", "NO_ACTIVATION", "0", "1", "0", "0")


@dataclass
class GemminiKernel:
    """A lowered Gemmini kernel: the C body plus what the signature and harness need."""

    name: str
    inputs: list[tuple[str, str, tuple[Poly, ...], str]]  # ATL name, C name, extents, C type
    sizes: list[tuple[str, str]]
    out_dims: tuple[Poly, ...]
    out_cname: str
    out_ctype: str
    out_extents_c: list[str]
    body: list[str]
    assumptions: list[tuple[str, Poly]] = field(default_factory=list)
    spad_rows: int = 0  # peak scratchpad rows in use
    acc_rows: int = 0  # peak accumulator rows in use
    configs: cfg.PlacementStats | None = None
    counts_c: dict[str, str] = field(default_factory=dict)  # C name -> element count (C text)
    assumptions_c: list[tuple[str, str]] = field(default_factory=list)  # (text, C condition)


@dataclass(frozen=True)
class OnChip:
    """An on-chip buffer: its memory and the C name of its base local address."""

    memory: str
    rows: int


class GemminiLowerer(Lowerer):
    """The scalar lowering, with on-chip lets and gemmini_ instructions added."""

    def __init__(self) -> None:
        super().__init__("int32", parallel=False)
        # DRAM lets only copy int8 data (im2col, packing): arithmetic is refused below.
        self.T = "int8_t"
        self.onchip: dict[str, OnChip] = {}
        self.top = {m: 0 for m in ONCHIP}
        self.peak = {m: 0 for m in ONCHIP}
        self.ld_ids: dict[tuple[str, str], int] = {}
        self.ld_last: dict[int, tuple[str, ...]] = {}
        self.input_types: dict[str, str] = {}  # C name of a DRAM tensor -> element type
        self.out_type: str | None = None
        self.out_cname = ""
        # Accumulator tiles being reduced into: C name -> conditions "first iteration".
        self.first: dict[str, list[str]] = {}

    # -- shapes of the new nodes ------------------------------------------------
    def shape(self, e: Expr, ctx: Ctx) -> tuple[Poly, ...] | None:
        if isinstance(e, Mem):
            return self.shape(e.body, ctx)
        if isinstance(e, Instr):
            return self.shape(self._meaning(e), ctx)
        return super().shape(e, ctx)

    def _meaning(self, e: Instr) -> Expr:
        try:
            return instantiate(e)
        except InstrError as exc:
            raise LowerError(f"gemmini: {exc}") from exc

    # -- dispatch ---------------------------------------------------------------
    def lower(self, e: Expr, dest: Dest, mode: str, ctx: Ctx, out: Emitter) -> bool:
        if isinstance(e, Instr):
            return self.lower_instr(e, dest, mode, ctx, out)
        if isinstance(e, Mem):
            raise LowerError(f"gemmini: a memory annotation outside a let's value: {show(e)}")
        if isinstance(e, Sum) and dest.buf is not None and dest.buf.cname in self.onchip:
            return self.lower_acc_sum(e, dest, mode, ctx, out)
        if isinstance(e, SBin) or (dest.buf is not None and dest.buf.cname in self.onchip
                                   and not dest.windows):
            raise LowerError("gemmini: scalar arithmetic outside gemmini_ instructions is not "
                             f"supported by the gemmini target: {show(e)}")
        return super().lower(e, dest, mode, ctx, out)

    def scalar(self, e: Expr, ctx: Ctx, out: Emitter) -> str:
        if isinstance(e, (Instr, Mem)):
            raise LowerError(f"gemmini: instruction or memory in scalar position: {show(e)}")
        if isinstance(e, (SBin, Sum)):
            raise LowerError("gemmini: scalar arithmetic outside gemmini_ instructions is not "
                             f"supported by the gemmini target: {show(e)}")
        return super().scalar(e, ctx, out)

    def with_let(self, e: Let, ctx: Ctx, out: Emitter,
                 body: Callable[[Ctx, Emitter], bool]) -> bool:
        if isinstance(e.value, Mem):
            if e.value.memory == "DRAM":
                return super().with_let(Let(e.var, e.value.body, e.body), ctx, out, body)
            if e.value.memory not in ONCHIP:
                raise LowerError(f"gemmini: let {e.var} is placed in {e.value.memory}, which "
                                 "the gemmini target does not have (GEMMINI_SPAD, GEMMINI_ACC, "
                                 "DRAM)")
            return self.onchip_let(e, e.value.memory, e.value.body, ctx, out, body)
        return super().with_let(e, ctx, out, body)

    # -- on-chip buffers --------------------------------------------------------
    def onchip_let(self, e: Let, memory: str, value: Expr, ctx: Ctx, out: Emitter,
                   body: Callable[[Ctx, Emitter], bool]) -> bool:
        dims = self.shape(value, ctx)
        where = f"let {e.var} in {memory}"
        if not dims:
            raise LowerError(f"gemmini: {where} is not a tensor: {show(e.value)}")
        consts = [d.as_const() for d in dims]
        if any(c is None for c in consts):
            ext = " x ".join(self.c(d, ctx) for d in dims)
            raise LowerError(f"gemmini: {where} has symbolic extents {ext}; on-chip buffers "
                             "need constant extents (fix the tile sizes, e.g. --fix)")
        if consts[-1] != DIM:
            raise LowerError(f"gemmini: {where} has last extent {consts[-1]}; a scratchpad or "
                             f"accumulator row holds exactly {DIM} elements")
        rows = 1
        for c in consts[:-1]:
            rows *= max(c or 0, 0)
        cap = ONCHIP[memory]
        if self.top[memory] + rows > cap:
            raise LowerError(f"gemmini: {where} needs {rows} rows ({' x '.join(map(str, consts))})"
                             f" but only {cap - self.top[memory]} of the {cap} rows of "
                             f"{memory} are free here: tile the program so each staged buffer "
                             "fits")
        name = self.names.fresh(e.var)
        base = self.top[memory]
        self.top[memory] += rows
        self.peak[memory] = max(self.peak[memory], self.top[memory])
        addr = base | (cfg.ACC_BIT if memory == "GEMMINI_ACC" else 0)
        buf = Buf(name, tuple(Poly.const(c) for c in consts))  # type: ignore[arg-type]
        self.onchip[name] = OnChip(memory, rows)
        c2 = ctx.child()
        c2.tensors[e.var] = buf
        try:
            with out.block(""):
                out.line(f"const uint32_t {name} = 0x{addr:x}u; /* {memory}, {rows} rows */")
                dest = Dest(buf, "", lambda i: (i, []), tuple((Poly.const(0), d)
                                                              for d in buf.dims))
                covered = self.lower(value, dest, "=", ctx, out)
                if not covered:
                    self.zero_onchip(dest, ctx, out)
                res = body(c2, out)
        finally:
            self.top[memory] -= rows
        return res

    def zero_onchip(self, dest: Dest, ctx: Ctx, out: Emitter) -> None:
        """Zero a whole on-chip buffer with mvin from DRAM address 0 (rows of DIM)."""
        assert dest.buf is not None
        rows = self.onchip[dest.buf.cname].rows
        macro = self.zero_loader(out)
        for r0 in range(0, rows, DIM):
            n = min(DIM, rows - r0)
            out.line(f"{macro}(0, {dest.buf.cname} + {r0}, {DIM}, {n});")

    def zero_loader(self, out: Emitter) -> str:
        """The mvin to zero-fill with.  A move from DRAM address 0 writes zeros whatever
        the stride and scale, but its load id must be configured: reuse the id and value
        of an earlier load (no re-configuration), else configure id 0."""
        for ld, value in sorted(self.ld_last.items()):
            self.require_ld(ld, value, out)
            return LD_MACRO[ld]
        self.require_ld(0, ("0", "1.0f", "0"), out)
        return LD_MACRO[0]

    def zero_fill(self, dest: Dest, ctx: Ctx, out: Emitter) -> None:
        """Zeros the semantics asks for in an on-chip buffer: whole tiles, by mvin from 0."""
        if dest.buf is None or dest.buf.cname not in self.onchip:
            super().zero_fill(dest, ctx, out)
            return
        if len(dest.windows) < 2:
            raise LowerError("gemmini: part of an on-chip tile would need zeros written "
                             "element by element; fill it with gemmini_ instructions")
        if len(dest.windows) == 2:
            self.zero_tile(dest, ctx, out)
            return
        a, b = dest.windows[0]
        with self.loop("z", a, b, ctx, out, []) as (c2, pv):
            self.zero_fill(dest.peel(pv), c2, out)

    # -- reductions into the accumulator -----------------------------------------
    def lower_acc_sum(self, e: Sum, dest: Dest, mode: str, ctx: Ctx, out: Emitter) -> bool:
        """`SUM [k] body` into an accumulator tile: the first iteration overwrites."""
        assert dest.buf is not None
        name = dest.buf.cname
        if self.onchip[name].memory != "GEMMINI_ACC":
            raise LowerError(f"gemmini: a sum is stored into a scratchpad buffer: {show(e)}; "
                             "reductions accumulate in GEMMINI_ACC")
        lo, hi = self.ix(e.lo, ctx), self.ix(e.hi, ctx)
        fresh = mode == "="
        if fresh and not ctx.facts.lt(lo, hi) and not _positive_at_min(hi - lo, ctx.facts.sizes):
            # An empty sum is zero: zero the tile when the loop may not run.
            sub = Emitter()
            self.zero_tile(dest, ctx, sub)
            with out.block(f"if ({self.c(hi, ctx)} <= {self.c(lo, ctx)})"):
                out.extend(sub)
        saved = self.first.get(name)
        with self.loop(e.var, lo, hi, ctx, out, []) as (c2, pv):
            c2.in_sum = True
            if fresh or saved is not None:
                self.first[name] = [*(saved or []), f"{self.c(pv, c2)} == {self.c(lo, ctx)}"]
            try:
                self.lower(e.body, dest, "+=", c2, out)
            finally:
                if saved is None:
                    self.first.pop(name, None)
                else:
                    self.first[name] = saved
        return True

    def zero_tile(self, dest: Dest, ctx: Ctx, out: Emitter) -> None:
        addr, _ = self.onchip_dest(dest, ctx, "zeroing")
        macro = self.zero_loader(out)
        out.line(f"{macro}(0, {addr}, {DIM}, {DIM});")

    # -- resolving tiles -----------------------------------------------------------
    def onchip_dest(self, dest: Dest, ctx: Ctx, what: str) -> tuple[str, str]:
        """Local address of the tile `dest` stands for, and its memory."""
        if dest.buf is None or dest.buf.cname not in self.onchip:
            raise LowerError(f"gemmini: {what} must write an on-chip buffer")
        if len(dest.windows) != 2:
            raise LowerError(f"gemmini: {what} writes a rank-{len(dest.windows)} destination, "
                             "expected a 16 x 16 tile")
        for a, b in dest.windows:
            if not (ctx.facts.le(a, Poly.const(0)) and ctx.facts.le(Poly.const(DIM), b)):
                raise LowerError(f"gemmini: {what} writes only part of a tile "
                                 f"([{self.c(a, ctx)}, {self.c(b, ctx)}))")
        pi, pj = Poly.var("@i"), Poly.var("@j")
        bi, conds = dest.fn([pi, pj])
        if conds:
            raise LowerError(f"gemmini: {what} writes an on-chip tile under a condition")
        row = self._rows_index(bi[:-1], dest.buf.dims[:-1])
        row0 = row.subst("@i", Poly.const(0)).subst("@j", Poly.const(0))
        if (bi[-1] - pj).terms or (row - row0 - pi).terms:
            raise LowerError(f"gemmini: {what} writes a tile that is not {DIM} consecutive "
                             f"whole rows of {dest.buf.cname}")
        return self._addr(dest.buf.cname, row0, ctx), self.onchip[dest.buf.cname].memory

    @staticmethod
    def _rows_index(idx: list[Poly], dims: tuple[Poly, ...]) -> Poly:
        lin = Poly.const(0)
        for i, d in zip(idx, dims, strict=True):
            lin = lin * d + i
        return lin

    def _addr(self, cname: str, row: Poly, ctx: Ctx) -> str:
        if row.as_const() == 0:
            return cname
        return f"{cname} + (uint32_t)({self.c(row, ctx)})"

    def operand_tile(self, arg: Expr, ctx: Ctx, what: str) -> tuple[str, str]:
        """Local address and memory of an on-chip tile operand (`a` or `a _[io] _[ko]`)."""
        base, idxs = access_base(arg)
        if not isinstance(base, Var):
            raise LowerError(f"gemmini: {what} is not a buffer access: {show(arg)}")
        buf = ctx.tensors.get(base.name)
        if not isinstance(buf, Buf) or buf.cname not in self.onchip:
            raise LowerError(f"gemmini: {what} {show(arg)} is not in the scratchpad or "
                             "accumulator (stage it in an in_mem let)")
        if len(buf.dims) != len(idxs) + 2:
            raise LowerError(f"gemmini: {what} {show(arg)} is not a tile (rank "
                             f"{len(buf.dims) - len(idxs)})")
        rows_c = buf.dims[-2].as_const()
        if rows_c is None or rows_c > DIM:
            raise LowerError(f"gemmini: {what} {show(arg)} has more than {DIM} rows")
        row = self._rows_index([self.ix(i, ctx) for i in idxs] + [Poly.const(0)], buf.dims[:-1])
        return self._addr(buf.cname, row, ctx), self.onchip[buf.cname].memory

    def dram_source(self, arg: Expr, ctx: Ctx, what: str
                    ) -> tuple[Buf, list[Poly]]:
        """A DRAM tensor argument (`A` or `A _[b]`): its buffer and the fixed leading indices."""
        base, idxs = access_base(arg)
        if not isinstance(base, Var):
            raise LowerError(f"gemmini: {what} is not a tensor in DRAM: {show(arg)}")
        buf = ctx.tensors.get(base.name)
        if not isinstance(buf, Buf):
            raise LowerError(f"gemmini: {what} {show(arg)} is not a DRAM tensor")
        if buf.cname in self.onchip:
            raise LowerError(f"gemmini: {what} {show(arg)} is already on chip; a move reads DRAM")
        if len(buf.dims) != len(idxs) + 2:
            raise LowerError(f"gemmini: {what} {show(arg)} must be a matrix (rank 2), "
                             f"found rank {len(buf.dims) - len(idxs)}")
        return buf, [self.ix(i, ctx) for i in idxs]

    # -- configuration --------------------------------------------------------------
    def require_ld(self, ld_id: int, value: tuple[str, ...], out: Emitter) -> None:
        out.line(cfg.marker(f"ld{ld_id}", value))

    def ld_id_for(self, source: str, memory: str) -> int:
        """One load id per (DRAM tensor, memory), so their strides need no re-config;
        beyond three, id 2 is shared and reconfigured when it must be."""
        key = (source, memory)
        if key not in self.ld_ids:
            self.ld_ids[key] = min(len(self.ld_ids), 2)
        return self.ld_ids[key]

    # -- instructions -----------------------------------------------------------------
    def lower_instr(self, e: Instr, dest: Dest, mode: str, ctx: Ctx, out: Emitter) -> bool:
        try:
            spec = check_call(e)
        except InstrError as exc:
            raise LowerError(f"gemmini: {exc}") from exc
        role = ROLES.get(e.name)
        if role is None:
            raise LowerError(f"gemmini: {e.name} is not a Gemmini instruction (the gemmini "
                             "target emits only gemmini_ instructions): "
                             f"{show(e)}")
        args = {p.name: a for p, a in zip(spec.params, e.args, strict=True)}
        where = f"{e.name} ({show(e)})"
        if role.kind == COMPUTE:
            return self.emit_matmul(role, args, dest, mode, ctx, out, where)
        if mode != "=":
            raise LowerError(f"gemmini: {where} is accumulated into its destination; only "
                             "gemmini_matmul accumulates (in the accumulator)")
        if role.kind == LOAD:
            return self.emit_load(role, args, dest, ctx, out, where)
        if role.kind == ZERO:
            addr, mem = self.onchip_dest(dest, ctx, where)
            self._check_mem(mem, role, where)
            self.zero_tile(dest, ctx, out)
            return True
        if role.kind in (STORE_FULL, STORE_SPAD):
            return self.emit_store(role, args, dest, ctx, out, where)
        raise LowerError(f"gemmini: {where}: unknown role {role.kind}")

    def _check_mem(self, mem: str, role: Role, where: str) -> None:
        if role.memory is not None and mem != role.memory:
            raise LowerError(f"gemmini: {where} writes {role.memory}, but its destination is in "
                             f"{mem}")

    def _extent(self, args: dict, name: str | None, ctx: Ctx) -> Poly:
        if name is None:
            return Poly.const(DIM)
        return self.ix(args[name], ctx)

    def _clip(self, p: Poly, ctx: Ctx) -> Poly:
        """max(0, min(DIM, p))."""
        return self.smax(self.smin(p, Poly.const(DIM), ctx), Poly.const(0), ctx)

    def emit_load(self, role: Role, args: dict, dest: Dest, ctx: Ctx, out: Emitter,
                  where: str) -> bool:
        addr, mem = self.onchip_dest(dest, ctx, where)
        self._check_mem(mem, role, where)
        src, lead = self.dram_source(args[role.src], ctx, f"the source of {where}")
        r = self._extent(args, role.row, ctx) if role.row else Poly.const(0)
        c = self._extent(args, role.col, ctx) if role.col else Poly.const(0)
        nrows, ncols = src.dims[-2], src.dims[-1]
        # Valid part: the instruction's rows/cols, within the source (zero outside, Fig. 2).
        rows = self._clip(self.smin(self._extent(args, role.rows, ctx), nrows - r, ctx), ctx)
        cols = self._clip(self.smin(self._extent(args, role.cols, ctx), ncols - c, ctx), ctx)
        if not (ctx.facts.ge0(r) and ctx.facts.ge0(c)):
            raise LowerError(f"gemmini: {where} may read before the start of its source "
                             "(negative offset)")
        etype = "int8" if mem == "GEMMINI_SPAD" else "int32"
        self._set_input_type(src.cname, etype, where)
        esize = ELEM[etype][1]
        ld = self.ld_id_for(src.cname, mem)
        stride = f"{self.c(ncols, ctx)} * {esize}" if esize != 1 else self.c(ncols, ctx)
        self.require_ld(ld, (stride, "1.0f", "0"), out)
        self.ld_last[ld] = (stride, "1.0f", "0")
        lin = self._rows_index([*lead, r, c], src.dims)
        ptr = f"&{src.cname}[{self.c(lin, ctx)}]"
        full = ctx.facts.le(Poly.const(DIM), rows) and ctx.facts.le(Poly.const(DIM), cols)
        if full:
            out.line(f"{LD_MACRO[ld]}({ptr}, {addr}, {DIM}, {DIM});")
            return True
        rv, cv = self.names.fresh("rows"), self.names.fresh("cols")
        with out.block(""):
            out.line(f"const int {rv} = {self.c(rows, ctx)}, {cv} = {self.c(cols, ctx)};")
            # The tile is zero outside its valid part (the specification's guard / Fig. 2).
            with out.block(f"if ({rv} < {DIM} || {cv} < {DIM})"):
                out.line(f"{LD_MACRO[ld]}(0, {addr}, {DIM}, {DIM});")
            with out.block(f"if ({rv} > 0 && {cv} > 0)"):
                out.line(f"{LD_MACRO[ld]}({ptr}, {addr}, {cv}, {rv});")
        return True

    def _set_input_type(self, cname: str, etype: str, where: str) -> None:
        old = self.input_types.get(cname)
        if old is not None and old != etype:
            raise LowerError(f"gemmini: {where} reads {cname} as {etype}, elsewhere it is read "
                             f"as {old}")
        self.input_types[cname] = etype

    def emit_matmul(self, role: Role, args: dict, dest: Dest, mode: str, ctx: Ctx,
                    out: Emitter, where: str) -> bool:
        c_addr, mem = self.onchip_dest(dest, ctx, where)
        self._check_mem(mem, role, where)
        a_addr, a_mem = self.operand_tile(args[role.a], ctx, f"operand {role.a} of {where}")
        b_addr, b_mem = self.operand_tile(args[role.b], ctx, f"operand {role.b} of {where}")
        for m, which in ((a_mem, role.a), (b_mem, role.b)):
            if m != "GEMMINI_SPAD":
                raise LowerError(f"gemmini: operand {which} of {where} is in {m}; the systolic "
                                 "array reads its operands from the scratchpad")
        if mode == "=":
            target = c_addr
        else:
            assert dest.buf is not None
            firsts = self.first.get(dest.buf.cname)
            if firsts:
                cond = " && ".join(f"({f})" for f in firsts)
                target = f"({c_addr}) | (({cond}) ? 0u : 0x{cfg.ACCUMULATE_BIT:x}u)"
            else:
                target = f"({c_addr}) | 0x{cfg.ACCUMULATE_BIT:x}u"
        out.line(cfg.marker("ex", EX_WS))
        # Weight-stationary: preload B (the weights) naming the output C, then stream A.
        out.line(f"gemmini_extended_preload({b_addr}, {target}, {DIM}, {DIM}, {DIM}, {DIM});")
        out.line(f"gemmini_extended_compute_preloaded({a_addr}, {cfg.GARBAGE_ADDR}, {DIM}, "
                 f"{DIM}, {DIM}, {DIM});")
        return True

    def dram_dest(self, dest: Dest, ctx: Ctx, where: str
                  ) -> tuple[str, Poly, Poly, Poly, Poly, Poly]:
        """Pointer base, element row stride and the writable rows/cols window of a tile
        destination in DRAM: (cname, lin00, stride, row_lo, row_hi, col_hi)."""
        buf = dest.buf
        if buf is None or buf.cname in self.onchip:
            raise LowerError(f"gemmini: {where} must store to DRAM")
        if len(dest.windows) != 2:
            raise LowerError(f"gemmini: {where} stores a rank-{len(dest.windows)} value, "
                             "expected a tile")
        pi, pj = Poly.var("@i"), Poly.var("@j")
        bi, conds = dest.fn([pi, pj])
        lin = self._rows_index(bi, buf.dims)
        z = Poly.const(0)
        lin00 = lin.subst("@i", z).subst("@j", z)
        stride = lin.subst("@i", Poly.const(1)).subst("@j", z) - lin00
        if (lin - lin00 - stride * pi - pj).terms or stride.vars() & {"@i", "@j"}:
            raise LowerError(f"gemmini: {where} stores a tile whose rows are not contiguous in "
                             f"{buf.cname} (each tile row must be {DIM} consecutive elements)")
        (a0, b0), (a1, b1) = dest.windows
        row_lo, row_hi = self.smax(a0, z, ctx), self.smin(b0, Poly.const(DIM), ctx)
        col_lo, col_hi = self.smax(a1, z, ctx), self.smin(b1, Poly.const(DIM), ctx)
        for f in conds:
            ci = f.subst("@j", z) - f.subst("@i", z).subst("@j", z)
            cj = f.subst("@i", z) - f.subst("@i", z).subst("@j", z)
            k = f.subst("@i", z).subst("@j", z)
            if (f - ci - cj - k).terms:
                raise LowerError(f"gemmini: {where}: store condition {self.c(f, ctx)} >= 0 mixes "
                                 "rows and columns")
            for part, var in ((ci, pi), (cj, pj)):
                if not part.terms:
                    continue
                coef = part.subst(var.terms[0][0][0].name, Poly.const(1))
                if coef.as_const() == -1:  # k - v >= 0: v < k + 1
                    if var is pi:
                        row_hi = self.smin(row_hi, k + 1, ctx)
                    else:
                        col_hi = self.smin(col_hi, k + 1, ctx)
                elif coef.as_const() == 1:  # v + k >= 0: v >= -k
                    if var is pi:
                        row_lo = self.smax(row_lo, -k, ctx)
                    else:
                        col_lo = self.smax(col_lo, -k, ctx)
                else:
                    raise LowerError(f"gemmini: {where}: cannot turn the store condition "
                                     f"{self.c(f, ctx)} >= 0 into a row/column count")
        if not ctx.facts.le(col_lo, z):
            raise LowerError(f"gemmini: {where} stores a tile whose first columns are cut off; "
                             "mvout always starts at a row's first column")
        return buf.cname, lin00, stride, row_lo, row_hi, col_hi

    def emit_store(self, role: Role, args: dict, dest: Dest, ctx: Ctx, out: Emitter,
                   where: str) -> bool:
        src_addr, mem = self.operand_tile(args[role.src], ctx, f"the source of {where}")
        self._check_mem(mem, role, where)
        cname, lin00, stride, row_lo, row_hi, col_hi = self.dram_dest(dest, ctx, where)
        rows = self.smin(row_hi, self._extent(args, role.rows, ctx), ctx) - row_lo
        cols = self.smin(col_hi, self._extent(args, role.cols, ctx), ctx)
        etype = "int32" if role.kind == STORE_FULL else "int8"
        if cname == self.out_cname:
            if self.out_type not in (None, etype):
                raise LowerError(f"gemmini: {where} stores {etype}, other stores to the output "
                                 f"are {self.out_type}")
            self.out_type = etype
        esize = ELEM[etype][1]
        st = f"{self.c(stride, ctx)} * {esize}" if esize != 1 else self.c(stride, ctx)
        out.line(cfg.marker("st", (st, "NO_ACTIVATION", "ACC_SCALE_IDENTITY")))
        local = src_addr if row_lo.as_const() == 0 else \
            f"{src_addr} + (uint32_t)({self.c(row_lo, ctx)})"
        if role.kind == STORE_FULL:
            local = f"({local}) | 0x{cfg.FULL_WIDTH_BIT:x}u"
        ptr = f"&{cname}[{self.c(lin00 + stride * row_lo, ctx)}]"
        call = f"gemmini_extended_mvout({ptr}, {local}, {self.c(cols, ctx)}, {self.c(rows, ctx)});"
        if ctx.facts.ge0(rows - 1) and ctx.facts.ge0(cols - 1):
            out.line(call)
        else:
            with out.block(f"if ({self.c(rows, ctx)} > 0 && {self.c(cols, ctx)} > 0)"):
                out.line(call)
        (a0, b0), (a1, b1) = dest.windows
        return (ctx.facts.le(row_lo, a0) and ctx.facts.le(b0, rows + row_lo)
                and ctx.facts.le(a1, Poly.const(0)) and ctx.facts.le(b1, cols))

    # -- loops: track nothing extra, but keep loop variables readable ---------------
    @contextmanager
    def loop(self, atl_var: str, lo: Poly, hi: Poly, ctx: Ctx, out: Emitter,
             facts: list[Poly], parallel: bool = False) -> Iterator[tuple[Ctx, Poly]]:
        with super().loop(atl_var, lo, hi, ctx, out, facts, False) as res:
            yield res


def _monotone(p: Poly, sizes: frozenset[str]) -> bool:
    """Is `p` non-decreasing in every size (non-negative coefficients on monomials of sizes
    and of floor divisions of such polynomials by positive constants)?"""
    for m, c in p.terms:
        if m == ():
            continue
        if c < 0:
            return False
        for a in m:
            if a.op == "var":
                if a.name not in sizes:
                    return False
            elif a.op == "/":
                num, den = a.args
                if (den.as_const() or 0) <= 0 or not _monotone(num, sizes):
                    return False
            else:
                return False
    return True


def _positive_at_min(p: Poly, sizes: frozenset[str]) -> bool:
    """`p >= 1` for every size >= 1: `p` is monotone in the sizes and >= 1 when all are 1.
    (Shows `cdiv(n, 16) >= 1`, which the linear prover does not find.)"""
    from verisched.codegen.poly import evaluate

    return _monotone(p, sizes) and evaluate(p, dict.fromkeys(p.vars(), 1)) >= 1


def lower_gemmini(expr: Expr, env: dict[str, Shape], *, name: str = "kernel",
                  dtype: str = "int8", sizes: list[str] | None = None,
                  assume: tuple[Pred, ...] | list[Pred] = ()) -> GemminiKernel:
    """Lower a derived program with gemmini_ instructions to the body of a C kernel.

    `env` maps each input tensor to its extents; `sizes` orders the size
    parameters (default: sorted); `assume` are the derivation's hypotheses over
    the sizes (checked by the harness before running).  `dtype` is the element
    type of the data: Gemmini computes on int8 inputs with int32 accumulators,
    so anything but int8/int32 is refused.
    """
    if dtype not in ELEM:
        raise LowerError(f"gemmini: element type {dtype} is not supported by Gemmini "
                         "(int8 inputs, int32 accumulators; no floating point)")
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name) or name.startswith("vs_"):
        raise LowerError(f"gemmini: kernel name {name!r} is not a usable C identifier")
    size_names: set[str] = set()
    for s in env.values():
        for i in s:
            size_names |= idx_free_vars(i)
    size_names |= free_vars(expr) - set(env)
    if sizes is None:
        sizes = sorted(size_names)
    elif set(sizes) != size_names:
        raise LowerError(f"gemmini: size parameters {sorted(size_names)} differ from the "
                         f"given order {sizes}")
    lw = GemminiLowerer()
    lw.names.used.add(name)
    lw.error_flag = f"{name}_error"
    ctx = Ctx(Facts(sizes=frozenset()), {}, {})
    size_list = []
    for s in sizes:
        c = lw.names.fresh(s)
        ctx.idx_names[s] = c
        size_list.append((s, c))
    ctx.facts.sizes = frozenset(c for _, c in size_list)
    for _, c in size_list:
        ctx.facts.add(Poly.var(c) - 1)
    assumptions: list[tuple[str, Poly]] = []
    for p in assume:
        if pred_free_vars(p) - set(sizes):
            raise LowerError(f"gemmini: assumption {show_pred(p)} mentions a non-size variable")
        _, facts = lw.pred(p, ctx)
        for f in facts:
            ctx.facts.add(f)
            assumptions.append((show_pred(p), f))
    inputs = []
    for k, shp in env.items():
        c = lw.names.fresh(k)
        dims = tuple(lw.ix(i, ctx) for i in shp)
        if not dims:
            raise LowerError(f"gemmini: scalar input {k} is not supported (inputs are int8 "
                             "or int32 matrices)")
        inputs.append((k, c, dims))
        ctx.tensors[k] = Buf(c, dims)
    out_name = lw.names.fresh("out")
    lw.out_cname = out_name
    dims = lw.shape(expr, ctx) or ()
    if not dims:
        raise LowerError("gemmini: the program's value is a scalar; Gemmini kernels store tiles")
    for d in dims:
        if d.vars() - ctx.facts.sizes:
            raise LowerError(f"gemmini: output extent {lw.c(d, ctx)} depends on a loop variable")
    cdims = tuple(lw.smax(d, Poly.const(0), ctx) for d in dims)
    buf = Buf(out_name, cdims)
    dest = Dest(buf, "", lambda i: (i, []), tuple((Poly.const(0), d) for d in cdims))
    fill = Emitter()
    fill.level = 1
    covered = lw.lower(expr, dest, "=", ctx, fill)
    out_type = lw.out_type or dtype
    body = Emitter()
    body.level = 1
    body.line(f"{name}_error = 0;")
    if not covered:
        total = Poly.const(1)
        for d in cdims:
            total = total * d
        body.line(f"memset({out_name}, 0, (size_t)({lw.c(total, ctx)}) * "
                  f"sizeof({ELEM[out_type][0]}));")
    placed, stats = cfg.place_configs(fill.lines)
    body.lines.extend(placed)
    body.line("gemmini_fence();")
    typed_inputs = [(k, c, d, ELEM[lw.input_types.get(c, "int8")][0]) for k, c, d in inputs]
    counts = {}
    for _, c, d in [*inputs, ("", out_name, cdims)]:
        total = Poly.const(1)
        for x in d:
            total = total * x
        counts[c] = lw.c(total, ctx)
    assumptions_c = [(text, lw.c(f, ctx) + " >= 0") for text, f in assumptions]
    return GemminiKernel(
        name=name, inputs=typed_inputs, sizes=size_list, out_dims=cdims, out_cname=out_name,
        out_ctype=ELEM[out_type][0], out_extents_c=[lw.c(d, ctx) for d in cdims],
        body=body.lines, assumptions=assumptions, spad_rows=lw.peak["GEMMINI_SPAD"],
        acc_rows=lw.peak["GEMMINI_ACC"], configs=stats, counts_c=counts,
        assumptions_c=assumptions_c)
