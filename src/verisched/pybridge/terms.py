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

from dataclasses import dataclass

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
    """`op` is one of < <= = (Coq's <?, <=?, =?)."""

    op: str
    left: Idx
    right: Idx


@dataclass(frozen=True)
class PAnd:
    left: Pred
    right: Pred


Pred = PBool | PCmp | PAnd

CMP_OPS = ("<", "<=", "=")

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
    Var | Zero | Gen | Sum | Guard | Let | Get | TAdd | SBin
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
    if isinstance(e, Zero):
        return frozenset()
    if isinstance(e, (Gen, Sum)):
        return idx_free_vars(e.lo) | idx_free_vars(e.hi) | (free_vars(e.body) - {e.var})
    if isinstance(e, Guard):
        return pred_free_vars(e.pred) | free_vars(e.body)
    if isinstance(e, Let):
        return free_vars(e.value) | (free_vars(e.body) - {e.var})
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
    return isinstance(v, (Var, Zero, Gen, Sum, Guard, Let, Get, TAdd, SBin, Mem, Instr,
                          *RESHAPES))


def is_idx(v: object) -> bool:
    """Is `v` an index expression (as opposed to a tensor expression)?"""
    return isinstance(v, (IVar, IConst, IBin))


# ---------------------------------------------------------------------------
# Shapes, computed syntactically (the Python counterpart of Tensor/Shape.v)

Shape = tuple  # tuple[Idx, ...]; () for a scalar


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
    if isinstance(e, Get):
        s = shape_of(e.tensor, env)
        if not s:
            raise ShapeError("access into a scalar")
        return s[1:]
    if isinstance(e, TAdd):
        left = shape_of(e.left, env)
        return left if left or isinstance(e.right, Zero) else shape_of(e.right, env)
    if isinstance(e, SBin):
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
        # The shape of its specification (imported late: instrs.py builds on this module).
        from verisched.pybridge.instrs import instantiate

        return shape_of(instantiate(e), env)
    raise ShapeError(f"not an ATL term: {e!r}")
