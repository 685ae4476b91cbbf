"""Where a packed buffer can be nonzero, and reductions clipped to it.

A derivation that tiles a reduction (`sum_tile`, ATL paper Sec. 6.3) and packs
its operands (`name_buffer` + let lifting, Sec. 8.3) leaves the guards of the
ragged last block on the packed copies: `tlet Bp := GEN ko GEN kk ... |[ ko *
kc + kk <? K ]| B _[ ko * kc + kk ] ...`.  The micro-kernel then sums over the
whole block `SUM [ kk < kc ]`, reading zeros past K: correct (0 * x = 0, Fig.
2's zero out of range), but for K = kc + 1 it does twice the work.

This module records, for each let-bound buffer whose value is a nest of
generations around a guard, the guard's conditions over the generation
indices (its *support*: outside them the element is zero).  A SUM whose every
leaf is a product with a factor read from such a buffer at an index where the
support forces `s <= r / a` for the summation variable s stops at that bound:
the skipped iterations add exact zeros.  (Exo's SGEMM reaches the same by
specialising edge micro-kernels, thesis Sec. 7.2.)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from verisched.codegen.cexpr import ix, smin
from verisched.codegen.ir import Ctx
from verisched.codegen.normal import access_base
from verisched.codegen.poly import Poly, binop
from verisched.codegen.vloops import var_coeff
from verisched.pybridge.instrs import spec_of
from verisched.pybridge.terms import (
    Expr,
    Gen,
    Get,
    Guard,
    IConst,
    Instr,
    Mem,
    PAnd,
    PCmp,
    Pred,
    SBin,
    Sum,
    Var,
    is_idx,
)

if TYPE_CHECKING:
    from verisched.codegen.core import Lowering


def _conjuncts(p: Pred) -> list[PCmp]:
    if isinstance(p, PAnd):
        return _conjuncts(p.left) + _conjuncts(p.right)
    return [p] if isinstance(p, PCmp) and p.op in ("<", "<=") else []


class SupportAnalysis:
    """Held by the core lowering: the support of let values (`support_of`, when a
    buffer is allocated) and clipped reduction bounds (`clipped_hi`, when a SUM
    opens its loop)."""

    def __init__(self, core: Lowering) -> None:
        self.core = core

    def support_of(self, value: Expr, ctx: Ctx) -> tuple[Poly, ...]:
        """Conditions `f >= 0` over placeholders `#0, #1, ...` (the buffer's indices)
        outside which the let value `value` is zero; () if none are known."""
        while isinstance(value, Mem):
            value = value.body
        binders: list[str] = []
        e = value
        while isinstance(e, Gen) and e.lo == IConst(0):
            binders.append(e.var)
            e = e.body
        if not binders or not isinstance(e, Guard):
            return ()
        c2 = ctx.child()
        for k, v in enumerate(binders):
            c2.idx_names[v] = f"#{k}"
        out = []
        for cmp in _conjuncts(e.pred):
            try:
                left, right = ix(cmp.left, c2), ix(cmp.right, c2)
            except Exception:  # noqa: BLE001 - an index we cannot translate: no support
                continue
            out.append(right - left - (1 if cmp.op == "<" else 0))
        return tuple(out)

    # -- clipping a reduction --------------------------------------------------
    def clipped_hi(self, e: Sum, hi: Poly, ctx: Ctx) -> tuple[Poly, list[Poly]]:
        """The SUM's upper bound, lowered to where its leaves can be nonzero (only in
        programs with instructions, so scalar programs lower as they always did),
        and the loop facts (over `@`) that stay true: below both bounds."""
        if not self.core.vector_program:
            return hi, []
        c2 = ctx.child()
        c2.idx_names[e.var] = "#sum"
        u = self.sum_clip(e, ctx, c2, "#sum")
        if u is None or ctx.facts.le(hi, u):
            return hi, []
        at = Poly.var("@")
        return smin(hi, u, ctx), [hi - 1 - at, u - 1 - at]

    def sum_clip(self, e: Sum, ctx: Ctx, c2: Ctx, sv: str) -> Poly | None:
        """An exclusive upper bound on the SUM's variable (C name `sv` in `c2`) past
        which every leaf of its body is zero, or None."""
        bounds = self._leaf_bounds(e.body, c2, sv, ctx)
        if not bounds:
            return None
        u = bounds[0]
        for b in bounds[1:]:
            if b == u:
                continue
            if ctx.facts.le(b, u):
                continue
            if ctx.facts.le(u, b):
                u = b
                continue
            u = binop("max", u, b)
        return u

    def _leaf_bounds(self, e: Expr, c2: Ctx, sv: str, outer: Ctx) -> list[Poly] | None:
        """One bound per leaf (None if some leaf has none)."""
        if isinstance(e, (Gen, Sum)):
            inner = c2.child()
            inner.idx_names[e.var] = f"{e.var}#inner"
            return self._leaf_bounds(e.body, inner, sv, outer)
        if isinstance(e, Guard):
            own = self._pred_bound(e.pred, c2, sv, outer)
            rest = self._leaf_bounds(e.body, c2, sv, outer)
            if own is not None:
                return [own]
            return rest
        b = self._factor_bound(e, c2, sv, outer)
        return None if b is None else [b]

    def _factor_bound(self, e: Expr, c2: Ctx, sv: str, outer: Ctx) -> Poly | None:
        """A bound past which the value `e` is zero."""
        if isinstance(e, SBin) and e.op == "*":
            cands = [b for b in (self._factor_bound(e.left, c2, sv, outer),
                                 self._factor_bound(e.right, c2, sv, outer)) if b is not None]
            return self._tightest(cands, outer)
        if isinstance(e, Instr):
            op = spec_of(e.name).name.split("_", 1)[1]
            if op == "mul":
                cands = [b for b in (self._factor_bound(a, c2, sv, outer) for a in e.args)
                         if b is not None]
                return self._tightest(cands, outer)
            if op in ("broadcast", "storeu"):
                return self._factor_bound(e.args[0], c2, sv, outer)  # type: ignore[arg-type]
            if op in ("loadu", "maskload"):
                t, o = e.args[0], e.args[1]
                if is_idx(t) or not is_idx(o):
                    return None
                return self._access_bound(t, c2, sv, outer)  # the lane index is not known
            return None
        if isinstance(e, Get):
            return self._access_bound(e, c2, sv, outer)
        return None

    def _access_bound(self, t: Expr, c2: Ctx, sv: str, outer: Ctx) -> Poly | None:
        base, idxs = access_base(t)
        if not isinstance(base, Var):
            return None
        buf = c2.tensors.get(base.name)
        support = getattr(buf, "support", ())
        if not support:
            return None
        try:
            polys = [ix(i, c2) for i in idxs]
        except Exception:  # noqa: BLE001
            return None
        cands = []
        for f in support:
            g = f
            unknown = False
            for v in f.vars():
                if v.startswith("#"):
                    k = int(v[1:])
                    if k >= len(polys):
                        unknown = True  # a lane index (loads): not a bound on s
                        break
                    g = g.subst(v, polys[k])
            if unknown:
                continue
            b = self._linear_bound(g, sv, outer)
            if b is not None:
                cands.append(b)
        return self._tightest(cands, outer)

    def _pred_bound(self, p: Pred, c2: Ctx, sv: str, outer: Ctx) -> Poly | None:
        cands = []
        for cmp in _conjuncts(p):
            try:
                left, right = ix(cmp.left, c2), ix(cmp.right, c2)
            except Exception:  # noqa: BLE001
                continue
            b = self._linear_bound(right - left - (1 if cmp.op == "<" else 0), sv, outer)
            if b is not None:
                cands.append(b)
        return self._tightest(cands, outer)

    def _linear_bound(self, g: Poly, sv: str, outer: Ctx) -> Poly | None:
        """From `g >= 0` with g = r - a*s (a > 0, r in scope outside the SUM): s < r/a + 1."""
        coeff = var_coeff(g, sv)
        if coeff is None or coeff >= 0:
            return None
        r = g - Poly.var(sv).scale(coeff)
        scope = set(outer.idx_names.values()) | set(outer.facts.sizes)
        if not r.vars() <= scope:
            return None
        return binop("/", r - coeff, Poly.const(-coeff))

    def _tightest(self, cands: list[Poly], outer: Ctx) -> Poly | None:
        if not cands:
            return None
        best = cands[0]
        for c in cands[1:]:
            best = smin(best, c, outer)
        return best
