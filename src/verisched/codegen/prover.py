"""A small decision procedure for `p >= 0` over the facts in scope.

The lowering asks it whether an access is in bounds (so no check is
emitted), whether a loop needs clipping, and whether `/` may be printed as
C's truncating division.  Facts are linear inequalities `f >= 0` from loop
bounds, guards (the paper's Sec. 5.2 puts the guard around the store, so
inside it the predicate holds) and size parameters (>= 1, checked before
every call).  It eliminates one atom at a time, innermost binder first, by
the usual positive combination `|d| p - |c| f` (Fourier-Motzkin restricted
to one path); a floor division `x / k` by a positive constant is an atom
with its two defining facts `0 <= x - k*(x/k) <= k-1` (tiling leaves
`(n - 2) / 64` in loop bounds); a product of size parameters is at least 1,
and a product of nonnegative atoms is nonnegative.
Failure only costs a runtime check, never correctness.

The search is memoised: within one `ge0` call, a goal already tried at a depth is
not tried again (the elimination reaches the same residual goal by many orders of
the same eliminations, which is exponential in the depth without it: a chained
matmul with both nests register-tiled and packed lowered for minutes; decisions #78).
A goal's answer depends only on the goal, the facts and the depth, and the facts are
fixed during one call.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache

from verisched.codegen.poly import Atom, Poly

_MAX_DEPTH = 8


@dataclass
class Facts:
    """Inequalities `f >= 0` in scope, with the binding depth of each variable."""

    facts: list[Poly] = field(default_factory=list)
    depth: dict[str, int] = field(default_factory=dict)
    sizes: frozenset[str] = frozenset()
    # Answers of `ge0` under these facts.  A goal proved stays proved when facts are
    # added (every path of the search is still there), so a child scope and an `add`
    # keep the proved goals and forget only the refused ones.  The lowering asks the
    # same bounds at every store of a tile: on a chained matmul with both nests
    # register-tiled, 26,000 calls for a few thousand distinct goals (decisions #84).
    known: dict[Poly, bool] = field(default_factory=dict, compare=False, repr=False)
    # For codegen/intrange.py: these facts as a key of its memo, and the expressions
    # bounded in this scope, by the facts' count (facts are only ever added to a
    # scope's list); not handed to a child.
    bounds: dict = field(default_factory=dict, compare=False, repr=False)

    def child(self) -> Facts:
        return Facts(list(self.facts), dict(self.depth), self.sizes, self._proved())

    def _proved(self) -> dict[Poly, bool]:
        return {p: True for p, v in self.known.items() if v}

    def bind(self, name: str) -> None:
        self.depth[name] = len(self.depth) + 1

    def add(self, f: Poly) -> None:
        if f.as_const() is None:
            # In the same integer form as a goal (`8*v - 1 >= 0` is `v - 1 >= 0`): the
            # elimination compares a fact with a goal tightened this way.
            self.facts.append(_tighten(f))
            if not all(self.known.values()):
                self.known = self._proved()

    def ge0(self, p: Poly) -> bool:
        """Is `p >= 0` provable?"""
        hit = self.known.get(p)
        if hit is None:
            hit = self.known[p] = _prove(p, self, _MAX_DEPTH, {})
        return hit

    def le(self, a: Poly, b: Poly) -> bool:
        return self.ge0(b - a)

    def lt(self, a: Poly, b: Poly) -> bool:
        return self.ge0(b - a - 1)


@lru_cache(maxsize=1 << 16)
def _occurs_inside(a: Atom, b: Atom) -> bool:
    """Does atom `a` occur in the arguments of atom `b`?"""
    for arg in b.args:
        for m, _ in arg.terms:
            for c in m:
                if c == a or _occurs_inside(a, c):
                    return True
    return False


@lru_cache(maxsize=1 << 18)
def linear_coeff(p: Poly, a: Atom) -> int | None:
    """Coefficient of atom `a` if it occurs in `p` only linearly, else None (or 0)."""
    coeff = 0
    for m, c in p.terms:
        if a in m:
            if len(m) != 1:
                return None
            coeff += c
        elif any(_occurs_inside(a, b) for b in m):
            return None
    return coeff


def _atoms(p: Poly) -> set[Atom]:
    return {m[0] for m, _ in p.terms if len(m) == 1}


def _div_facts(p: Poly, ctx: Facts, depth: int, memo: _Memo) -> list[Poly]:
    """Defining inequalities of the floor divisions by positive constants in `p`, and
    `x / k >= 0` when `x >= 0` is provable (floor division is monotone); for a divisor
    that is a product of sizes (at least 1), the same facts where `p` is nonlinear and
    `x / y >= 0` when `x >= 0` is provable."""
    out = []
    for m, _ in p.terms:
        for a in m:
            if a.op == "/" and (k := a.args[1].as_const()) is not None and k > 0:
                x, q = a.args[0], Poly.atom(a)
                out += [x - q.scale(k), q.scale(k) + (k - 1) - x]
                if depth > 0 and _prove(x, ctx, depth - 1, memo):
                    out.append(q)
            elif a.op == "/" and _sizes_only_bound(a.args[1] - 1, ctx.sizes):
                # By a run-time block size (a product of sizes, so at least 1): the same
                # facts, nonlinear; a goal equal to one of them up to a constant is then
                # proved directly (cdiv(M, 6 mcr) * 6 mcr >= M: row blocks cover M).
                # And `x / y >= 0` when `x >= 0` is provable (a strided conv's output
                # height (H + 2 pd - KH) / st + 1 >= 1).
                x, y, q = a.args[0], a.args[1], Poly.atom(a)
                if any(len(m2) >= 2 for m2, _ in p.terms):
                    out += [x - y * q, y * q + y - 1 - x]
                if depth > 0 and _prove(x, ctx, depth - 1, memo):
                    out.append(q)
    return out


def _tighten(p: Poly) -> Poly:
    """`g*r + c >= 0` iff `r + floor(c/g) >= 0` over the integers (g the gcd of the
    non-constant coefficients): the rounding Fourier-Motzkin over Q misses."""
    g = 0
    for m, c in p.terms:
        if m != ():
            g = math.gcd(g, abs(c))
    if g <= 1:
        return p
    c = p.constant()
    return Poly._make({m: v // g for m, v in p.terms if m != ()}) + (c // g)


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


def _drop_nonneg_products(p: Poly, ctx: Facts, depth: int, memo: _Memo) -> Poly | None:
    """`p` without its products of provably nonnegative atoms with positive
    coefficients (`6*io*mcr` with a loop variable io >= 0 and a size mcr >= 1), or
    None if it has none: `p >= rest` then, so `rest >= 0` suffices.  Elimination
    treats only linear atoms, so without this a run-time block size leaves a check
    on every store of a tile (`if (6*im + 6*io*mcr >= 0)`) and on every element of
    a copy, which then does not vectorise."""
    kept: dict = {}
    dropped = False
    for m, c in p.terms:
        if len(m) >= 2 and c > 0 and all(
                (a.op == "var" and a.name in ctx.sizes) or _prove(Poly.atom(a), ctx, depth, memo)
                for a in m):
            dropped = True
        else:
            kept[m] = c
    return Poly._make(kept) if dropped else None


def _rank(a: Atom, ctx: Facts) -> float:
    """Elimination order: innermost binder first; a division just before its variables."""
    if a.op == "var":
        return ctx.depth.get(a.name, 0)
    return max((ctx.depth.get(v, 0) for v in Poly.atom(a).vars()), default=0) + 0.5


_Memo = dict[tuple[Poly, int], bool]


def _prove(p: Poly, ctx: Facts, depth: int, memo: _Memo) -> bool:
    key = (p, depth)
    hit = memo.get(key)
    if hit is None:
        hit = memo[key] = _prove_once(p, ctx, depth, memo)
    return hit


def _prove_once(p: Poly, ctx: Facts, depth: int, memo: _Memo) -> bool:
    p = _tighten(p)
    c = p.as_const()
    if c is not None:
        return c >= 0
    if _sizes_only_bound(p, ctx.sizes):
        return True
    if depth == 0:
        return False
    rest = _drop_nonneg_products(p, ctx, depth - 1, memo)
    if rest is not None and _prove(rest, ctx, depth - 1, memo):
        return True
    facts = ctx.facts + _div_facts(p, ctx, depth - 1, memo)
    if any(len(m) >= 2 for m, _ in p.terms):
        # Elimination cannot use a product; a fact equal to the goal up to a constant
        # still proves it.
        for f in facts:
            c = (p - f).as_const()
            if c is not None and c >= 0:
                return True
    candidates = sorted((a for a in _atoms(p) if linear_coeff(p, a)),
                        key=lambda a: -_rank(a, ctx))
    for a in candidates:
        ca = linear_coeff(p, a)
        assert ca
        for f in facts:
            da = linear_coeff(f, a)
            if not da or (da > 0) != (ca > 0):
                continue
            q = p.scale(abs(da)) - f.scale(abs(ca))
            if _prove(q, ctx, depth - 1, memo):
                return True
    return False
