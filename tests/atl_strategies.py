"""Hypothesis strategies for random, well-typed ATL programs.

Used by the property tests (print/parse round trip through Coq, interpreter
against Coq's own evaluation), and available to any component that wants to
fuzz against the reference semantics.  Programs range over one fixed
signature (SIGNATURE) so a single Coq section can elaborate all of them.

Typing mirrors Coq's: an expression is generated for a requested rank, and
`tzero` appears only where its type is fixed by the context, because Coq
cannot infer the element type of a lone `tzero` (typeclass search then
diverges).  Binder names are unique per program so Coq never renames them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

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

SIZES = ("n", "m")
TENSORS = {"a": 0, "u": 1, "w": 2}
SIGNATURE = (SIZES, TENSORS)


@dataclass
class _Ctx:
    idx_vars: tuple[str, ...] = SIZES
    tensors: dict[str, int] = field(default_factory=lambda: dict(TENSORS))
    counter: list[int] = field(default_factory=lambda: [0])

    def fresh(self, base: str) -> str:
        self.counter[0] += 1
        return f"{base}{self.counter[0]}"

    def with_idx(self, v: str) -> _Ctx:
        return _Ctx(self.idx_vars + (v,), self.tensors, self.counter)

    def with_tensor(self, v: str, rank: int) -> _Ctx:
        return _Ctx(self.idx_vars, {**self.tensors, v: rank}, self.counter)


@st.composite
def indices(draw: st.DrawFn, ctx: _Ctx, depth: int = 2) -> Idx:
    if depth <= 0 or draw(st.integers(0, 2)) == 0:
        if draw(st.booleans()):
            return IVar(draw(st.sampled_from(ctx.idx_vars)))
        return IConst(draw(st.integers(-2, 3)))
    op = draw(st.sampled_from(["+", "-", "+", "-", "*", "/", "%", "cdiv"]))
    left = draw(indices(ctx, depth - 1))
    if op in ("/", "%", "cdiv"):
        right: Idx = IConst(draw(st.integers(1, 3)))
    else:
        right = draw(indices(ctx, depth - 1))
    return IBin(op, left, right)


@st.composite
def preds(draw: st.DrawFn, ctx: _Ctx, depth: int = 1) -> Pred:
    k = draw(st.integers(0, 5))
    if k == 0:
        return PBool(draw(st.booleans()))
    if k == 1 and depth > 0:
        return PAnd(draw(preds(ctx, depth - 1)), draw(preds(ctx, depth - 1)))
    op = draw(st.sampled_from(["<", "<=", "="]))
    return PCmp(op, draw(indices(ctx, 1)), draw(indices(ctx, 1)))


def _bound(draw: st.DrawFn, ctx: _Ctx) -> tuple[Idx, Idx]:
    hi_choices = [IVar("n"), IVar("m"), IConst(draw(st.integers(0, 3))),
                  IBin("+", IVar("n"), IConst(1))]
    hi = draw(st.sampled_from(hi_choices))
    lo = IConst(0) if draw(st.integers(0, 3)) else IConst(draw(st.integers(-1, 1)))
    return lo, hi


@st.composite
def exprs(draw: st.DrawFn, rank: int, ctx: _Ctx | None = None, depth: int = 3,
          typed: bool = True) -> Expr:
    """An expression of `rank`; `typed` says the context fixes its type."""
    ctx = ctx or _Ctx()
    leaves = [t for t, r in ctx.tensors.items() if r >= rank]
    if depth <= 0 or draw(st.integers(0, 4)) == 0:
        if leaves and draw(st.integers(0, 5)):
            name = draw(st.sampled_from(leaves))
            e: Expr = Var(name)
            for _ in range(ctx.tensors[name] - rank):
                e = Get(e, draw(indices(ctx, 1)))
            return e
        if typed:
            if rank == 0 and draw(st.integers(0, 2)) == 0:
                return Lit(draw(st.integers(1, 9)), draw(st.integers(1, 4)))
            return Zero()
        return Var(draw(st.sampled_from([t for t, r in ctx.tensors.items() if r == rank]
                                        or ["a"]))) if rank == 0 else \
            Gen(ctx.fresh("z"), IConst(0), IConst(1), draw(exprs(rank - 1, ctx, 0, False)))
    kinds = ["gen", "sum", "guard", "let", "tadd", "get"]
    if rank == 0:
        kinds += ["sbin", "sbin"]
    if rank >= 1:
        kinds += ["gen", "trunc_r", "trunc_l", "pad_r", "pad_l", "concat", "flatten"]
    if rank >= 2:
        kinds += ["transpose", "split"]
    kind = draw(st.sampled_from(kinds))
    sub = depth - 1
    if kind == "gen" and rank >= 1:
        v = ctx.fresh("i")
        lo, hi = _bound(draw, ctx)
        return Gen(v, lo, hi, draw(exprs(rank - 1, ctx.with_idx(v), sub, typed)))
    if kind == "sum":
        v = ctx.fresh("k")
        lo, hi = _bound(draw, ctx)
        return Sum(v, lo, hi, draw(exprs(rank, ctx.with_idx(v), sub, typed)))
    if kind == "guard":
        return Guard(draw(preds(ctx)), draw(exprs(rank, ctx, sub, typed)))
    if kind == "let":
        v = ctx.fresh("x")
        r = draw(st.integers(0, 2))
        value = draw(exprs(r, ctx, sub, False))
        return Let(v, value, draw(exprs(rank, ctx.with_tensor(v, r), sub, typed)))
    if kind == "tadd":
        left = draw(exprs(rank, ctx, sub, typed))
        return TAdd(left, draw(exprs(rank, ctx, sub, True)))
    if kind == "sbin":
        op = draw(st.sampled_from(["+", "*", "/"]))
        return SBin(op, draw(exprs(0, ctx, sub, False)), draw(exprs(0, ctx, sub, True)))
    if kind == "get" or (kind == "gen" and rank == 0):
        return Get(draw(exprs(rank + 1, ctx, sub, False)), draw(indices(ctx, 1)))
    size = draw(st.sampled_from([IVar("n"), IVar("m"), IConst(2), IConst(3)]))
    size2 = draw(st.sampled_from([IVar("n"), IConst(1), IConst(2)]))
    if kind == "trunc_r":
        return TruncR(size, draw(exprs(rank, ctx, sub, False)))
    if kind == "trunc_l":
        return TruncL(size2, size, draw(exprs(rank, ctx, sub, False)))
    if kind == "pad_r":
        return PadR(size2, size, draw(exprs(rank, ctx, sub, False)))
    if kind == "pad_l":
        return PadL(size2, size, draw(exprs(rank, ctx, sub, False)))
    if kind == "concat":
        return Concat(size, size2, draw(exprs(rank, ctx, sub, False)),
                      draw(exprs(rank, ctx, sub, False)))
    if kind == "flatten":
        return Flatten(size, size2, draw(exprs(rank + 1, ctx, sub, False)))
    if kind == "transpose":
        return Transpose(size, size2, draw(exprs(rank, ctx, sub, False)))
    return Split(size2, size, draw(exprs(rank - 1, ctx, sub, False)))


@st.composite
def programs(draw: st.DrawFn, max_rank: int = 2, depth: int = 3) -> tuple[Expr, int]:
    """A random program and its rank (over SIGNATURE)."""
    rank = draw(st.integers(0, max_rank))
    return draw(exprs(rank, _Ctx(), depth, True)), rank
