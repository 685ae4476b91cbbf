"""A small decision procedure for `p >= 0` over the facts in scope.

The lowering asks it whether an access is in bounds (so no check is
emitted), whether a loop needs clipping, and whether `/` may be printed as
C's truncating division.  Facts are linear inequalities `f >= 0` from loop
bounds, guards (the paper's Sec. 5.2 puts the guard around the store, so
inside it the predicate holds) and size parameters (>= 1, checked before
every call).  It eliminates one variable at a time, innermost binder first,
by the usual positive combination `|d| p - |c| f` (Fourier-Motzkin restricted
to one path); a monomial that is a product of size parameters is at least 1.
Failure only costs a runtime check, never correctness.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from verisched.codegen.poly import Poly

_MAX_DEPTH = 8


@dataclass
class Facts:
    """Inequalities `f >= 0` in scope, with the binding depth of each variable."""

    facts: list[Poly] = field(default_factory=list)
    depth: dict[str, int] = field(default_factory=dict)
    sizes: frozenset[str] = frozenset()

    def child(self) -> Facts:
        return Facts(list(self.facts), dict(self.depth), self.sizes)

    def bind(self, name: str) -> None:
        self.depth[name] = len(self.depth) + 1

    def add(self, f: Poly) -> None:
        if f.as_const() is None:
            self.facts.append(f)

    def ge0(self, p: Poly) -> bool:
        """Is `p >= 0` provable?"""
        return _prove(p, self, _MAX_DEPTH)

    def le(self, a: Poly, b: Poly) -> bool:
        return self.ge0(b - a)

    def lt(self, a: Poly, b: Poly) -> bool:
        return self.ge0(b - a - 1)


def _linear_coeff(p: Poly, v: str) -> int | None:
    """Coefficient of `v` if it occurs in `p` only linearly and outside atoms, else None."""
    coeff = 0
    for m, c in p.terms:
        names = [a.name if a.op == "var" else None for a in m]
        if v in names:
            if len(m) != 1:
                return None
            coeff += c
        elif any(a.op != "var" and v in Poly.atom(a).vars() for a in m):
            return None
    return coeff


def _sizes_only_bound(p: Poly, sizes: frozenset[str]) -> bool:
    """With every size >= 1: every non-constant monomial is a product of sizes with a
    positive coefficient, so `p >= constant + sum of coefficients`."""
    low = p.constant()
    for m, c in p.terms:
        if m == ():
            continue
        if c < 0 or any(a.op != "var" or a.name not in sizes for a in m):
            return False
        low += c
    return low >= 0


def _prove(p: Poly, ctx: Facts, depth: int) -> bool:
    c = p.as_const()
    if c is not None:
        return c >= 0
    if _sizes_only_bound(p, ctx.sizes):
        return True
    if depth == 0:
        return False
    candidates = sorted(
        (v for v in p.vars() if _linear_coeff(p, v)),
        key=lambda v: -ctx.depth.get(v, 0),
    )
    for v in candidates:
        cv = _linear_coeff(p, v)
        assert cv
        for f in ctx.facts:
            dv = _linear_coeff(f, v)
            if not dv or (dv > 0) != (cv > 0):
                continue
            q = p.scale(abs(dv)) - f.scale(abs(cv))
            if _prove(q, ctx, depth - 1):
                return True
    return False
