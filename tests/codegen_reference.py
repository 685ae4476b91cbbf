"""A small numpy reference semantics of ATL for the codegen tests (paper Fig. 2).

Written for these tests while the bridge's interpreter (pybridge/interp.py)
is not there; the differential tests use that one instead when it exists.
A value is ZERO or an ndarray standing for the total function that is the
array inside its extents and zero outside (Tensor/Core.v), so ragged or
mismatched extents are handled by padding, never by guessing.  Reshape
operators are computed directly; test_codegen_reference.py checks each
against its Fig. 5 definition in core ATL (coq/Reshape/Defs.v).
"""

from __future__ import annotations

import numpy as np

from verisched.pybridge.terms import (
    Concat,
    Expr,
    Flatten,
    Gen,
    Get,
    Guard,
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


class _Zero:
    def __repr__(self) -> str:
        return "ZERO"


ZERO = _Zero()


def zdiv(a: int, b: int) -> int:
    return 0 if b == 0 else a // b


def zmod(a: int, b: int) -> int:
    return a if b == 0 else a % b


def ev_idx(i: Idx, env: dict) -> int:
    if isinstance(i, IConst):
        return i.value
    if isinstance(i, IVar):
        return env[i.name]
    a, b = ev_idx(i.left, env), ev_idx(i.right, env)
    ops = {"+": a + b, "-": a - b, "*": a * b}
    if i.op in ops:
        return ops[i.op]
    return zdiv(a, b) if i.op == "/" else zmod(a, b) if i.op == "%" else zdiv(a + b - 1, b)


def ev_pred(p: Pred, env: dict) -> bool:
    if isinstance(p, PBool):
        return p.value
    if isinstance(p, PAnd):
        return ev_pred(p.left, env) and ev_pred(p.right, env)
    assert isinstance(p, PCmp)
    a, b = ev_idx(p.left, env), ev_idx(p.right, env)
    return a < b if p.op == "<" else a <= b if p.op == "<=" else a == b


def access(v, i: int):
    if v is ZERO:
        return ZERO
    if v.ndim == 0:
        raise ValueError("access into a scalar")
    if 0 <= i < v.shape[0]:
        return v[i]
    return ZERO


def _pad_to(a: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    if a.shape == shape:
        return a
    out = np.zeros(shape, dtype=a.dtype)
    out[tuple(slice(0, s) for s in a.shape)] = a
    return out


def tadd(a, b):
    if a is ZERO:
        return b
    if b is ZERO:
        return a
    if a.ndim != b.ndim:
        raise ValueError("adding tensors of different ranks")
    shape = tuple(max(x, y) for x, y in zip(a.shape, b.shape, strict=False))
    return _pad_to(a, shape) + _pad_to(b, shape)


def stack(items: list, dtype) -> object:
    """The tensor whose element k is items[k] (a generation's value)."""
    real = [x for x in items if x is not ZERO]
    if not real:
        return ZERO
    rank = real[0].ndim
    shape = tuple(max(x.shape[d] for x in real) for d in range(rank))
    out = np.zeros((len(items), *shape), dtype=dtype)
    for k, x in enumerate(items):
        if x is not ZERO:
            out[(k, *(slice(0, s) for s in x.shape))] = x
    return out


def scalar(v) -> object:
    return 0 if v is ZERO else v[()] if isinstance(v, np.ndarray) else v


def evaluate(e: Expr, tensors: dict, idx: dict, dtype) -> object:
    """Value of `e`; `tensors` maps names to arrays, `idx` index variables to ints."""
    ev = lambda x, t=tensors, i=idx: evaluate(x, t, i, dtype)  # noqa: E731
    if isinstance(e, Var):
        return tensors[e.name]
    if isinstance(e, Zero):
        return ZERO
    if isinstance(e, Lit):
        # Computed independently of pybridge/literals.py: for integers Z's floor, for
        # floats one IEEE division of two exact integers, which is correctly rounded.
        t = np.dtype(dtype).type
        if np.issubdtype(np.dtype(dtype), np.integer):
            return np.array(e.num // e.den, dtype)
        return np.array(t(e.num) / t(e.den), dtype)
    if isinstance(e, Gen):
        lo, hi = ev_idx(e.lo, idx), ev_idx(e.hi, idx)
        items = [evaluate(e.body, tensors, {**idx, e.var: lo + k}, dtype)
                 for k in range(max(hi - lo, 0))]
        return stack(items, dtype)
    if isinstance(e, Sum):
        lo, hi = ev_idx(e.lo, idx), ev_idx(e.hi, idx)
        acc = ZERO
        for j in range(lo, hi):
            acc = tadd(acc, evaluate(e.body, tensors, {**idx, e.var: j}, dtype))
        return acc
    if isinstance(e, Guard):
        return ev(e.body) if ev_pred(e.pred, idx) else ZERO
    if isinstance(e, Let):
        return evaluate(e.body, {**tensors, e.var: ev(e.value)}, idx, dtype)
    if isinstance(e, Get):
        return access(ev(e.tensor), ev_idx(e.index, idx))
    if isinstance(e, TAdd):
        return tadd(ev(e.left), ev(e.right))
    if isinstance(e, SBin):
        a, b = scalar(ev(e.left)), scalar(ev(e.right))
        if e.op == "+":
            r = a + b
        elif e.op == "*":
            r = a * b
        elif np.issubdtype(dtype, np.integer):
            r = zdiv(int(a), int(b))
        else:  # Coq's reals: Rinv 0 = 0
            r = 0.0 if b == 0 else np.float64(a) / np.float64(b)
        return np.array(r, dtype=dtype)
    if isinstance(e, Concat):
        n1, n2 = ev_idx(e.n1, idx), ev_idx(e.n2, idx)
        a, b = ev(e.left), ev(e.right)
        items = []
        for i in range(max(n1 + n2, 0)):
            x = access(a, i) if i < n1 else ZERO
            y = access(b, i - n1) if n1 <= i else ZERO
            items.append(tadd(x, y))
        return stack(items, dtype)
    if isinstance(e, Transpose):
        n, m = ev_idx(e.n, idx), ev_idx(e.m, idx)
        v = ev(e.body)
        return stack([stack([access(access(v, y), x) for y in range(max(n, 0))], dtype)
                      for x in range(max(m, 0))], dtype)
    if isinstance(e, Flatten):
        n, m = ev_idx(e.n, idx), ev_idx(e.m, idx)
        v = ev(e.body)
        if n <= 0 or m <= 0:
            return ZERO
        return stack([access(access(v, i // m), i % m) for i in range(n * m)], dtype)
    if isinstance(e, Split):
        k, n = ev_idx(e.k, idx), ev_idx(e.n, idx)
        v = ev(e.body)
        rows = zdiv(n + k - 1, k)
        return stack([stack([access(v, i * k + j) if i * k + j < n else ZERO
                             for j in range(max(k, 0))], dtype)
                      for i in range(max(rows, 0))], dtype)
    if isinstance(e, (PadR, PadL)):
        k, n = ev_idx(e.k, idx), ev_idx(e.n, idx)
        v = ev(e.body)
        if isinstance(e, PadR):
            return stack([access(v, i) if i < n else ZERO for i in range(max(n + k, 0))], dtype)
        return stack([access(v, i - k) if k <= i else ZERO for i in range(max(n + k, 0))], dtype)
    if isinstance(e, TruncR):
        k = ev_idx(e.k, idx)
        v = ev(e.body)
        return stack([access(v, i) for i in range(max(k, 0))], dtype)
    if isinstance(e, TruncL):
        k, n = ev_idx(e.k, idx), ev_idx(e.n, idx)
        v = ev(e.body)
        return stack([access(v, i + n - k) for i in range(max(k, 0))], dtype)
    raise TypeError(f"not an ATL term: {e!r}")


def dense(v, shape: tuple[int, ...], dtype) -> np.ndarray:
    """The value restricted to `shape` (the declared output extents)."""
    out = np.zeros(shape, dtype=dtype)
    if v is ZERO:
        return out
    v = np.asarray(v)
    if not np.any(v):  # zero has every shape
        return out
    if v.ndim != len(shape):
        raise ValueError(f"rank {v.ndim} value for shape {shape}")
    common = tuple(slice(0, min(a, b)) for a, b in zip(v.shape, shape, strict=False))
    out[common] = v[common]
    outside = v.copy()
    outside[common] = 0
    if np.any(outside != 0):
        raise ValueError("ill-shaped program: nonzero values outside its declared extents")
    return out


def run_reference(e: Expr, inputs: dict[str, np.ndarray], sizes: dict[str, int],
                  out_shape: tuple[int, ...], dtype) -> np.ndarray:
    """Dense reference output of `e` for the kernel tests."""
    return dense(evaluate(e, dict(inputs), dict(sizes), dtype), out_shape, dtype)


def compile_kernels(programs: list[tuple[str, Expr, dict]], *, target: str = "c",
                    dtype: str = "float32", fast_math: bool = False) -> dict:
    """Lower and build (name, program, input shapes) triples into one shared object,
    WITHOUT Coq's bounds check: these tests exercise the untrusted lowering itself on
    programs whose safety the reference comparison and the sanitizers check.  Users go
    through verisched.pipeline, which requires check_safe."""
    from verisched.codegen.lower import lower
    from verisched.targets.native import build
    from verisched.targets.registry import get_target

    t = get_target(target)
    lowered = [lower(e, env, name=name, dtype=dtype, parallel=t.parallel, isa=t.isa)
               for name, e, env in programs]
    return build(lowered, t, fast_math=fast_math)


def compile_kernel(expr: Expr, env: dict, *, name: str = "kernel", target: str = "c",
                   dtype: str = "float32", fast_math: bool = False):
    """One kernel of `compile_kernels`."""
    return compile_kernels([(name, expr, env)], target=target, dtype=dtype,
                           fast_math=fast_math)[name]
