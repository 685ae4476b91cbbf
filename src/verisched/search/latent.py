"""Latent idioms: the rules that let a stencil become a BLAS call (LIAR, issue 14).

LIAR (the seed `liar-latent-idiom-recognition.txt`, its section on latent
idioms and Table II's jacobi-1d and blur1d rows) finds a gemv in a 1-D
stencil that contains none: the shifted reads `a[i] + a[i+1] + a[i+2]` are
seen as a reduction over the shift, and that reduction, times the weight,
is the product of the *window* `W[i][k] = a[i+k]` with a vector filled with
the weight.  Two rules do that here, each with a lemma of
coq/Targets/BlasLatent.v, written (as in rules.py) three times side by side:
the egglog rewrite, the Python rewrite of one node (the certificate's path
search), the Coq steps at one site:

- fold_shift2 .. fold_shift5: `a[i] + a[i+1] + a[i+2]` -> `SUM [k < 3] a[i+k]`, and
  the same for 2, 4 and 5 reads (`rw fold_shift3 at (..)`, one lemma per width);
- window_gemv: `GEN i (c * SUM [k < m] a[i+k])` -> `GEN i SUM k W[i][k] * w[k]`
  with the window `W = GEN i' GEN k' a[i'+k']` and the weights `w = GEN k' c`
  (`rw smul_sum_l`, `rw smul_comm'`, `rw window_gemv`, each `at (..)`).

The idiom rules then see `blas_gemv` and `blas_fill` in the result.  The
window is a *view* argument (LIAR's arguments are views): the cost model
(extract.py) does not charge a call for an argument that only reads.  Each
rule introduces binders; their names are fixed per program (`latent_names`)
so the egglog side conditions (free_of) range over them too.
"""

from __future__ import annotations

from collections.abc import Callable

from egglog import String, rewrite, vars_

from verisched.pybridge import terms as A

from .egraph import Ix, T, free_of, ix_free_of
from .rules import LemmaUse, Pattern, Rule

ZERO = A.IConst(0)


def latent_names(program: A.Expr) -> tuple[str, str, str, str]:
    """Fresh binder names for the fold's reduction, the window's two loops and the
    broadcast's lane (LANE_RULES)."""
    names = set(A.free_vars(program))
    names |= {b for x in A.walk(program) if (b := A.binder(x)) is not None}
    out: list[str] = []
    for base in ("ks", "iw", "kw", "lb"):
        n = A.fresh_name(base, names)
        names.add(n)
        out.append(n)
    return out[0], out[1], out[2], out[3]


def _names_in(e: A.Expr) -> set[str]:
    return set(A.free_vars(e)) | {b for x in A.walk(e) if (b := A.binder(x)) is not None}


# -- fold_shift3: a[i] + a[i+1] + a[i+2] = SUM [k < 3] a[i+k] ---------------------------

def _shift(i: A.Idx, c: int) -> A.Idx:
    return A.IBin("+", i, A.IConst(c))


FOLD_WIDTHS = (2, 3, 4, 5)   # one lemma each: fold_shift2 .. fold_shift5


def _fold_shift(width: int) -> Callable[[A.Expr], A.Expr | None]:
    """`a[i] + a[i+1] + ... + a[i+width-1]` (left-nested) -> `SUM [k < width] a[i+k]`."""
    def fold(e: A.Expr) -> A.Expr | None:
        reads: list[A.Expr] = []
        x = e
        for _ in range(width - 1):
            if not (isinstance(x, A.SBin) and x.op == "+"):
                return None
            reads.append(x.right)
            x = x.left
        reads.append(x)
        reads.reverse()
        if not all(isinstance(r, A.Get) for r in reads):
            return None
        first = reads[0]
        assert isinstance(first, A.Get)
        if not all(r.tensor == first.tensor and r.index == _shift(first.index, t)  # type: ignore[attr-defined]
                   for t, r in enumerate(reads) if t):
            return None
        k = A.fresh_name("ks", _names_in(e))
        return A.Sum(k, ZERO, A.IConst(width),
                     A.Get(first.tensor, A.IBin("+", first.index, A.IVar(k))))
    return fold


def _fold_shift_steps(width: int) -> Callable[[Pattern, A.Expr], list[str]]:
    def steps(pat: Pattern, e: A.Expr) -> list[str]:
        return [f"rw fold_shift{width} at ({pat(e)})."]
    return steps


# -- window_gemv: GEN i (c * SUM [k < m] a[i+k]) = GEN i SUM k W[i][k] * w[k] ------------

def _window_parts(e: A.Expr) -> tuple[A.Expr, A.Sum, bool] | None:
    """(c, the reduction, whether the product is written `SUM * c`) when `e` is a
    generation from 0 of `c * SUM [k < m] a[i+k]` (either order), c and a free of i, k."""
    if not (isinstance(e, A.Gen) and e.lo == ZERO and isinstance(e.body, A.SBin)
            and e.body.op == "*"):
        return None
    left, right = e.body.left, e.body.right
    for c, s, flipped in ((left, right, False), (right, left, True)):
        if not (isinstance(s, A.Sum) and s.lo == ZERO and isinstance(s.body, A.Get)):
            continue
        if s.body.index != A.IBin("+", A.IVar(e.var), A.IVar(s.var)) or s.var == e.var:
            continue
        bound = {e.var, s.var}
        if (A.free_vars(c) | A.free_vars(s.body.tensor)) & bound:
            continue
        if (A.idx_free_vars(s.hi)) & bound:
            continue
        return c, s, flipped
    return None


def _window_gemv(e: A.Expr) -> A.Expr | None:
    parts = _window_parts(e)
    if parts is None:
        return None
    c, s, _ = parts
    assert isinstance(e, A.Gen) and isinstance(s.body, A.Get)
    used = _names_in(e)
    iw = A.fresh_name("iw", used)
    kw = A.fresh_name("kw", used | {iw})
    window = A.Gen(iw, ZERO, e.hi, A.Gen(kw, ZERO, s.hi, A.Get(
        s.body.tensor, A.IBin("+", A.IVar(iw), A.IVar(kw)))))
    weights = A.Gen(kw, ZERO, s.hi, c)
    body = A.SBin("*", A.Get(A.Get(window, A.IVar(e.var)), A.IVar(s.var)),
                  A.Get(weights, A.IVar(s.var)))
    return A.Gen(e.var, ZERO, e.hi, A.Sum(s.var, ZERO, s.hi, body))


def _window_gemv_steps(pat: Pattern, e: A.Expr) -> list[str]:
    parts = _window_parts(e)
    assert parts is not None and isinstance(e, A.Gen)
    c, s, flipped = parts
    steps = []
    if flipped:
        steps.append(f"rw smul_comm' at ({pat(A.SBin('*', s, c), frozenset({e.var}))}).")
    steps.append(f"rw smul_sum_l at ({pat(A.SBin('*', c, s), frozenset({e.var}))}).")
    steps.append(f"rw smul_comm' at ({pat(A.SBin('*', c, s.body), frozenset({e.var, s.var}))}).")
    moved = A.Gen(e.var, e.lo, e.hi, A.Sum(s.var, s.lo, s.hi, A.SBin("*", s.body, c)))
    steps.append(f"rw window_gemv at ({pat(moved)}).")
    return steps


# -- sum_dot_ones: SUM [k < n] x[k] = SUM [k < n] x[k] * (GEN [kw < n] 1)[k] -------------
#
# LIAR's vsum: a plain reduction is a dot product with a vector of ones (the ones are a
# fill, LIAR's memset).  The one is the literal `slit 1 1` (Tensor/Scalar.v).

ONE = A.Lit(1, 1)


def _dot_ones(e: A.Expr) -> A.Expr | None:
    if not (isinstance(e, A.Sum) and e.lo == ZERO and isinstance(e.body, A.Get)
            and e.body.index == A.IVar(e.var) and e.var not in A.free_vars(e.body.tensor)):
        return None
    kw = A.fresh_name("kw", _names_in(e))
    ones = A.Gen(kw, ZERO, e.hi, ONE)
    return A.Sum(e.var, ZERO, e.hi, A.SBin("*", e.body, A.Get(ones, A.IVar(e.var))))


def _dot_ones_steps(pat: Pattern, e: A.Expr) -> list[str]:
    return [f"rw sum_dot_ones at ({pat(e)})."]


# -- gather5_gemv: a 2-D stencil's five reads are a gemv over a gather view ---------------
#
#   GEN [j < m] r0 + r1 + r2 + r3 + r4          (each r_t a read img[_][_] of one tensor)
#   = GEN [j < m] SUM [k < 5] V[j][k] * (GEN [kw < 5] 1)[k]
#     with V = GEN [j < m] GEN [kw < 5] |[kw = 0]| r0 <+> ... <+> |[kw = 4]| r4
#
# The gather's sum is written `<+>` (at rank 0 the same as +, Core.v), which no
# associativity rule rewrites: with `+`, assoc and comm would give every gather's
# five terms an e-class per subset (the explosion of rules.py's assoc).
# The view V (its row j: the five points the output reads) is written with the
# generation's own binder j, so no substitution is needed in egglog; Coq's lemma
# (gather5_gemv) is stated for any five functions of j.  LIAR's stencil2d row.

def _plus_terms(e: A.Expr, k: int) -> list[A.Expr] | None:
    """The k terms of a left-nested scalar sum `((t0 + t1) + ...) + t(k-1)`."""
    terms: list[A.Expr] = []
    while len(terms) < k - 1:
        if not (isinstance(e, A.SBin) and e.op == "+"):
            return None
        terms.append(e.right)
        e = e.left
    terms.append(e)
    return terms[::-1]


def _read2(e: A.Expr) -> A.Expr | None:
    """The tensor of a 2-D read `a[I][J]`."""
    if isinstance(e, A.Get) and isinstance(e.tensor, A.Get):
        return e.tensor.tensor
    return None


def _gather5_parts(e: A.Expr) -> list[A.Expr] | None:
    if not (isinstance(e, A.Gen) and e.lo == ZERO and e.var not in A.idx_free_vars(e.hi)):
        return None
    terms = _plus_terms(e.body, 5)
    if terms is None:
        return None
    bases = [_read2(t) for t in terms]
    if bases[0] is None or any(b != bases[0] for b in bases):
        return None
    return terms


def _gather5(e: A.Expr) -> A.Expr | None:
    terms = _gather5_parts(e)
    if terms is None:
        return None
    assert isinstance(e, A.Gen)
    used = _names_in(e)
    ks = A.fresh_name("ks", used)
    kw = A.fresh_name("kw", used | {ks})
    gathered: A.Expr = A.Guard(A.PCmp("=", A.IVar(kw), A.IConst(0)), terms[0])
    for t, term in enumerate(terms[1:], 1):
        gathered = A.TAdd(gathered, A.Guard(A.PCmp("=", A.IVar(kw), A.IConst(t)), term))
    view = A.Gen(e.var, ZERO, e.hi, A.Gen(kw, ZERO, A.IConst(5), gathered))
    ones = A.Gen(kw, ZERO, A.IConst(5), ONE)
    body = A.SBin("*", A.Get(A.Get(view, A.IVar(e.var)), A.IVar(ks)), A.Get(ones, A.IVar(ks)))
    return A.Gen(e.var, ZERO, e.hi, A.Sum(ks, ZERO, A.IConst(5), body))


def _gather5_steps(pat: Pattern, e: A.Expr) -> list[str]:
    return [f"rw gather5_gemv at ({pat(e)})."]


LATENT_RULES: tuple[Rule, ...] = (
    *(Rule(f"fold_shift{w}",
           f"{w} shifted reads are a reduction over the shift (LIAR's latent idioms)",
           (LemmaUse(f"fold_shift{w}", True, "sadd"),), (f"rw fold_shift{w} at (_)",),
           _fold_shift(w), _fold_shift_steps(w)) for w in FOLD_WIDTHS),
    Rule("window_gemv",
         "a weighted reduction of shifted reads is the window times a filled vector",
         (LemmaUse("smul_sum_l", True, "smul"), LemmaUse("smul_comm'", True, "smul"),
          LemmaUse("window_gemv", True, "genr")),
         ("rw window_gemv at (_)",), _window_gemv, _window_gemv_steps),
    Rule("sum_dot_ones",
         "a reduction of a vector is its dot product with a vector of ones (LIAR's vsum)",
         (LemmaUse("sum_dot_ones", True, "sumr"),), ("rw sum_dot_ones at (_)",),
         _dot_ones, _dot_ones_steps),
    Rule("gather5_gemv",
         "the five reads of a 2-D stencil are a gemv over a gather view with a vector of "
         "ones (LIAR's stencil2d)",
         (LemmaUse("gather5_gemv", True, "genr"),), ("rw gather5_gemv at (_)",),
         _gather5, _gather5_steps),
)


def latent_egglog_rules(names: tuple[str, str, str, str]) -> list[object]:
    """LATENT_RULES as egglog rewrites, with the binder names `latent_names` chose."""
    ks, iw, kw, _ = names
    v, k = vars_("lv lk", String)
    ix, n, m = vars_("lix ln lm", Ix)
    a, c = vars_("la lc", T)
    zero = Ix.const(0)
    folds = []
    for w in FOLD_WIDTHS:
        lhs = T.get(a, ix)
        for t in range(1, w):
            lhs = T.sbin("+", lhs, T.get(a, Ix.bin("+", ix, Ix.const(t))))
        folds.append(rewrite(lhs).to(
            T.sum(ks, zero, Ix.const(w), T.get(a, Ix.bin("+", ix, Ix.var(ks)))),
            ix_free_of(ix, ks), free_of(a, ks)))
    window = T.gen(iw, zero, n, T.gen(kw, zero, m, T.get(
        a, Ix.bin("+", Ix.var(iw), Ix.var(kw)))))
    weights = T.gen(kw, zero, m, c)
    read = T.get(a, Ix.bin("+", Ix.var(v), Ix.var(k)))
    return [
        *folds,
        rewrite(T.gen(v, zero, n, T.sbin("*", c, T.sum(k, zero, m, read)))).to(
            T.gen(v, zero, n, T.sum(k, zero, m, T.sbin(
                "*", T.get(T.get(window, Ix.var(v)), Ix.var(k)), T.get(weights, Ix.var(k))))),
            v != k, free_of(a, v), free_of(a, k), free_of(c, v), free_of(c, k),
            ix_free_of(m, v), ix_free_of(m, k), free_of(a, iw), free_of(a, kw),
            free_of(c, kw), ix_free_of(n, iw), ix_free_of(m, kw), ix_free_of(m, iw)),
        # sum_dot_ones
        rewrite(T.sum(k, zero, n, T.get(a, Ix.var(k)))).to(
            T.sum(k, zero, n, T.sbin("*", T.get(a, Ix.var(k)), T.get(
                T.gen(kw, zero, n, T.lit(1, 1)), Ix.var(k)))),
            free_of(a, k), ix_free_of(n, kw)),
        _gather5_rule(ks, kw),
    ]


def _gather5_rule(ks: str, kw: str) -> object:
    """gather5_gemv as an egglog rewrite: five 2-D reads of one tensor `a`."""
    (v,) = vars_("gv", String)
    (m,) = vars_("gm", Ix)
    (a,) = vars_("ga", T)
    rows = vars_(" ".join(f"gi{t}" for t in range(5)), Ix)
    cols = vars_(" ".join(f"gj{t}" for t in range(5)), Ix)
    zero = Ix.const(0)
    reads = [T.get(T.get(a, i), j) for i, j in zip(rows, cols, strict=True)]
    lhs = reads[0]
    gathered = T.guard(Ix.bin("?=", Ix.var(kw), Ix.const(0)), reads[0])
    for t in range(1, 5):
        lhs = T.sbin("+", lhs, reads[t])
        gathered = T.tadd(gathered, T.guard(Ix.bin("?=", Ix.var(kw), Ix.const(t)), reads[t]))
    view = T.gen(v, zero, m, T.gen(kw, zero, Ix.const(5), gathered))
    ones = T.gen(kw, zero, Ix.const(5), T.lit(1, 1))
    conds = [ix_free_of(m, v), ix_free_of(m, ks), free_of(a, ks), free_of(a, kw)]
    conds += [c for i, j in zip(rows, cols, strict=True)
              for c in (ix_free_of(i, ks), ix_free_of(j, ks), ix_free_of(i, kw), ix_free_of(j, kw))]
    return rewrite(T.gen(v, zero, m, lhs)).to(
        T.gen(v, zero, m, T.sum(ks, zero, Ix.const(5), T.sbin(
            "*", T.get(T.get(view, Ix.var(v)), Ix.var(ks)), T.get(ones, Ix.var(ks))))),
        *conds)


# -- latent vector idioms (--idioms avx2): a scalar factor becomes a broadcast ------------
#
#   GEN [l < w] c * b[l]         = GEN [l < w] (GEN [lb < w] c)[l] * b[l]   (lanes_bcast_mul)
#   GEN [l < w] c * b[l] + d[l]  = GEN [l < w] (GEN [lb < w] c)[l] * b[l] + d[l]
#                                                                  (lanes_bcast_fmadd)
#
# with c, b, d free of l: the body of avx2_broadcast appears, and the generation is then
# the body of avx2_mul / avx2_fmadd (coq/Targets/BlasLatent.v).  Only searched with the
# vector idioms (`lane_egglog_rules`), so the BLAS e-graphs are as before.

def _lane_read(e: A.Expr, var: str) -> bool:
    return isinstance(e, A.Get) and e.index == A.IVar(var) and var not in A.free_vars(e.tensor)


def _bcast_parts(e: A.Expr) -> tuple[A.Expr, A.Expr, A.Expr | None] | None:
    """(c, b[l], d[l] or None) when `e` is GEN [l < w] c * b[l] (+ d[l])."""
    if not (isinstance(e, A.Gen) and e.lo == ZERO and isinstance(e.body, A.SBin)):
        return None
    prod, rest = e.body, None
    if prod.op == "+":
        prod, rest = e.body.left, e.body.right
        if not _lane_read(rest, e.var):
            return None
    if not (isinstance(prod, A.SBin) and prod.op == "*"):
        return None
    c, b = prod.left, prod.right
    if e.var in A.free_vars(c) or not _lane_read(b, e.var):
        return None
    if isinstance(c, A.Get) and isinstance(c.tensor, A.Gen):
        return None   # already a broadcast lane: the rule would not terminate
    return c, b, rest


def _bcast(e: A.Expr) -> A.Expr | None:
    parts = _bcast_parts(e)
    if parts is None:
        return None
    assert isinstance(e, A.Gen)
    c, b, d = parts
    lb = A.fresh_name("lb", _names_in(e))
    lane = A.Get(A.Gen(lb, ZERO, e.hi, c), A.IVar(e.var))
    prod = A.SBin("*", lane, b)
    return A.Gen(e.var, ZERO, e.hi, prod if d is None else A.SBin("+", prod, d))


def _bcast_steps(pat: Pattern, e: A.Expr) -> list[str]:
    parts = _bcast_parts(e)
    assert parts is not None
    lemma = "lanes_bcast_mul" if parts[2] is None else "lanes_bcast_fmadd"
    return [f"rw {lemma} at ({pat(e)})."]


LANE_RULES: tuple[Rule, ...] = (
    Rule("lanes_bcast",
         "a scalar factor of a lane-wise product is a broadcast vector's lane",
         (LemmaUse("lanes_bcast_mul", True, "genr"), LemmaUse("lanes_bcast_fmadd", True, "genr")),
         ("rw lanes_bcast_mul at (_)",), _bcast, _bcast_steps),
)


def lane_egglog_rules(lb: str) -> list[object]:
    """LANE_RULES as egglog rewrites; `lb` the broadcast's binder name (fresh)."""
    (v,) = vars_("bv", String)
    (w,) = vars_("bw", Ix)
    c, b, d = vars_("bc bb bd", T)
    zero = Ix.const(0)
    lane = T.get(T.gen(lb, zero, w, c), Ix.var(v))
    mul = T.sbin("*", c, T.get(b, Ix.var(v)))
    conds = (free_of(c, v), free_of(b, v), free_of(c, lb), ix_free_of(w, lb))
    return [
        rewrite(T.gen(v, zero, w, mul)).to(
            T.gen(v, zero, w, T.sbin("*", lane, T.get(b, Ix.var(v)))), *conds),
        rewrite(T.gen(v, zero, w, T.sbin("+", mul, T.get(d, Ix.var(v))))).to(
            T.gen(v, zero, w, T.sbin("+", T.sbin("*", lane, T.get(b, Ix.var(v))),
                                     T.get(d, Ix.var(v)))),
            *conds, free_of(d, v)),
    ]
