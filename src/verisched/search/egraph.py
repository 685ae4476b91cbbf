"""ATL terms as egglog terms, and back.

Binders are kept as *names* (the program's own loop names), not de Bruijn
indices (docs/decisions.md, issue 14): every rule of the search moves whole
binders without creating or renaming any, so the names Coq shows, the
certificate's `at` patterns and the found program are the user's; what de
Bruijn indices buy LIAR (no capture when a term moves under a binder) is
bought here by side conditions stated as egglog relations: `free_of(t, s)`
(term `t` does not mention the name `s`), derived bottom-up for every binder
name of the program, and `closed_ix(i)` (an extent that mentions only size
parameters).  Index expressions and guard predicates share one sort `Ix`;
no rule rewrites them, so each index e-class holds one term.
"""

from __future__ import annotations

from collections.abc import Iterable

from egglog import EGraph, String, StringLike, i64, i64Like, relation, rule, ruleset, vars_
from egglog import Expr as EExpr
from egglog.deconstruct import get_callable_args, get_callable_fn, get_literal_value

from verisched.pybridge import terms as A


class Ix(EExpr):
    """An index expression or a guard predicate."""

    @classmethod
    def var(cls, name: StringLike) -> Ix: ...
    @classmethod
    def const(cls, value: i64Like) -> Ix: ...
    @classmethod
    def bin(cls, op: StringLike, left: Ix, right: Ix) -> Ix: ...
    @classmethod
    def true(cls) -> Ix: ...
    @classmethod
    def false(cls) -> Ix: ...


class T(EExpr):
    """A tensor or scalar expression (pybridge/terms.py, without memories)."""

    @classmethod
    def var(cls, name: StringLike) -> T: ...
    @classmethod
    def zero(cls) -> T: ...
    @classmethod
    def lit(cls, num: i64Like, den: i64Like) -> T: ...
    @classmethod
    def gen(cls, v: StringLike, lo: Ix, hi: Ix, body: T) -> T: ...
    @classmethod
    def sum(cls, v: StringLike, lo: Ix, hi: Ix, body: T) -> T: ...
    @classmethod
    def guard(cls, p: Ix, body: T) -> T: ...
    @classmethod
    def let(cls, v: StringLike, value: T, body: T) -> T: ...
    @classmethod
    def get(cls, t: T, i: Ix) -> T: ...
    @classmethod
    def tadd(cls, a: T, b: T) -> T: ...
    @classmethod
    def sbin(cls, op: StringLike, a: T, b: T) -> T: ...
    @classmethod
    def concat(cls, n1: Ix, n2: Ix, a: T, b: T) -> T: ...
    @classmethod
    def transpose(cls, n: Ix, m: Ix, a: T) -> T: ...
    @classmethod
    def split(cls, k: Ix, n: Ix, a: T) -> T: ...
    @classmethod
    def ixarg(cls, i: Ix) -> T: ...
    @classmethod
    def nil(cls) -> T: ...
    @classmethod
    def cons(cls, head: T, tail: T) -> T: ...
    @classmethod
    def call(cls, name: StringLike, args: T) -> T: ...


class SearchEncodingError(ValueError):
    """A program construct the search does not encode (a reshape other than concat,
    transpose and split, a memory marker)."""


# -- relations: side conditions -------------------------------------------------------

free_of = relation("free_of", T, String)
ix_free_of = relation("ix_free_of", Ix, String)
binder_name = relation("binder_name", String)
size_name = relation("size_name", String)
closed_ix = relation("closed_ix", Ix)
is_root = relation("is_root", T)


def _side_rules():  # noqa: ANN202 - an egglog Ruleset
    s, x, op = vars_("s x op", String)
    i, j, lo, hi = vars_("i j lo hi", Ix)
    a, b = vars_("a b", T)
    (v,) = vars_("v", String)
    n, m = vars_("n m", i64)
    return ruleset(
        # index expressions
        rule(Ix.var(x), binder_name(s), x != s).then(ix_free_of(Ix.var(x), s)),
        rule(Ix.const(n), binder_name(s)).then(ix_free_of(Ix.const(n), s)),
        rule(Ix.true(), binder_name(s)).then(ix_free_of(Ix.true(), s)),
        rule(Ix.false(), binder_name(s)).then(ix_free_of(Ix.false(), s)),
        rule(Ix.bin(op, i, j), ix_free_of(i, s), ix_free_of(j, s)).then(
            ix_free_of(Ix.bin(op, i, j), s)),
        rule(Ix.var(x), size_name(x)).then(closed_ix(Ix.var(x))),
        rule(Ix.const(n)).then(closed_ix(Ix.const(n))),
        rule(Ix.bin(op, i, j), closed_ix(i), closed_ix(j)).then(closed_ix(Ix.bin(op, i, j))),
        # tensor expressions
        rule(T.var(x), binder_name(s), x != s).then(free_of(T.var(x), s)),
        rule(T.zero(), binder_name(s)).then(free_of(T.zero(), s)),
        rule(T.lit(n, m), binder_name(s)).then(free_of(T.lit(n, m), s)),
        rule(T.nil(), binder_name(s)).then(free_of(T.nil(), s)),
        rule(T.ixarg(i), ix_free_of(i, s)).then(free_of(T.ixarg(i), s)),
        rule(T.get(a, i), free_of(a, s), ix_free_of(i, s)).then(free_of(T.get(a, i), s)),
        rule(T.tadd(a, b), free_of(a, s), free_of(b, s)).then(free_of(T.tadd(a, b), s)),
        rule(T.sbin(op, a, b), free_of(a, s), free_of(b, s)).then(free_of(T.sbin(op, a, b), s)),
        rule(T.cons(a, b), free_of(a, s), free_of(b, s)).then(free_of(T.cons(a, b), s)),
        rule(T.call(x, a), free_of(a, s)).then(free_of(T.call(x, a), s)),
        rule(T.guard(i, a), ix_free_of(i, s), free_of(a, s)).then(free_of(T.guard(i, a), s)),
        rule(T.concat(i, j, a, b), ix_free_of(i, s), ix_free_of(j, s), free_of(a, s),
             free_of(b, s)).then(free_of(T.concat(i, j, a, b), s)),
        rule(T.transpose(i, j, a), ix_free_of(i, s), ix_free_of(j, s), free_of(a, s)).then(
            free_of(T.transpose(i, j, a), s)),
        rule(T.split(i, j, a), ix_free_of(i, s), ix_free_of(j, s), free_of(a, s)).then(
            free_of(T.split(i, j, a), s)),
        # binders: the bound name is not free; another one is free in the body or not
        *[rule(ctor(v, lo, hi, a), ix_free_of(lo, s), ix_free_of(hi, s), binder_name(s),
               v == s).then(free_of(ctor(v, lo, hi, a), s)) for ctor in (T.gen, T.sum)],
        *[rule(ctor(v, lo, hi, a), ix_free_of(lo, s), ix_free_of(hi, s), free_of(a, s)).then(
            free_of(ctor(v, lo, hi, a), s)) for ctor in (T.gen, T.sum)],
        rule(T.let(v, a, b), free_of(a, s), binder_name(s), v == s).then(
            free_of(T.let(v, a, b), s)),
        rule(T.let(v, a, b), free_of(a, s), free_of(b, s)).then(free_of(T.let(v, a, b), s)),
        name="side_conditions",
    )


SIDE_RULES = _side_rules()


# -- AST -> egglog ----------------------------------------------------------------------

def ix_to_egg(i: A.Idx | A.Pred) -> Ix:
    if isinstance(i, A.IVar):
        return Ix.var(i.name)
    if isinstance(i, A.IConst):
        return Ix.const(i.value)
    if isinstance(i, A.IBin):
        return Ix.bin(i.op, ix_to_egg(i.left), ix_to_egg(i.right))
    if isinstance(i, A.PBool):
        return Ix.true() if i.value else Ix.false()
    if isinstance(i, A.PCmp):
        return Ix.bin("?" + i.op, ix_to_egg(i.left), ix_to_egg(i.right))
    if isinstance(i, A.PAnd):
        return Ix.bin("&&", ix_to_egg(i.left), ix_to_egg(i.right))
    raise SearchEncodingError(f"not an index expression: {i!r}")


def to_egg(e: A.Expr) -> T:  # noqa: C901 - one case per constructor
    """The egglog term of an ATL expression."""
    if isinstance(e, A.Var):
        return T.var(e.name)
    if isinstance(e, A.Zero):
        return T.zero()
    if isinstance(e, A.Lit):
        return T.lit(e.num, e.den)
    if isinstance(e, A.Gen):
        return T.gen(e.var, ix_to_egg(e.lo), ix_to_egg(e.hi), to_egg(e.body))
    if isinstance(e, A.Sum):
        return T.sum(e.var, ix_to_egg(e.lo), ix_to_egg(e.hi), to_egg(e.body))
    if isinstance(e, A.Guard):
        return T.guard(ix_to_egg(e.pred), to_egg(e.body))
    if isinstance(e, A.Let):
        return T.let(e.var, to_egg(e.value), to_egg(e.body))
    if isinstance(e, A.Get):
        return T.get(to_egg(e.tensor), ix_to_egg(e.index))
    if isinstance(e, A.TAdd):
        return T.tadd(to_egg(e.left), to_egg(e.right))
    if isinstance(e, A.SBin):
        return T.sbin(e.op, to_egg(e.left), to_egg(e.right))
    if isinstance(e, A.Concat):
        return T.concat(ix_to_egg(e.n1), ix_to_egg(e.n2), to_egg(e.left), to_egg(e.right))
    if isinstance(e, A.Transpose):
        return T.transpose(ix_to_egg(e.n), ix_to_egg(e.m), to_egg(e.body))
    if isinstance(e, A.Split):   # the rows of im2col's matrix, viewed as the output
        return T.split(ix_to_egg(e.k), ix_to_egg(e.n), to_egg(e.body))
    if isinstance(e, A.Instr):
        args = T.nil()
        for a in reversed(e.args):
            args = T.cons(T.ixarg(ix_to_egg(a)) if A.is_idx(a) else to_egg(a), args)  # type: ignore[arg-type]
        return T.call(e.name, args)
    raise SearchEncodingError(
        f"the search does not handle {type(e).__name__} yet (only gen, sum, guards, lets, "
        "accesses, literals, + and *, concat, transpose and split)")


# -- egglog -> AST ----------------------------------------------------------------------

def _lit(x: object) -> object:
    v = get_literal_value(x)  # type: ignore[call-overload]
    if v is None:
        raise SearchEncodingError(f"expected a literal, got {x!r}")
    return v


_CMP = {"?<": "<", "?<=": "<=", "?=": "="}


def ix_from_egg(x: Ix) -> A.Idx | A.Pred:
    fn, args = get_callable_fn(x), get_callable_args(x)
    if fn == Ix.var:
        return A.IVar(str(_lit(args[0])))
    if fn == Ix.const:
        return A.IConst(int(_lit(args[0])))  # type: ignore[call-overload]
    if fn == Ix.true:
        return A.PBool(True)
    if fn == Ix.false:
        return A.PBool(False)
    if fn == Ix.bin:
        op = str(_lit(args[0]))
        left, right = ix_from_egg(args[1]), ix_from_egg(args[2])  # type: ignore[arg-type]
        if op in _CMP:
            return A.PCmp(_CMP[op], left, right)  # type: ignore[arg-type]
        if op == "&&":
            return A.PAnd(left, right)  # type: ignore[arg-type]
        return A.IBin(op, left, right)  # type: ignore[arg-type]
    raise SearchEncodingError(f"not an index term: {x!r}")


def from_egg(x: T) -> A.Expr:  # noqa: C901 - one case per constructor
    """The ATL expression of an extracted egglog term."""
    fn, args = get_callable_fn(x), list(get_callable_args(x))
    ix, ex = ix_from_egg, from_egg
    if fn == T.var:
        return A.Var(str(_lit(args[0])))
    if fn == T.zero:
        return A.Zero()
    if fn == T.lit:
        return A.Lit(int(_lit(args[0])), int(_lit(args[1])))  # type: ignore[call-overload]
    if fn == T.gen:
        return A.Gen(str(_lit(args[0])), ix(args[1]), ix(args[2]), ex(args[3]))  # type: ignore[arg-type]
    if fn == T.sum:
        return A.Sum(str(_lit(args[0])), ix(args[1]), ix(args[2]), ex(args[3]))  # type: ignore[arg-type]
    if fn == T.guard:
        return A.Guard(ix(args[0]), ex(args[1]))  # type: ignore[arg-type]
    if fn == T.let:
        return A.Let(str(_lit(args[0])), ex(args[1]), ex(args[2]))
    if fn == T.get:
        return A.Get(ex(args[0]), ix(args[1]))  # type: ignore[arg-type]
    if fn == T.tadd:
        return A.TAdd(ex(args[0]), ex(args[1]))
    if fn == T.sbin:
        return A.SBin(str(_lit(args[0])), ex(args[1]), ex(args[2]))
    if fn == T.concat:
        return A.Concat(ix(args[0]), ix(args[1]), ex(args[2]), ex(args[3]))  # type: ignore[arg-type]
    if fn == T.transpose:
        return A.Transpose(ix(args[0]), ix(args[1]), ex(args[2]))  # type: ignore[arg-type]
    if fn == T.split:
        return A.Split(ix(args[0]), ix(args[1]), ex(args[2]))  # type: ignore[arg-type]
    if fn == T.call:
        out: list[A.Expr | A.Idx] = []
        rest = args[1]
        while get_callable_fn(rest) == T.cons:
            head, rest = get_callable_args(rest)
            if get_callable_fn(head) == T.ixarg:
                out.append(ix(get_callable_args(head)[0]))  # type: ignore[arg-type]
            else:
                out.append(ex(head))  # type: ignore[arg-type]
        return A.Instr(str(_lit(args[0])), tuple(out))
    raise SearchEncodingError(f"not a term of the encoding: {x!r}")


def seed(egraph: EGraph, binders: Iterable[str], sizes: Iterable[str]) -> None:
    """State the names the side conditions range over."""
    egraph.register(*[binder_name(String(b)) for b in sorted(set(binders))],
                    *[size_name(String(s)) for s in sorted(set(sizes))])
