"""Index arithmetic the Gemmini lowering needs beyond the linear prover.

A tile's rows and columns come out of splits and flattenings (Fig. 6) as
quotients and remainders (`(16 io + i) / 16`, `... mod 16`) and as min/max
of the matrix edge; the prover (codegen/prover.py) treats those as opaque
atoms.  These helpers fold `k * (y / k) + y mod k` back into `y` (so a
tile's rows show as contiguous), prove bounds through floor division,
modulo, min and max, and show `cdiv(n, 16) >= 1` for sizes >= 1.  Failure
only makes the lowering refuse a program, never emit wrong code.
"""

from __future__ import annotations

from verisched.codegen.ir import Ctx
from verisched.codegen.poly import Atom, Poly, evaluate


def split_atom(p: Poly, atom: object) -> tuple[Poly, Poly] | None:
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


def fold_divmod(p: Poly) -> Poly:
    """Fold `P * k * (y / k) + P * (y mod k)` into `P * y` (Z.div_mod: y = k (y / k) +
    y mod k for k <> 0), repeatedly.  A split (Fig. 6) linearises an index through its
    quotient and remainder; folding them back shows a tile's rows contiguous in memory."""
    for _ in range(16):
        mods = {a for mono, _ in p.terms for a in mono if a.op == "%"}
        for mod in sorted(mods, key=Atom.key):
            y, k = mod.args
            if k.as_const() == 0:
                continue
            div = Atom("/", args=(y, k))
            sm = split_atom(p, mod)
            if sm is None:
                continue
            cm, rest = sm
            sd = split_atom(rest, div)
            if sd is None:
                continue
            cd, rest2 = sd
            if not (cd - cm * k).terms:
                p = rest2 + cm * y
                break
        else:
            return p
    return p


def prove_divmod(f: Poly, ctx: Ctx, depth: int = 4) -> bool:
    """`f >= 0` where `f` is `c + s * (x / k)` or `c + s * (x mod k)` (s = +-1, k >= 1
    provable), by the floor-division laws: x / k >= t iff x >= t k, x / k <= t iff
    x <= t k + k - 1, 0 <= x mod k <= k - 1; `x` may itself hold such atoms."""
    if ctx.facts.ge0(f):
        return True
    if depth == 0:
        return False
    atoms = [a for mono, _ in f.terms for a in mono if a.op in ("/", "%", "max")]
    for atom in atoms:
        sp = split_atom(f, atom)
        if sp is None:
            continue
        coef, c = sp
        if atom.op == "max":
            # coef * max(x, y) >= coef * x for coef >= 0: prove the smaller goal.
            if ctx.facts.ge0(coef) and any(prove_divmod(c + coef * arg, ctx, depth - 1)
                                           for arg in atom.args):
                return True
            continue
        if atom.op == "/" and not (coef - atom.args[1]).terms \
                and ctx.facts.ge0(atom.args[1] - 1):
            # k * (y / k) >= y - k + 1 for k >= 1.
            y, k = atom.args
            if prove_divmod(c + y - k + 1, ctx, depth - 1):
                return True
        s_ = coef.as_const()
        if s_ not in (1, -1):
            continue
        x, k = atom.args
        if not (ctx.facts.ge0(k - 1) or prove_divmod(k - 1, ctx, depth - 1)):
            continue
        if atom.op == "/":
            goal = x + c * k if s_ == 1 else c * k + k - 1 - x
            if prove_divmod(goal, ctx, depth - 1):
                return True
        else:
            goal = c if s_ == 1 else c - (k - 1)
            if prove_divmod(goal, ctx, depth - 1):
                return True
    return False


def _single_atom(p: Poly, op: str) -> tuple[Poly, Poly] | None:
    if len(p.terms) == 1 and p.terms[0][1] == 1 and len(p.terms[0][0]) == 1:
        a = p.terms[0][0][0]
        if a.op == op:
            return a.args  # type: ignore[return-value]
    return None


def le(a: Poly, b: Poly, ctx: Ctx, depth: int = 6) -> bool:
    """`a <= b`, by the prover or through min/max (which the linear prover keeps opaque)."""
    if prove_divmod(b - a, ctx, 2):
        return True
    if depth == 0:
        return False
    d = depth - 1
    if (m := _single_atom(a, "min")) and (le(m[0], b, ctx, d) or le(m[1], b, ctx, d)):
        return True
    if (m := _single_atom(b, "max")) and (le(a, m[0], ctx, d) or le(a, m[1], ctx, d)):
        return True
    if (m := _single_atom(b, "min")) and le(a, m[0], ctx, d) and le(a, m[1], ctx, d):
        return True
    if (m := _single_atom(a, "max")) and le(m[0], b, ctx, d) and le(m[1], b, ctx, d):
        return True
    return False


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


def positive_at_min(p: Poly, sizes: frozenset[str]) -> bool:
    """`p >= 1` for every size >= 1: `p` is monotone in the sizes and >= 1 when all are 1.
    (Shows `cdiv(n, 16) >= 1`, which the linear prover does not find.)"""
    return _monotone(p, sizes) and evaluate(p, dict.fromkeys(p.vars(), 1)) >= 1
