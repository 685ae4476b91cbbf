"""An embedded DSL for ATL programs: tensors with shapes, gen, sum, guards, lets and
the reshape operators, written as Python expressions.

Why a DSL and not the AST constructors: a program written with `Gen(...)`,
`IBin("+", ...)` and `Get(Get(...))` reads nothing like ATL, and nothing checks
its shapes until Coq does.  Here indices are Python arithmetic (`i + 1`,
`io * 8 + ii`), guards are comparisons (`(i >= 1) & (i < n)`), accesses are
subscripts (`A[i, j]`), and each binder is a Python function whose parameter is
the loop variable, named by the user (the names Coq and the C keep).  The
result is the same AST (pybridge/terms.py) every other stage takes, and
`Program.to_coq()` prints it in Coq's notation.

    >>> from verisched.schedule import dsl
    >>> n, m = dsl.sizes("n m")
    >>> A, x = dsl.tensor("A", n, m), dsl.tensor("x", m)
    >>> mv = dsl.program("matvec", dsl.gen("i", n, lambda i:
    ...          dsl.sum("j", m, lambda j: A[i, j] * x[j])))
    >>> print(mv.to_coq())
    GEN [ i < n ] SUM [ j < m ] A _[i] _[j] * x _[j]
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Union

from verisched.pybridge.coqterm import KEYWORDS, RESHAPE_SIGS, to_coq
from verisched.pybridge.terms import (
    SCALAR_FUNS,
    Concat,
    Expr,
    Flatten,
    Gen,
    Get,
    Guard,
    IBin,
    IConst,
    Idx,
    Iter,
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
    Shape,
    Split,
    Sum,
    TAdd,
    Transpose,
    TruncL,
    TruncR,
    Tuple,
    Var,
    Zero,
    binder,
    free_vars,
    idx_free_vars,
    pred_free_vars,
    walk,
)

from .errors import ScheduleError

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_']*")
IxLike = Union["Ix", int, str]


# The names the generated Coq section gives its scalar type and instances
# (schedule/coqfile.py): no size or tensor may take them.
RESERVED = ("S", "Scalar_S", "ScalarLaws_S", "ScalarMax_S")


# Words a name in the generated Coq cannot be: Coq's keywords, the words of ATL's
# notations and the functions its terms print (coqterm), and `Z`, the type every size
# and index is declared at (a size named Z would hide it from the declarations after).
COQ_WORDS = frozenset({
    "as", "at", "by", "cofix", "else", "end", "exists", "exists2", "fix", "for", "forall",
    "fun", "if", "in", "let", "match", "mod", "return", "then", "using", "where", "with",
    "Prop", "Set", "SProp", "Type", "Z", "shaped",
}) | KEYWORDS | frozenset(RESHAPE_SIGS) | frozenset(SCALAR_FUNS)


class DslError(ScheduleError, ValueError):
    """A program the DSL cannot build (a bad name, an extent that is not an index); a
    scheduling error, as the directives' are, so one `except ScheduleError` covers both."""


def _name(x: str, what: str) -> str:
    if not isinstance(x, str) or not _IDENT.fullmatch(x):
        raise DslError(f"{what} {x!r} is not an identifier")
    return x


# ---- indices and predicates --------------------------------------------------------


@dataclass(frozen=True)
class Ix:
    """An index expression over Z (sizes and loop variables), with Python arithmetic:
    `+ - *`, `//` (floor division, Coq's Z.div), `%` (Z.modulo); comparisons give a
    `Cond`."""

    term: Idx

    def __add__(self, o: IxLike) -> Ix:
        return Ix(IBin("+", self.term, ix(o).term))

    def __radd__(self, o: IxLike) -> Ix:
        return Ix(IBin("+", ix(o).term, self.term))

    def __sub__(self, o: IxLike) -> Ix:
        return Ix(IBin("-", self.term, ix(o).term))

    def __rsub__(self, o: IxLike) -> Ix:
        return Ix(IBin("-", ix(o).term, self.term))

    def __mul__(self, o: IxLike) -> Ix:
        return Ix(IBin("*", self.term, ix(o).term))

    def __rmul__(self, o: IxLike) -> Ix:
        return Ix(IBin("*", ix(o).term, self.term))

    def __floordiv__(self, o: IxLike) -> Ix:
        return Ix(IBin("/", self.term, ix(o).term))

    def __mod__(self, o: IxLike) -> Ix:
        return Ix(IBin("%", self.term, ix(o).term))

    def __lt__(self, o: IxLike) -> Cond:  # type: ignore[override]
        return Cond(PCmp("<", self.term, ix(o).term))

    def __le__(self, o: IxLike) -> Cond:  # type: ignore[override]
        return Cond(PCmp("<=", self.term, ix(o).term))

    def __gt__(self, o: IxLike) -> Cond:  # type: ignore[override]
        return Cond(PCmp("<", ix(o).term, self.term))

    def __ge__(self, o: IxLike) -> Cond:  # type: ignore[override]
        return Cond(PCmp("<=", ix(o).term, self.term))

    def eq(self, o: IxLike) -> Cond:
        """`i = j` as a guard predicate (`==` keeps Python's meaning on these objects)."""
        return Cond(PCmp("=", self.term, ix(o).term))


def ix(x: IxLike) -> Ix:
    """An int, a name or an `Ix` as an index expression."""
    if isinstance(x, Ix):
        return x
    if isinstance(x, bool):
        raise DslError(f"{x!r} is not an index")
    if isinstance(x, int):
        return Ix(IConst(x))
    if isinstance(x, str):
        return Ix(IVar(_name(x, "index variable")))
    raise DslError(f"{x!r} ({type(x).__name__}) is not an index expression")


def cdiv(a: IxLike, b: IxLike) -> Ix:
    """Ceiling division (ATL's `cdiv`)."""
    return Ix(IBin("cdiv", ix(a).term, ix(b).term))


def sizes(names: str) -> tuple[Ix, ...]:
    """Size parameters by name: `n, m = sizes("n m")`."""
    return tuple(ix(_name(s, "size")) for s in names.split())


@dataclass(frozen=True)
class Cond:
    """A guard predicate; `&` is conjunction (ATL's predicates have no `or`)."""

    pred: Pred

    def __and__(self, o: Cond) -> Cond:
        return Cond(PAnd(self.pred, o.pred))

    def __bool__(self) -> bool:
        raise DslError("a DSL comparison is a guard predicate, not a Python bool: "
                       "use dsl.guard(cond, body), and & for conjunction")


TRUE = Cond(PBool(True))


# ---- tensor expressions ------------------------------------------------------------

TLike = Union["T", float, int]


@dataclass(frozen=True)
class T:
    """A tensor (or scalar) expression: `a[i, j]` accesses, `+` is ATL's `<+>`, `*`
    and `/` are scalar multiplication and division.  `uses` are the input tensors it
    mentions (with their shapes, which the AST does not keep)."""

    term: Expr
    uses: frozenset[Tensor] = frozenset()

    def inputs(self) -> frozenset[Tensor]:
        return self.uses

    def __getitem__(self, index: IxLike | tuple[IxLike, ...]) -> T:
        out = self.term
        for i in index if isinstance(index, tuple) else (index,):
            out = Get(out, ix(i).term)
        return T(out, self.inputs())

    def __add__(self, o: T) -> T:
        o = _t(o)
        return T(TAdd(self.term, o.term), self.inputs() | o.inputs())

    def __radd__(self, o: TLike) -> T:
        return _t(o) + self

    def __mul__(self, o: TLike) -> T:
        o = _t(o)
        return T(SBin("*", self.term, o.term), self.inputs() | o.inputs())

    def __rmul__(self, o: TLike) -> T:
        return _t(o) * self

    def __truediv__(self, o: TLike) -> T:
        o = _t(o)
        return T(SBin("/", self.term, o.term), self.inputs() | o.inputs())

    def __rtruediv__(self, o: TLike) -> T:
        return _t(o) / self


def const(x: int | float | str | Fraction) -> T:
    """A literal scalar constant (`slit n d`, coq/Tensor/Scalar.v), kept exact.

    A float is read as the decimal it prints as (`0.1` is 1/10, not the binary double
    nearest to it): that is the number the user wrote, and the lowering rounds it
    once into the kernel's element type (pybridge/literals.py).  A string is read as a
    decimal or a fraction (`"1/3"`).  Zero is ATL's `tzero`; negative constants are
    refused, since the scalar language has no subtraction (docs/decisions.md #54)."""
    if isinstance(x, bool):
        raise DslError(f"{x!r} is not a number")
    try:
        q = Fraction(repr(x)) if isinstance(x, float) else Fraction(x)
    except (ValueError, ZeroDivisionError, TypeError) as exc:
        raise DslError(f"{x!r} is not a finite number: {exc}") from None
    if q == 0:
        return T(Zero())
    if q < 0:
        raise DslError(f"the constant {x!r} is negative: ATL's scalars have no subtraction "
                       "or negation, so pass it as a rank-0 input")
    return T(Lit(q.numerator, q.denominator))


def max(a: TLike, b: TLike) -> T:  # noqa: A001 - Halide's name, as dsl.sum
    """The larger of two scalars (`smax a b`, class ScalarMax of coq/Tensor/Scalar.v:
    Rmax on the reals, Z.max on the integers; a ReLU is `max(x, 0)`).  `vectorize` makes
    it a vector max (coq/Targets/AVX.v), in its masked tail too.  A program using it
    gets the instance `ScalarMax_S` in its generated Coq section."""
    x, y = _t(a), _t(b)
    return T(SBin("max", x.term, y.term), x.inputs() | y.inputs())


def _t(x: object) -> T:
    if isinstance(x, T):
        return x
    if isinstance(x, (int, float, Fraction)) and not isinstance(x, bool):
        return const(x)
    raise DslError(f"{x!r} is not a tensor expression or a number")


ZERO = T(Zero())


@dataclass(frozen=True)
class Tensor(T):
    """An input tensor: its name and its extents (outermost first)."""

    name: str = ""
    shape: tuple[Idx, ...] = ()

    def inputs(self) -> frozenset[Tensor]:
        return frozenset({self})

    def __getitem__(self, index: IxLike | tuple[IxLike, ...]) -> T:
        # An input's rank is known here, so too many indices are said now, not by
        # Coq's type error on the whole section (a scalar "expected to have type Z -> ?").
        k = len(index) if isinstance(index, tuple) else 1
        if k > len(self.shape):
            raise DslError(f"{self.name}[...]: {k} indices, but {self.name} has "
                           f"{len(self.shape)} extent{'s' if len(self.shape) != 1 else ''}")
        return super().__getitem__(index)


def tensor(name: str, *shape: IxLike) -> Tensor:
    """An input of extents `shape` (`tensor("A", n, m)`); no extents: a scalar input."""
    return Tensor(Var(_name(name, "tensor")), frozenset(), name, tuple(ix(s).term for s in shape))


def _bind(var: str, fn: Callable[[Ix], T] | T) -> T:
    body = fn(ix(var)) if callable(fn) else fn
    return _t(body)


def gen(var: str, n: IxLike, body: Callable[[Ix], T] | T, lo: IxLike = 0) -> T:
    """`GEN [ var < n ] body(var)` (from `lo` when given)."""
    b = _bind(_name(var, "loop"), body)
    return T(Gen(var, ix(lo).term, ix(n).term, b.term), b.inputs())


def sum(var: str, n: IxLike, body: Callable[[Ix], T] | T, lo: IxLike = 0) -> T:  # noqa: A001
    """`SUM [ var < n ] body(var)` (from `lo` when given)."""
    b = _bind(_name(var, "loop"), body)
    return T(Sum(var, ix(lo).term, ix(n).term, b.term), b.inputs())


def guard(cond: Cond, body: T) -> T:
    """`|[ cond ]| body`: body where cond holds, zero elsewhere."""
    if not isinstance(cond, Cond):
        raise DslError(f"guard: {cond!r} is not a predicate (compare indices: i < n)")
    b = _t(body)
    return T(Guard(cond.pred, b.term), b.inputs())


def let(var: str, value: T, body: Callable[[T], T]) -> T:
    """`tlet var := value in body(var)`: a buffer (a Halide producer) named `var`."""
    v, val = _name(var, "buffer"), _t(value)
    b = _t(body(T(Var(v))))
    return T(Let(v, val.term, b.term), val.inputs() | b.inputs())


def iterate(steps: IxLike, var: str, init: T, step: Callable[[T], T]) -> T:
    """`ITER [ steps ] var := init in step(var)` (coq/Tensor/Iter.v): `step` applied
    `steps` times to `init` (none when steps <= 0, in the semantics; a compiled kernel's
    sizes are at least 1 at a call, so no steps is compiled in: `compile(fix={"T": 0})`),
    the state named `var`.  The
    lowering keeps two buffers of the state (double buffering), so the step must keep
    the state's extents."""
    v, start = _name(var, "state"), _t(init)
    b = _t(step(T(Var(v))))
    return T(Iter(v, ix(steps).term, start.term, b.term), start.inputs() | b.inputs())


def _reshape(node: Expr, *parts: T) -> T:
    uses: frozenset[Tensor] = frozenset()
    for p in parts:
        uses |= p.inputs()
    return T(node, uses)


def concat(n1: IxLike, n2: IxLike, a: T, b: T) -> T:
    return _reshape(Concat(ix(n1).term, ix(n2).term, a.term, b.term), a, b)


def transpose(n: IxLike, m: IxLike, a: T) -> T:
    return _reshape(Transpose(ix(n).term, ix(m).term, a.term), a)


def flatten(n: IxLike, m: IxLike, a: T) -> T:
    return _reshape(Flatten(ix(n).term, ix(m).term, a.term), a)


def split(k: IxLike, n: IxLike, a: T) -> T:
    return _reshape(Split(ix(k).term, ix(n).term, a.term), a)


def pad_r(k: IxLike, n: IxLike, a: T) -> T:
    return _reshape(PadR(ix(k).term, ix(n).term, a.term), a)


def pad_l(k: IxLike, n: IxLike, a: T) -> T:
    return _reshape(PadL(ix(k).term, ix(n).term, a.term), a)


def trunc_r(k: IxLike, a: T) -> T:
    return _reshape(TruncR(ix(k).term, a.term), a)


def trunc_l(k: IxLike, n: IxLike, a: T) -> T:
    return _reshape(TruncL(ix(k).term, ix(n).term, a.term), a)


# ---- programs ------------------------------------------------------------------------


@dataclass(frozen=True)
class Program:
    """A named program over declared inputs: what a schedule starts from.

    `inputs` name -> extents, in the order the kernel takes them; `sizes` the size
    parameters in order; `assume` hypotheses on the sizes (`n >= 2`), which Coq may use
    in side conditions and which become the kernel's preconditions."""

    name: str
    expr: Expr
    inputs: tuple[tuple[str, Shape], ...]
    sizes: tuple[str, ...]
    assume: tuple[Pred, ...] = field(default=())
    # The element type ("S": generic; "gint": Gemmini's integers, coq/Targets/Gemmini.v),
    # the sizes that are Coq booleans (a ReLU flag), the integer parameters that are no
    # extents (an output scale: no nonnegativity hypothesis), and the library modules
    # the section needs beyond ATL (`Examples.GemminiConv`: lemmas a certificate uses).
    scalar: str = "S"
    bools: tuple[str, ...] = field(default=())
    signed: tuple[str, ...] = field(default=())
    requires: tuple[str, ...] = field(default=())
    # Hypotheses of a source file (search/kernel_file.py) that are neither shapes nor
    # integer conditions over the sizes, as (name, text): not restated, so a derivation
    # of this program assumes less than the file did (a user is told, not left to guess).
    left_out: tuple[tuple[str, str], ...] = field(default=())
    # Inputs of a source file with no `shaped` hypothesis, whose extents were read off
    # the loops that index them (search/kernel_file.py) and are stated as hypotheses in
    # a derivation of this program, as (input, its shape in Coq).
    inferred: tuple[tuple[str, str], ...] = field(default=())

    def to_coq(self) -> str:
        """The program in Coq's ATL notation."""
        return to_coq(self.expr)


def program(name: str, body: T | tuple[T, ...], *, inputs: Sequence[Tensor] | None = None,
            sizes: Sequence[str] | None = None, assume: Sequence[Cond] = ()) -> Program:
    """Name a program.  Its inputs are the tensors it mentions (or `inputs`, in that
    order); its sizes the remaining free index names (or `sizes`, in that order).  A
    tuple of expressions is a program with several outputs (mvt's two vectors): one
    kernel writes them all, in that order."""
    _name(name, "program")
    if isinstance(body, (tuple, list)):
        if len(body) < 2:
            raise DslError(f"program {name}: several outputs need at least two expressions")
        parts = [_t(b) for b in body]
        expr: Expr = Tuple(tuple(p.term for p in parts))
        uses: frozenset[Tensor] = frozenset().union(*(p.inputs() for p in parts))
    else:
        expr, uses = _t(body).term, _t(body).inputs()
    found: dict[str, Tensor] = {}
    for t in uses:
        if found.setdefault(t.name, t) != t:
            raise DslError(f"program {name}: two tensors named {t.name} with different shapes")
    if inputs is None:
        ins = [found[k] for k in sorted(found)]
    else:
        ins = list(inputs)
        missing = sorted(set(found) - {t.name for t in ins})
        if missing:
            raise DslError(f"program {name}: it reads {', '.join(missing)}, which `inputs` "
                           "does not list")
    names: set[str] = set(free_vars(expr)) - {t.name for t in ins}
    for t in ins:
        for d in t.shape:
            names |= idx_free_vars(d)
    for c in assume:
        names |= pred_free_vars(c.pred)
    order = tuple(sizes) if sizes is not None else tuple(sorted(names))
    if set(order) != names:
        raise DslError(f"program {name}: its sizes are {sorted(names)}, not {list(order)}")
    taken = sorted(({t.name for t in ins} | set(order)) & set(RESERVED))
    if taken:
        raise DslError(f"program {name}: {', '.join(taken)} is reserved for the scalar type "
                       "and its instances in the generated Coq; rename it")
    binders = {b for node in walk(expr) if (b := binder(node)) is not None}
    words = sorted(({name} | {t.name for t in ins} | set(order) | binders) & COQ_WORDS)
    if words:
        raise DslError(f"program {name}: {', '.join(words)} is a word of Coq or of ATL's "
                       "notation, which the generated Coq could not use as a name; rename it")
    if name in {t.name for t in ins} | set(order):
        raise DslError(f"program {name}: {name} is also the name of one of its tensors or "
                       "sizes; give the program another name")
    clash = {t.name for t in ins} & set(order)
    if clash:
        raise DslError(f"program {name}: {', '.join(sorted(clash))} is both a tensor and a size")
    params = set(order) | {t.name for t in ins}
    for node in walk(expr):
        b = binder(node)
        if b is None:
            continue
        if b in params:
            raise DslError(f"program {name}: the {type(node).__name__.lower()} binder {b} "
                           "shadows an input or size of the same name; rename it")
        # A binder named again inside itself captures every use of the outer one in
        # the inner body: gen("i", n, lambda i: gen("i", m, lambda j: A[i, j])) reads
        # A[i, i], silently another program.
        again = next((x for x in walk(node) if x is not node and binder(x) == b), None)
        if again is not None:
            raise DslError(f"program {name}: the {type(node).__name__.lower()} binder {b} is "
                           f"bound again inside it (by a {type(again).__name__.lower()}), "
                           f"which would capture the outer {b}'s uses; rename one")
    return Program(name, expr, tuple((t.name, t.shape) for t in ins), order,
                   tuple(c.pred for c in assume))
