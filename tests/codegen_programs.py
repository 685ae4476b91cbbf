"""Random well-shaped normal-form ATL programs for the differential codegen tests.

Generation is top-down from a declared shape, so every subterm has exactly
the extents its context expects; reshape operators are chosen only where the
shape allows them (flatten needs a product extent, split a cdiv one), with
extents that are often not multiples of the split factor.  Binder names come
from a small pool so shadowing is exercised; accesses use offsets that fall
out of bounds, which ATL defines as zero.
"""

from __future__ import annotations

from hypothesis import strategies as st

from verisched.pybridge.terms import (
    Concat,
    Expr,
    Flatten,
    Gen,
    Get,
    Guard,
    IBin,
    IConst,
    Idx,
    IVar,
    Let,
    Lit,
    PadL,
    PadR,
    PAnd,
    PBool,
    PCmp,
    Pred,
    SBin,
    Split,
    Sum,
    TAdd,
    Transpose,
    TruncL,
    TruncR,
    Var,
    Zero,
)

N, M = IVar("n"), IVar("m")
ENV: dict[str, tuple[Idx, ...]] = {"A": (N, M), "B": (M,), "C": (IConst(3), N), "s": ()}
LOOP_NAMES = ("i", "j", "k")
LET_NAMES = ("x", "y")
SIZE_SETS = [{"n": 1, "m": 1}, {"n": 5, "m": 3}, {"n": 7, "m": 6}]


def plus(a: Idx, c: int) -> Idx:
    if c == 0:
        return a
    if isinstance(a, IConst):
        return IConst(a.value + c)
    return IBin("+", a, IConst(c)) if c > 0 else IBin("-", a, IConst(-c))


class Gen_:
    """Draws terms; `scope` holds loop variables, `tensors` names with their shapes."""

    def __init__(self, draw, dtype: str) -> None:
        self.draw = draw
        self.dtype = dtype

    def pick(self, xs):
        return self.draw(st.sampled_from(list(xs)))

    def int_(self, lo: int, hi: int) -> int:
        return self.draw(st.integers(lo, hi))

    # -- indices and predicates ------------------------------------------------
    def index(self, scope: list[str]) -> Idx:
        kind = self.pick(["var", "var", "off", "const", "sum", "size"] if scope else
                         ["const", "size"])
        if kind == "const":
            return IConst(self.int_(-1, 4))
        if kind == "size":
            return plus(self.pick([N, M]), self.int_(-1, 0))
        v = IVar(self.pick(scope))
        if kind == "var":
            return v
        if kind == "off":
            return plus(v, self.pick([-2, -1, 1]))
        return IBin("+", v, IVar(self.pick(scope)))

    def pred(self, scope: list[str]) -> Pred:
        kind = self.pick(["cmp", "cmp", "cmp", "and", "true"])
        if kind == "true":
            return PBool(True)
        if kind == "and":
            return PAnd(self.pred(scope), self.pred(scope))
        return PCmp(self.pick(["<", "<=", "="]), self.index(scope), self.index(scope))

    # -- tensors ------------------------------------------------------------------
    def tensor(self, shape: tuple[Idx, ...], depth: int, scope: list[str],
               tensors: dict[str, tuple[Idx, ...]]) -> Expr:
        if not shape:
            return self.scalar(depth, scope, tensors)
        E, rest = shape[0], shape[1:]
        opts = ["gen", "gen", "gen"]
        if depth > 0:
            opts += ["guard", "sum", "let", "concat", "padr", "padl", "truncr", "truncl",
                     "tadd"]
            if rest:
                opts += ["transpose", "split", "split"]
            if isinstance(E, IConst) and E.value in (4, 6) or (
                    isinstance(E, IBin) and E.op == "*"):
                opts += ["flatten", "flatten"]
        kind = self.pick(opts)
        d = depth - 1
        if kind == "gen":
            v = self.pick(LOOP_NAMES)
            lo = self.pick([0, 0, 0, 1, -1])
            inner = [x for x in scope if x != v] + [v]
            hi = plus(E, lo) if lo else E
            return Gen(v, IConst(lo), hi, self.tensor(rest, depth, inner, tensors))
        if kind == "guard":
            return Guard(self.pred(scope), self.tensor(shape, d, scope, tensors))
        if kind == "sum":
            v = self.pick(LOOP_NAMES)
            lo, hi = self.pick([(0, 2), (0, 3), (1, 3), (2, 1)])
            inner = [x for x in scope if x != v] + [v]
            return Sum(v, IConst(lo), IConst(hi), self.tensor(shape, d, inner, tensors))
        if kind == "let":
            x = self.pick(LET_NAMES)
            vshape = self.shape(self.int_(0, 2))
            value = self.tensor(vshape, d, scope, tensors)
            return Let(x, value, self.tensor(shape, d, scope, {**tensors, x: vshape}))
        if kind == "tadd":
            # A tensor <+> (stored left, accumulated right: core.lower_tadd), one operand
            # possibly a row shorter (the sum is the longer, zero-padded: Core.v).
            short = IConst(max(E.value - 1, 0)) if isinstance(E, IConst) else plus(E, -1)
            side = self.pick(["none", "none", "left", "right"])
            left = self.tensor((short if side == "left" else E, *rest), d, scope, tensors)
            right = self.tensor((short if side == "right" else E, *rest), d, scope, tensors)
            return TAdd(left, right)
        if kind == "concat":
            if isinstance(E, IConst) and E.value >= 2:
                n1 = self.int_(1, E.value - 1)
                a, b = IConst(n1), IConst(E.value - n1)
            elif isinstance(E, IConst):  # 0 or 1 rows: an empty left part, never E - 1 < 0
                a, b = IConst(0), E
            else:
                a, b = IConst(1), plus(E, -1)
            left = (Zero() if self.draw(st.integers(0, 5)) == 0
                    else self.tensor((a, *rest), d, scope, tensors))
            return Concat(a, b, left, self.tensor((b, *rest), d, scope, tensors))
        if kind in ("padr", "padl"):
            if isinstance(E, IConst):
                k = self.int_(0, E.value)
                kk, nn = IConst(k), IConst(E.value - k)
            else:
                kk, nn = IConst(1), plus(E, -1)
            body = self.tensor((nn, *rest), d, scope, tensors)
            return PadR(kk, nn, body) if kind == "padr" else PadL(kk, nn, body)
        if kind in ("truncr", "truncl"):
            c = self.int_(0, 2)
            inner_e = plus(E, c)
            body = self.tensor((inner_e, *rest), d, scope, tensors)
            return TruncR(E, body) if kind == "truncr" else TruncL(E, inner_e, body)
        if kind == "transpose":
            B = rest[0]
            return Transpose(B, E, self.tensor((B, E, *rest[1:]), d, scope, tensors))
        if kind == "split":
            B = rest[0]
            if isinstance(E, IConst) and isinstance(B, IConst) and B.value >= 1:
                k = B.value
                n = IConst(self.int_(max((E.value - 1) * k + 1, 0), E.value * k))
                return Split(B, n, self.tensor((n, *rest[1:]), d, scope, tensors))
            if isinstance(E, IBin) and E.op == "cdiv" and E.right == B:
                return Split(B, E.left, self.tensor((E.left, *rest[1:]), d, scope, tensors))
            return self.tensor(shape, d, scope, tensors)
        if kind == "flatten":
            if isinstance(E, IConst):
                a, b = self.pick([(2, 2), (1, 4), (4, 1)] if E.value == 4 else
                                 [(2, 3), (3, 2), (6, 1)])
                A, B = IConst(a), IConst(b)
            else:
                assert isinstance(E, IBin)
                A, B = E.left, E.right
            return Flatten(A, B, self.tensor((A, B, *rest), d, scope, tensors))
        raise AssertionError(kind)

    def shape(self, rank: int) -> tuple[Idx, ...]:
        return tuple(self.pick([IConst(1), IConst(3), IConst(4), IConst(6), N, M,
                                IBin("*", N, IConst(2)), IBin("cdiv", N, IConst(2)),
                                plus(N, 1)])
                     for _ in range(rank))

    # -- scalars ------------------------------------------------------------------
    def scalar(self, depth: int, scope: list[str], tensors: dict[str, tuple[Idx, ...]]
               ) -> Expr:
        opts = ["access", "access", "access"]
        if depth > 0:
            opts += ["bin", "bin", "tadd", "guard", "sum", "let"]
        kind = self.pick(opts)
        d = depth - 1
        if kind == "access":
            name = self.pick(sorted(tensors))
            e: Expr = Var(name)
            for _ in tensors[name]:
                e = Get(e, self.index(scope))
            return e
        if kind in ("bin", "tadd"):
            a = self.operand(d, scope, tensors)
            # At most one zero operand, so the program's rank stays determined.
            b = self.scalar(d, scope, tensors) if isinstance(a, Zero) else \
                self.operand(d, scope, tensors)
            if kind == "tadd":
                return TAdd(a, b)
            return SBin(self.pick(["+", "*", "*", "/"]), a, b)
        if kind == "guard":
            return Guard(self.pred(scope), self.scalar(d, scope, tensors))
        if kind == "sum":
            v = self.pick(LOOP_NAMES)
            lo, hi = self.pick([(0, 3), (0, 4), (-1, 2), (2, 2)])
            inner = [x for x in scope if x != v] + [v]
            return Sum(v, IConst(lo), IConst(hi), self.scalar(d, inner, tensors))
        if kind == "let":
            x = self.pick(LET_NAMES)
            vshape = self.shape(self.int_(0, 1))
            value = self.tensor(vshape, d, scope, tensors)
            return Let(x, value, self.scalar(d, scope, {**tensors, x: vshape}))
        raise AssertionError(kind)

    def operand(self, depth: int, scope: list[str], tensors: dict[str, tuple[Idx, ...]]
                ) -> Expr:
        pick = self.draw(st.integers(0, 7))
        if pick == 0:
            return Zero()
        if pick == 1:  # a literal constant (slit n d), rounded into the kernel's type
            return Lit(self.int_(1, 9), self.int_(1, 4))
        return self.scalar(depth, scope, tensors)


@st.composite
def programs(draw, dtype: str = "float32") -> Expr:
    """A random program whose output shape is one of a few size-dependent forms."""
    g = Gen_(draw, dtype)
    shape = g.shape(draw(st.integers(1, 3)))
    return g.tensor(shape, draw(st.integers(1, 3)), [], {"A": ENV["A"], "B": ENV["B"],
                                                         "C": ENV["C"], "s": ()})
