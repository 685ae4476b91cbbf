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
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field

from verisched.codegen.errors import LowerError
from verisched.codegen.lower import Buf, Ctx, Dest, Emitter, Lowerer, add_assumptions
from verisched.codegen.normal import access_base, show
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
    TAdd,
    Var,
    free_vars,
    idx_free_vars,
)
from verisched.targets.gemmini import config as cfg
from verisched.targets.gemmini.instrs import ACC_OUT, COMPUTE, LOAD, ROLES, STORE, Role

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
    config_params: list[str] = field(default_factory=list)  # int parameters that are not sizes
    assumptions_c: list[tuple[str, str]] = field(default_factory=list)  # (text, C condition)


@dataclass
class OnChip:
    """An on-chip buffer: its memory, its rows, and what is known of its tiles' contents.

    `valid`: for a scratchpad buffer filled by one move per tile, the valid rows and
    columns of the tile at lead indices `lead` (C loop variables, each with an offset:
    the tile at lead index v + off), as polynomials; None when every tile is zero-padded
    to the full 16 x 16 in the scratchpad instead.  `written`: for an accumulator tile,
    the rows and columns its first (overwriting) writer writes, over variables in scope
    at the let; None if unknown."""

    memory: str
    rows: int
    track: bool = False
    lead: tuple[tuple[str, int], ...] = ()
    valid: tuple[Poly, Poly] | None = None
    written: tuple[Poly, Poly] | None = None
    scope: frozenset[str] = frozenset()


def _split_atom(p: Poly, atom: object) -> tuple[Poly, Poly] | None:
    """`p` as `coef * atom + rest` with neither part mentioning `atom` (None if `p` is
    not linear in it)."""
    coef: dict = {}
    rest: dict = {}
    for mono, c in p.terms:
        n = mono.count(atom)
        if n > 1:
            return None
        if n == 1:
            m = list(mono)
            m.remove(atom)
            coef[tuple(m)] = coef.get(tuple(m), 0) + c
        else:
            rest[mono] = rest.get(mono, 0) + c
    return Poly._make(coef), Poly._make(rest)


def _fold_divmod(p: Poly) -> Poly:
    """Fold `P * k * (y / k) + P * (y mod k)` into `P * y` (Z.div_mod: y = k (y / k) +
    y mod k for k <> 0), repeatedly.  A split (Fig. 6) linearises an index through its
    quotient and remainder; folding them back shows a tile's rows contiguous in memory."""
    from verisched.codegen.poly import Atom

    for _ in range(16):
        mods = {a for mono, _ in p.terms for a in mono if a.op == "%"}
        for mod in sorted(mods, key=Atom.key):
            y, k = mod.args
            if k.as_const() == 0:
                continue
            div = Atom("/", args=(y, k))
            sm = _split_atom(p, mod)
            if sm is None:
                continue
            cm, rest = sm
            sd = _split_atom(rest, div)
            if sd is None:
                continue
            cd, rest2 = sd
            if not (cd - cm * k).terms:
                p = rest2 + cm * y
                break
        else:
            return p
    return p


def _prove_divmod(f: Poly, ctx: Ctx, depth: int = 4) -> bool:
    """`f >= 0` where `f` is `c + s * (x / k)` or `c + s * (x mod k)` (s = +-1, k >= 1
    provable), by the floor-division laws: x / k >= t iff x >= t k, x / k <= t iff
    x <= t k + k - 1, 0 <= x mod k <= k - 1; `x` may itself hold such atoms."""
    if ctx.facts.ge0(f):
        return True
    if depth == 0:
        return False
    atoms = [a for mono, _ in f.terms for a in mono if a.op in ("/", "%", "max")]
    for atom in atoms:
        sp = _split_atom(f, atom)
        if sp is None:
            continue
        coef, c = sp
        if atom.op == "max":
            # coef * max(x, y) >= coef * x for coef >= 0: prove the smaller goal.
            if ctx.facts.ge0(coef) and any(_prove_divmod(c + coef * arg, ctx, depth - 1)
                                           for arg in atom.args):
                return True
            continue
        if atom.op == "/" and not (coef - atom.args[1]).terms \
                and ctx.facts.ge0(atom.args[1] - 1):
            # k * (y / k) >= y - k + 1 for k >= 1.
            y, k = atom.args
            if _prove_divmod(c + y - k + 1, ctx, depth - 1):
                return True
        s_ = coef.as_const()
        if s_ not in (1, -1):
            continue
        x, k = atom.args
        if not (ctx.facts.ge0(k - 1) or _prove_divmod(k - 1, ctx, depth - 1)):
            continue
        if atom.op == "/":
            goal = x + c * k if s_ == 1 else c * k + k - 1 - x
            if _prove_divmod(goal, ctx, depth - 1):
                return True
        else:
            goal = c if s_ == 1 else c - (k - 1)
            if _prove_divmod(goal, ctx, depth - 1):
                return True
    return False


def _single_atom(p: Poly, op: str) -> tuple[Poly, Poly] | None:
    if len(p.terms) == 1 and p.terms[0][1] == 1 and len(p.terms[0][0]) == 1:
        a = p.terms[0][0][0]
        if a.op == op:
            return a.args  # type: ignore[return-value]
    return None


def _le(a: Poly, b: Poly, ctx: Ctx, depth: int = 6) -> bool:
    """`a <= b`, by the prover or through min/max (which the linear prover keeps opaque)."""
    if _prove_divmod(b - a, ctx, 2):
        return True
    if depth == 0:
        return False
    d = depth - 1
    if (m := _single_atom(a, "min")) and (_le(m[0], b, ctx, d) or _le(m[1], b, ctx, d)):
        return True
    if (m := _single_atom(b, "max")) and (_le(a, m[0], ctx, d) or _le(a, m[1], ctx, d)):
        return True
    if (m := _single_atom(b, "min")) and _le(a, m[0], ctx, d) and _le(a, m[1], ctx, d):
        return True
    if (m := _single_atom(a, "max")) and _le(m[0], b, ctx, d) and _le(m[1], b, ctx, d):
        return True
    return False


class _Untrackable(Exception):
    """A partial scratchpad tile whose valid part cannot be followed to its readers."""


def _single_move(value: Expr) -> bool:
    """Is `value` generations and guards around exactly one move (one mvin per tile)?"""
    from verisched.pybridge.terms import Gen, Guard

    while isinstance(value, (Gen, Guard)):
        value = value.body
    return isinstance(value, Instr) and value.name in ROLES and ROLES[value.name].kind == LOAD


def wide_tensors(e: Expr) -> set[str]:
    """Names of DRAM tensors holding int32 data: sources of gemmini_mvin_acc, and what the
    values of such lets read (a bias broadcast into a matrix reads an int32 bias)."""
    from verisched.pybridge.terms import Let as LetT

    wide: set[str] = set()
    lets: dict[str, Expr] = {}

    def walk(x: object) -> None:
        if isinstance(x, Instr) and x.name in ROLES and ROLES[x.name].kind == LOAD \
                and ROLES[x.name].memory == "GEMMINI_ACC":
            base, _ = access_base(x.args[0])  # type: ignore[arg-type]
            if isinstance(base, Var):
                wide.add(base.name)
        if isinstance(x, LetT):
            lets[x.var] = x.value
        if hasattr(x, "__dataclass_fields__"):
            for f in x.__dataclass_fields__:  # type: ignore[attr-defined]
                v = getattr(x, f)
                for y in (v if isinstance(v, tuple) else (v,)):
                    walk(y)

    walk(e)
    todo = list(wide)
    while todo:
        n = todo.pop()
        if n in lets:
            for v in free_vars(lets[n]):
                if v not in wide:
                    wide.add(v)
                    todo.append(v)
    return wide


def config_names(e: object) -> set[str]:
    """Variables used as output configuration (scale, ReLU flag) of gemmini_mvout or
    gemmini_acc_out: integers of any sign, passed to the kernel but not sizes."""
    out: set[str] = set()
    if isinstance(e, Instr):
        role = ROLES.get(e.name)
        spec = check_call(e)
        names = {"sm", "se", "act"} if e.name == ACC_OUT else \
            {role.scale_m, role.scale_e, role.act} if role and role.kind == STORE else set()
        for p, a in zip(spec.params, e.args, strict=True):
            if p.name in names:
                out |= set(idx_free_vars(a))  # type: ignore[arg-type]
    if hasattr(e, "__dataclass_fields__"):
        for f in e.__dataclass_fields__:  # type: ignore[attr-defined]
            v = getattr(e, f)
            if isinstance(v, tuple):
                for x in v:
                    out |= config_names(x)
            else:
                out |= config_names(v)
    return out


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
        # Size-like parameters that configure the output path (scale, ReLU): not sizes.
        self.config_params: set[str] = set()
        # ATL names of DRAM tensors (inputs, lets) holding int32 data (the rest is int8).
        self.wide: set[str] = set()

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
        if isinstance(e, TAdd) and dest.buf is not None and dest.buf.cname in self.onchip:
            # acc := bias <+> SUM ...: the left operand writes, the right accumulates.
            covered = self.lower(e.left, dest, mode, ctx, out)
            # The right operand adds to what the left wrote: it never overwrites, even in
            # the first iteration of an enclosing reduction.
            name = dest.buf.cname
            saved = self.first.pop(name, None)
            try:
                self.lower(e.right, dest, "+=", ctx, out)
            finally:
                if saved is not None:
                    self.first[name] = saved
            return covered
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
                return self.with_let(Let(e.var, e.value.body, e.body), ctx, out, body)
            if e.value.memory not in ONCHIP:
                raise LowerError(f"gemmini: let {e.var} is placed in {e.value.memory}, which "
                                 "the gemmini target does not have (GEMMINI_SPAD, GEMMINI_ACC, "
                                 "DRAM)")
            return self.onchip_let(e, e.value.memory, e.value.body, ctx, out, body)
        # A DRAM buffer (im2col, packing): scalar copies, of the type its readers need.
        saved = self.T
        self.T = "int32_t" if e.var in self.wide else "int8_t"
        try:
            return super().with_let(e, ctx, out, body)
        finally:
            self.T = saved

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
        self.onchip[name] = OnChip(memory, rows, track=_single_move(value),
                                   scope=frozenset(ctx.idx_names.values()))
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
        addr, mem, _ = self.onchip_dest(dest, ctx, "zeroing")
        if mem == "GEMMINI_ACC":
            self._record_written(self.onchip[dest.buf.cname], Poly.const(DIM),  # type: ignore
                                 Poly.const(DIM), ctx, "zeroing")
        macro = self.zero_loader(out)
        out.line(f"{macro}(0, {addr}, {DIM}, {DIM});")

    # -- resolving tiles -----------------------------------------------------------
    def onchip_dest(self, dest: Dest, ctx: Ctx, what: str) -> tuple[str, str, list[Poly]]:
        """Local address of the tile `dest` stands for, its memory and its lead indices."""
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
        lead = [p.subst("@i", Poly.const(0)).subst("@j", Poly.const(0)) for p in bi[:-2]]
        return self._addr(dest.buf.cname, row0, ctx), self.onchip[dest.buf.cname].memory, lead

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
            what = ("the output path outside gemmini_mvout" if e.name == ACC_OUT
                    else "not a Gemmini instruction")
            raise LowerError(f"gemmini: {e.name} is {what}; the gemmini target emits only "
                             f"gemmini_ moves and products: {show(e)}")
        args = {p.name: a for p, a in zip(spec.params, e.args, strict=True)}
        where = f"{e.name} ({show(e)})"
        if role.kind == COMPUTE:
            return self.emit_matmul(role, args, dest, mode, ctx, out, where)
        if mode != "=":
            raise LowerError(f"gemmini: {where} is accumulated into its destination; only "
                             "gemmini_matmul accumulates (in the accumulator)")
        if role.kind == LOAD:
            return self.emit_load(role, args, dest, ctx, out, where)
        if role.kind == STORE:
            return self.emit_store(role, args, dest, ctx, out, where)
        raise LowerError(f"gemmini: {where}: unknown role {role.kind}")

    def _check_mem(self, mem: str, role: Role, where: str) -> None:
        if mem != role.memory:
            raise LowerError(f"gemmini: {where} writes {role.memory}, but its destination is "
                             f"in {mem}")

    def _clip(self, p: Poly, ctx: Ctx) -> Poly:
        """max(0, min(DIM, p))."""
        return self.smax(self.smin(p, Poly.const(DIM), ctx), Poly.const(0), ctx)

    def _window(self, role: Role, args: dict, ctx: Ctx) -> tuple[Poly, Poly, Poly, Poly]:
        """Origin (r, c) of the instruction's window and its valid rows and columns,
        min(16, R - r) x min(16, C - c) clipped at 0 (the specification's guard)."""
        r, c = self.ix(args[role.row], ctx), self.ix(args[role.col], ctx)
        rows = self._clip(self.ix(args[role.rows_at], ctx) - r, ctx)
        cols = self._clip(self.ix(args[role.cols_at], ctx) - c, ctx)
        return r, c, rows, cols

    def _full(self, p: Poly, ctx: Ctx) -> bool:
        return ctx.facts.le(Poly.const(DIM), p)

    def emit_load(self, role: Role, args: dict, dest: Dest, ctx: Ctx, out: Emitter,
                  where: str) -> bool:
        addr, mem, lead = self.onchip_dest(dest, ctx, where)
        self._check_mem(mem, role, where)
        src, lead_src = self.dram_source(args[role.src], ctx, f"the source of {where}")
        r, c, rows, cols = self._window(role, args, ctx)
        # Reads beyond the source's extents are zero in ATL (Fig. 2); clip there too.
        rows = self.smin(rows, self._clip(src.dims[-2] - r, ctx), ctx)
        cols = self.smin(cols, self._clip(src.dims[-1] - c, ctx), ctx)
        etype = "int8" if mem == "GEMMINI_SPAD" else "int32"
        self._set_input_type(src.cname, etype, where)
        esize = ELEM[etype][1]
        ld = self.ld_id_for(src.cname, mem)
        ncols = src.dims[-1]
        stride = f"{self.c(ncols, ctx)} * {esize}" if esize != 1 else self.c(ncols, ctx)
        self.require_ld(ld, (stride, "1.0f", "0"), out)
        self.ld_last[ld] = (stride, "1.0f", "0")
        buf = self.onchip[dest.buf.cname]  # type: ignore[union-attr]
        full = self._full(rows, ctx) and self._full(cols, ctx)
        # Partial tiles: record the valid part for the products that read the tile (the
        # contract of Gemmini.v, "Partial blocks"), or zero-fill it where it cannot be
        # tracked (then the tile equals its specification, zeros included).
        zero_first = False
        if not full:
            if mem == "GEMMINI_SPAD" and buf.track:
                try:
                    self._record_valid(buf, lead, rows, cols, where)
                except _Untrackable:
                    zero_first = True
            elif mem == "GEMMINI_ACC":
                self._record_written(buf, rows, cols, ctx, where)
            else:
                zero_first = True
        elif mem == "GEMMINI_ACC":
            self._record_written(buf, rows, cols, ctx, where)
        lin = self._rows_index([*lead_src, r, c], src.dims)
        ptr = f"&{src.cname}[{self.c(lin, ctx)}]"
        if full:
            out.line(f"{LD_MACRO[ld]}({ptr}, {addr}, {DIM}, {DIM});")
            return True
        rv, cv = self.names.fresh("rows"), self.names.fresh("cols")
        with out.block(""):
            out.line(f"const int {rv} = {self.c(rows, ctx)}, {cv} = {self.c(cols, ctx)};")
            if zero_first:
                with out.block(f"if ({rv} < {DIM} || {cv} < {DIM})"):
                    out.line(f"{LD_MACRO[ld]}(0, {addr}, {DIM}, {DIM});")
            with out.block(f"if ({rv} > 0 && {cv} > 0)"):
                out.line(f"{LD_MACRO[ld]}({ptr}, {addr}, {cv}, {rv});")
        return True

    def _record_valid(self, buf: OnChip, lead: list[Poly], rows: Poly, cols: Poly,
                      where: str) -> None:
        """Remember the valid part of the tiles of `buf` as a function of the lead indices,
        which must be loop variables plus constants (one move per tile)."""
        vars_: list[tuple[str, int]] = []
        for p in lead:
            names = [v for v in p.vars() if (p - Poly.var(v)).as_const() is not None]
            if len(names) != 1:
                raise _Untrackable(where)
            v = names[0]
            vars_.append((v, (p - Poly.var(v)).as_const() or 0))
        if buf.valid is not None and (buf.lead, buf.valid) != (tuple(vars_), (rows, cols)):
            raise _Untrackable(where)
        buf.lead, buf.valid = tuple(vars_), (rows, cols)

    def _record_written(self, buf: OnChip, rows: Poly, cols: Poly, ctx: Ctx, where: str
                        ) -> None:
        """The rows/cols the first writer of an accumulator tile writes (for mvout)."""
        if buf.written is None:
            ok = (rows.vars() | cols.vars()) <= buf.scope
            buf.written = (rows, cols) if ok else (Poly.const(-1), Poly.const(-1))

    def tile_extent(self, arg: Expr, ctx: Ctx) -> tuple[Poly, Poly]:
        """Valid rows and columns of a scratchpad tile operand (16 x 16 when zero-padded)."""
        base, idxs = access_base(arg)
        buf = ctx.tensors.get(base.name)  # type: ignore[union-attr]
        info = self.onchip[buf.cname]  # type: ignore[union-attr]
        if info.valid is None:
            return Poly.const(DIM), Poly.const(DIM)
        rows, cols = info.valid
        for (v, off), i in zip(info.lead, idxs, strict=True):
            at = self.ix(i, ctx) - off
            rows, cols = rows.subst(v, at), cols.subst(v, at)
        return rows, cols

    def _set_input_type(self, cname: str, etype: str, where: str) -> None:
        old = self.input_types.get(cname)
        if old is not None and old != etype:
            raise LowerError(f"gemmini: {where} reads {cname} as {etype}, elsewhere it is read "
                             f"as {old}")
        self.input_types[cname] = etype

    def emit_matmul(self, role: Role, args: dict, dest: Dest, mode: str, ctx: Ctx,
                    out: Emitter, where: str) -> bool:
        c_addr, mem, _ = self.onchip_dest(dest, ctx, where)
        self._check_mem(mem, role, where)
        a_addr, a_mem = self.operand_tile(args[role.a], ctx, f"operand {role.a} of {where}")
        b_addr, b_mem = self.operand_tile(args[role.b], ctx, f"operand {role.b} of {where}")
        for m, which in ((a_mem, role.a), (b_mem, role.b)):
            if m != "GEMMINI_SPAD":
                raise LowerError(f"gemmini: operand {which} of {where} is in {m}; the systolic "
                                 "array reads its operands from the scratchpad")
        a_rows, a_cols = self.tile_extent(args[role.a], ctx)
        b_rows, b_cols = self.tile_extent(args[role.b], ctx)
        assert dest.buf is not None
        acc = self.onchip[dest.buf.cname]
        firsts = self.first.get(dest.buf.cname)
        if mode == "=":
            target = c_addr
            self._record_written(acc, a_rows, b_cols, ctx, where)
        elif firsts:
            cond = " && ".join(f"({f})" for f in firsts)
            target = f"({c_addr}) | (({cond}) ? 0u : 0x{cfg.ACCUMULATE_BIT:x}u)"
            self._record_written(acc, a_rows, b_cols, ctx, where)
        else:
            target = f"({c_addr}) | 0x{cfg.ACCUMULATE_BIT:x}u"
        t = {k: self.c(v, ctx) for k, v in
             (("ar", a_rows), ("ac", a_cols), ("br", b_rows), ("bc", b_cols))}
        out.line(cfg.marker("ex", EX_WS))
        # Weight-stationary (Gemmini.v): preload B (the weights) naming the output C with
        # b_cols x a_rows, then stream A (a_rows x a_cols); every operand is zero outside
        # the rows and columns given, so partial tiles need no zero padding.  A product
        # whose output block is empty (no valid row of A or column of B: a tile past the
        # matrix's edge) writes nothing, so it is skipped.
        empty = [f"{t[x]} > 0" for x, p in (("ar", a_rows), ("bc", b_cols))
                 if not ctx.facts.ge0(p - 1)]
        with out.block(f"if ({' && '.join(empty)})") if empty else nullcontext():
            out.line(f"gemmini_extended_preload({b_addr}, {target}, {t['bc']}, {t['br']}, "
                     f"{t['bc']}, {t['ar']});")
            out.line(f"gemmini_extended_compute_preloaded({a_addr}, {cfg.GARBAGE_ADDR}, "
                     f"{t['ac']}, {t['ar']}, {DIM}, {DIM});")
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
        z = Poly.const(0)
        bi, conds = dest.fn([pi, pj])
        lin = _fold_divmod(self._rows_index(bi, buf.dims))
        lin00 = lin.subst("@i", z).subst("@j", z)
        stride = lin.subst("@i", Poly.const(1)).subst("@j", z) - lin00
        if (lin - lin00 - stride * pi - pj).terms or stride.vars() & {"@i", "@j"}:
            raise LowerError(f"gemmini: {where} stores a tile whose rows are not contiguous in "
                             f"{buf.cname} (each tile row must be {DIM} consecutive elements)")
        (a0, b0), (a1, b1) = dest.windows
        row_lo, row_hi = self.smax(a0, z, ctx), self.smin(b0, Poly.const(DIM), ctx)
        col_lo, col_hi = self.smax(a1, z, ctx), self.smin(b1, Poly.const(DIM), ctx)
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
                        row_hi = self.smin(row_hi, k + 1, ctx)
                    else:
                        col_hi = self.smin(col_hi, k + 1, ctx)
                elif coef == 1:  # v + k >= 0: v >= -k
                    if name == "@i":
                        row_lo = self.smax(row_lo, -k, ctx)
                    else:
                        col_lo = self.smax(col_lo, -k, ctx)
                else:
                    raise LowerError(f"gemmini: {where}: cannot turn the store condition "
                                     f"{self.c(f, ctx)} >= 0 into a row/column count")
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
                if not _prove_divmod(f, c2):
                    raise LowerError(f"gemmini: {where}: cannot turn the store condition "
                                     f"{self.c(f, ctx)} >= 0 into a row/column count")
        if not ctx.facts.le(col_lo, z):
            raise LowerError(f"gemmini: {where} stores a tile whose first columns are cut off; "
                             "mvout always starts at a row's first column")
        return buf.cname, lin00, stride, row_lo, row_hi, col_hi

    def _config_arg(self, args: dict, name: str | None, ctx: Ctx) -> str:
        """C text of an output-configuration argument (scale mantissa/exponent, ReLU flag)."""
        a = args[name]
        for v in idx_free_vars(a):
            self.config_params.add(v)
        return self.c(self.ix(a, ctx), ctx)

    def emit_store(self, role: Role, args: dict, dest: Dest, ctx: Ctx, out: Emitter,
                   where: str) -> bool:
        src_addr, mem = self.operand_tile(args[role.src], ctx, f"the source of {where}")
        if mem != "GEMMINI_ACC":
            raise LowerError(f"gemmini: the source of {where} is in {mem}; the output path "
                             "reads the accumulator")
        cname, lin00, stride, row_lo, row_hi, col_hi = self.dram_dest(dest, ctx, where)
        _, _, rows_w, cols_w = self._window(role, args, ctx)
        rows = self.smin(row_hi, rows_w, ctx) - row_lo
        cols = self.smin(col_hi, cols_w, ctx)
        self._check_written(args[role.src], rows + row_lo, cols, ctx, where)
        if cname == self.out_cname:
            self.out_type = "int8"
        else:
            raise LowerError(f"gemmini: {where} stores into the DRAM buffer {cname}; the output "
                             "path writes the kernel's output")
        sm = self._config_arg(args, role.scale_m, ctx)
        se = self._config_arg(args, role.scale_e, ctx)
        act = self._config_arg(args, role.act, ctx)
        st = (self.c(stride, ctx), f"({act}) ? RELU : NO_ACTIVATION", f"vs_scale({sm}, {se})")
        out.line(cfg.marker("st", st))
        local = src_addr if row_lo.as_const() == 0 else \
            f"{src_addr} + (uint32_t)({self.c(row_lo, ctx)})"
        ptr = f"&{cname}[{self.c(lin00 + stride * row_lo, ctx)}]"
        call = f"gemmini_extended_mvout({ptr}, {local}, {self.c(cols, ctx)}, {self.c(rows, ctx)});"
        if ctx.facts.ge0(rows - 1) and ctx.facts.ge0(cols - 1):
            out.line(call)
        else:
            with out.block(f"if ({self.c(rows, ctx)} > 0 && {self.c(cols, ctx)} > 0)"):
                out.line(call)
        (a0, b0), (a1, b1) = dest.windows
        # Outside the instruction's own window the specification is zero: covered only if
        # the window reaches the destination's.
        return (ctx.facts.le(row_lo, a0) and ctx.facts.le(b0, rows + row_lo)
                and ctx.facts.le(a1, Poly.const(0)) and ctx.facts.le(b1, cols))

    def _check_written(self, arg: Expr, rows: Poly, cols: Poly, ctx: Ctx, where: str) -> None:
        """mvout reads accumulator rows x cols: they must have been written (an accumulator
        tile is only written where its first writer's operands were valid)."""
        base, _ = access_base(arg)
        buf = ctx.tensors.get(base.name)  # type: ignore[union-attr]
        info = self.onchip[buf.cname]  # type: ignore[union-attr]
        w = info.written
        if w is None:
            raise LowerError(f"gemmini: {where} reads an accumulator tile that nothing "
                             "overwrote first (no gemmini_mvin_acc or first product)")
        if not (_le(rows, w[0], ctx) and _le(cols, w[1], ctx)):
            raise LowerError(f"gemmini: {where} reads {self.c(rows, ctx)} x {self.c(cols, ctx)} "
                             f"of its accumulator tile, which is only known to be written "
                             f"{self.c(w[0], ctx)} x {self.c(w[1], ctx)}")

    # -- block moves ------------------------------------------------------------------
    def lower_gen(self, e, dest: Dest, mode: str, ctx: Ctx, out: Emitter) -> bool:
        if mode == "=" and isinstance(e.body, Instr) and dest.buf is not None \
                and dest.buf.cname in self.onchip and len(dest.windows) == 3:
            done = self.block_load(e, dest, ctx, out)
            if done:
                return True
        return super().lower_gen(e, dest, mode, ctx, out)

    def block_load(self, e, dest: Dest, ctx: Ctx, out: Emitter) -> bool:
        """`GEN [ t ] gemmini_mvin v r (16 t + c0) R C` into consecutive scratchpad tiles:
        one mvin of up to 4 blocks (64 int8 columns, MAX_BYTES) per 4 tiles, the blocks
        DIM rows apart (config_ld's block stride).  Same data as one move per tile; the
        valid part of each tile is recorded as for single moves.  False when the pattern
        does not apply (the caller then lowers tile by tile)."""
        call: Instr = e.body
        role = ROLES.get(call.name)
        if role is None or role.kind != LOAD or role.memory != "GEMMINI_SPAD":
            return False
        spec = check_call(call)
        args = {p.name: a for p, a in zip(spec.params, call.args, strict=True)}
        buf = self.onchip[dest.buf.cname]  # type: ignore[union-attr]
        if not buf.track or buf.valid is not None:
            return False
        lo, hi = self.ix(e.lo, ctx), self.ix(e.hi, ctx)
        a, b = dest.windows[0]
        if not (ctx.facts.le(a, Poly.const(0)) and ctx.facts.le(hi - lo, b)):
            return False
        t = self.names.fresh(e.var)
        inner = ctx.child()
        inner.idx_names[e.var] = t
        inner.facts.bind(t)
        pt = Poly.var(t)
        inner.facts.add(pt - lo)
        inner.facts.add(hi - 1 - pt)
        if any(t in self.ix(args[n], inner).vars() for n in (role.row, role.rows_at,
                                                             role.cols_at)):
            return False
        if e.var in free_vars(args[role.src]):  # the source must not move with the tile
            return False
        col = self.ix(args[role.col], inner)
        c0 = col.subst(t, Poly.const(0))
        if (col - c0 - pt.scale(DIM)).terms:
            return False
        tile = dest.peel(pt - lo)
        try:
            addr_t, mem, lead = self.onchip_dest(tile, inner, "block move")
        except LowerError:
            return False
        # Tile t + 1 must start DIM rows after tile t.
        z = Poly.const(0)
        dims = dest.buf.dims[:-1]  # type: ignore[union-attr]
        row_t = self._rows_index(tile.fn([z, z])[0][:-1], dims)
        row_n = self._rows_index(dest.peel(pt - lo + 1).fn([z, z])[0][:-1], dims)
        if (row_n - row_t - Poly.const(DIM)).terms:
            return False
        where = f"{call.name} ({show(call)})"
        src, lead_src = self.dram_source(args[role.src], inner, f"the source of {where}")
        r, c, rows, cols = self._window(role, args, inner)
        rows = self.smin(rows, self._clip(src.dims[-2] - r, inner), inner)
        cols = self.smin(cols, self._clip(src.dims[-1] - c, inner), inner)
        try:
            self._record_valid(buf, lead, rows, cols, where)
        except _Untrackable:
            return False
        self._set_input_type(src.cname, "int8", where)
        ld = self.ld_id_for(src.cname, mem)
        stride = self.c(src.dims[-1], ctx)
        self.require_ld(ld, (stride, "1.0f", "0"), out)
        self.ld_last[ld] = (stride, "1.0f", "0")
        blocks = cfg.MAX_BYTES // DIM
        # Columns of up to `blocks` tiles from column c(t): clipped at C, the source, and
        # the generation's last tile.
        span = self.smin(self.ix(args[role.cols_at], inner) - c, src.dims[-1] - c, inner)
        span = self.smin(span, (hi - pt).scale(DIM), inner)
        span = self.smax(self.smin(span, Poly.const(blocks * DIM), inner), Poly.const(0),
                         inner)
        lin = self._rows_index([*lead_src, r, c], src.dims)
        rv, cv = self.names.fresh("rows"), self.names.fresh("cols")
        with out.block(f"for (int {t} = {self.c(lo, ctx)}; {t} < {self.c(hi, ctx)}; "
                       f"{t} += {blocks})"):
            out.line(f"const int {rv} = {self.c(rows, inner)}, {cv} = {self.c(span, inner)};")
            with out.block(f"if ({rv} > 0 && {cv} > 0)"):
                out.line(f"{LD_MACRO[ld]}(&{src.cname}[{self.c(lin, inner)}], {addr_t}, "
                         f"{cv}, {rv});")
        return True

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
    lw.wide = wide_tensors(expr)
    lw.names.used.add(name)
    lw.error_flag = f"{name}_error"
    ctx = Ctx(Facts(sizes=frozenset()), {}, {})
    size_list = []
    for s in sizes:
        c = lw.names.fresh(s)
        ctx.idx_names[s] = c
        size_list.append((s, c))
    configs = config_names(expr)
    ctx.facts.sizes = frozenset(c for a, c in size_list if a not in configs)
    for a, c in size_list:
        if a not in configs:
            ctx.facts.add(Poly.var(c) - 1)
    assumptions = add_assumptions(lw, ctx, assume, sizes, "gemmini")
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
    for k, c, _ in inputs:
        if k in lw.wide:
            lw._set_input_type(c, "int32", f"input {k}")
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
        assumptions_c=assumptions_c, config_params=sorted(configs & set(sizes)))
