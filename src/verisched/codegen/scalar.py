"""Scalars: the store at the bottom of a destination, and C expressions (Fig. 3).

When a destination has no window left, the term is a scalar: its C
expression is computed (sums into accumulators, guards into conditionals,
lets into buffers in scope) and stored with the destination's mode.  An
access is a buffer read, checked against the buffer's extents wherever the
prover cannot show it in bounds (ATL reads zero out of bounds, Fig. 2).
Scalar division and max follow Coq's definitions (x / 0 = 0, Rmax).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from verisched.codegen.cexpr import flat_text, ge_text, ix, pred
from verisched.codegen.errors import LowerError, NotNormalError
from verisched.codegen.ir import DIV_MAX, Buf, Ctx, Dest, Emitter, RegBuf, ScalarVar
from verisched.codegen.normal import access_base, show
from verisched.codegen.poly import Poly
from verisched.pybridge.literals import LiteralError, literal_c
from verisched.pybridge.terms import Expr, Get, Guard, Let, Lit, Mem, SBin, Sum, TAdd, Var, Zero

if TYPE_CHECKING:
    from verisched.codegen.core import Lowering


def lower_store(lw: Lowering, e: Expr, dest: Dest, mode: str, ctx: Ctx, out: Emitter) -> bool:
    """Store scalar `e` at `dest` (no window left): a guard accumulated becomes an `if`
    around the store, a let a buffer around it."""
    if mode == "+=" and isinstance(e, Zero):
        return True
    if mode == "+=" and isinstance(e, Guard):
        cond, facts = pred(e.pred, ctx)
        if cond == "0":
            return True
        if cond is not None:
            c2 = ctx.child()
            for f in facts:
                c2.facts.add(f)
            with out.block(f"if ({cond})"):
                lower_store(lw, e.body, dest, mode, c2, out)
            return True
    if isinstance(e, Let):
        return lw.with_let(e, ctx, out,
                           lambda c2, o: lower_store(lw, e.body, dest, mode, c2, o))
    sub = Emitter()
    val = lw.scalar(e, ctx, sub)
    out.extend(sub)
    lw.store(dest, mode, val, ctx, out)
    return True


def scalar(lw: Lowering, e: Expr, ctx: Ctx, out: Emitter) -> str:
    """C expression for scalar `e`; statements it needs (sums, lets) go to `out`."""
    if isinstance(e, Zero):
        return lw.zero
    if isinstance(e, Lit):
        try:  # rounded once, to nearest, into the kernel's type (pybridge/literals.py)
            # An int8 kernel computes in int32 (ir.CTYPES): its constants are int32.
            return literal_c(e.num, e.den, "int32" if lw.dtype == "int8" else lw.dtype)
        except LiteralError as exc:
            raise LowerError(f"lowering: {exc}") from None
    if isinstance(e, Var):
        t = ctx.tensors.get(e.name)
        if isinstance(t, ScalarVar):
            return t.cexpr
        raise NotNormalError(f"lowering: tensor-valued leaf: {show(e)}")
    if isinstance(e, Get):
        return access(lw, e, ctx)
    if isinstance(e, (SBin, TAdd)):
        op = "+" if isinstance(e, TAdd) else e.op
        x = lw.scalar(e.left, ctx, out)
        y = lw.scalar(e.right, ctx, out)
        if op == "/":
            # Coq's division: Z.div for integers, and x / 0 = 0 for reals (Rinv 0 = 0).
            return f"{DIV_MAX[lw.dtype][0]}({x}, {y})"
        if op == "max":  # smax (Rmax / Z.max)
            return f"{DIV_MAX[lw.dtype][1]}({x}, {y})"
        return lw.binop(op, x, y)
    if isinstance(e, Guard):
        cond, facts = pred(e.pred, ctx)
        if cond == "0":
            return lw.zero
        if cond is not None:
            lw.loops.log_needs(facts, ctx)  # a loop may be split where it holds (vector.py)
        c2 = ctx.child()
        for f in facts:
            c2.facts.add(f)
        if cond is None:
            return lw.scalar(e.body, c2, out)
        sub = Emitter()
        val = lw.scalar(e.body, c2, sub)
        if not sub.lines:
            return f"(({cond}) ? {val} : {lw.zero})"
        t = lw.names.fresh("t")
        out.line(f"{lw.ctype} {t} = {lw.zero};")
        with out.block(f"if ({cond})"):
            out.extend(sub)
            out.line(f"{t} = {val};")
        return t
    if isinstance(e, Sum):
        acc = lw.names.fresh("acc")
        out.line(f"{lw.ctype} {acc} = {lw.zero};")
        unroll = lw.loops.needs_unroll(e.var, e.body, None, ctx)
        hi, clip_facts = lw.support.clipped_hi(e, ix(e.hi, ctx), ctx)
        for c2, _ in lw.loops.iterate(e.var, ix(e.lo, ctx), hi, ctx, out, clip_facts, False,
                                      unroll):
            c2.in_sum = True
            val = lw.scalar(e.body, c2, out)
            out.line(f"{acc} = {lw.binop('+', acc, val)};" if lw.wrap else f"{acc} += {val};")
        return acc
    if isinstance(e, Mem):
        return lw.scalar(lw.strip_mem(e), ctx, out)
    if isinstance(e, Let):
        t = lw.names.fresh("t")
        out.line(f"{lw.ctype} {t} = {lw.zero};")

        def body(c2: Ctx, o: Emitter) -> bool:
            o.line(f"{t} = {lw.scalar(e.body, c2, o)};")
            return True

        lw.with_let(e, ctx, out, body)
        return t
    raise NotNormalError(f"lowering: tensor-valued term in scalar position: {show(e)}")


def access(lw: Lowering, e: Get, ctx: Ctx) -> str:
    """A read of a buffer element, zero where it may be out of bounds."""
    base, idxs = access_base(e)
    if not isinstance(base, Var):
        raise NotNormalError(f"lowering: access into a non-variable: {show(e)}")
    t = ctx.tensors.get(base.name)
    if isinstance(t, RegBuf) and len(t.dims) == len(idxs):
        return lw.vector.reg_access(e, t, idxs, ctx)
    if not isinstance(t, Buf) or len(t.dims) != len(idxs):
        raise NotNormalError(f"lowering: access of the wrong rank: {show(e)}")
    polys = [ix(i, ctx) for i in idxs]
    checks: list[Poly] = []
    for p, d in zip(polys, t.dims, strict=False):
        checks += [p, d - 1 - p]
    ref = f"{t.cname}[{flat_text(polys, t.dims, ctx)}]"
    lw.vector.note_read(t, polys)
    # In bounds first: almost every access is, and a refused goal costs the prover a
    # whole search, so the out-of-bounds question is asked only of the bounds not
    # proved (a proved bound cannot also be provably violated, short of a context
    # that is itself contradictory, i.e. dead code).
    unproved = [f for f in checks if not ctx.facts.ge0(f)]
    if not unproved:
        return ref
    if any(ctx.facts.ge0(-f - 1) for f in unproved):
        return lw.zero  # provably out of bounds: zero (Fig. 2)
    cond = ge_text(unproved, ctx)
    # Out of bounds reads are zero (Fig. 2); C must not perform them.
    return f"(({cond}) ? {ref} : {lw.zero})" if cond else ref
