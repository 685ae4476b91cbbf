"""Lowering of instruction calls and register memories (issue 5: AVX2 / AVX-512).

Model: the Exo thesis's hardware libraries (Sec. 3.2).  An instruction is
known by its specification (pybridge/instrs.py, checked against Coq), and
the target library only says which C each name becomes (`VectorISA`, built
by targets/avx2.py and targets/avx512.py: Sec. 3.2.2's "@instr" template).
A memory (Sec. 3.2.1) changes how a buffer is allocated and accessed, not
its value: a let whose value is `in_mem AVX2_REG (e)` becomes one C vector
variable per element of its leading dimensions (its last dimension is the
vector's lanes), so gcc keeps it in registers.

Rules (the mixin below; `Lowerer` in lower.py inherits them):
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
  lowering itself (every register index is then a constant); their extent
  must be a constant.
- Anything the vector rules cannot express (a destination whose lanes are
  not contiguous, a lane window that starts inside the vector, a register
  operand at an offset) is lowered lane by lane from the specification:
  slower, never wrong.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager, ExitStack
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from verisched.codegen.errors import LowerError
from verisched.codegen.normal import access_base, show
from verisched.codegen.poly import Atom, Poly, binop
from verisched.pybridge.instrs import InstrSpec, instantiate, spec_of
from verisched.pybridge.terms import (
    Expr,
    Gen,
    Get,
    IConst,
    Idx,
    Instr,
    IVar,
    Let,
    Mem,
    Var,
    Zero,
    is_idx,
)

if TYPE_CHECKING:
    from verisched.codegen.lower import Ctx, Dest, Emitter, Names

# Register buffers are unrolled into this many vector variables at most: more
# than the register file (16 ymm / 32 zmm) spills, far more is certainly a mistake.
MAX_REGISTER_VECTORS = 64
# A loop indexing a register buffer is unrolled; beyond this extent, refuse.
MAX_UNROLL = 64


@dataclass(frozen=True)
class VectorISA:
    """A SIMD target library: instruction family, memory, and C templates.

    Templates use str.format fields: {p} a pointer, {m} a mask, {v} {a} {b} {c}
    vectors, {x} a scalar, {k} a lane count (mask of lanes l < k)."""

    name: str                 # "avx2"
    family: str               # instruction-name family in the registry
    memory: str               # register memory of coq/Targets/Instr.v
    lanes: int
    vtype: str
    mask_type: str
    setzero: str
    set1: str
    loadu: str
    maskload: str
    storeu: str
    maskstore: str
    add: str
    mul: str
    max: str
    fmadd: str
    mask_first: str           # mask of lanes l < {k}
    mask_range: str           # mask of lanes {lo} <= l < {hi}
    keep: str                 # {v} with lanes outside {m} zeroed
    blend: str                # lanes of {b} inside {m}, of {a} outside
    cflags: tuple[str, ...]
    cpu_flags: tuple[str, ...]  # /proc/cpuinfo flags the code needs
    helpers: str              # C helper functions (masks), emitted once per file
    # A hint that the line at {p} will be read soon (no effect on the result).
    prefetch: str = "_mm_prefetch((const char *)({p}), _MM_HINT_T0)"

    def supports(self, name: str) -> bool:
        """Does this library emit instruction `name`?"""
        spec = spec_of(name)
        return spec.family == self.family


@dataclass(frozen=True)
class RegBuf:
    """A let-bound buffer in a register memory: one vector variable per element of
    the leading dimensions (`elems`, row-major); `dims` ends with the lanes."""

    cname: str
    dims: tuple[Poly, ...]
    elems: tuple[str, ...]
    memory: str

    def elem(self, lead: list[Poly], what: str) -> str | None:
        """The variable for constant leading indices; None when out of range (zero)."""
        flat = 0
        for p, d in zip(lead, self.dims[:-1], strict=True):
            k, n = p.as_const(), d.as_const()
            if k is None:
                raise LowerError(f"lowering: {what}: register buffer {self.cname} indexed by "
                                 f"a non-constant ({p.key()}); only loops with a constant "
                                 "extent can be unrolled over a register buffer")
            assert n is not None
            if not 0 <= k < n:
                return None
            flat = flat * n + k
        return self.elems[flat]


def reg_reads(e: object, var: str, regs: set[str]) -> bool:
    """Does `e` read a register buffer with a leading index mentioning `var` (free)?"""
    from verisched.pybridge.terms import Sum, idx_free_vars

    if not regs or is_idx(e) or not hasattr(e, "__dataclass_fields__"):
        return False
    if isinstance(e, Get):
        base, idxs = access_base(e)
        if isinstance(base, Var) and base.name in regs:
            # A full access's last index is the lane; a vector operand has no lane
            # index, so every index it has is a leading one (checked both ways).
            if any(var in idx_free_vars(i) for i in idxs):
                return True
        return reg_reads(base, var, regs)
    if isinstance(e, (Gen, Sum)):
        return e.var != var and reg_reads(e.body, var, regs)
    if isinstance(e, Let):
        return reg_reads(e.value, var, regs) or reg_reads(e.body, var, regs - {e.var})
    if isinstance(e, Instr):
        return any(reg_reads(a, var, regs) for a in e.args)
    return any(reg_reads(getattr(e, f), var, regs) for f in e.__dataclass_fields__)


class LowererHooks:
    """What the vector and support mixins use of lower.Lowerer (which defines them
    all; these stubs only document the interface and satisfy type checkers)."""

    names: Names
    parallel_loops: int
    fallback_loops: int
    gen_loops: set[str]
    zero: str

    def ix(self, i: Idx, ctx: Ctx) -> Poly:
        raise NotImplementedError

    def c(self, p: Poly, ctx: Ctx) -> str:
        raise NotImplementedError

    def smin(self, a: Poly, b: Poly, ctx: Ctx) -> Poly:
        raise NotImplementedError

    def smax(self, a: Poly, b: Poly, ctx: Ctx) -> Poly:
        raise NotImplementedError

    def ge_text(self, facts: list[Poly], ctx: Ctx) -> str:
        raise NotImplementedError

    def loop(self, atl_var: str, lo: Poly, hi: Poly, ctx: Ctx, out: Emitter,
             facts: list[Poly], parallel: bool = False
             ) -> AbstractContextManager[tuple[Ctx, Poly]]:
        raise NotImplementedError

    def lower(self, e: Expr, dest: Dest, mode: str, ctx: Ctx, out: Emitter) -> bool:
        raise NotImplementedError

    def scalar(self, e: Expr, ctx: Ctx, out: Emitter) -> str:
        raise NotImplementedError

    def store(self, dest: Dest, mode: str, value: str, ctx: Ctx, out: Emitter) -> None:
        raise NotImplementedError

    def zero_fill(self, dest: Dest, ctx: Ctx, out: Emitter) -> None:
        raise NotImplementedError

    def shape(self, e: Expr, ctx: Ctx) -> tuple[Poly, ...] | None:
        raise NotImplementedError


class VectorLowering(LowererHooks):
    """The vector half of the lowering; mixed into lower.Lowerer (which provides
    ix, c, pred, ge_text, loop, lower, scalar, store, zero_fill, names, ...)."""

    isa: VectorISA | None
    # While probing a loop body for its mask bounds (mask_split): the bounds seen.
    _mask_log: list[Poly] | None = None
    _probe_depth: int = 0

    # -- splitting loops into unmasked iterations and a masked tail --------------
    def mask_split(self, e: Gen, dest: Dest, mode: str, ctx: Ctx, out: Emitter, lo: Poly,
                   first: Poly, last: Poly, facts: list[Poly]
                   ) -> tuple[Poly, list[Poly]] | None:
        """Where a generation's vector masks (and the guards of unrolled register
        copies) depend on its variable v as `r - a*v >= 0` (a > 0; the lanes still in
        bounds at the end of a row, the rows left in a register block), the
        iterations with v <= r / a need no mask: split the loop there, as a person
        writes a main loop and a tail.  Returns the split point and the facts that hold before
        it, or None.  The body is lowered once more for this (nested loops are not
        probed again), into a scratch emitter."""
        if (self.isa is None or self._mask_log is not None
                or not getattr(self, "vector_program", False)
                or not (has_instr(e.body) or _has_guard(e.body))):
            return None
        # The probe's output is discarded: so are its names, loops and counters.
        saved = (self.parallel_loops, set(self.gen_loops),
                 set(self.names.used), self.fallback_loops)
        self._mask_log = []
        try:
            probe = type(out)()
            with self.loop(e.var, first, last, ctx, probe, facts, False) as (c2, pv):
                vname = c2.idx_names[e.var]
                self._probe_depth = c2.facts.depth[vname]
                self.lower(e.body, dest.peel(pv - lo), mode, c2, probe)
            log = self._mask_log
        finally:
            self._mask_log = None
            self.parallel_loops, self.gen_loops = saved[0], saved[1]
            self.names.used, self.fallback_loops = saved[2], saved[3]
        scope = set(ctx.idx_names.values()) | set(ctx.facts.sizes)
        # need = r - a v >= 0  iff  v <= r / a.  Of the needs with the same a and the
        # same r up to a constant only the smallest constant matters (floor division
        # is monotone; the prover does not know that).
        tightest: dict[tuple[int, str], Poly] = {}
        for need in log:
            coeff = _var_coeff(need, vname)
            if coeff is None or coeff >= 0:
                continue
            r = need - Poly.var(vname).scale(coeff)
            if not r.vars() <= scope:
                continue
            key = (-coeff, (r - r.constant()).key())
            if key not in tightest or need.constant() < tightest[key].constant():
                tightest[key] = need
        points: dict[str, Poly] = {}
        extra: dict[str, Poly] = {}
        for (a, _), need in tightest.items():
            r = need + Poly.var(vname).scale(a)
            # floor(r / a) + 1, written so that equal points print (and compare) equal
            points[need.key()] = binop("/", r + a, Poly.const(a))
            extra[need.key()] = need.subst(vname, Poly.var("@"))
        if not points:
            return None
        ps = list(points.values())
        mid = ps[0]
        for p in ps[1:]:
            mid = self.smin(mid, p, ctx)
        mid = self.smax(self.smin(mid, last, ctx), first, ctx)
        if ctx.facts.le(mid, first) or ctx.facts.le(last, mid):
            return None  # one of the two parts is provably empty
        return mid, list(extra.values())

    def _log_needs(self, needs: list[Poly], ctx: Ctx) -> None:
        """While probing: conditions `f >= 0` under which the fast path (no mask, no
        guard) is taken.  A condition on a loop nested inside the probed one is also
        logged for its worst iteration (the loop variable at its constant bound), so
        the probed loop can be split where the whole inner loop is guard-free (an
        interior micro-panel packs 6 rows, not `min(6, M - ...)`)."""
        if self._mask_log is None:
            return
        for need in needs:
            self._mask_log.append(need)
            worst = need
            for v in need.vars():
                if ctx.facts.depth.get(v, 0) <= self._probe_depth:
                    continue
                coeff = _var_coeff(worst, v)
                bound = _const_bound(ctx, v, upper=coeff is not None and coeff < 0)
                if coeff is None or bound is None:
                    worst = None
                    break
                worst = worst.subst(v, Poly.const(bound))
            if worst is not None and worst != need:
                self._mask_log.append(worst)

    # -- instruction families ------------------------------------------------
    def _check_supported(self, e: Instr) -> InstrSpec:
        spec = spec_of(e.name)
        target = self.isa.name if self.isa else "c"
        if self.isa is None or spec.family != self.isa.family:
            need = {"avx2": "avx2 or avx2-openmp", "avx512": "avx512 or avx512-openmp"}.get(
                spec.family, spec.family)
            raise LowerError(f"lowering: instruction {e.name} is not supported by target "
                             f"{target} (it needs target {need})")
        return spec

    # -- loops that must be unrolled -------------------------------------------
    def needs_unroll(self, var: str, body: Expr, dest: Dest | None, ctx: Ctx) -> bool:
        regs = {k for k, t in ctx.tensors.items() if isinstance(t, RegBuf)}
        if dest is not None and isinstance(dest.buf, RegBuf) and len(dest.windows) > 1:
            return True
        return bool(regs) and reg_reads(body, var, regs)

    def iterate(self, var: str, lo: Poly, hi: Poly, ctx: Ctx, out: Emitter,
                facts: list[Poly], parallel: bool, unroll: bool,
                bounds: tuple[Poly, Poly] | None = None) -> Iterator[tuple[Ctx, Poly]]:
        """The iterations of a loop over `var` in [lo, hi): one C loop, or, when
        `unroll`, one copy per value of `bounds` (constant; default [lo, hi)), each
        with `var` a constant and guarded by `lo <= k < hi` where not provable."""
        if not unroll:
            with self.loop(var, lo, hi, ctx, out, facts, parallel) as (c2, pv):
                yield c2, pv
            return
        blo, bhi = bounds or (lo, hi)
        a, b = blo.as_const(), bhi.as_const()
        if a is None or b is None:
            raise LowerError(f"lowering: the loop over {var} indexes a register buffer, so it "
                             "is unrolled, but its extent "
                             f"[{self.c(blo, ctx)}, {self.c(bhi, ctx)}) is not a constant")
        if b - a > MAX_UNROLL:
            raise LowerError(f"lowering: the loop over {var} indexes a register buffer and "
                             f"would be unrolled {b - a} times (at most {MAX_UNROLL})")
        for k in range(a, b):
            kp = Poly.const(k)
            conds = [kp - lo, hi - 1 - kp]
            if any(ctx.facts.ge0(-f - 1) for f in conds):
                continue
            cname = self.names.fresh(f"{var}_u")
            c2 = ctx.child()
            c2.idx_names[var] = cname
            c2.consts[cname] = k
            for f in facts:
                c2.facts.add(f.subst("@", kp))
            cond = self.ge_text(conds, ctx)
            if cond:
                self._log_needs([f for f in conds if not ctx.facts.ge0(f)], ctx)
            with ExitStack() as stack:
                if cond:
                    stack.enter_context(out.block(f"if ({cond})"))
                    for f in conds:
                        c2.facts.add(f)
                yield c2, kp

    def register_vector_copy(self, e: Gen, ctx: Ctx) -> Instr | None:
        """`GEN [ l < W ] R _[ i ] _[ l ]` with R a register buffer is the storeu
        specification itself: store the vector whole instead of lane by lane."""
        from verisched.pybridge.terms import free_vars

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
    def reg_let(self, e: Let, ctx: Ctx, out: Emitter, body) -> bool:
        assert isinstance(e.value, Mem)
        isa = self.isa
        mem = e.value.memory
        target = isa.name if isa else "c"
        if isa is None or mem != isa.memory:
            raise LowerError(f"lowering: let {e.var} is placed in memory {mem}, which target "
                             f"{target} does not have")
        dims = self.shape(e.value.body, ctx)
        if dims is None:
            raise LowerError(f"lowering: let {e.var} in {mem} binds a bare zero")
        consts = [d.as_const() for d in dims]
        if not dims or consts[-1] != isa.lanes or any(c is None or c < 1 for c in consts):
            shown = " x ".join(self.c(d, ctx) for d in dims) or "a scalar"
            raise LowerError(f"lowering: let {e.var} in {mem}: a register buffer needs constant "
                             f"extents ending with the {isa.lanes} lanes, got {shown}")
        count = 1
        for c in consts[:-1]:
            count *= c  # type: ignore[operator]
        if count > MAX_REGISTER_VECTORS:
            raise LowerError(f"lowering: let {e.var} in {mem} needs {count} vector registers "
                             f"(at most {MAX_REGISTER_VECTORS})")
        base = self.names.fresh(e.var)
        elems = tuple(self.names.fresh(f"{base}_{k}") if count > 1 else base
                      for k in range(count))
        buf = RegBuf(base, tuple(dims), elems, mem)
        from verisched.codegen.lower import Dest

        fill = type(out)()
        dest = Dest(buf, "", lambda i: (i, []), tuple((Poly.const(0), d) for d in dims))
        covered = self.lower(e.value.body, dest, "=", ctx, fill)
        c2 = ctx.child()
        c2.tensors[e.var] = buf
        with out.block(""):
            init = "" if covered else f" = {isa.setzero}"
            for k in range(0, count, 6):
                out.line(f"{isa.vtype} " + ", ".join(f"{v}{init}" for v in elems[k:k + 6]) + ";")
            after = type(out)()
            res = body(c2, after)
            if any(s.lstrip().startswith("for (") for s in fill.lines):
                for p in self.accumulated_addresses(after.lines):
                    out.line(isa.prefetch.format(p=p) + ";")
            out.extend(fill)
            out.extend(after)
            return res

    def accumulated_addresses(self, lines: list[str]) -> list[str]:
        """Addresses a register tile is added into right after it is computed: the
        pointers of the unconditional (top-level) read-modify-write stores in `lines`.

        They are prefetched before the loop that computes the tile (BLIS's
        micro-kernels do the same with the C tile), so the tile's destination
        arrives during that loop instead of stalling the stores after it.  A
        prefetch has no effect on the result and never faults."""
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
        var = buf.elem([self.ix(i, ctx) for i in idxs[:-1]], show(e))
        zero = self.zero
        if var is None:
            return zero
        p = self.ix(idxs[-1], ctx)
        checks = [p, buf.dims[-1] - 1 - p]
        if any(ctx.facts.ge0(-f - 1) for f in checks):
            return zero
        cond = self.ge_text(checks, ctx)
        ref = f"{var}[{self.c(p, ctx)}]"
        return f"(({cond}) ? {ref} : {zero})" if cond else ref

    # -- vector values -------------------------------------------------------------
    def vexpr(self, e: Expr, ctx: Ctx, out: Emitter) -> str:
        """C expression of a vector-valued operand (a call, a register element, memory)."""
        isa = self.isa
        assert isa is not None
        if isinstance(e, Zero):
            return isa.setzero
        if isinstance(e, Instr):
            spec = self._check_supported(e)
            op = spec.name[len(spec.family) + 1:]
            a = e.args
            if op == "loadu":
                return self.vload(a[0], self.ix(a[1], ctx), None, e, ctx, out)  # type: ignore[arg-type]
            if op == "maskload":
                return self.vload(a[0], self.ix(a[1], ctx), self.ix(a[2], ctx),  # type: ignore[arg-type]
                                  e, ctx, out)
            if op == "broadcast":
                return isa.set1.format(x=self.scalar(a[0], ctx, out))  # type: ignore[arg-type]
            if op in ("mul", "add", "max"):
                x, y = self.vexpr(a[0], ctx, out), self.vexpr(a[1], ctx, out)  # type: ignore[arg-type]
                return getattr(isa, op).format(a=x, b=y)
            if op == "fmadd":
                x, y, z = (self.vexpr(v, ctx, out) for v in a)  # type: ignore[arg-type]
                return isa.fmadd.format(a=x, b=y, c=z)
            if op == "storeu":
                return self.vexpr(a[0], ctx, out)  # type: ignore[arg-type]
            if op == "maskstore":
                n = self.ix(a[0], ctx)  # type: ignore[arg-type]
                v = self.vexpr(a[1], ctx, out)  # type: ignore[arg-type]
                if ctx.facts.ge0(n - isa.lanes):
                    return v
                return isa.keep.format(v=v, m=isa.mask_first.format(k=self.c(n, ctx)))
            return self.vlanes(e, ctx, out)
        base, idxs = access_base(e)
        if isinstance(base, Var) and isinstance(ctx.tensors.get(base.name), RegBuf):
            buf = ctx.tensors[base.name]
            assert isinstance(buf, RegBuf)
            if len(idxs) != len(buf.dims) - 1:
                raise LowerError(f"lowering: vector operand of the wrong rank: {show(e)}")
            v = buf.elem([self.ix(i, ctx) for i in idxs], show(e))
            return isa.setzero if v is None else v
        return self.vload(e, Poly.const(0), None, None, ctx, out)

    def vlanes(self, e: Instr, ctx: Ctx, out: Emitter) -> str:
        """Fallback: the call's specification lowered lane by lane into a temporary."""
        assert self.isa is not None
        from verisched.codegen.lower import Dest

        t = self.names.fresh("vt")
        buf = RegBuf(t, (Poly.const(self.isa.lanes),), (t,), self.isa.memory)
        out.line(f"{self.isa.vtype} {t} = {self.isa.setzero};")
        dest = Dest(buf, "", lambda i: (i, []), ((Poly.const(0), Poly.const(self.isa.lanes)),))
        self.lower(instantiate(e), dest, "=", ctx, out)
        return t

    def vload(self, t: Expr, o: Poly, n: Poly | None, call: Instr | None, ctx: Ctx,
              out: Emitter) -> str:
        """Lanes `o .. o+W-1` of the rank-1 operand `t` (lanes >= n zero): the
        address of `t _[ o ]`, a load unmasked only where provably in bounds."""
        from verisched.codegen.lower import Buf

        isa = self.isa
        assert isa is not None
        W = isa.lanes
        base, idxs = access_base(t)
        buf = ctx.tensors.get(base.name) if isinstance(base, Var) else None
        if isinstance(buf, RegBuf):
            if o.as_const() == 0 and (n is None or ctx.facts.ge0(n - W)):
                return self.vexpr(t, ctx, out)
            if call is not None:
                return self.vlanes(call, ctx, out)
        if not isinstance(buf, Buf) or len(buf.dims) != len(idxs) + 1:
            if call is not None:
                return self.vlanes(call, ctx, out)
            raise LowerError(f"lowering: vector operand is not a rank-1 slice of a buffer: "
                             f"{show(t)}")
        lin = Poly.const(0)
        checks: list[Poly] = []
        for i, d in zip(idxs, buf.dims[:-1], strict=True):
            p = self.ix(i, ctx)
            checks += [p, d - 1 - p]
            lin = lin * d + p
        last = buf.dims[-1]
        lin = lin * last + o
        if any(ctx.facts.ge0(-f - 1) for f in checks):
            return isa.setzero  # provably out of bounds: zero (Fig. 2)
        ptr = f"&{buf.cname}[{self.c(lin, ctx)}]"
        if not ctx.facts.ge0(o):
            # Lanes before the start of the row: build the vector lane by lane.
            if call is not None:
                return self.vlanes(call, ctx, out)
            o_le0 = ctx.facts.ge0(-o)
            if not o_le0:
                raise LowerError(f"lowering: vector operand offset not provably >= 0: {show(t)}")
        bounds = [last - o] + ([n] if n is not None else [])
        if all(ctx.facts.ge0(b - W) for b in bounds):
            load = isa.loadu.format(p=ptr)
        else:
            ks = [b for b in bounds if not ctx.facts.ge0(b - W)]
            self._log_needs([k - W for k in ks], ctx)
            kp = ks[0]
            for b in ks[1:]:
                kp = self.smin(kp, b, ctx)
            ktxt = self.c(kp, ctx)
            load = isa.maskload.format(p=ptr, m=isa.mask_first.format(k=ktxt))
        cond = self.ge_text(checks, ctx)
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
        lo, hi = self.smax(a, zero, ctx), self.smin(b, W, ctx)
        if ctx.facts.le(hi, lo):
            pass
        else:
            op = spec.name[len(spec.family) + 1:]
            if op == "maskstore":
                # Lanes >= n are zero: only lanes below n need the vector; the others
                # are zero-filled below if the window reaches them.
                n = self.ix(e.args[0], ctx)  # type: ignore[arg-type]
                if ctx.facts.le(hi, n) or ctx.facts.le(b, n):
                    e = Instr(e.name.replace("maskstore", "storeu"), (e.args[1],))
            self.vstore(e, dest, mode, lo, hi, ctx, out)
        if mode == "=":
            # Window indices outside the vector's lanes are zero (Fig. 2).
            if not ctx.facts.ge0(a):
                self.zero_fill(replace(dest, windows=((a, self.smin(b, zero, ctx)),)),
                               ctx, out)
            if not ctx.facts.le(b, W):
                self.zero_fill(replace(dest, windows=((self.smax(a, W, ctx), b),)), ctx, out)
        return True

    def _accumulate(self, e: Instr, acc: str, ctx: Ctx, out: Emitter) -> str:
        """acc + value of e, fusing a multiply into an FMA (the `+=` store mode)."""
        isa = self.isa
        assert isa is not None
        spec = spec_of(e.name)
        op = spec.name[len(spec.family) + 1:]
        if op == "mul":
            x, y = self.vexpr(e.args[0], ctx, out), self.vexpr(e.args[1], ctx, out)  # type: ignore[arg-type]
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
                if not full:
                    mask = isa.mask_range.format(lo=self.c(lo, ctx), hi=self.c(hi, ctx))
                    val = isa.blend.format(a=var, b=val, m=mask)
                out.line(f"{var} = {val};")
                return
            self._store_lanes(e, dest, mode, lo, hi, ctx, out)
            return
        from verisched.codegen.lower import Buf

        if not isinstance(dest.buf, Buf):
            self._store_lanes(e, dest, mode, lo, hi, ctx, out)
            return
        bi_0, conds_0 = dest.fn([Poly.const(0)])
        lin_l, lin_0 = self._linear(bi_l, dest.buf), self._linear(bi_0, dest.buf)
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
            n = self.ix(e.args[0], ctx)  # type: ignore[arg-type]
            if any(ctx.facts.le(h, n) for h in his):
                e = Instr(e.name.replace("maskstore", "storeu"), (e.args[1],))
        his = [h for h in his if not ctx.facts.ge0(h - W)]
        self._log_needs([h - W for h in his] + [c for c in fixed if not ctx.facts.ge0(c)], ctx)
        ptr = f"&{dest.buf.cname}[{self.c(lin_0, ctx)}]"
        cond = self.ge_text(fixed, ctx)
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
                kp = self.smin(kp, h, ctx)
            ktxt = self.c(kp, ctx)
            full_cond = " && ".join(f"{self.c(h - W, ctx)} >= 0" for h in his)
            with out.block(f"if ({full_cond})"):
                cur = isa.loadu.format(p=ptr)
                val = self._accumulate(e, cur, ctx, out) if mode == "+=" else \
                    self.vexpr(e, ctx, out)
                out.line(isa.storeu.format(p=ptr, v=val) + ";")
            with out.block("else"):
                m = self.names.fresh("vm")
                out.line(f"{isa.mask_type} {m} = {isa.mask_first.format(k=ktxt)};")
                cur = isa.maskload.format(p=ptr, m=m)
                val = self._accumulate(e, cur, ctx, out) if mode == "+=" else \
                    self.vexpr(e, ctx, out)
                out.line(isa.maskstore.format(p=ptr, m=m, v=val) + ";")

    def _linear(self, bi: list[Poly], buf) -> Poly:
        lin = Poly.const(0)
        for i, d in zip(bi, buf.dims, strict=False):
            lin = lin * d + i
        return lin

    def _store_lanes(self, e: Instr, dest: Dest, mode: str, lo: Poly, hi: Poly, ctx: Ctx,
                     out: Emitter) -> None:
        """Fallback: compute the vector, then store lanes [lo, hi) one by one."""
        isa = self.isa
        assert isa is not None
        t = self.names.fresh("vt")
        out.line(f"{isa.vtype} {t} = {self.vexpr(e, ctx, out)};")
        with self.loop("lane", lo, hi, ctx, out, []) as (c2, pv):
            self.store(dest.peel(pv), mode, f"{t}[{self.c(pv, c2)}]", c2, out)


def _const_bound(ctx: Ctx, v: str, upper: bool) -> int | None:
    """A constant bound on loop variable `v` among the facts (`c - v >= 0` for an
    upper bound, `v - c >= 0` for a lower one)."""
    best = None
    for f in ctx.facts.facts:
        coeff = _var_coeff(f, v)
        if coeff not in (1, -1) or (coeff < 0) != upper:
            continue
        rest = f - Poly.var(v).scale(coeff)
        k = rest.as_const()
        if k is None:
            continue
        b = k if upper else -k
        if best is None or (b < best if upper else b > best):
            best = b
    return best


def _var_coeff(p: Poly, name: str) -> int | None:
    """Coefficient of variable `name` in `p` if it occurs only linearly (else None)."""
    coeff = 0
    for m, c in p.terms:
        if m == (Atom("var", name),):
            coeff += c
        elif any(name in Poly.atom(a).vars() for a in m):
            return None
    return coeff


def _has_guard(e: object) -> bool:
    from verisched.pybridge.terms import Guard

    if isinstance(e, Guard):
        return True
    if is_idx(e) or isinstance(e, tuple):
        return False
    fields = getattr(e, "__dataclass_fields__", None)
    return bool(fields) and any(_has_guard(getattr(e, f)) for f in fields)


def has_instr(e: object) -> bool:
    """Does the term contain an instruction call?"""
    if isinstance(e, Instr):
        return True
    if isinstance(e, tuple):
        return any(has_instr(x) for x in e)
    if is_idx(e):
        return False
    fields = getattr(e, "__dataclass_fields__", None)
    return bool(fields) and any(has_instr(getattr(e, f)) for f in fields)


__all__ = ["VectorISA", "RegBuf", "VectorLowering", "MAX_REGISTER_VECTORS", "MAX_UNROLL",
           "has_instr"]


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
