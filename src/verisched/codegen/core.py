"""The core lowering of normal-form ATL to C statements (paper Sec. 5.2 Fig. 3, Sec. 6 Fig. 6).

Syntax-directed, with left-hand index accumulation: the destination of the
term being lowered is a buffer plus a function from the term's own indices
to buffer indices (Fig. 3's `y[i] ⊖`, codegen/ir.py's `Dest`).  GEN peels
one index and emits a for-loop (codegen/generation.py), SUM switches the
store to `+=`, a guard becomes `if`, a let a buffer (codegen/lets.py).
Reshape operators only rewrite the index function (Fig. 6,
codegen/reshape.py).  Scalars become C expressions (codegen/scalar.py).

Two departures from the paper, both forced by our semantics (tensors are
total, zero outside their extent, Tensor/Core.v):
- Every destination also carries, per remaining dimension, a *window*
  `[lo, hi)` of indices that may be stored.  Loops are clipped to it, so
  trunc never writes past its extent and flatten/split never alias, which
  also makes every generation write disjoint storage (openmp.py relies on
  it).  Where a window cannot be expressed as loop bounds (under flatten or
  split) it becomes a condition on the store.
- Where the semantics says zero and no store happens (the else-branch of a
  tensor guard, pad regions, a generation shorter than its window, a sum
  accumulating into a tensor) the region is zero-filled explicitly; only the
  ragged tail of split falls back to zeroing the whole buffer once.  Each
  lowering reports whether it wrote its whole window, which decides that.

Out-of-bounds reads are zero in ATL; an access is emitted unchecked only
when the prover (prover.py) shows it in bounds from loop bounds and guards.

`Lowering` holds the state of one kernel's lowering (fresh names, loop
counters, the element type) and dispatches on terms.  It holds, and calls,
three components: the vector loop shaping (codegen/vloops.py), the support
analysis (codegen/support.py) and the target's rules, an implementation of
codegen/hooks.py's `TargetHooks` (codegen/vector.py's `VectorRules` by
default; targets/gemmini supplies its own).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from verisched.codegen import generation, lets, reshape, scalar, timeloop
from verisched.codegen.cexpr import ctext, flat_text, ge_text, ix, pred
from verisched.codegen.errors import LowerError, NotNormalError
from verisched.codegen.hooks import LetBody, TargetHooks
from verisched.codegen.ir import (
    CTYPES,
    WRAP_OPS,
    Buf,
    Ctx,
    Dest,
    Emitter,
    Names,
    RegBuf,
    StoreSlot,
)
from verisched.codegen.isa import VectorISA
from verisched.codegen.normal import show
from verisched.codegen.parallel import FALLBACK, FALLBACK_PRAGMA
from verisched.codegen.poly import Poly
from verisched.codegen.scan import has_let
from verisched.codegen.shapes import Shape, shape_of
from verisched.codegen.support import SupportAnalysis
from verisched.codegen.vector import VectorRules
from verisched.codegen.vloops import LoopShaping
from verisched.pybridge.terms import (
    Expr,
    Gen,
    Get,
    Guard,
    Instr,
    Iter,
    Let,
    Lit,
    Mem,
    SBin,
    Sum,
    TAdd,
    Tuple,
    Var,
    Zero,
)

# Unroll factor for a reduction accumulating into register vectors (codegen/vector.py).
REDUCTION_UNROLL = 4


class Lowering:
    """One kernel's lowering: state, dispatch on terms, loops, stores and zeros."""

    def __init__(self, dtype: str, parallel: bool, isa: VectorISA | None = None,
                 hooks: Callable[[Lowering], TargetHooks] | None = None) -> None:
        if dtype not in CTYPES:
            raise LowerError(f"lowering: unsupported element type {dtype!r} "
                             f"({', '.join(CTYPES)})")
        self.dtype = dtype
        # C element type of the buffers being declared (a target may change it per let).
        self.ctype = CTYPES[dtype]
        self.zero = {"float32": "0.0f", "float64": "0.0"}.get(dtype, "0")
        # `+` and `*` of integer data as wrapping helpers (ir.WRAP_OPS); none for floats.
        self.wrap = WRAP_OPS.get(dtype, {})
        # Outputs narrower than the computing type (int8 kernels' outputs, computed in
        # int32): a store to one converts explicitly (set by lower.py).
        self.narrow: dict[str, str] = {}
        self.parallel = parallel
        self.names = Names()
        self.parallel_loops = 0
        self.fallback_loops = 0
        self.status = ""  # the C name of the kernel's status (lower.status_lines)
        # Declarations the kernel's prologue computes once: the element counts of let
        # buffers whose extents are sizes only (codegen/lets.py), by count expression.
        self.hoisted: dict[str, str] = {}
        # C names of the loops that come from generations (openmp.py, rules 1 and 5).
        self.gen_loops: set[str] = set()
        self.isa = isa
        # `store_at` annotations: let buffer -> the ATL loop its storage is placed in
        # (codegen/lets.py); `placed` the buffers actually placed so.
        self.store_at: dict[str, str] = {}
        self.placed: set[str] = set()
        # Set by lower(): the program uses instructions or register memories.
        self.vector_program = False
        self.loops = LoopShaping(self)
        self.support = SupportAnalysis(self)
        self.vector = VectorRules(self, isa)
        self.target: TargetHooks = hooks(self) if hooks is not None else self.vector
        if isa is not None and dtype != isa.dtype:
            raise LowerError(f"lowering: instruction library {isa.name} has {isa.dtype} lanes, "
                             f"not {dtype}")

    @property
    def error_flag(self) -> str:
        """What a failed allocation sets to 1: the kernel's own status (lower.status_lines),
        which outlined parallel bodies write through."""
        return f"{self.status}[0]"

    def emit_hoisted(self, out: Emitter) -> None:
        """Declare the prologue's hoisted element counts (every target's kernel calls
        this right after clearing its error flag, before its body)."""
        for count, cname in self.hoisted.items():
            out.line(f"const int64_t {cname} = {count};")

    # -- shapes ----------------------------------------------------------------

    def shape(self, e: Expr, ctx: Ctx) -> Shape | None:
        """Extents of `e` in C names (codegen/shapes.py); None for a bare zero."""
        return shape_of(e, ctx, self.target.meaning)

    # -- loops ----------------------------------------------------------------
    @contextmanager
    def loop(self, atl_var: str, lo: Poly, hi: Poly, ctx: Ctx, out: Emitter,
             facts: list[Poly], parallel: bool | str = False) -> Iterator[tuple[Ctx, Poly]]:
        """A C loop over `atl_var` in [lo, hi) (facts over `@` hold inside); `parallel`
        True or FALLBACK marks it for OpenMP (openmp.py)."""
        v = self.names.fresh(atl_var)
        child = ctx.child()
        if parallel:
            child.par_depth = ctx.par_depth + 1
        child.idx_names[atl_var] = v
        child.facts.bind(v)
        pv = Poly.var(v)
        for f in [pv - lo, hi - 1 - pv, *facts]:
            child.facts.add(f.subst("@", pv))
        if parallel == FALLBACK:
            # Runs in parallel only when the enclosing parallel loop did not (rule 6).
            out.line(FALLBACK_PRAGMA)
            self.parallel_loops += 1
            self.fallback_loops += 1
            child.fallback_ok = False
        elif parallel:
            out.line("#pragma omp parallel for schedule(static)")
            self.parallel_loops += 1
            child.in_parallel = True
            child.fallback_ok = True
        child.loop = (v, ctext(hi, ctx))
        child.loops = (*ctx.loops, (v, lo, hi))
        with out.block(f"for (int {v} = {ctext(lo, ctx)}; {v} < {child.loop[1]}; ++{v})"):
            slot = None
            if atl_var in self.store_at.values():
                slot = StoreSlot(atl_var, frozenset(child.idx_names.values()), child.par_depth)
                child.slots[atl_var] = slot
            start = len(out.lines)
            yield child, pv
            if slot is not None and slot.allocs:
                ind = "  " * out.level
                out.lines[start:start] = [ind + x for x in slot.allocs]
                for x in slot.frees:
                    out.line(x)

    # -- stores ---------------------------------------------------------------
    def binop(self, op: str, x: str, y: str) -> str:
        """`x op y` for data `+` and `*`: wrapping helpers for integer kernels."""
        return f"{self.wrap[op]}({x}, {y})" if op in self.wrap else f"({x} {op} {y})"

    def store(self, dest: Dest, mode: str, value: str, ctx: Ctx, out: Emitter) -> None:
        """`lhs mode value;` at the destination's (fully applied) index, under its
        store conditions."""
        bi, conds = dest.fn([])
        if dest.buf is None:
            lhs = dest.lvalue
        elif isinstance(dest.buf, RegBuf):
            # One lane of a register vector (GCC's vector subscript).
            var = dest.buf.elem(bi[:-1], "store")
            if var is None:
                return
            lhs = f"{var}[{ctext(bi[-1], ctx)}]"
        else:
            lhs = f"{dest.buf.cname}[{flat_text(bi, dest.buf.dims, ctx)}]"
        cond = ge_text(conds, ctx)
        if mode == "+=" and self.wrap:  # an integer `+=` wraps (ir.WRAP_OPS)
            mode, value = "=", self.binop("+", lhs, value)
        narrow = self.narrow.get(dest.buf.cname) if isinstance(dest.buf, Buf) else None
        if narrow is not None:  # wraps on the store (ROUNDING["int8"]); mode is "=" here
            value = f"({narrow})({value})"
        stmt = f"{lhs} {mode} {value};"
        if cond:
            out.line(f"if ({cond}) {stmt}")
        else:
            out.line(stmt)

    def zero_fill(self, dest: Dest, ctx: Ctx, out: Emitter) -> None:
        """Write zeros over every index in `dest`'s windows (the semantics' zeros)."""
        if self.target.zero_fill(dest, ctx, out):
            return
        for a, b in dest.windows:
            if ctx.facts.le(b, a):
                return
        self._zero_rec(dest, ctx, out)

    def _zero_rec(self, dest: Dest, ctx: Ctx, out: Emitter) -> None:
        if not dest.windows:
            self.store(dest, "=", self.zero, ctx, out)
            return
        a, b = dest.windows[0]
        if isinstance(dest.buf, RegBuf) and self.isa is not None:
            if len(dest.windows) == 1:
                lane = Poly.var("vs_lane")
                bi, conds = dest.fn([lane])
                if (bi[-1] == lane and not conds and ctx.facts.ge0(-a)
                        and ctx.facts.ge0(b - self.isa.lanes)):
                    var = dest.buf.elem(bi[:-1], "zero fill")
                    if var is not None:
                        out.line(f"{var} = {self.isa.setzero};")
                    return
            else:
                # Register dimensions: unrolled, so every register index is a constant.
                dim = len(dest.buf.dims) - len(dest.windows)
                bounds = (Poly.const(0), dest.buf.dims[dim])
                for c2, pv in self.loops.iterate("z", a, b, ctx, out, [], False, True, bounds):
                    self._zero_rec(dest.peel(pv), c2, out)
                return
        with self.loop("z", a, b, ctx, out, []) as (c2, pv):
            self._zero_rec(dest.peel(pv), c2, out)

    # -- tensor-level lowering -------------------------------------------------
    def lower(self, e: Expr, dest: Dest, mode: str, ctx: Ctx, out: Emitter) -> bool:
        """Emit code storing `e` into `dest`; True if every windowed index was written
        (by `=`), so the caller need not zero it."""
        handled = self.target.lower_term(e, dest, mode, ctx, out)
        if handled is not None:
            return handled
        if not dest.windows:
            if isinstance(e, Iter):
                raise LowerError("lowering: a time iteration over a scalar state (rank 0) "
                                 "is not supported; make the state a tensor of extent 1")
            return scalar.lower_store(self, e, dest, mode, ctx, out)
        if isinstance(e, Instr):
            raise LowerError(f"lowering: the target has no rule for instruction {e.name}: "
                             f"{show(e)}")
        if isinstance(e, Mem):
            return self.lower(self.strip_mem(e), dest, mode, ctx, out)
        if isinstance(e, Gen):
            return generation.lower_gen(self, e, dest, mode, ctx, out)
        if isinstance(e, Sum):
            return self.lower_sum(e, dest, mode, ctx, out)
        if isinstance(e, Guard):
            return self.lower_guard(e, dest, mode, ctx, out)
        if isinstance(e, Let):
            return self.with_let(e, ctx, out, lambda c2, o: self.lower(e.body, dest, mode, c2, o))
        if isinstance(e, Iter):
            return timeloop.lower_iter(self, e, dest, mode, ctx, out)
        if isinstance(e, Zero):
            if mode == "=":
                self.zero_fill(dest, ctx, out)
            return True
        if isinstance(e, TAdd):
            return self.lower_tadd(e, dest, mode, ctx, out)
        if isinstance(e, (Var, Get, SBin, Lit)):
            raise NotNormalError(f"lowering: tensor-valued leaf: {show(e)}")
        return reshape.lower_reshape(self, e, dest, mode, ctx, out)

    def lower_sum(self, e: Sum, dest: Dest, mode: str, ctx: Ctx, out: Emitter) -> bool:
        """A tensor SUM: zero the window (for `=`), then accumulate every iteration; in
        vector code the iterations whose lanes are all in bounds first, in a loop of
        their own, then the masked tail (vloops.py, mask_split; decision #150)."""
        sub = Emitter()
        lo, hi = ix(e.lo, ctx), ix(e.hi, ctx)
        hi, clip_facts = self.support.clipped_hi(e, hi, ctx)
        if mode == "=":
            self.zero_fill(dest, ctx, out)
        unroll = self.loops.needs_unroll(e.var, e.body, None, ctx)
        ranges: list[tuple[Poly, Poly, list[Poly]]] = [(lo, hi, [])]
        # Not where the body binds a buffer: each part would lower (and allocate) it
        # again, SGEMM's packs at a fixed kc twice over to lift a `min` off its depth.
        split = (None if unroll or has_let(e.body) else
                 self.loops.mask_split(e, dest, mode, ctx, out, lo, lo, hi, clip_facts,
                                       head_ok=False))
        if split is not None and split[2] is not None:
            # Iterations with every lane in bounds, then the masked tail (vloops.py).
            mid, extra = split[2], split[3]
            ranges = [(lo, mid, extra), (mid, hi, [])]
        for rlo, rhi, more in ranges:
            if isinstance(dest.buf, RegBuf) and not unroll:
                # The micro-kernel's reduction: a few iterations per loop branch.
                sub.line(f"#pragma GCC unroll {REDUCTION_UNROLL}")
            for c2, _ in self.loops.iterate(e.var, rlo, rhi, ctx, sub, clip_facts + more,
                                            False, unroll):
                c2.in_sum = True
                self.lower(e.body, dest, "+=", c2, sub)
        out.extend(sub)
        return True

    def lower_sum_tuple(self, e: Sum, dests: list[Dest], ctx: Ctx, out: Emitter) -> None:
        """Several outputs swept by one loop (`fuse_outputs`): every iteration of the
        SUM adds each item of its tuple body into that output's destination."""
        assert isinstance(e.body, Tuple)
        lo, hi = ix(e.lo, ctx), ix(e.hi, ctx)
        sub = Emitter()
        for c2, _ in self.loops.iterate(e.var, lo, hi, ctx, sub, [], False, False):
            c2.in_sum = True
            for item, dest in zip(e.body.items, dests, strict=True):
                self.lower(item, dest, "+=", c2, sub)
        out.extend(sub)

    def lower_guard(self, e: Guard, dest: Dest, mode: str, ctx: Ctx, out: Emitter) -> bool:
        """A tensor guard: `if`, with the semantics' zeros in the `else` (for `=`)."""
        cond, facts = pred(e.pred, ctx)
        if cond is None:
            return self.lower(e.body, dest, mode, ctx, out)
        if cond == "0":
            if mode == "=":
                self.zero_fill(dest, ctx, out)
            return True
        self.loops.log_needs(facts, ctx)  # a loop may be split where the guard holds
        c2 = ctx.child()
        for f in facts:
            c2.facts.add(f)
        with out.block(f"if ({cond})"):
            cov = self.lower(e.body, dest, mode, c2, out)
        if mode == "=":
            with out.block("else"):
                self.zero_fill(dest, ctx, out)
        return cov

    def lower_tadd(self, e: TAdd, dest: Dest, mode: str, ctx: Ctx, out: Emitter) -> bool:
        """Tensor `<+>` (Fig. 2's ⊕ at tensor rank): store the left operand, then
        accumulate the right one into the same destination (e.g. C's rows, then a
        sum of products into them).  If the left operand does not write its whole
        window, the window is zeroed first and both accumulate."""
        if mode == "+=":
            self.lower(e.left, dest, "+=", ctx, out)
            self.lower(e.right, dest, "+=", ctx, out)
            return True
        sub = Emitter()
        saved = (self.parallel_loops, set(self.gen_loops), self.fallback_loops)
        if self.lower(e.left, dest, "=", ctx, sub):
            out.extend(sub)
        else:
            self.parallel_loops, self.gen_loops, self.fallback_loops = saved
            self.zero_fill(dest, ctx, out)
            self.lower(e.left, dest, "+=", ctx, out)
        self.lower(e.right, dest, "+=", ctx, out)
        return True

    def strip_mem(self, e: Mem) -> Expr:
        """A memory marker away from a let's value: only DRAM (the default) means nothing
        to the lowering; a special memory must name a buffer (Exo thesis Sec. 3.2.1)."""
        if e.memory != "DRAM":
            raise LowerError(f"lowering: in_mem {e.memory} must wrap the value of a let (a "
                             f"buffer placed in that memory), found: {show(e)}")
        return e.body

    # -- lets and scalars (codegen/lets.py, codegen/scalar.py) -------------------
    def with_let(self, e: Let, ctx: Ctx, out: Emitter, body: LetBody) -> bool:
        """Allocate `e.var`, fill it with `e.value`, run `body` in its scope, free it."""
        return lets.with_let(self, e, ctx, out, body)

    def scalar(self, e: Expr, ctx: Ctx, out: Emitter) -> str:
        """C expression for scalar `e`; statements it needs (sums, lets) go to `out`."""
        value = self.target.scalar_term(e, ctx, out)
        if value is not None:
            return value
        return scalar.scalar(self, e, ctx, out)
