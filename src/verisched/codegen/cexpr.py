"""Index arithmetic in C: ATL indices as polynomials, printed; predicates as conditions.

Every part of the lowering (core, vector rules, support analysis, the
Gemmini target) turns ATL index expressions into C text the same way, and
simplifies `min`/`max` and conditions with the same prover, so they are
plain functions of the scope (`Ctx`), not methods of one lowering object.
C's `/` and `%` are printed only where they agree with Z's floor division
(a nonnegative dividend, a positive constant divisor); elsewhere the
`vs_fdiv`/`vs_fmod` helpers of the kernel template are called.
"""

from __future__ import annotations

from verisched.codegen.errors import LowerError
from verisched.codegen.ir import Ctx, Window
from verisched.codegen.poly import Atom, Poly, binop, from_idx
from verisched.pybridge.terms import Idx, PAnd, PBool, PCmp, Pred, idx_free_vars


def ix(i: Idx, ctx: Ctx) -> Poly:
    """The polynomial of index `i` over C names (unrolled loop variables as constants)."""
    missing = idx_free_vars(i) - set(ctx.idx_names)
    if missing:
        raise LowerError(f"lowering: index variable(s) {sorted(missing)} not in scope")
    p = from_idx(i, ctx.idx_names)
    if ctx.consts:
        for v in p.vars() & ctx.consts.keys():
            p = p.subst(v, Poly.const(ctx.consts[v]))
    return p


def ctext(p: Poly, ctx: Ctx) -> str:
    """C text of an index polynomial, with C's `/` `%` where they agree with Z's."""
    parts: list[tuple[int, str]] = []
    for m, coeff in p.terms:
        if m == ():
            parts.append((coeff, ""))
            continue
        parts.append((coeff, "*".join(_atom_c(a, ctx) for a in m)))
    if not parts:
        return "0"
    # Positive terms first, the constant last: `m*y + x - m - 1`, not `-m + m*y + x - 1`.
    parts.sort(key=lambda cb: (cb[1] == "", cb[0] < 0))
    out = ""
    for k, (coeff, body) in enumerate(parts):
        mag = abs(coeff)
        txt = str(mag) if not body else body if mag == 1 else f"{mag}*{body}"
        if k == 0:
            out = ("-" if coeff < 0 else "") + txt
        else:
            out += (" - " if coeff < 0 else " + ") + txt
    return out


def _atom_c(a: Atom, ctx: Ctx) -> str:
    if a.op == "var":
        return a.name
    x, y = a.args
    xs, ys = ctext(x, ctx), ctext(y, ctx)
    if a.op in ("min", "max"):
        return f"vs_{a.op}({xs}, {ys})"
    cy = y.as_const()
    if cy is not None and cy > 0 and ctx.facts.ge0(x):
        return f"(({xs}) {a.op} {cy})"  # parenthesised: it may be a factor
    return f"vs_f{'div' if a.op == '/' else 'mod'}({xs}, {ys})"


def smax(a: Poly, b: Poly, ctx: Ctx) -> Poly:
    """max(a, b), without a `max` where the facts decide it."""
    if ctx.facts.le(b, a):
        return a
    if ctx.facts.le(a, b):
        return b
    return binop("max", a, b)


def smin(a: Poly, b: Poly, ctx: Ctx) -> Poly:
    """min(a, b), without a `min` where the facts decide it."""
    if ctx.facts.le(a, b):
        return a
    if ctx.facts.le(b, a):
        return b
    return binop("min", a, b)


def inside(w: Window, extent: Poly, ctx: Ctx) -> bool:
    """Is window `w` provably within `[0, extent)`?"""
    return ctx.facts.ge0(w[0]) and ctx.facts.le(w[1], extent)


def pred(p: Pred, ctx: Ctx) -> tuple[str | None, list[Poly]]:
    """C condition (None when provably true, "0" when provably false) and its facts."""
    if isinstance(p, PBool):
        return (None, []) if p.value else ("0", [Poly.const(-1)])
    if isinstance(p, PAnd):
        a, fa = pred(p.left, ctx)
        b, fb = pred(p.right, ctx)
        if a == "0" or b == "0":
            return "0", [Poly.const(-1)]
        conds = [x for x in (a, b) if x is not None]
        return (" && ".join(conds) if conds else None), fa + fb
    assert isinstance(p, PCmp)
    L, R = ix(p.left, ctx), ix(p.right, ctx)
    if p.op == "<":
        facts = [R - L - 1]
    elif p.op == "<=":
        facts = [R - L]
    else:
        facts = [R - L, L - R]
    if all(ctx.facts.ge0(f) for f in facts):
        return None, facts
    if any(ctx.facts.ge0(-f - 1) for f in facts):
        return "0", [Poly.const(-1)]
    cond = ge_text(facts, ctx) if p.op != "=" else f"({ctext(L - R, ctx)}) == 0"
    return cond, facts


def ge_text(facts: list[Poly], ctx: Ctx) -> str:
    """`f >= 0` for each f, printed as `lhs >= rhs` with the constant on the right."""
    out = []
    for f in facts:
        if ctx.facts.ge0(f):
            continue
        k = f.constant()
        out.append(f"{ctext(f - k, ctx)} >= {-k}")
    return " && ".join(out)


def linear(idx: list[Poly], dims: tuple[Poly, ...]) -> Poly:
    """The row-major offset of `idx` in a buffer of extents `dims` (extra indices or
    extents beyond the shorter of the two are ignored, as `zip` does)."""
    lin = Poly.const(0)
    for i, d in zip(idx, dims, strict=False):
        lin = lin * d + i
    return lin
