"""Reference interpreter: the meaning of an ATL term, computed with numpy.

It follows the Coq semantics (coq/Tensor/Core.v, coq/Reshape/Defs.v)
rather than the paper's list model: a tensor is a total function that is
zero outside its generated range, so an out-of-bounds access reads zero
(Fig. 2's last rule) and `<+>` of tensors of different extents adds them
pointwise, the shorter padded with zeros.  A value is therefore an array
holding the tensor on [0, extent) in every dimension, implicitly zero
elsewhere.

Why vectorised: GEN and SUM bodies are evaluated once, over the whole index
range, by giving each bound variable its own broadcast axis ("batch" axes,
outermost binder first).  An intermediate result is an array whose first
`depth` axes are batch axes (size 1 where the value does not depend on that
variable) followed by the value's own axes.  A GEN turns its batch axis into
the value's first axis; a SUM reduces it.

Integer arithmetic follows Coq's Z: floor division and modulo, `x / 0 = 0`
and `x mod 0 = x`.  Scalar division also follows Coq: `Z.div` for integer
dtypes (so `/ 0` is 0); for floats `x / 0` is 0 as in Coq's reals, where
`/ 0 = 0` (Rinv_0).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from .instrs import INDEX, InstrError, instantiate, lookup
from .literals import LiteralError, literal_value
from .outputs import distribute_outputs
from .terms import (
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
    Split,
    Sum,
    TAdd,
    Transpose,
    TruncL,
    TruncR,
    Tuple,
    Var,
    Zero,
    children,
    fold_idx,
    is_idx,
    rebuild,
    subst,
    z_op,
)


class InterpError(ValueError):
    """A term that cannot be evaluated: unbound name, ill-typed, ..."""


class WidthOverflow(InterpError):
    """A value beyond the width the hardware computes it in (Gemmini's int32
    accumulator): the proof is over Z, the hardware wraps, so a kernel's result there
    is not the proved one, whatever it is compared with."""


@dataclass(frozen=True)
class _Val:
    """An array whose first `depth` axes are batch axes."""

    arr: np.ndarray
    depth: int

    @property
    def rank(self) -> int:
        return self.arr.ndim - self.depth


@dataclass
class _Env:
    depth: int
    indices: dict[str, np.ndarray]      # loop vars and sizes: int64, ndim == depth
    tensors: dict[str, _Val]            # inputs and let-bound buffers
    dtype: np.dtype


def evaluate(
    e: Expr,
    inputs: Mapping[str, np.ndarray | float | int],
    sizes: Mapping[str, int] | None = None,
    dtype: np.dtype | type | None = None,
    rank: int | None = None,
) -> np.ndarray:
    """The value of `e` on the given inputs, as an array over its extents.

    args:
        inputs: tensor (and scalar) inputs by name
        sizes:  size parameters (index variables) by name
        dtype:  element type; by default that of the inputs
        rank:   the program's rank, if known: a program that is (partly) a
                bare zero has no extents of its own, and gets extent 0 there

    A program with several outputs (`Tuple`, top level only) gives a tuple of arrays,
    one per output (`rank`, if given, applies to each); outputs swept by one loop
    (`fuse_outputs`, a tuple below the top) are read componentwise
    (pybridge/outputs.py).
    """
    e = distribute_outputs(e)
    if isinstance(e, Tuple):
        return tuple(evaluate(x, inputs, sizes, dtype, rank) for x in e.items)  # type: ignore
    arrays = {k: np.asarray(v) for k, v in inputs.items()}
    if dtype is None:
        kinds = [a.dtype for a in arrays.values()]
        dtype = np.result_type(*kinds) if kinds else np.dtype(np.float64)
    dt = np.dtype(dtype)
    env = _Env(0, {k: np.asarray(v, dtype=np.int64) for k, v in (sizes or {}).items()},
               {k: _Val(a.astype(dt, copy=False), 0) for k, a in arrays.items()}, dt)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        v = _eval(e, env)
    arr = np.asarray(v.arr)
    if rank is not None and arr.ndim < rank:
        arr = _expand_rank(arr, rank - arr.ndim)
    return arr


def _meaning(e: Instr) -> Expr:
    """A call's specification with its arguments substituted, and each access into a
    generation the substitution made (`(GEN [ l < w ] f l) _[ k ]`, an argument that is
    itself a call, read lane by lane) reduced to `|[ 0 <=? k ]| |[ k <? w ]| f k`, its
    value in ATL (Core.v's genr; `lo + k` for a GENR from lo): evaluated as written,
    each nested call of a vectorized expression multiplied the batch by its width
    (16^5 elements at every vector of a 5-point AVX-512 stencil)."""
    def read(t: Expr, k: Idx) -> Expr:  # `t _[ k ]`, reduced where t is a redex
        if isinstance(t, Guard):
            return Guard(t.pred, read(t.body, k))
        if isinstance(t, Instr) and not _native_spec(t):
            return read(_meaning(t), k)
        if isinstance(t, Gen):  # position k of GENR [lo <= v < hi] is v = lo + k (Core.v)
            at = k if t.lo == IConst(0) else IBin("+", t.lo, k)
            # (its body already reduced: substituting an index makes no new redex)
            return Guard(PAnd(PCmp("<=", IConst(0), k), PCmp("<", at, t.hi)),
                         subst(t.body, indices={t.var: at}))  # type: ignore[arg-type]
        return Get(t, k)

    def go(n: Any) -> Any:
        if is_idx(n):
            return n
        if isinstance(n, Get):
            return read(go(n.tensor), n.index)
        return rebuild(n, go)
    return go(instantiate(e))


def _native_spec(e: Instr) -> bool:
    spec = lookup(e.name)
    return spec is not None and spec.native is not None


def batch_elements(e: Expr, sizes: Mapping[str, int]) -> int:
    """About the most elements one intermediate array of `evaluate` holds: the product
    of the extents of the GEN and SUM binders around a node (its batch axes, see the
    module docstring), at its deepest.  A caller sizes the interpreter's memory by it
    before evaluating (pipeline.execute): a matmul's product is evaluated as one
    M x N x K array.  An extent that depends on an outer binder is taken at that
    binder's first and last value, the larger; a bound that cannot be evaluated counts
    as 1 (an estimate, not a bound)."""
    best = 1

    def extent(lo: Idx, hi: Idx, env: dict[str, int], outer: list[tuple[str, int, int]]
               ) -> int:
        got = 0
        for pick in (0, 1):  # every outer binder at its first, then its last value
            vals = {**env, **{v: (a if pick == 0 else b) for v, a, b in outer}}
            try:
                got = max(got, fold_idx(hi, vals.__getitem__) - fold_idx(lo, vals.__getitem__))
            except (KeyError, ZeroDivisionError, TypeError):
                got = max(got, 1)
        return max(got, 1)

    def visit(x: Expr, env: dict[str, int], outer: list[tuple[str, int, int]],
              prod: int) -> None:
        nonlocal best
        best = max(best, prod)
        if isinstance(x, (Gen, Sum)):
            n = extent(x.lo, x.hi, env, outer)
            try:
                lo = fold_idx(x.lo, {**env, **{v: a for v, a, _ in outer}}.__getitem__)
            except (KeyError, ZeroDivisionError, TypeError):
                lo = 0
            visit(x.body, env, [*outer, (x.var, lo, lo + n - 1)], prod * n)
            return
        if isinstance(x, Instr):  # evaluated as its specification's body (_eval)
            spec = lookup(x.name)
            if spec is None or spec.native is None:
                try:
                    x = _meaning(x)
                except InstrError:
                    pass
                else:
                    visit(x, env, outer, prod)
                    return
        for c in children(x):  # index and predicate children hold no binder: harmless
            visit(c, env, outer, prod)  # type: ignore[arg-type]

    visit(distribute_outputs(e), {k: int(v) for k, v in sizes.items()}, [], 1)
    return best


def _expand_rank(arr: np.ndarray, extra: int) -> np.ndarray:
    """A zero tensor's missing inner axes, as axes of extent 0.

    Only zeros are ever rank-deficient (a lone `tzero` has every shape), so
    nothing is lost.
    """
    return np.zeros(arr.shape + (0,) * extra, dtype=arr.dtype)


# ---------------------------------------------------------------------------
# Indices and predicates: int64 / bool arrays of ndim == depth


def eval_idx(i: Idx, env: _Env) -> np.ndarray:
    """`i` over the loop indices in scope (terms.fold_idx: Z semantics)."""

    def var(name: str) -> np.ndarray:
        if name not in env.indices:
            raise InterpError(f"unbound index variable {name!r}")
        v = env.indices[name]
        return v.reshape(v.shape + (1,) * (env.depth - v.ndim))

    try:
        return fold_idx(i, var, lambda c: np.full((1,) * env.depth, c, dtype=np.int64))
    except ValueError as exc:
        raise InterpError(str(exc)) from exc


def eval_pred(p: Pred, env: _Env) -> np.ndarray:
    if isinstance(p, PBool):
        return np.full((1,) * env.depth, p.value)
    if isinstance(p, PAnd):
        return eval_pred(p.left, env) & eval_pred(p.right, env)
    a = eval_idx(p.left, env)
    b = eval_idx(p.right, env)
    if p.op == "<":
        return a < b
    if p.op == "<=":
        return a <= b
    if p.op == "=":
        return a == b
    raise InterpError(f"unknown comparison {p.op!r}")


def _scalar_extent(i: Idx, env: _Env, what: str) -> int:
    """A reshape extent must not vary with loop variables (it is a size)."""
    v = eval_idx(i, env)
    lo, hi = int(v.min()), int(v.max())
    if lo != hi:
        raise InterpError(f"{what} varies with the enclosing loop variables")
    return lo


# ---------------------------------------------------------------------------
# Tensor expressions


def _lift(v: _Val, depth: int) -> np.ndarray:
    """View a value computed at an outer depth at the current depth."""
    if v.depth == depth:
        return v.arr
    shape = v.arr.shape[: v.depth] + (1,) * (depth - v.depth) + v.arr.shape[v.depth:]
    return v.arr.reshape(shape)


def _eval(e: Expr, env: _Env) -> _Val:
    d = env.depth
    if isinstance(e, Var):
        if e.name not in env.tensors:
            raise InterpError(f"unbound tensor variable {e.name!r}")
        return _Val(_lift(env.tensors[e.name], d), d)
    if isinstance(e, Zero):
        return _Val(np.zeros((1,) * d, dtype=env.dtype), d)
    if isinstance(e, Lit):
        try:
            value = literal_value(e.num, e.den, env.dtype)
        except LiteralError as exc:
            raise InterpError(str(exc)) from exc
        return _Val(np.full((1,) * d, value, dtype=env.dtype), d)
    if isinstance(e, (Gen, Sum)):
        return _eval_binder(e, env)
    if isinstance(e, Guard):
        body = _eval(e.body, env)
        p = eval_pred(e.pred, env)
        mask = p.reshape(p.shape + (1,) * body.rank)
        return _Val(np.where(mask, body.arr, np.zeros((), dtype=env.dtype)), d)
    if isinstance(e, Let):
        # Evaluated once and shared by every use, as the buffer it denotes (Fig. 3).
        value = _eval(e.value, env)
        inner = _Env(d, env.indices, {**env.tensors, e.var: value}, env.dtype)
        return _eval(e.body, inner)
    if isinstance(e, Iter):
        # Tensor/Iter.v: the step applied `steps` times (none when steps <= 0).
        state = _eval(e.init, env)
        for _ in range(max(_scalar_extent(e.steps, env, "a time iteration's length"), 0)):
            inner = _Env(d, env.indices, {**env.tensors, e.var: state}, env.dtype)
            state = _eval(e.body, inner)
        return state
    if isinstance(e, Tuple):
        raise InterpError("several outputs (a tuple) are allowed at the top of a program only")
    if isinstance(e, Get):
        return _get(_eval(e.tensor, env), eval_idx(e.index, env), env)
    if isinstance(e, TAdd):
        return _tadd(_eval(e.left, env), _eval(e.right, env), env)
    if isinstance(e, SBin):
        a = _eval(e.left, env)
        b = _eval(e.right, env)
        if a.rank or b.rank:
            raise InterpError(f"scalar operation {e.op!r} applied to a tensor")
        return _Val(_sop(e.op, a.arr, b.arr, env.dtype), d)
    if isinstance(e, Mem):
        # A memory annotation changes where a buffer lives, not its value (Instr.v).
        return _eval(e.body, env)
    if isinstance(e, Instr):
        spec = lookup(e.name)
        if spec is not None and spec.native is not None:
            return _native(spec, e, env)
        # An instruction means its specification (Exo thesis Sec. 3.2.2).
        try:
            spec_body = _meaning(e)
        except InstrError as exc:
            raise InterpError(str(exc)) from exc
        return _eval(spec_body, env)
    return _eval_reshape(e, env)


def _native(spec, e: Instr, env: _Env) -> _Val:
    """A scalar primitive evaluated by its registered numpy function."""
    vals = []
    for p, a in zip(spec.params, e.args, strict=True):
        if p.kind == INDEX:
            vals.append(eval_idx(a, env))
            continue
        v = _eval(a, env)
        if v.rank:
            raise InterpError(f"{e.name}: parameter {p.name} must be a scalar, got a tensor")
        vals.append(v.arr)
    return _Val(np.asarray(spec.native(*vals)).astype(env.dtype), env.depth)


def _sop(op: str, a: np.ndarray, b: np.ndarray, dt: np.dtype) -> np.ndarray:
    if op == "+":
        return (a + b).astype(dt, copy=False)
    if op == "*":
        return (a * b).astype(dt, copy=False)
    if op == "max":  # smax: Rmax / Z.max (coq/Targets/AVX.v)
        # As the kernels compute it (vs_smax `a < b ? b : a`; maxps with its operands
        # swapped): a where either is NaN.  The reals have no NaN, so the proof fixes
        # nothing there; np.maximum's NaN from either side made --check report a
        # difference that was only this choice.
        return np.where(a < b, b, a).astype(dt, copy=False)
    if op == "/":
        if np.issubdtype(dt, np.integer):
            return z_op("/", a, b).astype(dt, copy=False)
        safe = np.where(b == 0, 1, b)
        return np.where(b == 0, 0, a / safe).astype(dt, copy=False)
    raise InterpError(f"unknown scalar operation {op!r}")


def _eval_binder(e: Gen | Sum, env: _Env) -> _Val:
    d = env.depth
    lo = eval_idx(e.lo, env)
    hi = eval_idx(e.hi, env)
    count = hi - lo
    extent = max(int(count.max()) if count.size else 0, 0)
    k = np.arange(extent, dtype=np.int64).reshape((1,) * d + (extent,))
    var = lo[..., None] + k
    indices = {**env.indices, e.var: var}
    inner = _Env(d + 1, indices, env.tensors, env.dtype)
    body = _eval(e.body, inner)
    arr = body.arr
    in_range = (k < count[..., None])
    if not in_range.all():
        mask = in_range.reshape(in_range.shape + (1,) * body.rank)
        arr = np.where(mask, arr, np.zeros((), dtype=env.dtype))
    # The new batch axis may have size 1 if the body ignores the variable.
    if arr.shape[d] != extent:
        arr = np.broadcast_to(arr, arr.shape[:d] + (extent,) + arr.shape[d + 1:])
    if isinstance(e, Gen):
        return _Val(arr, d)
    return _Val(arr.sum(axis=d, dtype=env.dtype), d)


def _get(t: _Val, i: np.ndarray, env: _Env) -> _Val:
    d = env.depth
    if t.rank == 0:
        # Only the zero of a tensor type has rank 0 here (Coq's typing).
        return t
    n = t.arr.shape[d]
    if n == 0:
        return _Val(np.zeros(t.arr.shape[:d] + t.arr.shape[d + 1:], dtype=env.dtype), d)
    valid = (i >= 0) & (i < n)
    ic = np.clip(i, 0, n - 1)
    idx = ic.reshape(ic.shape + (1,) * t.rank)
    out = np.take_along_axis(t.arr, idx, axis=d)
    out = np.squeeze(out, axis=d)
    vmask = valid.reshape(valid.shape + (1,) * (t.rank - 1))
    return _Val(np.where(vmask, out, np.zeros((), dtype=env.dtype)), d)


def _fit(arr: np.ndarray, axis: int, n: int) -> np.ndarray:
    """Pad with zeros or cut `arr` along `axis` to length n (>= 0)."""
    cur = arr.shape[axis]
    if cur == n:
        return arr
    if cur > n:
        return np.take(arr, np.arange(n), axis=axis)
    pad = [(0, 0)] * arr.ndim
    pad[axis] = (0, n - cur)
    return np.pad(arr, pad)


def _tadd(a: _Val, b: _Val, env: _Env) -> _Val:
    d = env.depth
    x, y = a.arr, b.arr
    if a.rank != b.rank:
        # The operand of lower rank is a zero (see _expand_rank).
        if a.rank < b.rank:
            x = _expand_rank(x, b.rank - a.rank)
        else:
            y = _expand_rank(y, a.rank - b.rank)
    for ax in range(d, x.ndim):
        n = max(x.shape[ax], y.shape[ax])
        x, y = _fit(x, ax, n), _fit(y, ax, n)
    return _Val(x + y, d)


def _gather(arr: np.ndarray, axis: int, src: np.ndarray) -> np.ndarray:
    """arr[..., src, ...] along `axis`, zero where src is out of range.

    `src` may have any shape; its axes replace `axis`.
    """
    n = arr.shape[axis]
    shape = arr.shape[:axis] + src.shape + arr.shape[axis + 1:]
    if n == 0 or src.size == 0:
        return np.zeros(shape, dtype=arr.dtype)
    valid = (src >= 0) & (src < n)
    out = np.take(arr, np.clip(src, 0, n - 1), axis=axis)
    vmask = valid.reshape((1,) * axis + src.shape + (1,) * (arr.ndim - axis - 1))
    return np.where(vmask, out, np.zeros((), dtype=arr.dtype))


def _eval_reshape(e: Expr, env: _Env) -> _Val:
    """Fig. 5 with explicit extents, as in coq/Reshape/Defs.v."""
    d = env.depth

    def size(i: Idx, what: str) -> int:
        return _scalar_extent(i, env, f"{type(e).__name__} extent {what}")

    def body_of(x: Expr, rank: int) -> np.ndarray:
        v = _eval(x, env)
        if v.rank < rank:  # a zero of tensor type
            return _expand_rank(v.arr, rank - v.rank)
        return v.arr

    if isinstance(e, Concat):
        n1, n2 = size(e.n1, "n1"), size(e.n2, "n2")
        a, b = body_of(e.left, 1), body_of(e.right, 1)
        r = np.arange(max(n1 + n2, 0))
        left = _gather(a, d, np.where(r < n1, r, -1))
        right = _gather(b, d, np.where(n1 <= r, r - n1, -1))
        return _tadd(_Val(left, d), _Val(right, d), env)
    if isinstance(e, Transpose):
        n, m = size(e.n, "n"), size(e.m, "m")
        a = body_of(e.body, 2)
        a = _gather(_gather(a, d, np.arange(max(n, 0))), d + 1, np.arange(max(m, 0)))
        return _Val(np.swapaxes(a, d, d + 1), d)
    if isinstance(e, Flatten):
        n, m = size(e.n, "n"), size(e.m, "m")
        a = body_of(e.body, 2)
        total = max(n * m, 0)
        if m <= 0 or n <= 0:
            return _Val(np.zeros(a.shape[:d] + (total,) + a.shape[d + 2:], env.dtype), d)
        a = _gather(_gather(a, d, np.arange(n)), d + 1, np.arange(m))
        return _Val(a.reshape(a.shape[:d] + (n * m,) + a.shape[d + 2:]), d)
    if isinstance(e, Split):
        k, n = size(e.k, "k"), size(e.n, "n")
        a = body_of(e.body, 1)
        outer = max(int(z_op("cdiv", n, k)), 0)
        inner = max(k, 0)
        src = np.arange(outer)[:, None] * k + np.arange(inner)[None, :]
        return _Val(_gather(a, d, np.where(src < n, src, -1)), d)
    if isinstance(e, PadR):
        k, n = size(e.k, "k"), size(e.n, "n")
        r = np.arange(max(n + k, 0))
        return _Val(_gather(body_of(e.body, 1), d, np.where(r < n, r, -1)), d)
    if isinstance(e, PadL):
        k, n = size(e.k, "k"), size(e.n, "n")
        r = np.arange(max(n + k, 0))
        return _Val(_gather(body_of(e.body, 1), d, np.where(k <= r, r - k, -1)), d)
    if isinstance(e, TruncR):
        k = size(e.k, "k")
        return _Val(_gather(body_of(e.body, 1), d, np.arange(max(k, 0))), d)
    if isinstance(e, TruncL):
        k, n = size(e.k, "k"), size(e.n, "n")
        return _Val(_gather(body_of(e.body, 1), d, np.arange(max(k, 0)) + n - k), d)
    raise InterpError(f"not an ATL term: {e!r}")
