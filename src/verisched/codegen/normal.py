"""Checker for the normal form of the paper's Sec. 5.1, run before lowering.

After normalization every leaf that is stored is a scalar: tensor-valued
`<+>` is stored left, accumulated right (or was expanded, tadd_expand), tensor
variables eta-expanded
(eta) and accesses pushed through generations, sums and guards
(get_gen, get_sum, get_iverson, get_tadd).  The lowering of Fig. 3 only
has rules for that shape of term, so anything else is refused here with the
offending subterm and the lemma that would remove it, instead of silently
inventing a storage layout.
"""

from __future__ import annotations

from collections.abc import Callable

from verisched.codegen.errors import NotNormalError
from verisched.pybridge.instrs import INDEX, SCALAR, InstrError, check_call, result_rank, spec_of
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
    Instr,
    Iter,
    IVar,
    Let,
    Lit,
    Mem,
    PadL,
    PadR,
    PAnd,
    PBool,
    PCmp,
    Pred,
    SBin,
    Shape,
    ShapeError,
    Split,
    Sum,
    TAdd,
    Transpose,
    TruncL,
    TruncR,
    Var,
    Zero,
    children,
    is_idx,
    rebuild,
    shape_of,
)

_MAX_SHOW = 160


def show_idx(i: Idx) -> str:
    if isinstance(i, IConst):
        return str(i.value)
    if isinstance(i, IVar):
        return i.name
    assert isinstance(i, IBin)
    if i.op == "cdiv":
        return f"cdiv ({show_idx(i.left)}) ({show_idx(i.right)})"
    return f"({show_idx(i.left)} {i.op} {show_idx(i.right)})"


def show_pred(p: Pred) -> str:
    if isinstance(p, PBool):
        return "true" if p.value else "false"
    if isinstance(p, PCmp):
        op = {"<": "<?", "<=": "<=?", "=": "=?"}[p.op]
        return f"{show_idx(p.left)} {op} {show_idx(p.right)}"
    assert isinstance(p, PAnd)
    return f"({show_pred(p.left)}) && ({show_pred(p.right)})"


def show(e: Expr) -> str:
    """Coq-like text of a term, cut short: for error messages only."""
    s = _show(e)
    return s if len(s) <= _MAX_SHOW else s[: _MAX_SHOW - 3] + "..."


def _show(e: Expr) -> str:
    if isinstance(e, Var):
        return e.name
    if isinstance(e, Zero):
        return "tzero"
    if isinstance(e, Lit):
        return f"slit {e.num} {e.den}"
    if isinstance(e, Gen):
        return f"GENR [ {show_idx(e.lo)} <= {e.var} < {show_idx(e.hi)} ] {_show(e.body)}"
    if isinstance(e, Sum):
        return f"SUMR [ {show_idx(e.lo)} <= {e.var} < {show_idx(e.hi)} ] {_show(e.body)}"
    if isinstance(e, Guard):
        return f"|[ {show_pred(e.pred)} ]| {_show(e.body)}"
    if isinstance(e, Let):
        return f"tlet {e.var} := {_show(e.value)} in {_show(e.body)}"
    if isinstance(e, Iter):
        return f"ITER [ {show_idx(e.steps)} ] {e.var} := {_show(e.init)} in {_show(e.body)}"
    if isinstance(e, Get):
        return f"{_show(e.tensor)} _[ {show_idx(e.index)} ]"
    if isinstance(e, TAdd):
        return f"({_show(e.left)} <+> {_show(e.right)})"
    if isinstance(e, SBin):
        return f"({_show(e.left)} {e.op} {_show(e.right)})"
    if isinstance(e, Mem):
        return f"in_mem {e.memory} ({_show(e.body)})"
    if isinstance(e, Instr):
        args = [show_idx(a) if isinstance(a, (IVar, IConst, IBin)) else f"({_show(a)})"
                for a in e.args]
        return " ".join([e.name, *args])
    name = type(e).__name__.lower()
    parts = []
    for v in children(e):
        parts.append(f"({_show(v)})" if not isinstance(v, (IVar, IConst, IBin)) else show_idx(v))
    return f"{name} " + " ".join(parts)


def access_base(e: Expr) -> tuple[Expr, list[Idx]]:
    """Split `x _[i] _[j]` into `x` and `[i, j]`."""
    idxs: list[Idx] = []
    while isinstance(e, Get):
        idxs.append(e.index)
        e = e.tensor
    return e, idxs[::-1]


def rank_of(e: Expr, ranks: dict[str, int], zero: int | None = None) -> int | None:
    """Rank of `e`, or None for a bare zero (whose rank is its context's).  `zero`: the
    rank a bare zero is taken at instead (0 for a program whose every leaf is zero, as
    the interpreter reads `tzero`)."""

    def rank(e: Expr) -> int | None:
        if isinstance(e, Var):
            if e.name not in ranks:
                raise NotNormalError(f"normal-form check: unknown tensor variable {e.name!r}")
            return ranks[e.name]
        if isinstance(e, Zero):
            return zero
        if isinstance(e, Gen):
            r = rank(e.body)
            return None if r is None else r + 1
        if isinstance(e, (Sum, Guard)):
            return rank(e.body)
        if isinstance(e, Let):
            inner = dict(ranks)
            inner[e.var] = rank_of(e.value, ranks) or 0
            return rank_of(e.body, inner, zero)
        if isinstance(e, Iter):
            return rank(e.init)
        if isinstance(e, Get):
            r = rank(e.tensor)
            return None if r is None else r - 1
        if isinstance(e, (TAdd, Concat)):
            r1 = rank(e.left)
            return r1 if r1 is not None else rank(e.right)
        if isinstance(e, (SBin, Lit)):
            return 0
        if isinstance(e, Mem):
            return rank(e.body)
        if isinstance(e, Instr):
            return _instr_rank(e)
        r = rank(e.body)  # type: ignore[attr-defined]
        if r is None:
            return None
        return r - 1 if isinstance(e, Flatten) else r + 1 if isinstance(e, Split) else r

    return rank(e)


def zero_valued(e: Expr) -> bool:
    """Is every leaf of `e` a bare zero (so `e` is zero at every index, of any rank)?
    Exactly the terms `rank_of` gives no rank."""
    if isinstance(e, Zero):
        return True
    if isinstance(e, (Var, SBin, Instr, Lit)):
        return False
    if isinstance(e, (TAdd, Concat)):
        return zero_valued(e.left) and zero_valued(e.right)
    if isinstance(e, Get):
        return zero_valued(e.tensor)
    if isinstance(e, Iter):
        return zero_valued(e.init) and zero_valued(e.body)
    return zero_valued(e.body)  # type: ignore[attr-defined]


def eta_iter_inits(e: Expr, env: dict[str, Shape]) -> Expr:
    """Each time iteration whose initial tensor is a bare tensor variable (an input or
    a let buffer: `ITER [ T ] u := A in ...`, the natural way to write it) with that
    variable eta-expanded (`GEN [ i < n ] A _[ i ]`, Core.v's `eta`), the normal form
    the lowering copies from; extents from `env` (the inputs) and the let values."""
    if isinstance(e, Iter):
        init = eta_iter_inits(e.init, env)
        if isinstance(init, Var) and init.name in env:
            init = _eta(init, env[init.name])
        inner = {**env, e.var: shape_of(e.init, env)} if e.var not in env else env
        return Iter(e.var, e.steps, init, eta_iter_inits(e.body, inner))
    if isinstance(e, Let):
        try:
            vshape = shape_of(e.value, env)
        except ShapeError:
            return Let(e.var, eta_iter_inits(e.value, env), e.body)
        return Let(e.var, eta_iter_inits(e.value, env),
                   eta_iter_inits(e.body, {**env, e.var: vshape}))
    return rebuild(e, _on_terms(lambda x: eta_iter_inits(x, env)))  # type: ignore[return-value]


def _eta(v: Var, shape: Shape) -> Expr:
    names = [f"vs_e{k}" for k in range(len(shape))]
    body: Expr = v
    for n in names:
        body = Get(body, IVar(n))
    for n, d in reversed(list(zip(names, shape, strict=True))):
        body = Gen(n, IConst(0), d, body)
    return body


def inline_zero_lets(e: Expr) -> Expr:
    """`tlet x := v in b` with `v` zero-valued (`GEN [ i < 2 ] tzero`): `x` is zero at
    every index, whatever rank its uses give it, so it needs no buffer; `b` with `x`
    and every access into it replaced by `tzero`.  (A buffer could not be sized: `v`
    has no extents beyond its generations, and its uses may index deeper.)"""
    if isinstance(e, Let):
        value = inline_zero_lets(e.value)
        if zero_valued(value):
            return inline_zero_lets(_zero_var(e.body, e.var))
        return Let(e.var, value, inline_zero_lets(e.body))
    return rebuild(e, _on_terms(inline_zero_lets))  # type: ignore[return-value]


def _zero_var(e: Expr, var: str) -> Expr:
    """`e` with tensor `var` (free) and the accesses into it replaced by `tzero`."""
    base, _ = access_base(e) if isinstance(e, Get) else (e, [])
    if isinstance(base, Var) and base.name == var:
        return Zero()
    if isinstance(e, Let) and e.var == var:
        return Let(e.var, _zero_var(e.value, var), e.body)
    return rebuild(e, _on_terms(lambda x: _zero_var(x, var)))  # type: ignore[return-value]


def _on_terms(f: Callable[[Expr], Expr]) -> Callable[[object], object]:
    """`f` on tensor terms; indices and predicates unchanged (for terms.rebuild)."""
    return lambda x: x if is_idx(x) or isinstance(x, (PBool, PCmp, PAnd)) else f(x)


def _instr_rank(e: Instr) -> int:
    try:
        return result_rank(check_call(e))
    except InstrError as exc:
        raise NotNormalError(f"normal-form check: {exc}") from exc


def _accumulates(e: Expr) -> bool:
    """Is `e` a reduction (a SUM, possibly under lets and guards), an instruction call
    (its target stores it by accumulating: CBLAS's beta = 1, a vector FMA), or a `<+>`
    whose right operand is one (lowered by accumulating both operands)?"""
    while isinstance(e, (Let, Guard)):
        e = e.body
    if isinstance(e, TAdd):
        return _accumulates(e.right)
    return isinstance(e, (Sum, Instr))


def two_pass_tadd(e: Expr, ranks: dict[str, int]) -> bool:
    """Whether `e` has a tensor `<+>` whose right operand does not accumulate: normal,
    but lowered in two passes (store, then accumulate), where `normalize` may make one
    loop of it (tadd_gen) and so is tried first (schedule/state.py); Sgemm's
    `C <+> SUM ...` is one pass either way."""
    def go(x: Expr, rk: dict[str, int]) -> bool:
        if isinstance(x, (Let, Iter)):
            first = x.value if isinstance(x, Let) else x.init
            inner = dict(rk)
            inner[x.var] = rank_of(first, rk) or 0
            return go(first, rk) or go(x.body, inner)
        if isinstance(x, TAdd) and rank_of(x, rk) and not _accumulates(x.right):
            return True
        return any(go(c, rk) for c in children(x)  # type: ignore[arg-type]
                   if not is_idx(c) and not isinstance(c, (PBool, PCmp, PAnd)))
    try:
        return go(e, ranks)
    except NotNormalError:
        return False


def check_normal(e: Expr, ranks: dict[str, int], rank: int) -> None:
    """Raise NotNormalError naming the first subterm outside the normal form.

    `ranks` gives the rank of each input; `rank` is the rank `e` must have.
    """
    _check(e, ranks, rank)


def _fail(e: Expr, why: str) -> None:
    raise NotNormalError(f"normal-form check: {why}\n  offending subterm: {show(e)}")


def _check(e: Expr, ranks: dict[str, int], rank: int) -> None:
    if rank < 0:
        _fail(e, "access or reshape below rank 0 (ill-shaped term)")
    if isinstance(e, Zero):
        return
    if isinstance(e, Lit):
        if rank:
            _fail(e, "literal constant used at tensor rank")
        return
    if isinstance(e, Var):
        if e.name not in ranks:
            _fail(e, f"unknown tensor variable {e.name!r}")
        if ranks[e.name] != rank:
            if rank == 0 or ranks[e.name] < rank:
                _fail(e, f"variable {e.name} of rank {ranks[e.name]} used at rank {rank}")
            _fail(e, f"tensor-valued leaf {e.name}: eta-expand it (lemma eta)")
        if rank:
            _fail(e, f"tensor-valued leaf {e.name}: eta-expand it (lemma eta)")
        return
    if isinstance(e, Get):
        base, idxs = access_base(e)
        if not isinstance(base, Var):
            _fail(e, "access into a non-variable: push it inward "
                     "(get_gen, get_sum, get_iverson, get_tadd, ll_get) or inline the reshape")
        assert isinstance(base, Var)
        if base.name not in ranks:
            _fail(e, f"unknown tensor variable {base.name!r}")
        if ranks[base.name] - len(idxs) != rank:
            _fail(e, f"access of rank {ranks[base.name] - len(idxs)} used at rank {rank}")
        if rank:
            _fail(e, "tensor-valued access: eta-expand it (lemma eta)")
        return
    if isinstance(e, Gen):
        if rank == 0:
            _fail(e, "generation used as a scalar")
        _check(e.body, ranks, rank - 1)
        return
    if isinstance(e, (Sum, Guard)):
        _check(e.body, ranks, rank)
        return
    if isinstance(e, Iter):
        r = rank_of(e.init, ranks)
        if r is None or r != rank:
            _fail(e, f"time iteration over {e.var}: its initial tensor has rank {r}, "
                     f"used at rank {rank}")
        _check(e.init, ranks, rank)
        _check(e.body, {**ranks, e.var: rank}, rank)
        return
    if isinstance(e, Let):
        r = rank_of(e.value, ranks)
        if r is None:
            _fail(e, f"let {e.var} binds a bare zero: its buffer cannot be sized")
        assert r is not None
        _check(e.value, ranks, r)
        inner = dict(ranks)
        inner[e.var] = r
        _check(e.body, inner, rank)
        return
    if isinstance(e, TAdd):
        # A tensor `<+>` is lowered as "store the left, accumulate the right" (core.py,
        # lower_tadd): `x <+> SUM ...` as in Sgemm.v's C + A B, or two generations
        # whose loops a schedule keeps apart (a split operand of `<+>`, which
        # tadd_expand would undo into one loop of accesses into the split).
        _check(e.left, ranks, rank)
        _check(e.right, ranks, rank)
        return
    if isinstance(e, SBin):
        if rank:
            _fail(e, "scalar operation used at tensor rank")
        _check(e.left, ranks, 0)
        _check(e.right, ranks, 0)
        return
    if isinstance(e, Mem):
        _check(e.body, ranks, rank)
        return
    if isinstance(e, Instr):
        _check_instr(e, ranks, rank)
        return
    if rank == 0:
        _fail(e, "reshape operator used as a scalar")
    if isinstance(e, Concat):
        _check(e.left, ranks, rank)
        _check(e.right, ranks, rank)
    elif isinstance(e, Transpose):
        if rank < 2:
            _fail(e, "transpose of rank below 2")
        _check(e.body, ranks, rank)
    elif isinstance(e, Flatten):
        _check(e.body, ranks, rank + 1)
    elif isinstance(e, Split):
        if rank < 2:
            _fail(e, "split result of rank below 2")
        _check(e.body, ranks, rank - 1)
    elif isinstance(e, (PadR, PadL, TruncR, TruncL)):
        _check(e.body, ranks, rank)
    else:
        _fail(e, "not an ATL term")


def _check_instr(e: Instr, ranks: dict[str, int], rank: int) -> None:
    """An instruction call is a leaf of the normal form (it is lowered as a whole,
    Exo thesis Sec. 3.2.2): its value has the rank of its specification, and its
    arguments are scalars in normal form, index expressions, or tensor operands of
    the parameter's rank (accesses, variables, other calls) which it reads whole."""
    r = _instr_rank(e)
    if r != rank:
        _fail(e, f"instruction {e.name} of rank {r} used at rank {rank}")
    for p, a in zip(spec_of(e.name).params, e.args, strict=True):
        if p.kind == INDEX:
            continue
        if p.kind == SCALAR:
            _check(a, ranks, 0)
            continue
        while isinstance(a, Guard):  # a guarded operand (vectorize's border of an
            a = a.body               # outer loop): the lowering's `if`, zeros else
        if isinstance(a, Instr):
            _check_instr(a, ranks, p.rank)
            continue
        base, idxs = access_base(a)
        if not isinstance(base, Var):
            # A generation here is an inlined producer the instruction was chosen over
            # before `normalize` turned its accesses into the producer's body.
            hint = (" (an inlined producer: run `normalize` before the step that chose the "
                    "instruction, e.g. before `vectorize`)" if isinstance(base, Gen) else "")
            _fail(e, f"operand {p.name} of {e.name} must be an access, a variable or an "
                     f"instruction call, not {show(a)}{hint}")
        assert isinstance(base, Var)
        if base.name not in ranks:
            _fail(e, f"unknown tensor variable {base.name!r}")
        if ranks[base.name] - len(idxs) != p.rank:
            _fail(e, f"operand {p.name} of {e.name} has rank {ranks[base.name] - len(idxs)}, "
                     f"expected {p.rank}")
