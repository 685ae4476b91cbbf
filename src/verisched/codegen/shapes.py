"""Extents of a term in C names: how big a let's buffer and the output are.

The same computation as terms.shape_of, but over the lowering's renamed
variables and with the prover's min/max simplification, so the extents are
C-evaluable polynomials.  None stands for a bare zero (no extent of its
own); an instruction call has the extents of its specification, which the
target gives (`meaning`, codegen/hooks.py).
"""

from __future__ import annotations

from collections.abc import Callable

from verisched.codegen.cexpr import ix, smax
from verisched.codegen.errors import LowerError
from verisched.codegen.ir import Buf, Ctx, RegBuf, ScalarVar
from verisched.codegen.normal import show
from verisched.codegen.poly import Poly, binop
from verisched.pybridge.terms import (
    Concat,
    Expr,
    Flatten,
    Gen,
    Get,
    Guard,
    Instr,
    Iter,
    Let,
    Lit,
    Mem,
    PadL,
    PadR,
    SBin,
    Split,
    Sum,
    TAdd,
    Transpose,
    TruncL,
    TruncR,
    Var,
    Zero,
)

Shape = tuple[Poly, ...]


def shape_of(e: Expr, ctx: Ctx, meaning: Callable[[Instr], Expr], zero: Shape | None = None
             ) -> Shape | None:
    """Extents of `e` in C names (terms.shape_of, over renamed variables).  `zero`: the
    extents of a bare zero (None: it has none, it takes its context's)."""

    def shape(e: Expr, ctx: Ctx) -> Shape | None:
        if isinstance(e, Var):
            t = ctx.tensors.get(e.name)
            return t.dims if isinstance(t, (Buf, RegBuf)) else ()
        if isinstance(e, Zero):
            return zero
        if isinstance(e, Mem):
            return shape(e.body, ctx)
        if isinstance(e, Instr):
            return shape(meaning(e), ctx)
        if isinstance(e, Gen):
            inner = shape(e.body, _bind_dummy(e.var, ctx))
            if inner is None:
                return None
            return (ix(e.hi, ctx) - ix(e.lo, ctx), *inner)
        if isinstance(e, Sum):
            return shape(e.body, _bind_dummy(e.var, ctx))
        if isinstance(e, Guard):
            return shape(e.body, ctx)
        if isinstance(e, Iter):
            return shape(e.init, ctx)  # the lowering checks the step keeps it (timeloop.py)
        if isinstance(e, Let):
            c2 = ctx.child()
            vs = shape(e.value, ctx)
            c2.tensors[e.var] = Buf("?", vs) if vs else ScalarVar("?")
            return shape(e.body, c2)
        if isinstance(e, Get):
            s = shape(e.tensor, ctx)
            return None if s is None else s[1:]
        if isinstance(e, TAdd):
            s = shape(e.left, ctx)
            r = shape(e.right, ctx)
            if s is None or r is None or len(s) != len(r):
                return s if s is not None else r
            # Extents may differ: the sum is the longer one, zero-padded (Core.v).
            return tuple(smax(a, b, ctx) for a, b in zip(s, r, strict=True))
        if isinstance(e, (SBin, Lit)):
            return ()
        if isinstance(e, Concat):
            s1, s2 = shape(e.left, ctx), shape(e.right, ctx)
            s = s1 or s2
            if not s:
                return None
            rest = s[1:]
            if s1 and s2 and len(s1) == len(s2):
                # Each row keeps its operand's data (Reshape/Defs.v: concat is a <+> of the
                # two, each zero outside its extents): the inner extents are the larger.
                rest = tuple(smax(a, b, ctx) for a, b in zip(s1[1:], s2[1:], strict=True))
            return (ix(e.n1, ctx) + ix(e.n2, ctx), *rest)
        s = shape(e.body, ctx)  # type: ignore[attr-defined]
        if s is None:
            return None
        if isinstance(e, Transpose):
            return (ix(e.m, ctx), ix(e.n, ctx), *s[2:])
        if isinstance(e, Flatten):
            return (ix(e.n, ctx) * ix(e.m, ctx), *s[2:])
        if isinstance(e, Split):
            k, n = ix(e.k, ctx), ix(e.n, ctx)
            return (binop("cdiv", n, k), k, *s[1:])
        if isinstance(e, (PadR, PadL)):
            return (ix(e.n, ctx) + ix(e.k, ctx), *s[1:])
        if isinstance(e, (TruncR, TruncL)):
            return (ix(e.k, ctx), *s[1:])
        raise LowerError(f"lowering: not an ATL term: {show(e)}")

    return shape(e, ctx)


def _bind_dummy(var: str, ctx: Ctx) -> Ctx:
    c2 = ctx.child()
    c2.idx_names[var] = var
    return c2
