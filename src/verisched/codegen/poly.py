"""Index expressions as integer polynomials, for simplification and C printing.

Derived programs carry long, unsimplified index arithmetic (tiling leaves
`io * 64 + ii - 0 + 1 - 1`); the public ATL printer emits it verbatim and
the C compiler then fails to vectorise (docs/anchors: "generated index
expressions are long and unsimplified").  Normalising every index to a sum
of monomials folds constants, drops `+0`/`*1` and makes two extents
comparable, which the lowering needs to decide whether a loop must be
clipped.  Floor division, modulo, ceiling division, min and max stay as
opaque atoms over simplified operands (Z.div / Z.modulo semantics, Coq's
`cdiv a b = (a + b - 1) / b`).
"""

from __future__ import annotations

from dataclasses import dataclass

from verisched.pybridge.terms import IBin, IConst, Idx, IVar, z_op


@dataclass(frozen=True)
class Atom:
    """A variable (`op == "var"`, `name` set) or an opaque operation on two polynomials."""

    op: str
    name: str = ""
    args: tuple[Poly, ...] = ()

    # Hash and key are computed once per object: the bounds prover (prover.py) hashes
    # and sorts the same nested atoms millions of times on a deep nest (decisions #84).
    def __hash__(self) -> int:
        h = self.__dict__.get("_hash")
        if h is None:
            h = hash((self.op, self.name, self.args))
            object.__setattr__(self, "_hash", h)
        return h

    def __getstate__(self) -> dict:
        # not the cached hash: a string's hash differs between processes
        return {"op": self.op, "name": self.name, "args": self.args}

    def key(self) -> str:
        k = self.__dict__.get("_key")
        if k is None:
            k = (self.name if self.op == "var"
                 else f"{self.op}(" + ",".join(a.key() for a in self.args) + ")")
            object.__setattr__(self, "_key", k)
        return k


Monomial = tuple  # tuple[Atom, ...], sorted by key; () is the constant monomial


@dataclass(frozen=True)
class Poly:
    """Sum of `coeff * monomial`; `terms` is sorted and has no zero coefficients."""

    terms: tuple[tuple[Monomial, int], ...]

    def __hash__(self) -> int:
        h = self.__dict__.get("_hash")
        if h is None:
            h = hash(self.terms)
            object.__setattr__(self, "_hash", h)
        return h

    def __getstate__(self) -> dict:
        return {"terms": self.terms}

    # -- construction -------------------------------------------------------
    @staticmethod
    def const(c: int) -> Poly:
        return Poly((((), c),) if c else ())

    @staticmethod
    def var(name: str) -> Poly:
        return Poly((((Atom("var", name),), 1),))

    @staticmethod
    def atom(a: Atom) -> Poly:
        return Poly((((a,), 1),))

    @staticmethod
    def _make(d: dict[Monomial, int]) -> Poly:
        items = [(m, c) for m, c in d.items() if c]
        items.sort(key=lambda mc: (len(mc[0]) == 0, [a.key() for a in mc[0]]))
        return Poly(tuple(items))

    # -- queries ------------------------------------------------------------
    def key(self) -> str:
        return "+".join(f"{c}*" + ".".join(a.key() for a in m) for m, c in self.terms) or "0"

    def as_const(self) -> int | None:
        if not self.terms:
            return 0
        if len(self.terms) == 1 and self.terms[0][0] == ():
            return self.terms[0][1]
        return None

    def constant(self) -> int:
        return sum(c for m, c in self.terms if m == ())

    def vars(self) -> frozenset[str]:
        out: set[str] = set()
        for m, _ in self.terms:
            for a in m:
                out |= _atom_vars(a)
        return frozenset(out)

    # -- arithmetic ---------------------------------------------------------
    def __add__(self, other: Poly | int) -> Poly:
        other = _lift(other)
        d = dict(self.terms)
        for m, c in other.terms:
            d[m] = d.get(m, 0) + c
        return Poly._make(d)

    def __neg__(self) -> Poly:
        return Poly(tuple((m, -c) for m, c in self.terms))

    def __sub__(self, other: Poly | int) -> Poly:
        return self + (-_lift(other))

    def scale(self, k: int) -> Poly:
        return Poly._make({m: c * k for m, c in self.terms})

    def __mul__(self, other: Poly | int) -> Poly:
        other = _lift(other)
        d: dict[Monomial, int] = {}
        for m1, c1 in self.terms:
            for m2, c2 in other.terms:
                m = tuple(sorted(m1 + m2, key=Atom.key))
                d[m] = d.get(m, 0) + c1 * c2
        return Poly._make(d)

    def subst(self, name: str, value: Poly) -> Poly:
        """Replace variable `name` by `value` (used to rename loop variables)."""
        out = Poly.const(0)
        for m, c in self.terms:
            t = Poly.const(c)
            for a in m:
                t = t * _atom_subst(a, name, value)
            out = out + t
        return out


def _lift(x: Poly | int) -> Poly:
    return Poly.const(x) if isinstance(x, int) else x


def _atom_vars(a: Atom) -> frozenset[str]:
    if a.op == "var":
        return frozenset([a.name])
    out: frozenset[str] = frozenset()
    for p in a.args:
        out |= p.vars()
    return out


def _atom_subst(a: Atom, name: str, value: Poly) -> Poly:
    if a.op == "var":
        return value if a.name == name else Poly.atom(a)
    return binop(a.op, *(p.subst(name, value) for p in a.args))


def _fold(op: str, a: int, b: int) -> int:
    """`a op b` on integers: Z's index operations (terms.z_op), or min / max."""
    if op == "min":
        return min(a, b)
    if op == "max":
        return max(a, b)
    return z_op(op, a, b)


def binop(op: str, a: Poly, b: Poly) -> Poly:
    """Build `a op b`, folding constants and trivial cases."""
    if op == "+":
        return a + b
    if op == "-":
        return a - b
    if op == "*":
        return a * b
    ca, cb = a.as_const(), b.as_const()
    if ca is not None and cb is not None:
        return Poly.const(_fold(op, ca, cb))
    if op in ("min", "max") and a == b:
        return a
    if op in ("/", "cdiv") and cb == 1:
        return a
    if op == "%" and cb == 1:
        return Poly.const(0)
    if op == "cdiv":  # keep one canonical division atom
        return binop("/", a + b - 1, b)
    args = (a, b) if op not in ("min", "max") or a.key() <= b.key() else (b, a)
    return Poly.atom(Atom(op, args=args))


def from_idx(i: Idx, rename: dict[str, str] | None = None) -> Poly:
    """Translate an ATL index expression, renaming variables through `rename`."""
    if isinstance(i, IConst):
        return Poly.const(i.value)
    if isinstance(i, IVar):
        return Poly.var(rename.get(i.name, i.name) if rename else i.name)
    if isinstance(i, IBin):
        return binop(i.op, from_idx(i.left, rename), from_idx(i.right, rename))
    raise TypeError(f"not an index expression: {i!r}")


def evaluate(p: Poly, values: dict[str, int]) -> int:
    """Value of `p` under integer `values` for its variables (Z semantics)."""
    total = 0
    for m, c in p.terms:
        t = c
        for a in m:
            t *= _atom_eval(a, values)
        total += t
    return total


def _atom_eval(a: Atom, values: dict[str, int]) -> int:
    if a.op == "var":
        if a.name not in values:
            raise KeyError(a.name)
        return values[a.name]
    x, y = (evaluate(p, values) for p in a.args)
    return _fold(a.op, x, y)



