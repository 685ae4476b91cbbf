"""The ATL abstract syntax: immutable terms shared by the bridge, the
reference interpreter and the lowering.

The constructors mirror the Coq library one for one (coq/Tensor/Core.v for the
core of the paper's Fig. 1, coq/Reshape/ for Fig. 4), so a term printed by Coq
parses to exactly one AST and prints back to text Coq elaborates to the same
term.  Reshape operators carry their extents explicitly, as the Coq
definitions do (docs/decisions.md: tensors are total functions, so an extent
cannot be read off a value).

Index expressions (`Idx`) and guard predicates (`Pred`) live in Z; tensor
expressions (`Expr`) denote scalars or tensors of any rank.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

# ---------------------------------------------------------------------------
# Index expressions over Z (Fig. 1: x | i | I+I | I-I | I*I | ceil(I/I) | I/I | I%I)


@dataclass(frozen=True)
class IVar:
    """A size parameter or a loop variable."""

    name: str


@dataclass(frozen=True)
class IConst:
    value: int


@dataclass(frozen=True)
class IBin:
    """Binary index operation.  `op` is one of + - * / % cdiv; `/` is floor
    division and `%` the matching modulo (Coq's Z.div / Z.modulo)."""

    op: str
    left: Idx
    right: Idx


Idx = IVar | IConst | IBin

IDX_OPS = ("+", "-", "*", "/", "%", "cdiv")

# ---------------------------------------------------------------------------
# Predicates (Fig. 1: true | false | I=I | I<I | I<=I | p /\ p)


@dataclass(frozen=True)
class PBool:
    value: bool


@dataclass(frozen=True)
class PCmp:
    """`op` is one of < <= = (Coq's <?, <=?, =?).  `flipped`: written `right >? left`
    or `right >=? left` (Coq's Z.gtb, Z.geb), the same test, read in one form and
    printed as written; not part of the term's identity."""

    op: str
    left: Idx
    right: Idx
    flipped: bool = field(default=False, compare=False)


@dataclass(frozen=True)
class PAnd:
    left: Pred
    right: Pred


Pred = PBool | PCmp | PAnd

CMP_OPS = ("<", "<=", "=")
# The operator a flipped comparison (PCmp.flipped) was written with, `right op left`.
FLIPPED_OPS = {"<": ">", "<=": ">="}

# ---------------------------------------------------------------------------
# Tensor expressions


@dataclass(frozen=True)
class Var:
    """An input tensor or scalar, or a let-bound buffer."""

    name: str


@dataclass(frozen=True)
class Zero:
    """The zero of the surrounding type (Coq's `tzero`), left by rewrites
    such as guard elimination."""


@dataclass(frozen=True)
class Lit:
    """A literal scalar constant `slit num den` (coq/Tensor/Scalar.v): the exact
    nonnegative rational num/den, both positive integers.  Kept exact here so that
    each consumer rounds once: the interpreter to float64, the lowering to the
    kernel's element type (pybridge/literals.py)."""

    num: int
    den: int

    def __post_init__(self) -> None:
        if self.num <= 0 or self.den <= 0:
            raise ValueError(f"a literal is num/den with positive integers, not "
                             f"{self.num}/{self.den} (zero is tzero; no negative constants)")


@dataclass(frozen=True)
class Gen:
    """`GENR [ lo <= var < hi ] body`; element k is body at var = lo + k."""

    var: str
    lo: Idx
    hi: Idx
    body: Expr


@dataclass(frozen=True)
class Sum:
    """`SUMR [ lo <= var < hi ] body`."""

    var: str
    lo: Idx
    hi: Idx
    body: Expr


@dataclass(frozen=True)
class Guard:
    """Iverson bracket `|[ pred ]| body`."""

    pred: Pred
    body: Expr


@dataclass(frozen=True)
class Let:
    """`tlet var := value in body`."""

    var: str
    value: Expr
    body: Expr


@dataclass(frozen=True)
class Iter:
    """`ITER [ steps ] var := init in body` (coq/Tensor/Iter.v): the state after
    `steps` applications (none when steps <= 0) of the step `fun var => body` to
    `init`; `var` is bound in `body` only."""

    var: str
    steps: Idx
    init: Expr
    body: Expr


@dataclass(frozen=True)
class Tuple:
    """`(e1, e2, ...)`: a program with several outputs (a Coq pair, left-nested for
    more than two), at the top level only; each output keeps its own extents."""

    items: tuple[Expr, ...]


@dataclass(frozen=True)
class Get:
    """Access `tensor _[ index ]`; zero when out of bounds."""

    tensor: Expr
    index: Idx


@dataclass(frozen=True)
class TAdd:
    """Polymorphic addition `<+>` (Fig. 2's ⊕), at any rank."""

    left: Expr
    right: Expr


@dataclass(frozen=True)
class SBin:
    """Scalar operation: `op` is one of + * / (Coq's sadd, smul, sdiv), or max
    (`smax a b`, class ScalarMax of coq/Targets/AVX.v, used by avx2_max)."""

    op: str
    left: Expr
    right: Expr


SCALAR_OPS = ("+", "*", "/")
# Scalar operations printed as applications (`smax a b`), not infix.
SCALAR_FUNS = {"smax": "max"}

# Reshape operators (Fig. 4-5), extents explicit.


@dataclass(frozen=True)
class Concat:
    """`concat n1 n2 e1 e2`: e1 (extent n1) followed by e2 (extent n2)."""

    n1: Idx
    n2: Idx
    left: Expr
    right: Expr


@dataclass(frozen=True)
class Transpose:
    """`transpose n m e`: e of extents n x m x ... becomes m x n x ..."""

    n: Idx
    m: Idx
    body: Expr


@dataclass(frozen=True)
class Flatten:
    """`flatten n m e`: e of extents n x m x ... becomes (n*m) x ..."""

    n: Idx
    m: Idx
    body: Expr


@dataclass(frozen=True)
class Split:
    """`split k n e`: e of extent n becomes cdiv(n, k) x k, zero-padded."""

    k: Idx
    n: Idx
    body: Expr


@dataclass(frozen=True)
class PadR:
    """`pad_r k n e`: e of extent n padded with k zeros on the right."""

    k: Idx
    n: Idx
    body: Expr


@dataclass(frozen=True)
class PadL:
    """`pad_l k n e`: e of extent n padded with k zeros on the left."""

    k: Idx
    n: Idx
    body: Expr


@dataclass(frozen=True)
class TruncR:
    """`trunc_r k e`: the first k elements of e."""

    k: Idx
    body: Expr


@dataclass(frozen=True)
class TruncL:
    """`trunc_l k n e`: the last k elements of e (of extent n)."""

    k: Idx
    n: Idx
    body: Expr


# Instructions as specifications and memories (the Exo thesis, Sec. 3.2: an
# instruction is a procedure whose body is its semantics; a memory annotation
# changes where a buffer lives, not what it holds).  coq/Targets/Instr.v.


@dataclass(frozen=True)
class Mem:
    """`in_mem MEMORY (body)`: the identity, marking that the let-bound buffer
    whose value this is lives in `memory` (DRAM, AVX2_REG, GEMMINI_SPAD, ...)."""

    memory: str
    body: Expr


@dataclass(frozen=True)
class Instr:
    """An instruction call `name arg1 arg2 ...` (e.g. `avx2_loadu (B _[ k ]) (8 * jv)`).

    Its meaning is its specification body (pybridge/instrs.py) with the
    parameters replaced by `args`; each argument is an `Expr` or, for index
    parameters, an `Idx`, in the order of the Coq definition."""

    name: str
    args: tuple[Expr | Idx, ...]


Expr = (
    Var | Zero | Lit | Gen | Sum | Guard | Let | Iter | Tuple | Get | TAdd | SBin
    | Concat | Transpose | Flatten | Split | PadR | PadL | TruncR | TruncL
    | Mem | Instr
)

RESHAPES = (Concat, Transpose, Flatten, Split, PadR, PadL, TruncR, TruncL)

# ---------------------------------------------------------------------------
# Small helpers used everywhere


def idx(x: Idx | int | str) -> Idx:
    """Coerce an int or a name to an index expression."""
    if isinstance(x, int):
        return IConst(x)
    if isinstance(x, str):
        return IVar(x)
    return x


def iadd(a: Idx | int | str, b: Idx | int | str) -> Idx:
    return IBin("+", idx(a), idx(b))


def isub(a: Idx | int | str, b: Idx | int | str) -> Idx:
    return IBin("-", idx(a), idx(b))


def imul(a: Idx | int | str, b: Idx | int | str) -> Idx:
    return IBin("*", idx(a), idx(b))


def gen(var: str, n: Idx | int | str, body: Expr) -> Gen:
    """`GEN [ var < n ] body`."""
    return Gen(var, IConst(0), idx(n), body)


def summ(var: str, n: Idx | int | str, body: Expr) -> Sum:
    """`SUM [ var < n ] body`."""
    return Sum(var, IConst(0), idx(n), body)


def get(t: Expr, *indices: Idx | int | str) -> Expr:
    """`t _[ i1 ] _[ i2 ] ...`."""
    for i in indices:
        t = Get(t, idx(i))
    return t


def idx_free_vars(i: Idx) -> frozenset[str]:
    if isinstance(i, IVar):
        return frozenset([i.name])
    if isinstance(i, IConst):
        return frozenset()
    return idx_free_vars(i.left) | idx_free_vars(i.right)


def pred_free_vars(p: Pred) -> frozenset[str]:
    if isinstance(p, PBool):
        return frozenset()
    return (
        idx_free_vars(p.left) | idx_free_vars(p.right)
        if isinstance(p, PCmp)
        else pred_free_vars(p.left) | pred_free_vars(p.right)
    )


def free_vars(e: Expr) -> frozenset[str]:
    """Free tensor and index variables of `e` (inputs, sizes, outer loops)."""
    if isinstance(e, Var):
        return frozenset([e.name])
    if isinstance(e, (Zero, Lit)):
        return frozenset()
    if isinstance(e, (Gen, Sum)):
        return idx_free_vars(e.lo) | idx_free_vars(e.hi) | (free_vars(e.body) - {e.var})
    if isinstance(e, Guard):
        return pred_free_vars(e.pred) | free_vars(e.body)
    if isinstance(e, Let):
        return free_vars(e.value) | (free_vars(e.body) - {e.var})
    if isinstance(e, Iter):
        return idx_free_vars(e.steps) | free_vars(e.init) | (free_vars(e.body) - {e.var})
    if isinstance(e, Tuple):
        out_t: frozenset[str] = frozenset()
        for item in e.items:
            out_t |= free_vars(item)
        return out_t
    if isinstance(e, Get):
        return free_vars(e.tensor) | idx_free_vars(e.index)
    if isinstance(e, (TAdd, SBin)):
        return free_vars(e.left) | free_vars(e.right)
    if isinstance(e, Mem):
        return free_vars(e.body)
    if isinstance(e, Instr):
        out_i: frozenset[str] = frozenset()
        for a in e.args:
            out_i |= free_vars(a) if _is_expr(a) else idx_free_vars(a)
        return out_i
    out: frozenset[str] = frozenset()
    for name in e.__dataclass_fields__:
        v = getattr(e, name)
        out |= free_vars(v) if _is_expr(v) else idx_free_vars(v)
    return out


def _is_expr(v: object) -> bool:
    return isinstance(v, (Var, Zero, Lit, Gen, Sum, Guard, Let, Iter, Tuple, Get, TAdd, SBin,
                          Mem, Instr, *RESHAPES))


def is_idx(v: object) -> bool:
    """Is `v` an index expression (as opposed to a tensor expression)?"""
    return isinstance(v, (IVar, IConst, IBin))


# ---------------------------------------------------------------------------
# One walker and one substitution for every pass over terms.
#
# A term is a tree of frozen dataclasses: tensor expressions, index
# expressions and predicates.  `children` lists a node's sub-terms in field
# order (an instruction's arguments included); `walk` visits every node;
# `rebuild` applies a function to the children and rebuilds the node;
# `subst` replaces free variables without capture.  Binders: `Gen`/`Sum`
# bind an index variable in their body (not in their bounds), `Let` binds a
# tensor variable in its body (not in its value).

Node = Expr | Idx | Pred
_NODE_TYPES = (IVar, IConst, IBin, PBool, PCmp, PAnd, Var, Zero, Lit, Gen, Sum, Guard, Let, Iter,
               Tuple, Get, TAdd, SBin, Concat, Transpose, Flatten, Split, PadR, PadL, TruncR,
               TruncL, Mem, Instr)
# The fields of each node type that hold sub-terms (names, operators, memories and
# literal values are data, not sub-terms).
_CHILD_FIELDS: dict[type, tuple[str, ...]] = {
    IVar: (), IConst: (), IBin: ("left", "right"), PBool: (), PCmp: ("left", "right"),
    PAnd: ("left", "right"), Var: (), Zero: (), Lit: (), Gen: ("lo", "hi", "body"),
    Sum: ("lo", "hi", "body"), Guard: ("pred", "body"), Let: ("value", "body"),
    Iter: ("steps", "init", "body"),
    Get: ("tensor", "index"), TAdd: ("left", "right"), SBin: ("left", "right"),
    Concat: ("n1", "n2", "left", "right"), Transpose: ("n", "m", "body"),
    Flatten: ("n", "m", "body"), Split: ("k", "n", "body"), PadR: ("k", "n", "body"),
    PadL: ("k", "n", "body"), TruncR: ("k", "body"), TruncL: ("k", "n", "body"),
    Mem: ("body",),
}


def children(n: Node) -> tuple[Node, ...]:
    """The immediate sub-terms of `n`, in field order."""
    if isinstance(n, Instr):
        return n.args
    if isinstance(n, Tuple):
        return n.items
    try:
        names = _CHILD_FIELDS[type(n)]
    except KeyError:
        raise TypeError(f"not an ATL term: {n!r}") from None
    return tuple(getattr(n, f) for f in names)


def data(n: Node) -> tuple[object, ...]:
    """The fields of `n` that are not sub-terms nor its binder: names, operators,
    memories, literal values (what two nodes of a type must share to be equal)."""
    if isinstance(n, Instr):
        return (n.name,)
    if isinstance(n, Tuple):
        return (len(n.items),)
    kids = _CHILD_FIELDS[type(n)]
    return tuple(getattr(n, f) for f in n.__dataclass_fields__ if f not in kids and f != "var")


def binder(n: Node) -> str | None:
    """The variable `n` binds in its body (`Gen`, `Sum`: an index; `Let`, `Iter`: a
    tensor)."""
    return n.var if isinstance(n, (Gen, Sum, Let, Iter)) else None


def walk(n: Node, descend: Callable[[Node], bool] | None = None) -> Iterator[Node]:
    """Every node of `n`, pre-order (the node itself first); with `descend`, the
    children of a node only where `descend(node)` holds."""
    stack = [n]
    while stack:
        x = stack.pop()
        yield x
        if descend is None or descend(x):
            stack.extend(reversed(children(x)))


def walk_scoped(n: Node, bound: frozenset[str] = frozenset()
                ) -> Iterator[tuple[Node, frozenset[str]]]:
    """Every node of `n` with the variables bound around it, pre-order."""
    stack = [(n, bound)]
    while stack:
        x, b = stack.pop()
        yield x, b
        var = binder(x)
        kids = children(x)
        inner = b | {var} if var is not None else b
        # The binder's scope is its body, the last child; bounds and values are outside.
        scoped = [(c, inner if var is not None and k == len(kids) - 1 else b)
                  for k, c in enumerate(kids)]
        stack.extend(reversed(scoped))


def any_node(n: Node, test: Callable[[Node], bool],
             descend: Callable[[Node], bool] | None = None) -> bool:
    """Does some node of `n` satisfy `test` (searching below the nodes where `descend`
    holds, all by default)?"""
    return any(test(x) for x in walk(n, descend))


def rebuild(n: Node, f: Callable[[Node], Node]) -> Node:
    """`n` with `f` applied to each immediate sub-term (the node itself if none changed)."""
    if isinstance(n, Instr):
        args = tuple(f(a) for a in n.args)
        return n if args == n.args else Instr(n.name, args)
    if isinstance(n, Tuple):
        items = tuple(f(a) for a in n.items)
        return n if items == n.items else Tuple(items)
    names = _CHILD_FIELDS[type(n)]
    if not names:
        return n
    new = {k: f(getattr(n, k)) for k in names}
    if all(new[k] is getattr(n, k) for k in names):
        return n
    return replace(n, **new)


def fresh_name(base: str, avoid: set[str] | frozenset[str]) -> str:
    """`base`, or `base1`, `base2`, ...: the first not in `avoid`."""
    k, name = 0, base
    while name in avoid:
        k += 1
        name = f"{base}{k}"
    return name


def subst(n: Node, tensors: Mapping[str, Expr] | None = None,
          indices: Mapping[str, Idx] | None = None) -> Node:
    """`n` with free tensor variables replaced by `tensors` and free index variables by
    `indices`; a binder that would capture a free variable of a replacement is renamed
    (ATL binders are ordinary lambdas in Coq)."""
    ts, ix = dict(tensors or {}), dict(indices or {})
    if not ts and not ix:
        return n
    avoid: set[str] = set()
    for v in ts.values():
        avoid |= free_vars(v)
    for i in ix.values():
        avoid |= idx_free_vars(i)
    return _subst(n, ts, ix, frozenset(avoid))


def _subst(n: Node, ts: dict[str, Expr], ix: dict[str, Idx], avoid: frozenset[str]) -> Node:
    if isinstance(n, IVar):
        return ix.get(n.name, n)
    if isinstance(n, Var):
        return ts.get(n.name, n)
    var = binder(n)
    if var is None:
        return rebuild(n, lambda c: _subst(c, ts, ix, avoid))
    ts2 = {k: v for k, v in ts.items() if k != var}
    ix2 = {k: v for k, v in ix.items() if k != var}
    new = var
    if var in avoid:
        new = fresh_name(var, avoid | free_vars(n.body))  # type: ignore[union-attr]
        if isinstance(n, (Let, Iter)):
            ts2[var] = Var(new)
        else:
            ix2[var] = IVar(new)
    body = _subst(n.body, ts2, ix2, avoid | {new})  # type: ignore[union-attr]
    if isinstance(n, Let):
        return Let(new, _subst(n.value, ts, ix, avoid), body)  # type: ignore[arg-type]
    if isinstance(n, Iter):
        return Iter(new, _subst(n.steps, ts, ix, avoid), _subst(n.init, ts, ix, avoid),  # type: ignore[arg-type]
                    body)  # type: ignore[arg-type]
    return type(n)(new, _subst(n.lo, ts, ix, avoid), _subst(n.hi, ts, ix, avoid),  # type: ignore
                   body)


def specialize(n: Node, values: Mapping[str, int]) -> Node:
    """`n` with the size parameters in `values` replaced by constants (binders that
    shadow a name are respected)."""
    return subst(n, indices={k: IConst(int(v)) for k, v in values.items()})


# ---------------------------------------------------------------------------
# Z semantics of the index language, on Python ints or numpy arrays alike.


def z_op(op: str, a: Any, b: Any) -> Any:
    """`a op b` in Z (Coq's Z.add ... Z.div, Z.modulo, cdiv): floor division and its
    modulo, with a / 0 = 0, a mod 0 = a and cdiv a 0 = 0 (Tensor/Core.v)."""
    if op == "+":
        return a + b
    if op == "-":
        return a - b
    if op == "*":
        return a * b
    if op == "cdiv":  # cdiv a b = (a + b - 1) / b
        return z_op("/", a + b - 1, b)
    if op not in ("/", "%"):
        raise ValueError(f"unknown index operation {op!r}")
    if isinstance(a, int) and isinstance(b, int):
        if b == 0:
            return 0 if op == "/" else a
        return a // b if op == "/" else a % b
    safe = np.where(b == 0, 1, b)
    if op == "/":
        return np.where(b == 0, 0, np.floor_divide(a, safe))
    return np.where(b == 0, a, np.mod(a, safe))


def fold_idx(i: Idx, var: Callable[[str], Any], const: Callable[[int], Any] = int) -> Any:
    """The value of `i`, with `var(name)` for variables and `const(k)` for literals
    (ints for sizes, numpy arrays for the interpreter's loop indices)."""
    if isinstance(i, IConst):
        return const(i.value)
    if isinstance(i, IVar):
        return var(i.name)
    if isinstance(i, IBin):
        return z_op(i.op, fold_idx(i.left, var, const), fold_idx(i.right, var, const))
    raise TypeError(f"not an index expression: {i!r}")


def eval_idx(i: Idx, values: Mapping[str, int]) -> int:
    """The integer value of `i` under `values` (KeyError names a missing variable)."""
    return fold_idx(i, values.__getitem__)


CMP_FUNS: dict[str, Callable[[Any, Any], Any]] = {
    "<": lambda a, b: a < b, "<=": lambda a, b: a <= b, "=": lambda a, b: a == b,
    ">": lambda a, b: a > b, ">=": lambda a, b: a >= b, "<>": lambda a, b: a != b,
}


def eval_pred(p: Pred, values: Mapping[str, int]) -> bool:
    """The truth of `p` under integer `values`."""
    if isinstance(p, PBool):
        return p.value
    if isinstance(p, PAnd):
        return eval_pred(p.left, values) and eval_pred(p.right, values)
    return bool(CMP_FUNS[p.op](eval_idx(p.left, values), eval_idx(p.right, values)))


# ---------------------------------------------------------------------------
# Shapes, computed syntactically (the Python counterpart of Tensor/Shape.v)

Shape = tuple  # tuple[Idx, ...]; () for a scalar

# The meaning of an instruction call, its specification instantiated: given by the
# instruction registry (instrs.py), which builds on this module.
_INSTRUCTION_MEANING: Callable[[Instr], Expr] | None = None


def set_instruction_meaning(fn: Callable[[Instr], Expr]) -> None:
    global _INSTRUCTION_MEANING
    _INSTRUCTION_MEANING = fn


class ShapeError(ValueError):
    """A term whose shape cannot be determined or is inconsistent."""


def cdiv(a: Idx, b: Idx) -> Idx:
    return IBin("cdiv", a, b)


def shape_of(e: Expr, env: dict[str, Shape]) -> Shape:
    """Extents of `e`, outermost first, as index expressions.

    `env` maps each free tensor variable to its shape.  Extents are symbolic:
    they may mention size parameters.  A `Zero` has no intrinsic shape; it
    is reported as the shape of its sibling where one exists, else ().
    """
    if isinstance(e, Var):
        if e.name not in env:
            raise ShapeError(f"unknown tensor variable {e.name!r}")
        return tuple(env[e.name])
    if isinstance(e, Zero):
        return ()
    if isinstance(e, Gen):
        extent = e.hi if e.lo == IConst(0) else IBin("-", e.hi, e.lo)
        return (extent, *shape_of(e.body, env))
    if isinstance(e, Sum):
        return shape_of(e.body, env)
    if isinstance(e, Guard):
        return shape_of(e.body, env)
    if isinstance(e, Let):
        inner = dict(env)
        inner[e.var] = shape_of(e.value, env)
        return shape_of(e.body, inner)
    if isinstance(e, Iter):
        return shape_of(e.init, env)  # every state has the initial tensor's extents
    if isinstance(e, Tuple):
        raise ShapeError("a program with several outputs has one shape per output")
    if isinstance(e, Get):
        s = shape_of(e.tensor, env)
        if not s:
            raise ShapeError("access into a scalar")
        return s[1:]
    if isinstance(e, TAdd):
        left = shape_of(e.left, env)
        return left if left or isinstance(e.right, Zero) else shape_of(e.right, env)
    if isinstance(e, (SBin, Lit)):
        return ()
    if isinstance(e, Concat):
        s = shape_of(e.left, env)
        return (IBin("+", e.n1, e.n2), *s[1:])
    if isinstance(e, Transpose):
        s = shape_of(e.body, env)
        return (e.m, e.n, *s[2:])
    if isinstance(e, Flatten):
        s = shape_of(e.body, env)
        return (IBin("*", e.n, e.m), *s[2:])
    if isinstance(e, Split):
        s = shape_of(e.body, env)
        return (cdiv(e.n, e.k), e.k, *s[1:])
    if isinstance(e, (PadR, PadL)):
        s = shape_of(e.body, env)
        return (IBin("+", e.n, e.k), *s[1:])
    if isinstance(e, (TruncR, TruncL)):
        s = shape_of(e.body, env)
        return (e.k, *s[1:])
    if isinstance(e, Mem):
        return shape_of(e.body, env)
    if isinstance(e, Instr):
        if _INSTRUCTION_MEANING is None:
            raise ShapeError(f"instruction call {e.name}: no instruction registry is loaded")
        return shape_of(_INSTRUCTION_MEANING(e), env)
    raise ShapeError(f"not an ATL term: {e!r}")
