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

- fold_shift3: `a[i] + a[i+1] + a[i+2]` -> `SUM [k < 3] a[i+k]`
  (`rw fold_shift3 at (..)`);
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


def _fold_shift3(e: A.Expr) -> A.Expr | None:
    if not (isinstance(e, A.SBin) and e.op == "+" and isinstance(e.left, A.SBin)
            and e.left.op == "+"):
        return None
    x, y, z = e.left.left, e.left.right, e.right
    if not (isinstance(x, A.Get) and isinstance(y, A.Get) and isinstance(z, A.Get)):
        return None
    if not (x.tensor == y.tensor == z.tensor and y.index == _shift(x.index, 1)
            and z.index == _shift(x.index, 2)):
        return None
    k = A.fresh_name("ks", _names_in(e))
    return A.Sum(k, ZERO, A.IConst(3), A.Get(x.tensor, A.IBin("+", x.index, A.IVar(k))))


def _fold_shift3_steps(pat: Pattern, e: A.Expr) -> list[str]:
    return [f"rw fold_shift3 at ({pat(e)})."]


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


LATENT_RULES: tuple[Rule, ...] = (
    Rule("fold_shift3",
         "three shifted reads are a reduction over the shift (LIAR's latent idioms)",
         (LemmaUse("fold_shift3", True, "sadd"),), ("rw fold_shift3 at (_)",),
         _fold_shift3, _fold_shift3_steps),
    Rule("window_gemv",
         "a weighted reduction of shifted reads is the window times a filled vector",
         (LemmaUse("smul_sum_l", True, "smul"), LemmaUse("smul_comm'", True, "smul"),
          LemmaUse("window_gemv", True, "genr")),
         ("rw window_gemv at (_)",), _window_gemv, _window_gemv_steps),
)


def latent_egglog_rules(names: tuple[str, str, str, str]) -> list[object]:
    """The two rules as egglog rewrites, with the binder names `latent_names` chose."""
    ks, iw, kw, _ = names
    v, k = vars_("lv lk", String)
    ix, n, m = vars_("lix ln lm", Ix)
    a, c = vars_("la lc", T)
    zero = Ix.const(0)
    fold_lhs = T.sbin("+", T.sbin("+", T.get(a, ix), T.get(a, Ix.bin("+", ix, Ix.const(1)))),
                      T.get(a, Ix.bin("+", ix, Ix.const(2))))
    window = T.gen(iw, zero, n, T.gen(kw, zero, m, T.get(
        a, Ix.bin("+", Ix.var(iw), Ix.var(kw)))))
    weights = T.gen(kw, zero, m, c)
    read = T.get(a, Ix.bin("+", Ix.var(v), Ix.var(k)))
    return [
        rewrite(fold_lhs).to(
            T.sum(ks, zero, Ix.const(3), T.get(a, Ix.bin("+", ix, Ix.var(ks)))),
            ix_free_of(ix, ks), free_of(a, ks)),
        rewrite(T.gen(v, zero, n, T.sbin("*", c, T.sum(k, zero, m, read)))).to(
            T.gen(v, zero, n, T.sum(k, zero, m, T.sbin(
                "*", T.get(T.get(window, Ix.var(v)), Ix.var(k)), T.get(weights, Ix.var(k))))),
            v != k, free_of(a, v), free_of(a, k), free_of(c, v), free_of(c, k),
            ix_free_of(m, v), ix_free_of(m, k), free_of(a, iw), free_of(a, kw),
            free_of(c, kw), ix_free_of(n, iw), ix_free_of(m, kw), ix_free_of(m, iw)),
    ]


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
