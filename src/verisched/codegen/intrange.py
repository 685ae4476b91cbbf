"""Which `int` arithmetic of a kernel the entry check must bound, and by what.

A kernel's loops, per-dimension indices, guards and loop bounds are C `int`
(cexpr.py).  Signed overflow there is undefined behaviour: a wrapped index reads
or writes outside its buffer.  So the lowering records, for each expression it
prints in `int`, polynomials over the sizes alone that bound every value C
computes on the way, and the kernel refuses, at entry, sizes at which one
leaves `int` (lower.entry_check: error 2, nothing touched; the Python wrapper
checks the same and names it).

- An expression over the sizes alone is recorded itself, or the parts of it
  that may leave `int` (`note_int`, `Ctx.int_exprs`: each must be an int).
- An expression with loop variables (`i*n + j`, a guard's `i + j - n`): each
  value C computes on the way, every partial product and partial sum in
  `ctext`'s order, is bounded from above and from below by a polynomial over
  the sizes (`upper`: the loop variables eliminated innermost first through
  their loops' bounds and the facts in scope, such as a guard's;
  `Ctx.int_bounds`: each must be at most INT_MAX).
- An index into a buffer is also bounded by its extent (`note_index`), tighter
  where it subtracts sizes from loop-variable terms.

Where no bound is found (a variable bound outside the loops the lowering
tracks, a division by a loop variable), nothing is recorded for that value, as
before this module existed: docs/decisions.md #132, #133.  The many bounds
recorded are mostly implied by each other; `prune` keeps those that are not,
by the prover.
"""

from __future__ import annotations

from verisched.codegen.ir import Ctx
from verisched.codegen.poly import Atom, Poly, binop
from verisched.codegen.prover import Facts, linear_coeff


def note_int(p: Poly, ctx: Ctx) -> None:
    """Record, for the kernel's entry check, what bounds the `int` arithmetic of `p`
    as `ctext` prints it (positive terms first, each product left to right)."""
    if ctx.int_exprs is None or p.as_const() is not None:
        return
    if p.vars() <= ctx.facts.sizes:
        _note_sizes(p, ctx)
    else:
        _note_mixed(p, ctx)


def _note_sizes(p: Poly, ctx: Ctx) -> None:
    """`p` over the sizes alone: what may leave `int` is a product, the sum of the
    positive terms, and the whole only where more than one size or constant is
    subtracted from that sum.  What cannot is left out: a size or a constant (the sizes
    are ints >= 1), one minus a size or constant, and a division, modulo, min or max
    (an int of its operands, which are recorded themselves)."""
    pos = Poly(tuple(t for t in p.terms if t[1] > 0))
    neg = [t for t in p.terms if t[1] < 0]
    parts = [pos, *(Poly(((m, abs(c)),)) for m, c in p.terms if len(m) > 1 or abs(c) != 1)]
    if len(neg) > 1 or (neg and not one_int(Poly(((neg[0][0], 1),)))):
        parts.append(p)
    for q in parts:
        _add(q, ctx)


def _note_mixed(p: Poly, ctx: Ctx) -> None:
    """`p` with loop variables: bounds over the sizes, from above and from below, of
    every value C computes on the way, in `ctext`'s order (positive terms, subtracted
    terms, the constant): each term's partial products and each partial sum."""
    if ctx.int_bounds is None:
        return
    # The lowering prints the same index many times (each tile's store, the vector
    # probes, every sibling tile's scope): noted once per scope, and bounded once per
    # expression, loops and facts (sibling scopes hold equal facts).
    here = (p, len(ctx.facts.facts))  # noted in this very scope already
    if here in ctx.facts.bounds:
        return
    ctx.facts.bounds[here] = True
    key = (p, ctx.loops, _facts_key(ctx.facts))
    found = _MEMO.get(key)
    if found is None:
        if len(_MEMO) > 50_000:
            _MEMO.clear()
        found = _MEMO[key] = _mixed_bounds(p, ctx)
    ctx.int_bounds.update(found)


class _FactsKey:
    """The facts of a scope as a dictionary key whose hash is computed once: sibling
    scopes (every tile of a loop) hold equal facts, and share their bounds."""

    __slots__ = ("facts", "h")

    def __init__(self, facts: Facts) -> None:
        self.facts = (facts.sizes, *facts.facts)
        self.h = hash(self.facts)

    def __hash__(self) -> int:
        return self.h

    def __eq__(self, other: object) -> bool:
        return self is other or (isinstance(other, _FactsKey) and self.h == other.h
                                 and self.facts == other.facts)


def _facts_key(facts: Facts) -> _FactsKey:
    """The scope's key, one object for equal facts (interned), so that the memo's
    lookups compare keys by identity."""
    key = facts.bounds.get(len(facts.facts))
    if key is None:
        fresh = _FactsKey(facts)
        key = _KEYS.get(fresh)
        if key is None:
            if len(_KEYS) > 5_000:
                _KEYS.clear()
            key = _KEYS[fresh] = fresh
        facts.bounds[len(facts.facts)] = key
    return key


_MEMO: dict[tuple[object, ...], tuple[Poly, ...]] = {}
_KEYS: dict[_FactsKey, _FactsKey] = {}
_INDEX: dict[_FactsKey, dict[tuple[str, int], list[Poly]]] = {}


def _mixed_bounds(p: Poly, ctx: Ctx) -> tuple[Poly, ...]:
    parts: list[Poly] = []
    for m, c in p.terms:
        parts += [Poly(((m[:k], abs(c)),)) for k in range(1, len(m) + 1)
                  if k > 1 or abs(c) != 1]
    order = sorted(p.terms, key=lambda t: (not t[0], t[1] < 0))
    parts += [Poly(tuple(order[:k])) for k in range(2, len(order) + 1)]
    out = []
    for q in parts:
        for side in (q, -q):
            u = upper(side, ctx)  # over the sizes alone, or None
            if u is not None and not one_int(u):  # a constant or one size fits
                out.append(u)
    return tuple(out)


def _add(q: Poly, ctx: Ctx) -> None:
    if q.terms and not one_int(q):
        ctx.int_exprs.add(q)  # type: ignore[union-attr]


def note_extents(dims: tuple[Poly, ...], ctx: Ctx) -> None:
    """Record the extents of a kernel's input or output buffer for the entry check, as if
    printed in `int`: each per-dimension index into it is (a 1-d buffer's offset too,
    `out[i*n + j]` for a flattened output), and fits because it is below its extent,
    proved, once the extent fits (a flattened m x n output has the one extent m*n)."""
    if ctx.int_exprs is not None:
        for d in dims:
            note_int(d, ctx)


def note_index(p: Poly, d: Poly, ctx: Ctx) -> None:
    """Record, for the entry check, what bounds the `int` arithmetic of index `p` into a
    dimension of extent `d` when `p` mixes loop variables with subtracted sizes or
    constants (`i*n + j - n`): `ctext` sums the positive terms first, and that sum is
    `p` plus what is subtracted, below `d` plus it, since `p < d` is proved.  (`ctext`
    bounds it through the loops as well, which may be looser or tighter; where `p`
    subtracts a loop variable's term, only that bound applies.)"""
    if ctx.int_exprs is None or p.vars() <= ctx.facts.sizes:
        return
    taken = Poly(tuple((m, -c) for m, c in p.terms if c < 0))
    if taken.terms and taken.vars() <= ctx.facts.sizes:
        note_int(d + taken, ctx)


def one_int(q: Poly) -> bool:
    """A constant, or one size, division, modulo, min or max with coefficient 1."""
    return q.as_const() is not None or (len(q.terms) == 1 and q.terms[0][1] == 1
                                        and len(q.terms[0][0]) == 1)


def upper(p: Poly, ctx: Ctx) -> Poly | None:
    """A polynomial over the sizes alone that is at least `p` wherever `p` is evaluated
    (inside the loops of `ctx.loops`), or None where none is found.  The loop variables
    are eliminated innermost first, Fourier-Motzkin style: `p = coef*v + rest` with
    `coef >= 0` is at most `coef*(hi - 1) + rest` for a loop `v` in `[lo, hi)`, and at
    most `coef*lo + rest` with `coef <= 0`; so `64*jm + 16*jv + l` inside
    `l < N - 64*jm - 16*jv` is at most `N - 1`, not the sum of the three loops' bounds."""
    return _upper_from(p, len(ctx.loops) - 1, ctx, {})


def _upper_from(p: Poly, k: int, ctx: Ctx, memo: dict[tuple[Poly, int], Poly | None]
                ) -> Poly | None:
    """`upper` with the loops after `k` eliminated already.  Where a variable has
    several bounds (its loop's, a guard's `j < n - i`), each is followed and the least
    result kept that the prover can tell least (any is a bound)."""
    key = (p, k)
    if key in memo:
        return memo[key]
    out: Poly | None = None
    while k >= 0 and ctx.loops[k][0] not in p.vars():
        k -= 1
    if k < 0:
        out = p if p.vars() <= ctx.facts.sizes else None
    else:
        v, lo, hi = ctx.loops[k]
        inner = frozenset(w for w, _, _ in ctx.loops[k + 1:])
        for q in _eliminate(p, v, lo, hi, inner, ctx)[:_MAX_CHOICES]:
            b = _upper_from(q, k - 1, ctx, memo)
            if b is not None and (out is None or (b != out and _size_facts(ctx).le(b, out))):
                out = b
    memo[key] = out
    return out


_MAX_CHOICES = 4  # bounds of one variable followed (a loop's and a few guards')


def _size_facts(ctx: Ctx) -> Facts:
    """Facts with only `size >= 1`, for comparing two bounds over the sizes: quicker
    than the scope's, and enough to order the bounds a guard and a loop give."""
    f = _SIZE_FACTS.get(ctx.facts.sizes)
    if f is None:
        f = _SIZE_FACTS[ctx.facts.sizes] = Facts(sizes=ctx.facts.sizes)
        for v in sorted(ctx.facts.sizes):
            f.add(Poly.var(v) - 1)
    return f


_SIZE_FACTS: dict[frozenset[str], Facts] = {}


def _eliminate(p: Poly, v: str, lo: Poly, hi: Poly, inner: frozenset[str], ctx: Ctx
               ) -> list[Poly]:
    """Upper bounds of `p` without loop variable `v` (in `[lo, hi)`; `inner`: the loop
    variables eliminated already): the terms where `v` sits inside an atom or in a power
    are bounded first (`_bound_term`), then `p`, linear in `v`, takes `v`'s largest or
    smallest value by the sign of its coefficient: from its loop, and from each fact
    `r - v >= 0` (or `v - r >= 0`) in scope, such as a guard's, whose `r` has neither
    `v` nor an eliminated variable."""
    coef, rest = Poly.const(0), Poly.const(0)
    for m, c in p.terms:
        t = Poly(((m, c),))
        if v not in t.vars():
            rest = rest + t
            continue
        others = tuple(a for a in m if not _is_var(a, v))
        if len(m) - len(others) == 1 and not any(v in _atom_vars(a) for a in others):
            coef = coef + Poly(((others, c),))
            continue
        b = _bound_term(m, c, v, (p - t).vars(), ctx)
        if b is None:
            return []
        for m2, c2 in b.terms:  # a bound is linear in v (or without it)
            t2 = Poly(((m2, c2),))
            o2 = tuple(a for a in m2 if not _is_var(a, v))
            if v not in t2.vars():
                rest = rest + t2
            elif len(m2) - len(o2) == 1 and not any(v in _atom_vars(a) for a in o2):
                coef = coef + Poly(((o2, c2),))
            else:
                return []
    if not coef.terms:
        return [rest]
    if ctx.facts.ge0(coef):
        sign, first = -1, _pick_hi(hi, lo, rest.vars(), ctx) - 1
    elif ctx.facts.ge0(-coef):
        sign, first = 1, lo
    else:
        return []
    out = [rest + coef * first]
    for r in _fact_bounds(ctx.facts, v, sign):
        if not r.vars() & inner:
            q = rest + coef * r
            if q not in out:
                out.append(q)
    return out


def _fact_bounds(facts: Facts, v: str, sign: int) -> list[Poly]:
    """The bounds of `v` the facts give: `r` for each fact `r - v >= 0` (sign -1) or
    `v - r >= 0` (sign 1) without `v` in `r`; indexed once per scope and fact count."""
    key = _facts_key(facts)
    index = _INDEX.get(key)
    if index is None:
        if len(_INDEX) > 5_000:
            _INDEX.clear()
        index = {}
        for f in facts.facts:
            for m, c in f.terms:
                if len(m) == 1 and m[0].op == "var" and c in (1, -1):
                    w = m[0].name
                    if linear_coeff(f, m[0]) == c:
                        r = f - Poly.var(w).scale(c)
                        index.setdefault((w, c), []).append(r if c < 0 else -r)
        _INDEX[key] = index
    return index.get((v, sign), [])


def _is_var(a: Atom, v: str) -> bool:
    return a.op == "var" and a.name == v


def _atom_vars(a: Atom) -> frozenset[str]:
    return Poly.atom(a).vars()


def _bound_term(m: tuple[Atom, ...], c: int, v: str, near: frozenset[str], ctx: Ctx
                ) -> Poly | None:
    """An upper bound of the term `c*m`, in which `v` sits inside an atom (or is
    squared), linear in `v` where it can be: `k*d*(x / d)` is at most `k*x` (floor), and
    `-k*d*(x / d)` at most `-k*(x - d + 1)`; `k*min(a, b)` is at most `k*a` and `k*b`,
    `-k*max(a, b)` at most `-k*a` and `-k*b` (the operand that shares variables with
    the rest of the expression, `near`, is taken: the two may then cancel).  Otherwise,
    with nonnegative atoms: dropped if `c < 0`, else each atom with `v` replaced by its
    bound over the sizes."""
    if len(m) == 1 and m[0].op != "var":
        a = m[0]
        x, y = a.args
        d = y.as_const()
        if a.op == "/" and d is not None and d > 0 and c % d == 0:
            return x.scale(c // d) if c > 0 else (x - d + 1).scale(c // d)
        if (a.op == "min" and c > 0) or (a.op == "max" and c < 0):
            return _choose(x, y, near, ctx).scale(c)
    if not all(_nonneg(a, ctx) for a in m):
        return None
    if c < 0:
        return Poly.const(0)
    out = Poly.const(c)
    for a in m:
        ua = _upper_atom(a, ctx) if v in _atom_vars(a) else Poly.atom(a)
        if ua is None:
            return None
        out = out * ua
    return out


def _upper_atom(a: Atom, ctx: Ctx) -> Poly | None:
    """A bound over the sizes of one atom, from its operands' (smaller, so this ends): a
    loop variable is below its loop's bound; `min` is at most either operand, `max` at
    most the larger bound; `x / y` at most x's bound over y (floor division by a fixed
    y >= 1 is monotone), or x's bound where y varies; `x % y` below y."""
    if a.op == "var":
        return upper(Poly.atom(a), ctx)
    x, y = a.args
    if a.op == "min":
        ux, uy = upper(x, ctx), upper(y, ctx)
        return uy if ux is None else ux if uy is None else _smaller(ux, uy, ctx)
    if a.op == "max":
        ux, uy = upper(x, ctx), upper(y, ctx)
        return None if ux is None or uy is None else binop("max", ux, uy)
    sizes = ctx.facts.sizes
    if a.op == "/":
        if ctx.facts.ge0(y - 1):
            ux = upper(x, ctx)
            if ux is not None and y.vars() <= sizes:
                return binop("/", ux, y)
            return ux if ux is not None and ctx.facts.ge0(x) else None  # 0 <= x / y <= x
        return None
    if a.op == "%" and ctx.facts.ge0(y - 1):
        uy = upper(y, ctx)
        return None if uy is None else uy - 1
    return None


def _smaller(a: Poly, b: Poly, ctx: Ctx) -> Poly:
    """Of two bounds, one the prover shows is at most the other, else their min."""
    return a if ctx.facts.le(a, b) else b if ctx.facts.le(b, a) else binop("min", a, b)


def _choose(a: Poly, b: Poly, near: frozenset[str], ctx: Ctx) -> Poly:
    """Of two operands, the one sharing more loop variables with `near`; then the one
    over the sizes alone; then the first."""
    def score(z: Poly) -> tuple[int, bool]:
        return len((z.vars() & near) - ctx.facts.sizes), z.vars() <= ctx.facts.sizes
    return b if score(b) > score(a) else a


def _pick_hi(hi: Poly, lo: Poly, near: frozenset[str], ctx: Ctx) -> Poly:
    """The loop's upper bound to substitute: `v < max(a, b)` with `a <= lo <= v` means
    `v < b`; `v < min(a, b)` means both, and the operand that shares variables with the
    rest of the expression is taken."""
    while len(hi.terms) == 1 and hi.terms[0][1] == 1 and len(hi.terms[0][0]) == 1 \
            and hi.terms[0][0][0].op in ("min", "max"):
        a = hi.terms[0][0][0]
        x, y = a.args
        if a.op == "min":
            hi = _choose(x, y, near, ctx)
        elif ctx.facts.le(x, lo):
            hi = y
        elif ctx.facts.le(y, lo):
            hi = x
        else:
            break
    return hi


def _nonneg(a: Atom, ctx: Ctx) -> bool:
    return (a.op == "var" and a.name in ctx.facts.sizes) or ctx.facts.ge0(Poly.atom(a))


def prune(exprs: set[Poly], bounds: set[Poly], facts: Facts
          ) -> tuple[list[Poly], list[Poly]]:
    """The recorded expressions (each must be an int) and bounds (each must be at most
    INT_MAX), less those that the prover shows follow, under the entry's facts (each
    size an int >= 1, and the assumptions, which the kernel checks first): a bound at
    most INT_MAX or another kept one, and an expression that also is at least INT_MIN.
    Sorted, so the C is stable."""
    facts = facts.child()
    for v in sorted(facts.sizes):  # each size is a C int
        facts.add(_INT_MAX - Poly.var(v))
    kept: list[tuple[Poly, bool]] = []

    def implied(q: Poly, upper_only: bool, r: Poly) -> bool:
        return (upper_only or facts.ge0(q + _INT_MIN)) and facts.le(q, r)

    cands = [(q, False) for q in exprs] + [(q, True) for q in bounds - exprs]
    for q, up in sorted(cands, key=lambda c: (c[1], c[0].key())):
        if implied(q, up, _INT_MAX) or any(implied(q, up, r) for r, _ in kept):
            continue
        kept = [(r, u) for r, u in kept if not implied(r, u, q)]
        kept.append((q, up))
    return [q for q, u in kept if not u], [q for q, u in kept if u]


_INT_MIN = 2**31  # q >= INT_MIN is q + 2^31 >= 0
_INT_MAX = Poly.const(2**31 - 1)
