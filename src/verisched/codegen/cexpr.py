"""Index arithmetic in C: ATL indices as polynomials, printed; predicates as conditions.

Every part of the lowering (core, vector rules, support analysis, the
Gemmini target) turns ATL index expressions into C text the same way, and
simplifies `min`/`max` and conditions with the same prover, so they are
plain functions of the scope (`Ctx`), not methods of one lowering object.
C's `/` and `%` are printed only where they agree with Z's floor division
(a nonnegative dividend, a positive constant divisor); elsewhere the
`vs_fdiv`/`vs_fmod` helpers of the kernel template are called.

Per-dimension indices and extents are `int`, as are the loops over them; a
buffer's element count and a flat (row-major) offset into a buffer of several
dimensions may exceed `int` when no single index does, so they are computed
in 64 bits (`flat_text`; `ctext(..., wide=True)`), and a heap buffer's count
in overflow-checked 64-bit arithmetic (`count_text`), refused when too large.
"""

from __future__ import annotations

from verisched.codegen.errors import LowerError
from verisched.codegen.intrange import note_index, note_int
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


def ctext(p: Poly, ctx: Ctx, wide: bool = False) -> str:
    """C text of an index polynomial, with C's `/` `%` where they agree with Z's.

    `wide`: evaluated in 64 bits (each product, and the first of several terms, starts
    from an `int64_t`; the atoms inside stay `int`): for linearised indices and
    element counts of buffers, which may exceed `int` when no single index does."""
    if not wide and ctx.int_exprs is not None:
        note_int(p, ctx)
    parts: list[tuple[int, list[str]]] = []
    for m, coeff in p.terms:
        parts.append((coeff, [_atom_c(a, ctx) for a in m]))
    if not parts:
        return "0"
    # Positive terms first, the constant last: `m*y + x - m - 1`, not `-m + m*y + x - 1`.
    parts.sort(key=lambda cb: (not cb[1], cb[0] < 0))
    out = ""
    for k, (coeff, atoms) in enumerate(parts):
        mag = abs(coeff)
        if wide and atoms and (len(atoms) > 1 or mag != 1 or (k == 0 and len(parts) > 1)):
            atoms = ["(int64_t)" + atoms[0], *atoms[1:]]
        body = "*".join(atoms)
        txt = str(mag) if not body else body if mag == 1 else f"{mag}*{body}"
        if k == 0:
            out = ("-" if coeff < 0 else "") + txt
        else:
            out += (" - " if coeff < 0 else " + ") + txt
    return out


def int_check(p: Poly, upper: bool = False) -> str:
    """C condition: `p`, in checked 64-bit arithmetic, is an `int` (the entry check);
    `upper`: is at most INT_MAX (a bound: intrange.py)."""
    return f"vs_c{'intmax' if upper else 'int'}({_checked(p)})"


def flat_text(idx: list[Poly], dims: tuple[Poly, ...], ctx: Ctx) -> str:
    """C text of the row-major offset of `idx` in a buffer of extents `dims` (as
    `linear` computes it).  With several dimensions the offset is accumulated in 64
    bits, Horner-style, `((int64_t)i0*d1 + i1)*d2 + i2`: the element count may
    exceed `int`, while each per-dimension index, bounded by its extent, and each
    extent fit and stay `int` (the loops' own arithmetic, as before)."""
    pairs = list(zip(idx, dims, strict=False))
    if ctx.int_exprs is not None:
        for p, d in pairs:
            note_index(p, d, ctx)
    if len(pairs) < 2:
        return ctext(pairs[0][0], ctx) if pairs else "0"
    acc = "(int64_t)" + _operand(pairs[0][0], ctx)
    for k, (p, d) in enumerate(pairs[1:]):
        acc = f"{acc if k == 0 else f'({acc})'}*{_operand(d, ctx)}"
        if p.terms:
            acc = f"{acc} + {_operand(p, ctx)}"
    return acc


def _operand(p: Poly, ctx: Ctx) -> str:
    """`p` as a C operand of `*` or `+`: parenthesised unless it is one atom or a
    nonnegative constant."""
    text = ctext(p, ctx)
    c = p.as_const()
    single = len(p.terms) == 1 and p.terms[0][1] == 1 and len(p.terms[0][0]) == 1
    return text if single or (c is not None and c >= 0) else f"({text})"


def count_text(dims: tuple[Poly, ...], ctx: Ctx) -> str:
    """C text of the element count of a buffer of extents `dims` (each >= 0), as the
    template's overflow-checked 64-bit arithmetic (codegen/templates/kernel.c.j2):
    `VS_BAD` if an extent exceeds `int` (the loops over it are `int`) or the count
    overflows, so the allocation is refused instead of made too small."""
    factors = []
    for d in dims:
        c = d.as_const()
        single = len(d.terms) == 1 and d.terms[0][1] == 1 and len(d.terms[0][0]) == 1 \
            and d.terms[0][0][0].op == "var"
        if c is not None:
            factors.append(str(c))
        elif single:
            factors.append(d.terms[0][0][0].name)  # an int variable: fits, >= 0 here
        else:
            factors.append(f"vs_cext({_checked(d)})")
    if not factors:
        return "1"
    out = factors[0]
    for f in factors[1:]:
        out = f"vs_cmul({out}, {f})"
    return out


def bytes_check(dims: tuple[Poly, ...], ctx: Ctx, ctype: str) -> str | None:
    """C condition: a buffer of extents `dims` and elements of C type `ctype` fits in a
    ptrdiff_t (`vs_cbytes`, the entry check), or None where no sizes can break that: a
    buffer of one dimension (at most INT_MAX elements of at most 8 bytes) or of a
    constant count that fits."""
    total = Poly.const(1)
    for d in dims:
        total = total * d
    c = total.as_const()
    if len(dims) < 2 or (c is not None and 0 <= c <= 2**60):
        return None
    return f"vs_cbytes({count_text(dims, ctx)}, sizeof({ctype}))"


def _checked(p: Poly) -> str:
    """`p` in checked 64-bit arithmetic (vs_cadd, vs_cmul, ...: VS_BAD on overflow)."""
    terms = []
    for m, coeff in p.terms:
        factors = ([str(coeff)] if coeff != 1 or not m else []) + [_checked_atom(a) for a in m]
        t = factors[0]
        for f in factors[1:]:
            t = f"vs_cmul({t}, {f})"
        terms.append(t)
    if not terms:
        return "0"
    out = terms[0]
    for t in terms[1:]:
        out = f"vs_cadd({out}, {t})"
    return out


def _checked_atom(a: Atom) -> str:
    if a.op == "var":
        return a.name
    x, y = a.args
    fn = {"min": "vs_cmin", "max": "vs_cmax", "/": "vs_cdiv", "%": "vs_cmod"}[a.op]
    return f"{fn}({_checked(x)}, {_checked(y)})"


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
