"""Instructions as specifications: the registry the parser, the interpreter and
the lowerings share.

An instruction (Exo thesis Sec. 3.2.2, "@instr": a procedure whose body is
its semantics and whose code is a template) is, in our Coq library, a
`Definition` whose body is an ATL term (coq/Targets/AVX.v, Gemmini.v); a
derivation replaces a subterm by a call with `use_instr`, which is a rewrite
with that definition right to left (the thesis's `replace`, Sec. 3.4), so
Coq itself checks that the subterm is the specification.  Here each name maps
to its parameters (kind and, for tensors, rank) and its body as an AST
template over the parameter names.  The meaning of a call is the template
with the arguments substituted (`instantiate`): the interpreter evaluates
that, so a program with instructions means exactly what Coq says it means,
and a test compares every template with Coq's own printed definition.

This module is only the registry; it knows no target.  A target library
(targets/avx.py, targets/gemmini/instrs.py) registers the specifications of
its instructions when it is imported, and a test compares each with Coq's
printed definition.  An instruction nobody registered is read from Coq
itself (instr_coq.py): while a session resolves names (`resolving_with`, which
every replay installs), the parser's lookup of an applied constant asks Coq
whether it is a registered `AtlInstr` and, if so, reads its definition
(`learn`).  So a derivation using a new target's instructions replays,
prints and evaluates before any Python is written for that target.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np

from verisched.pybridge.terms import (
    Expr,
    Idx,
    Instr,
    IVar,
    Var,
    binder,
    children,
    data,
    free_vars,
    is_idx,
    set_instruction_meaning,
    shape_of,
    subst,
)

TENSOR, SCALAR, INDEX = "tensor", "scalar", "index"
KINDS = (TENSOR, SCALAR, INDEX)


class InstrError(ValueError):
    """An unknown instruction, or a call whose arguments do not fit its parameters."""


@dataclass(frozen=True)
class Param:
    """A parameter: `kind` is tensor (an `Expr` of rank `rank` >= 1), scalar (an
    `Expr` of rank 0) or index (an `Idx`)."""

    name: str
    kind: str
    rank: int = 0


@dataclass(frozen=True)
class InstrSpec:
    """One instruction: its parameters in Coq's order and its specification body.

    `family` says which target library emits it (avx2, avx512, gemmini);
    `lanes` is the vector width for SIMD instructions (the extent of the
    result's last dimension), None otherwise."""

    name: str
    params: tuple[Param, ...]
    body: Expr
    family: str
    lanes: int | None = None
    doc: str = ""
    # A scalar primitive whose Coq definition is not an ATL term (Gemmini's float
    # output path) is evaluated by this numpy function instead of `body`, which then
    # only gives the shape.  Arguments in Coq's order: index parameters as integers
    # (or arrays of them), tensor and scalar parameters as evaluated arrays.
    native: Callable[..., np.ndarray] | None = None

    @property
    def kinds(self) -> tuple[str, ...]:
        return tuple(p.kind for p in self.params)


_REGISTRY: dict[str, InstrSpec] = {}


def register(spec: InstrSpec, *, replace: bool = False) -> InstrSpec:
    """Add `spec` to the registry (target libraries call this at import).

    The body may only mention its parameters and its own binders: a spec that
    refers to anything else could not be the Coq definition it stands for."""
    for p in spec.params:
        if p.kind not in KINDS:
            raise InstrError(f"instruction {spec.name}: parameter {p.name} has unknown kind "
                             f"{p.kind!r} (one of {', '.join(KINDS)})")
    names = [p.name for p in spec.params]
    if len(set(names)) != len(names):
        raise InstrError(f"instruction {spec.name}: duplicate parameter names {names}")
    stray = free_vars(spec.body) - set(names)
    if stray:
        raise InstrError(f"instruction {spec.name}: specification mentions {sorted(stray)}, "
                         "which are not parameters")
    old = _REGISTRY.get(spec.name)
    if old is not None and not replace and old != spec:
        why = same_spec(old, spec.params, spec.body)
        if why is not None or old.native is not None and spec.native is None:
            raise InstrError(f"instruction {spec.name} is already registered differently: "
                             f"{why or 'without its native evaluation'}")
        if old.doc != LEARNED and spec.doc == LEARNED:
            return old  # a target's own registration is kept over one read back from Coq
    _REGISTRY[spec.name] = spec
    return spec


# Resolvers consulted when a name is not registered (a Coq session: instr_coq.py).
_RESOLVERS: list[Callable[[str], InstrSpec | None]] = []


@contextmanager
def resolver(fn: Callable[[str], InstrSpec | None]) -> Iterator[None]:
    """While active, `lookup(name, resolve=True)` asks `fn` for names not registered."""
    _RESOLVERS.append(fn)
    try:
        yield
    finally:
        _RESOLVERS.remove(fn)
LEARNED = "read from Coq's definition"


def lookup(name: str, *, resolve: bool = False) -> InstrSpec | None:
    """The specification of instruction `name`, or None if it is not one.  With
    `resolve`, an unregistered name is looked up through the active resolvers (a Coq
    session: see `learn`); the parser asks so only for applied constants."""
    spec = _REGISTRY.get(name)
    if spec is None and resolve:
        for r in reversed(_RESOLVERS):
            spec = r(name)
            if spec is not None:
                break
    return spec


def spec_of(name: str) -> InstrSpec:
    spec = lookup(name)
    if spec is None:
        known = ", ".join(sorted(_REGISTRY))
        raise InstrError(f"unknown instruction {name!r} (registered: {known})")
    return spec


def registered() -> dict[str, InstrSpec]:
    """A copy of the registry, for listings and tests."""
    return dict(_REGISTRY)


def check_call(e: Instr) -> InstrSpec:
    """The spec of `e`, after checking its argument count and kinds."""
    spec = spec_of(e.name)
    if len(e.args) != len(spec.params):
        raise InstrError(f"instruction {e.name} takes {len(spec.params)} arguments "
                         f"({', '.join(p.name for p in spec.params)}), got {len(e.args)}")
    for p, a in zip(spec.params, e.args, strict=True):
        if (p.kind == INDEX) != is_idx(a):
            want = "an index expression" if p.kind == INDEX else "a tensor expression"
            raise InstrError(f"instruction {e.name}: argument {p.name} must be {want}, "
                             f"got {a!r}")
    return spec


def instantiate(e: Instr) -> Expr:
    """The meaning of a call: the specification with the arguments substituted."""
    spec = check_call(e)
    ts: dict[str, Expr] = {}
    ix: dict[str, Idx] = {}
    for p, a in zip(spec.params, e.args, strict=True):
        if p.kind == INDEX:
            ix[p.name] = a  # type: ignore[assignment]
        else:
            ts[p.name] = a  # type: ignore[assignment]
    return subst(spec.body, ts, ix)  # type: ignore[return-value]


def result_rank(spec: InstrSpec) -> int:
    """Rank of the value of a call (the number of generations the body starts with,
    seen through guards and lets)."""
    env = {p.name: (IVar("_"),) * p.rank for p in spec.params if p.kind != INDEX}
    return len(shape_of(spec.body, env))


def alpha_equal(a: object, b: object) -> bool:
    """Equality of two terms up to the names of bound variables."""
    return _alpha(a, b, {}, {})


def _alpha(a: object, b: object, ma: dict[str, int], mb: dict[str, int]) -> bool:
    if type(a) is not type(b):
        return False
    if isinstance(a, (IVar, Var)):
        na, nb = ma.get(a.name), mb.get(b.name)  # type: ignore[union-attr]
        if na is None and nb is None:
            return a.name == b.name  # type: ignore[union-attr]
        return na == nb
    ka, kb = children(a), children(b)  # type: ignore[arg-type]
    if data(a) != data(b) or len(ka) != len(kb):  # type: ignore[arg-type]
        return False
    var = binder(a)  # type: ignore[arg-type]
    if var is None:
        return all(_alpha(x, y, ma, mb) for x, y in zip(ka, kb, strict=True))
    # The binder's scope is its body, the last child.
    k = len(ma) + len(mb)
    inner_a, inner_b = {**ma, var: k}, {**mb, binder(b): k}  # type: ignore[arg-type, dict-item]
    return (all(_alpha(x, y, ma, mb) for x, y in zip(ka[:-1], kb[:-1], strict=True))
            and _alpha(ka[-1], kb[-1], inner_a, inner_b))


def same_spec(spec: InstrSpec, params: tuple[Param, ...], body: Expr) -> str | None:
    """None if `spec` is (params, body) up to renaming, else why not."""
    if [(p.kind, p.rank) for p in spec.params] != [(p.kind, p.rank) for p in params]:
        return (f"parameters differ: ours {[(p.name, p.kind, p.rank) for p in spec.params]}, "
                f"Coq's {[(p.name, p.kind, p.rank) for p in params]}")
    ts = {p.name: Var(f"#{k}") for k, p in enumerate(params) if p.kind != INDEX}
    ix = {p.name: IVar(f"#{k}") for k, p in enumerate(params) if p.kind == INDEX}
    ts2 = {p.name: Var(f"#{k}") for k, p in enumerate(spec.params) if p.kind != INDEX}
    ix2 = {p.name: IVar(f"#{k}") for k, p in enumerate(spec.params) if p.kind == INDEX}
    theirs, ours = subst(body, ts, ix), subst(spec.body, ts2, ix2)
    if not alpha_equal(theirs, ours):
        return f"bodies differ: ours {ours}, Coq's {theirs}"
    return None


# terms.shape_of gives a call the shape of its meaning; terms cannot import this module
# (it builds on terms), so the registry hands it `instantiate` here.
set_instruction_meaning(instantiate)
