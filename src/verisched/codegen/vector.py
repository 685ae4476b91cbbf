"""Lowering of instruction calls and register memories (issue 5: AVX2 / AVX-512).

Model: the Exo thesis's hardware libraries (Sec. 3.2).  An instruction is
known by its specification (pybridge/instrs.py, checked against Coq), and
the target library only says which C each name becomes (`VectorISA`,
codegen/isa.py, built by targets/avx2.py and targets/avx512.py: Sec.
3.2.2's "@instr" template).  A memory (Sec. 3.2.1) changes how a buffer is
allocated and accessed, not its value: a let whose value is
`in_mem AVX2_REG (e)` becomes one C vector variable per element of its
leading dimensions (its last dimension is the vector's lanes), so gcc keeps
it in registers.

`VectorRules` is the C targets' implementation of the lowering's extension
interface (codegen/hooks.py): the core hands it instruction calls
(`lower_term`) and lets in a register memory (`let_in_memory`); it also
serves the core's scalar accesses of register buffers (`reg_access`).
Without a `VectorISA` (targets c and openmp) it refuses both, naming the
target that has them.  The rules:
- A call stored into a register buffer is an assignment to that vector
  variable; under a SUM (Fig. 3's `+=` store mode) it accumulates, and a
  `mul` accumulated becomes one fused multiply-add (the contract's store
  mode, not a new specification).
- A call stored into memory is a vector store when the destination's lane
  index has stride 1; where the destination window may end inside the
  vector (the ragged edge of a tile) it is a masked store of the lanes in
  the window, so nothing outside the window is written.
- A tensor operand `T _[ i ] _[ j ]` with offset `o` becomes the address
  `&T[flat(i, j, o)]` from the same index machinery as scalar accesses.
  A load is unmasked only when the prover shows all lanes in bounds;
  otherwise the lanes that may be out of bounds are masked off (ATL reads
  zero there, Fig. 2), and leading indices not proved in bounds guard the
  whole load.  Nothing is ever read out of bounds.
- Loops whose variable indexes a register buffer are unrolled by the
  lowering itself (codegen/vloops.py); their extent must be a constant.
- Anything the vector rules cannot express (a destination whose lanes are
  not contiguous, a lane window that starts inside the vector, a register
  operand at an offset) is lowered lane by lane from the specification:
  slower, never wrong.
"""

from __future__ import annotations

import re
from contextlib import ExitStack
from dataclasses import replace
from typing import TYPE_CHECKING

from verisched.codegen import prefetch
from verisched.codegen.cexpr import ctext, flat_text, ge_text, ix, linear, pred, smax, smin
from verisched.codegen.errors import LowerError
from verisched.codegen.hooks import LetBody
from verisched.codegen.ir import Buf, Ctx, Dest, Emitter, RegBuf, whole
from verisched.codegen.isa import VectorISA
from verisched.codegen.normal import access_base, show
from verisched.codegen.poly import Poly
from verisched.codegen.scan import has_instr
from verisched.codegen.vloops import MAX_UNROLL
from verisched.pybridge.instrs import InstrSpec, instantiate, spec_of
from verisched.pybridge.terms import (
    Expr,
    Gen,
    Get,
    Guard,
    IConst,
    Instr,
    IVar,
    Let,
    Mem,
    Var,
    Zero,
    free_vars,
)

if TYPE_CHECKING:
    from verisched.codegen.core import Lowering

# Register buffers are unrolled into this many vector variables at most: more
# than the register file (16 ymm / 32 zmm) spills, far more is certainly a mistake.
MAX_REGISTER_VECTORS = 64


class VectorRules:
    """Instruction calls and register lets for the C targets (codegen/hooks.py's
    `TargetHooks`); `isa` None refuses them."""

    def __init__(self, core: Lowering, isa: VectorISA | None) -> None:
        self.core = core
        self.isa = isa
        # While a register tile's body is lowered: the buffer and indices (lane 0) of
        # each vector it adds into memory, for the row-ahead prefetch (prefetch.py).
        self.accumulated: list[tuple[Buf, list[Poly]]] | None = None
        # While a register tile's value is computed: the buffer elements it reads.
        self.reads: list[tuple[Buf, list[Poly]]] | None = None

    # -- the extension interface (codegen/hooks.py) -----------------------------
    def meaning(self, e: Instr) -> Expr:
        return instantiate(e)

    def lower_term(self, e: Expr, dest: Dest, mode: str, ctx: Ctx, out: Emitter
                   ) -> bool | None:
        """Instruction calls (refused without an ISA) and whole-vector copies out of
        a register buffer; scalar destinations and everything else go to the core."""
        if not dest.windows:
            return None
        if isinstance(e, Instr):
            return self.lower_instr(e, dest, mode, ctx, out)
        if isinstance(e, Gen):
            vec = self.register_vector_copy(e, ctx)
            if vec is not None:
                return self.lower_instr(vec, dest, mode, ctx, out)
        return None

    def scalar_term(self, e: Expr, ctx: Ctx, out: Emitter) -> str | None:
        """A scalar-valued instruction: the sum of a vector's lanes (`reduce_add`,
        `vectorize` of a SUM); other scalars go to the core."""
        if not isinstance(e, Instr):
            return None
        spec = self._check_supported(e)
        assert self.isa is not None
        if spec.name != f"{spec.family}_reduce_add":
            raise LowerError(f"lowering: instruction {e.name} in scalar position: {show(e)}")
        v = self.vexpr(e.args[0], ctx, out)  # type: ignore[arg-type]
        return self.core.zero if v == self.isa.setzero else self.isa.reduce_add.format(v=v)

    def let_in_memory(self, e: Let, ctx: Ctx, out: Emitter, body: LetBody) -> bool | None:
        assert isinstance(e.value, Mem)
        if e.value.memory == "DRAM":
            return None
        return self.reg_let(e, ctx, out, body)

    def let_ctype(self, var: str) -> str | None:
        return None

    def zero_fill(self, dest: Dest, ctx: Ctx, out: Emitter) -> bool:
        return False

    # -- instruction families ------------------------------------------------
    def _check_supported(self, e: Instr) -> InstrSpec:
        spec = spec_of(e.name)
        if self.isa is None or spec.family != self.isa.family:
            have = (f"the instruction library {self.isa.name}" if self.isa
                    else "scalar C (no instruction library)")
            raise LowerError(f"lowering: instruction {e.name} (family {spec.family}) is not "
                             f"supported by {have}; it needs the {spec.family} library")
        return spec

    def register_vector_copy(self, e: Gen, ctx: Ctx) -> Instr | None:
        """`GEN [ l < W ] R _[ i ] _[ l ]` with R a register buffer is the storeu
        specification itself: store the vector whole instead of lane by lane."""
        isa = self.isa
        if (isa is None or e.lo != IConst(0) or e.hi != IConst(isa.lanes)
                or not isinstance(e.body, Get) or e.body.index != IVar(e.var)):
            return None
        vec = e.body.tensor
        base, idxs = access_base(vec)
        buf = ctx.tensors.get(base.name) if isinstance(base, Var) else None
        if (not isinstance(buf, RegBuf) or len(idxs) + 1 != len(buf.dims)
                or e.var in free_vars(vec)):
            return None
        return Instr(f"{isa.family}_storeu", (vec,))

    # -- register lets -----------------------------------------------------------
    def reg_let(self, e: Let, ctx: Ctx, out: Emitter, body: LetBody) -> bool:
        assert isinstance(e.value, Mem)
        isa = self.isa
        mem = e.value.memory
        target = isa.name if isa else "c"
        if isa is None or mem != isa.memory:
            raise LowerError(f"lowering: let {e.var} is placed in memory {mem}, which target "
                             f"{target} does not have")
        dims = self.core.shape(e.value.body, ctx)
        if dims is None:
            raise LowerError(f"lowering: let {e.var} in {mem} binds a bare zero")
        consts = [d.as_const() for d in dims]
        if not dims or consts[-1] != isa.lanes or any(c is None or c < 1 for c in consts):
            shown = " x ".join(ctext(d, ctx) for d in dims) or "a scalar"
            raise LowerError(f"lowering: let {e.var} in {mem}: a register buffer needs constant "
                             f"extents ending with the {isa.lanes} lanes, got {shown}")
        count = 1
        for c in consts[:-1]:
            count *= c  # type: ignore[operator]
        if count > MAX_REGISTER_VECTORS:
            raise LowerError(f"lowering: let {e.var} in {mem} needs {count} vector registers "
                             f"(at most {MAX_REGISTER_VECTORS})")
        base = self.core.names.fresh(e.var)
        elems = tuple(self.core.names.fresh(f"{base}_{k}") if count > 1 else base
                      for k in range(count))
        buf = RegBuf(base, tuple(dims), elems, mem)
        fill = type(out)()
        dest = whole(buf)
        outer_reads, self.reads = self.reads, []
        try:
            covered = self.core.lower(e.value.body, dest, "=", ctx, fill)
        finally:
            reads, self.reads = self.reads, outer_reads
        c2 = ctx.child()
        c2.tensors[e.var] = buf
        with out.block(""):
            init = "" if covered else f" = {isa.setzero}"
            for k in range(0, count, 6):
                out.line(f"{isa.vtype} " + ", ".join(f"{v}{init}" for v in elems[k:k + 6]) + ";")
            after = type(out)()
            outer, self.accumulated = self.accumulated, []
            try:
                res = body(c2, after)
            finally:
                stores, self.accumulated = self.accumulated, outer
            looped = any(s.lstrip().startswith("for (") for s in fill.lines)
            mode = isa.tile_prefetch if looped else "none"
            if mode == "before":
                for p in self.accumulated_addresses(after.lines):
                    out.line(isa.prefetch.format(p=p) + ";")
            out.extend(fill)
            out.extend(after)
            if mode == "next" and ctx.loop is not None:
                self.prefetch_next(self.accumulated_addresses(after.lines), ctx.loop, out)
            if looped and isa.row_prefetch:
                prefetch.rows_ahead(stores, reads, (isa.row_prefetch, isa.row_prefetch_read),
                                    ctx, self.core.names.fresh, out)
            return res

    def note_read(self, buf: Buf, idx: list[Poly]) -> None:
        """Log a read of `buf` while a register tile's value is lowered (prefetch.py).
        `idx` comes from `ix`, which already puts unrolled loops' constants in."""
        if self.reads is not None:
            self.reads.append((buf, idx))

    def prefetch_next(self, addresses: list[str], loop: tuple[str, str], out: Emitter) -> None:
        """After a register tile's stores, prefetch the destination the next iteration
        of the enclosing loop adds its tile into (decision #118).

        BLIS prefetches a micro-tile's C before the loop computing it (the "before"
        mode), but in the emitted C, GCC then computes those addresses before the loop
        and keeps them for the stores after it: the conv's 6 x 64 tile spilled (#116).
        Here the addresses are formed after the stores, where nothing else is live, and
        the whole next tile's loop still hides the latency.  Each address is the
        store's with the loop variable `v` replaced by `v + 1`, under `v + 1 < hi`; it
        is computed in integer arithmetic (`uintptr_t`), so an address the next
        iteration never stores to (its tile may be guarded) is never a C pointer.  A
        prefetch has no effect on the result and never faults."""
        isa = self.isa
        assert isa is not None
        var, hi = loop
        word = re.compile(rf"\b{re.escape(var)}\b")
        found = []
        for p in addresses:
            m = _ELEMENT.fullmatch(p)
            if m is None or not word.search(m.group(2)):
                continue
            base, index = m.group(1), word.sub(f"({var} + 1)", m.group(2))
            found.append(f"(uintptr_t){base} + sizeof(*{base}) * (uintptr_t)({index})")
        if found:
            with out.block(f"if ({var} + 1 < {hi})"):
                for p in found:
                    out.line(isa.prefetch.format(p=p) + ";")

    def accumulated_addresses(self, lines: list[str]) -> list[str]:
        """Addresses a register tile is added into right after it is computed: the
        pointers of the unconditional (top-level) read-modify-write stores in `lines`.

        They are prefetched (`VectorISA.tile_prefetch`) so that the tile's destination
        arrives while a tile is computed instead of stalling the stores after it."""
        isa = self.isa
        assert isa is not None
        heads = [t.split("{p}")[0] for t in (isa.storeu, isa.maskstore)]
        found: list[str] = []
        for s in lines:
            if s.startswith(" "):
                continue  # inside a conditional or loop of the store code
            for head in heads:
                if not s.startswith(head):
                    continue
                ptr = _first_arg(s[len(head):])
                loads = [t.split("{p}")[0] + ptr for t in (isa.loadu, isa.maskload)]
                if ptr and any(x in s for x in loads) and ptr not in found:
                    found.append(ptr)
        return found

    def reg_access(self, e: Get, buf: RegBuf, idxs: list, ctx: Ctx) -> str:
        """One lane of a register buffer read as a scalar (GCC's vector subscript)."""
        var = buf.elem([ix(i, ctx) for i in idxs[:-1]], show(e))
        zero = self.core.zero
        if var is None:
            return zero
        p = ix(idxs[-1], ctx)
        checks = [p, buf.dims[-1] - 1 - p]
        if any(ctx.facts.ge0(-f - 1) for f in checks):
            return zero
        cond = ge_text(checks, ctx)
        ref = f"{var}[{ctext(p, ctx)}]"
        return f"(({cond}) ? {ref} : {zero})" if cond else ref

    # -- vector values -------------------------------------------------------------
    def vexpr(self, e: Expr, ctx: Ctx, out: Emitter) -> str:
        """C expression of a vector-valued operand (a call, a register element, memory)."""
        isa = self.isa
        assert isa is not None
        if isinstance(e, Zero):
            return isa.setzero
        if isinstance(e, Guard):
            return self._vguard(e, ctx, out)
        if isinstance(e, Instr):
            spec = self._check_supported(e)
            op = spec.name[len(spec.family) + 1:]
            a = e.args
            if op == "loadu":
                return self.vload(a[0], ix(a[1], ctx), None, e, ctx, out)  # type: ignore[arg-type]
            if op == "maskload":
                return self.vload(a[0], ix(a[1], ctx), ix(a[2], ctx),  # type: ignore[arg-type]
                                  e, ctx, out)
            if op in ("maskload_min", "maskload_min3"):
                # a[2] and the other upper bounds: the mask's count is their minimum
                return self.vload(a[0], ix(a[1], ctx), ix(a[2], ctx),  # type: ignore[arg-type]
                                  e, ctx, out,
                                  more=tuple(ix(b, ctx) for b in a[3:]))  # type: ignore[arg-type]
            if op in ("maskload_range", "maskload_range_min", "maskload_range_min3"):
                return self.vload(a[0], ix(a[1], ctx), ix(a[3], ctx),  # type: ignore[arg-type]
                                  e, ctx, out, lo=ix(a[2], ctx),  # type: ignore[arg-type]
                                  more=tuple(ix(b, ctx) for b in a[4:]))  # type: ignore[arg-type]
            if op in ("maskbroadcast_range", "maskbroadcast_range_min"):
                return self._vbroadcast_range(e, ctx, out)
            if op == "broadcast":
                x = self.core.scalar(a[0], ctx, out)  # type: ignore[arg-type]
                # a guard known to fail (lower_tail's versions) broadcasts its zero
                return isa.setzero if x == self.core.zero else isa.set1.format(x=x)
            if op in ("mul", "add", "max"):
                x, y = self.vexpr(a[0], ctx, out), self.vexpr(a[1], ctx, out)  # type: ignore[arg-type]
                return getattr(isa, op).format(a=x, b=y)
            if op == "fmadd":
                x, y, z = (self.vexpr(v, ctx, out) for v in a)  # type: ignore[arg-type]
                return z if isa.setzero in (x, y) else isa.fmadd.format(a=x, b=y, c=z)
            if op == "storeu":
                return self.vexpr(a[0], ctx, out)  # type: ignore[arg-type]
            if op == "maskstore":
                n = ix(a[0], ctx)  # type: ignore[arg-type]
                v = self.vexpr(a[1], ctx, out)  # type: ignore[arg-type]
                if ctx.facts.ge0(n - isa.lanes):
                    return v
                return isa.keep.format(v=v, m=isa.mask_first.format(k=ctext(n, ctx)))
            return self.vlanes(e, ctx, out)
        base, idxs = access_base(e)
        if isinstance(base, Var) and isinstance(ctx.tensors.get(base.name), RegBuf):
            buf = ctx.tensors[base.name]
            assert isinstance(buf, RegBuf)
            if len(idxs) != len(buf.dims) - 1:
                raise LowerError(f"lowering: vector operand of the wrong rank: {show(e)}")
            v = buf.elem([ix(i, ctx) for i in idxs], show(e))
            return isa.setzero if v is None else v
        return self.vload(e, Poly.const(0), None, None, ctx, out)

    def _vguard(self, e: Guard, ctx: Ctx, out: Emitter) -> str:
        """A guarded vector operand (a border of an outer loop, which `vectorize` takes
        out of the lane loop): zero, or the operand where the guard holds.  Its loads
        are emitted inside the `if` (a row before the array is never read); where the
        facts decide the guard, no test (a loop split where it holds has none)."""
        assert self.isa is not None
        cond, facts = pred(e.pred, ctx)
        if cond is None:
            return self.vexpr(e.body, ctx, out)
        if cond == "0":
            return self.isa.setzero
        # the enclosing loop split where it holds: until it fails (a tail), or from
        # where it holds on (a head: the rows below a top border, `y - 1 >= 0`)
        self.core.loops.log_needs(facts, ctx)
        self.core.loops.log_needs(facts, ctx, lower=True)
        c2 = ctx.child()
        for f in facts:
            c2.facts.add(f)
        sub = Emitter()
        v = self.vexpr(e.body, c2, sub)
        t = self.core.names.fresh("vg")
        out.line(f"{self.isa.vtype} {t} = {self.isa.setzero};")
        with out.block(f"if ({cond})"):
            out.extend(sub)
            out.line(f"{t} = {v};")
        return t

    def _range_mask(self, lows: list[Poly], his: list[Poly], ctx: Ctx) -> str | None:
        """The mask of lanes `max(lows) <= l < min(his)`, each bound kept only where it
        may cut the vector (None where none does).  The bounds are logged, so the
        loop splits where no lane is cut (vloops: a head past the lower bounds, a
        tail before the upper ones), and there the instruction is a plain one."""
        isa = self.isa
        assert isa is not None
        W = isa.lanes
        lows = list(dict.fromkeys(x for x in lows if not ctx.facts.ge0(-x)))
        his = list(dict.fromkeys(h for h in his if not ctx.facts.ge0(h - W)))
        if not lows and not his:
            return None
        if lows:
            self.core.loops.log_needs([-x for x in lows], ctx, lower=True)
        if his:
            self.core.loops.log_needs([h - W for h in his], ctx)
        a = lows[0] if lows else Poly.const(0)
        for x in lows[1:]:
            a = smax(a, x, ctx)
        b = his[0] if his else Poly.const(W)
        for h in his[1:]:
            b = smin(b, h, ctx)
        return isa.mask_range.format(lo=ctext(a, ctx), hi=ctext(b, ctx))

    def _vbroadcast_range(self, e: Instr, ctx: Ctx, out: Emitter) -> str:
        """`maskbroadcast_range x a b`: x in the lanes a <= l < b (and `l < c`, the
        `_min` form's third argument, #143).  The bounds are
        logged as a border's loads' are, so the loop splits where every lane is kept
        (there a plain broadcast)."""
        isa = self.isa
        assert isa is not None
        x = self.core.scalar(e.args[0], ctx, out)  # type: ignore[arg-type]
        lo = ix(e.args[1], ctx)  # type: ignore[arg-type]
        his = [ix(h, ctx) for h in e.args[2:]]  # type: ignore[arg-type]
        if x == self.core.zero:
            return isa.setzero
        v = isa.set1.format(x=x)
        mask = self._range_mask([lo], his, ctx)
        return v if mask is None else isa.keep.format(v=v, m=mask)

    def vlanes(self, e: Instr, ctx: Ctx, out: Emitter) -> str:
        """Fallback: the call's specification lowered lane by lane into a temporary."""
        assert self.isa is not None
        t = self.core.names.fresh("vt")
        buf = RegBuf(t, (Poly.const(self.isa.lanes),), (t,), self.isa.memory)
        out.line(f"{self.isa.vtype} {t} = {self.isa.setzero};")
        dest = whole(buf)
        self.core.lower(instantiate(e), dest, "=", ctx, out)
        return t

    def vload(self, t: Expr, o: Poly, n: Poly | None, call: Instr | None, ctx: Ctx,
              out: Emitter, lo: Poly | None = None, more: tuple[Poly, ...] = ()) -> str:
        """Lanes `o .. o+W-1` of the rank-1 operand `t` (lanes >= n zero, lanes past any
        of `more` too (maskload_min, maskload_range_min and their `3` forms), and lanes
        < lo where given):
        the address of `t _[ o ]`, a load unmasked only where provably in bounds."""
        isa = self.isa
        assert isa is not None
        W = isa.lanes
        base, idxs = access_base(t)
        buf = ctx.tensors.get(base.name) if isinstance(base, Var) else None
        if lo is not None and ctx.facts.ge0(-lo):
            lo = None  # no lane below the first is cut
        if isinstance(buf, RegBuf):
            if (lo is None and o.as_const() == 0 and (n is None or ctx.facts.ge0(n - W))
                    and all(ctx.facts.ge0(b - W) for b in more)):
                return self.vexpr(t, ctx, out)
            if call is not None:
                return self.vlanes(call, ctx, out)
        if not isinstance(buf, Buf) or len(buf.dims) != len(idxs) + 1:
            if call is not None:
                return self.vlanes(call, ctx, out)
            raise LowerError(f"lowering: vector operand is not a rank-1 slice of a buffer: "
                             f"{show(t)}")
        lead = [ix(i, ctx) for i in idxs]
        checks: list[Poly] = []
        for p, d in zip(lead, buf.dims[:-1], strict=True):
            checks += [p, d - 1 - p]
        last = buf.dims[-1]
        # as scalar.access: the out-of-bounds question only for bounds not proved
        if any(ctx.facts.ge0(-f - 1) for f in checks if not ctx.facts.ge0(f)):
            return isa.setzero  # provably out of bounds: zero (Fig. 2)
        flat = flat_text([*lead, o], buf.dims, ctx)
        ptr = f"&{buf.cname}[{flat}]"
        self.note_read(buf, [*lead, o])
        if lo is not None:
            return self._vload_range(buf, ptr, flat, checks, o, lo, n, ctx, more)
        if not ctx.facts.ge0(o):
            # Lanes before the start of the row: build the vector lane by lane.
            if call is not None:
                return self.vlanes(call, ctx, out)
            o_le0 = ctx.facts.ge0(-o)
            if not o_le0:
                raise LowerError(f"lowering: vector operand offset not provably >= 0: {show(t)}")
        bounds = [last - o] + ([] if n is None else [n]) + list(more)
        if all(ctx.facts.ge0(b - W) for b in bounds):
            load = isa.loadu.format(p=ptr)
        else:
            # (a count equal to the row's end is one bound, not a min of two)
            ks = list(dict.fromkeys(b for b in bounds if not ctx.facts.ge0(b - W)))
            self.core.loops.log_needs([k - W for k in ks], ctx)
            kp = ks[0]
            for b in ks[1:]:
                kp = smin(kp, b, ctx)
            ktxt = ctext(kp, ctx)
            load = isa.maskload.format(p=ptr, m=isa.mask_first.format(k=ktxt))
        cond = ge_text(checks, ctx)
        return f"(({cond}) ? {load} : {isa.setzero})" if cond else load

    def _vload_range(self, buf: Buf, ptr: str, flat: str, checks: list[Poly], o: Poly,
                     lo: Poly, n: Poly | None, ctx: Ctx, more: tuple[Poly, ...] = ()) -> str:
        """A load of the lanes `lo <= l < n` (a border's masked load, maskload_range)
        from `ptr`, also cut to the row: lanes before its start (`-o`) or past its
        end are masked, so none is read.  Where `o` may be negative the address
        is formed in integers (`uintptr_t`): the lanes before the row are masked,
        and C has no pointer before an array's first element."""
        isa = self.isa
        assert isa is not None
        lows = [lo] + ([] if ctx.facts.ge0(o) else [-o])
        his = [buf.dims[-1] - o] + ([] if n is None else [n]) + list(more)
        mask = self._range_mask(lows, his, ctx)
        assert mask is not None  # (lo is not provably <= 0: vload)
        if not ctx.facts.ge0(o):
            ptr = (f"(const {self.core.ctype} *)((uintptr_t){buf.cname} + sizeof(*{buf.cname})"
                   f" * (uintptr_t)(intptr_t)({flat}))")
        load = isa.maskload.format(p=ptr, m=mask)
        cond = ge_text(checks, ctx)
        return f"(({cond}) ? {load} : {isa.setzero})" if cond else load

    # -- stores of vectors -------------------------------------------------------------
    def lower_instr(self, e: Instr, dest: Dest, mode: str, ctx: Ctx, out: Emitter) -> bool:
        """Store the value of call `e` (rank 1: the lanes) into `dest`."""
        spec = self._check_supported(e)
        if spec.lanes is None or len(dest.windows) != 1:
            raise LowerError(f"lowering: instruction {e.name} stored at rank "
                             f"{len(dest.windows)}, expected its lanes: {show(e)}")
        isa = self.isa
        assert isa is not None
        W = Poly.const(isa.lanes)
        zero = Poly.const(0)
        a, b = dest.windows[0]
        lo, hi = smax(a, zero, ctx), smin(b, W, ctx)
        if ctx.facts.le(hi, lo):
            pass
        else:
            op = spec.name[len(spec.family) + 1:]
            if op == "maskstore":
                # Lanes >= n are zero: only lanes below n need the vector; the others
                # are zero-filled below if the window reaches them.
                n = ix(e.args[0], ctx)  # type: ignore[arg-type]
                if ctx.facts.le(hi, n) or ctx.facts.le(b, n):
                    e = Instr(e.name.replace("maskstore", "storeu"), (e.args[1],))
            self.vstore(e, dest, mode, lo, hi, ctx, out)
        if mode == "=":
            # Window indices outside the vector's lanes are zero (Fig. 2).
            if not ctx.facts.ge0(a):
                self.core.zero_fill(replace(dest, windows=((a, smin(b, zero, ctx)),)),
                               ctx, out)
            if not ctx.facts.le(b, W):
                self.core.zero_fill(replace(dest, windows=((smax(a, W, ctx), b),)), ctx, out)
        return True

    def _accumulate(self, e: Instr, acc: str, ctx: Ctx, out: Emitter) -> str:
        """acc + value of e, fusing a multiply into an FMA (the `+=` store mode)."""
        isa = self.isa
        assert isa is not None
        spec = spec_of(e.name)
        op = spec.name[len(spec.family) + 1:]
        if op == "mul":
            x, y = self.vexpr(e.args[0], ctx, out), self.vexpr(e.args[1], ctx, out)  # type: ignore[arg-type]
            if isa.setzero in (x, y):
                return acc  # a product with a zero (a failed guard, ATL's 0): nothing to add
            return isa.fmadd.format(a=x, b=y, c=acc)
        if op == "storeu":
            inner = e.args[0]
            if isinstance(inner, Instr):
                self._check_supported(inner)
                return self._accumulate(inner, acc, ctx, out)
        return isa.add.format(a=acc, b=self.vexpr(e, ctx, out))

    def vstore(self, e: Instr, dest: Dest, mode: str, lo: Poly, hi: Poly, ctx: Ctx,
               out: Emitter) -> None:
        isa = self.isa
        assert isa is not None
        W = isa.lanes
        L = Poly.var("vs_lane")
        full = ctx.facts.ge0(-lo) and ctx.facts.ge0(hi - W)
        bi_l, conds_l = dest.fn([L])
        if isinstance(dest.buf, RegBuf):
            lane_ok = bi_l[-1] == L and not conds_l and not any(
                L.vars() & p.vars() for p in bi_l[:-1])
            if lane_ok:
                var = dest.buf.elem(bi_l[:-1], show(e))
                if var is None:
                    return
                val = self._accumulate(e, var, ctx, out) if mode == "+=" else \
                    self.vexpr(e, ctx, out)
                if val == var:
                    return  # nothing added (a product with a zero)
                if not full:
                    mask = isa.mask_range.format(lo=ctext(lo, ctx), hi=ctext(hi, ctx))
                    val = isa.blend.format(a=var, b=val, m=mask)
                out.line(f"{var} = {val};")
                return
            self._store_lanes(e, dest, mode, lo, hi, ctx, out)
            return
        if not isinstance(dest.buf, Buf):
            self._store_lanes(e, dest, mode, lo, hi, ctx, out)
            return
        bi_0, conds_0 = dest.fn([Poly.const(0)])
        lin_l, lin_0 = linear(bi_l, dest.buf.dims), linear(bi_0, dest.buf.dims)
        # Lane-dependent store conditions must be lane bounds (c0 +- lane >= 0).
        los, his, fixed = [lo], [hi], []
        ok = lin_l - lin_0 == L
        for c in conds_l:
            if not (L.vars() & c.vars()):
                fixed.append(c)
                continue
            rest = c - L
            if not (L.vars() & rest.vars()):
                los.append(-rest)   # lane >= -rest
                continue
            rest = c + L
            if not (L.vars() & rest.vars()):
                his.append(rest + 1)  # lane <= rest
                continue
            ok = False
        if not ok or not all(ctx.facts.ge0(-x) for x in los):
            self._store_lanes(e, dest, mode, lo, hi, ctx, out)
            return
        if spec_of(e.name).name.endswith("_maskstore"):
            # Lanes >= n are zero in the value; if the destination ends at or before
            # lane n they are not stored, so the zeroing is not needed either.
            n = ix(e.args[0], ctx)  # type: ignore[arg-type]
            if any(ctx.facts.le(h, n) for h in his):
                e = Instr(e.name.replace("maskstore", "storeu"), (e.args[1],))
        his = [h for h in his if not ctx.facts.ge0(h - W)]
        self.core.loops.log_needs([h - W for h in his]
                                  + [c for c in fixed if not ctx.facts.ge0(c)], ctx)
        ptr = f"&{dest.buf.cname}[{flat_text(bi_0, dest.buf.dims, ctx)}]"
        cond = ge_text(fixed, ctx)
        if mode == "+=" and self.accumulated is not None and not cond:
            self.accumulated.append((dest.buf, bi_0))
        with ExitStack() as stack:
            if cond:
                stack.enter_context(out.block(f"if ({cond})"))
            if not his:
                cur = isa.loadu.format(p=ptr)
                val = self._accumulate(e, cur, ctx, out) if mode == "+=" else \
                    self.vexpr(e, ctx, out)
                out.line(isa.storeu.format(p=ptr, v=val) + ";")
                return
            # The ragged edge of a tile: the lanes in the window, masked.  Interior
            # tiles (all lanes in the window) take the unmasked branch: masked stores
            # are slow on some CPUs (microcoded vmaskmovps on AMD).
            kp = his[0]
            for h in his[1:]:
                kp = smin(kp, h, ctx)
            ktxt = ctext(kp, ctx)
            full_cond = " && ".join(f"{ctext(h - W, ctx)} >= 0" for h in his)
            with out.block(f"if ({full_cond})"):
                cur = isa.loadu.format(p=ptr)
                val = self._accumulate(e, cur, ctx, out) if mode == "+=" else \
                    self.vexpr(e, ctx, out)
                out.line(isa.storeu.format(p=ptr, v=val) + ";")
            with out.block("else"):
                m = self.core.names.fresh("vm")
                out.line(f"{isa.mask_type} {m} = {isa.mask_first.format(k=ktxt)};")
                cur = isa.maskload.format(p=ptr, m=m)
                val = self._accumulate(e, cur, ctx, out) if mode == "+=" else \
                    self.vexpr(e, ctx, out)
                out.line(isa.maskstore.format(p=ptr, m=m, v=val) + ";")

    def _store_lanes(self, e: Instr, dest: Dest, mode: str, lo: Poly, hi: Poly, ctx: Ctx,
                     out: Emitter) -> None:
        """Fallback: compute the vector, then store lanes [lo, hi) one by one."""
        isa = self.isa
        assert isa is not None
        t = self.core.names.fresh("vt")
        out.line(f"{isa.vtype} {t} = {self.vexpr(e, ctx, out)};")
        with self.core.loop("lane", lo, hi, ctx, out, []) as (c2, pv):
            self.core.store(dest.peel(pv), mode, f"{t}[{ctext(pv, c2)}]", c2, out)


__all__ = ["VectorISA", "VectorRules", "RegBuf", "MAX_REGISTER_VECTORS", "MAX_UNROLL",
           "has_instr"]


# An element's address as the lowering writes it: `&T[index]`.
_ELEMENT = re.compile(r"&(\w+)\[(.*)\]")


def _first_arg(s: str) -> str | None:
    """The text of a call's first argument, up to its top-level comma."""
    depth = 0
    for k, ch in enumerate(s):
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
            if depth < 0:
                return None
        elif ch == "," and depth == 0:
            return s[:k].strip()
    return None
