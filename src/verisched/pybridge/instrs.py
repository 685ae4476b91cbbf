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

Target libraries (targets/avx2.py, targets/avx512.py, targets/gemmini/)
register specifications with `register` and map names to C emitters; this
module never imports them.  The AVX2 and AVX-512 instructions of the shared
contract are registered here, at import, because the parser must know their
arities before any target is chosen.  Names with a prefix in `PLUGINS` are
looked up by importing the module providing them on first use.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

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
    IVar,
    Let,
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
    Var,
    Zero,
    free_vars,
    idx_free_vars,
    is_idx,
)

TENSOR, SCALAR, INDEX = "tensor", "scalar", "index"
KINDS = (TENSOR, SCALAR, INDEX)

# The memories of coq/Targets/Instr.v (`Inductive memory`).
MEMORIES = ("DRAM", "AVX2_REG", "AVX512_REG", "GEMMINI_SPAD", "GEMMINI_ACC")

# Instruction-name prefix -> module that registers those instructions when imported
# (target libraries outside pybridge; imported by name, so no static dependency).
PLUGINS: dict[str, str] = {"gemmini_": "verisched.targets.gemmini.instrs"}


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
    if spec.name in _REGISTRY and not replace and _REGISTRY[spec.name] != spec:
        raise InstrError(f"instruction {spec.name} is already registered differently")
    _REGISTRY[spec.name] = spec
    return spec


def _load_plugin(name: str) -> None:
    for prefix, module in PLUGINS.items():
        if name.startswith(prefix):
            try:
                importlib.import_module(module)
            except ImportError:
                pass


def lookup(name: str) -> InstrSpec | None:
    """The specification of instruction `name`, or None if it is not one."""
    spec = _REGISTRY.get(name)
    if spec is None:
        _load_plugin(name)
        spec = _REGISTRY.get(name)
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


# ---------------------------------------------------------------------------
# Capture-avoiding substitution (parameters -> arguments)


def _fresh(base: str, avoid: set[str]) -> str:
    k = 0
    name = base
    while name in avoid:
        k += 1
        name = f"{base}{k}"
    return name


def subst_idx(i: Idx, ix: dict[str, Idx]) -> Idx:
    if isinstance(i, IVar):
        return ix.get(i.name, i)
    if isinstance(i, IBin):
        return IBin(i.op, subst_idx(i.left, ix), subst_idx(i.right, ix))
    return i


def subst_pred(p: Pred, ix: dict[str, Idx]) -> Pred:
    if isinstance(p, PCmp):
        return PCmp(p.op, subst_idx(p.left, ix), subst_idx(p.right, ix))
    if isinstance(p, PAnd):
        return PAnd(subst_pred(p.left, ix), subst_pred(p.right, ix))
    assert isinstance(p, PBool)
    return p


def substitute(e: Expr, tensors: dict[str, Expr], indices: dict[str, Idx]) -> Expr:
    """`e` with free tensor variables replaced by `tensors` and free index variables by
    `indices`; binders of `e` that would capture a free variable of a replacement are
    renamed (ATL binders are ordinary lambdas in Coq)."""
    avoid: set[str] = set()
    for v in tensors.values():
        avoid |= free_vars(v)
    for i in indices.values():
        avoid |= idx_free_vars(i)
    return _subst(e, tensors, indices, avoid)


def _subst(e: Expr, ts: dict[str, Expr], ix: dict[str, Idx], avoid: set[str]) -> Expr:
    if isinstance(e, Var):
        return ts.get(e.name, e)
    if isinstance(e, Zero):
        return e
    if isinstance(e, (Gen, Sum)):
        lo, hi = subst_idx(e.lo, ix), subst_idx(e.hi, ix)
        var, ts2, ix2 = e.var, dict(ts), dict(ix)
        ts2.pop(var, None)
        ix2.pop(var, None)
        if var in avoid:
            new = _fresh(var, avoid | free_vars(e.body))
            ix2[var] = IVar(new)
            var = new
        return type(e)(var, lo, hi, _subst(e.body, ts2, ix2, avoid | {var}))
    if isinstance(e, Let):
        value = _subst(e.value, ts, ix, avoid)
        var, ts2, ix2 = e.var, dict(ts), dict(ix)
        ts2.pop(var, None)
        ix2.pop(var, None)
        if var in avoid:
            new = _fresh(var, avoid | free_vars(e.body))
            ts2[var] = Var(new)
            var = new
        return Let(var, value, _subst(e.body, ts2, ix2, avoid | {var}))
    if isinstance(e, Guard):
        return Guard(subst_pred(e.pred, ix), _subst(e.body, ts, ix, avoid))
    if isinstance(e, Get):
        return Get(_subst(e.tensor, ts, ix, avoid), subst_idx(e.index, ix))
    if isinstance(e, (TAdd, SBin)):
        left, right = _subst(e.left, ts, ix, avoid), _subst(e.right, ts, ix, avoid)
        return TAdd(left, right) if isinstance(e, TAdd) else SBin(e.op, left, right)
    if isinstance(e, Mem):
        return Mem(e.memory, _subst(e.body, ts, ix, avoid))
    if isinstance(e, Instr):
        return Instr(e.name, tuple(subst_idx(a, ix) if is_idx(a) else _subst(a, ts, ix, avoid)
                                   for a in e.args))
    if isinstance(e, (Concat, Transpose, Flatten, Split, PadR, PadL, TruncR, TruncL)):
        vals = {}
        for f in e.__dataclass_fields__:
            v = getattr(e, f)
            vals[f] = subst_idx(v, ix) if is_idx(v) else _subst(v, ts, ix, avoid)
        return type(e)(**vals)
    raise TypeError(f"not an ATL term: {e!r}")


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
    return substitute(spec.body, ts, ix)


def result_rank(spec: InstrSpec) -> int:
    """Rank of the value of a call (the number of generations the body starts with,
    seen through guards and lets)."""
    from verisched.pybridge.terms import shape_of

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
    if isinstance(a, (Gen, Sum, Let)):
        if isinstance(a, Let):
            if not _alpha(a.value, b.value, ma, mb):  # type: ignore[union-attr]
                return False
        else:
            if not (_alpha(a.lo, b.lo, ma, mb)  # type: ignore[union-attr]
                    and _alpha(a.hi, b.hi, ma, mb)):  # type: ignore[union-attr]
                return False
        k = len(ma) + len(mb)
        return _alpha(a.body, b.body, {**ma, a.var: k},  # type: ignore[union-attr]
                      {**mb, b.var: k})  # type: ignore[union-attr]
    if isinstance(a, tuple):
        return len(a) == len(b) and all(  # type: ignore[arg-type]
            _alpha(x, y, ma, mb) for x, y in zip(a, b, strict=True))  # type: ignore[call-overload]
    if hasattr(a, "__dataclass_fields__"):
        return all(_alpha(getattr(a, f), getattr(b, f), ma, mb) for f in a.__dataclass_fields__)
    return a == b


# ---------------------------------------------------------------------------
# Reading a specification back from Coq (`Print name.`), to check the templates

_BINDER_RE = re.compile(r"\(\s*([^():]+?)\s*:\s*([^()]*(?:\([^()]*\)[^()]*)*)\)")
# Binder types that are the scalar type or its class instances, not parameters.
_IMPLICIT_TYPE_RE = re.compile(r"^(Type|Set|[A-Z]\w*(\s+\w+)+)$")


def _param_of(name: str, typ: str) -> Param:
    parts = [p.strip() for p in typ.split("->")]
    if parts == ["Z"]:
        return Param(name, INDEX)
    if any(p != "Z" for p in parts[:-1]):
        raise InstrError(f"parameter {name} : {typ} is not an index, scalar or Z-indexed tensor")
    return Param(name, TENSOR, len(parts) - 1) if len(parts) > 1 else Param(name, SCALAR)


def parse_coq_print(output: str) -> tuple[tuple[Param, ...], Expr]:
    """Parameters and body of a definition from Coq's `Print name.` output
    (`name = fun (S : Type) (H : Scalar S) (v : Z -> S) (o : Z) => body : type`),
    with the bridge's printing settings; implicit type and class arguments skipped."""
    from verisched.pybridge.coqterm import parse_program

    head, sep, _ = output.partition("\n")
    text = head
    rest = output[len(head):]
    # The body may continue on indented lines before the `: type` line.
    for line in rest.split("\n")[1:]:
        if line.lstrip().startswith(":") or not line.strip():
            break
        text += " " + line.strip()
    _, eq, value = text.partition(" = ")
    if not eq:
        raise InstrError(f"not a definition printout: {output[:200]!r}")
    value = value.strip()
    params: list[Param] = []
    if value.startswith("fun "):
        binders, arrow, value = value[4:].partition("=>")
        if not arrow:
            raise InstrError(f"cannot read the binders of: {output[:200]!r}")
        for m in _BINDER_RE.finditer(binders):
            names, typ = m.group(1).split(), " ".join(m.group(2).split())
            if _IMPLICIT_TYPE_RE.match(typ):
                continue  # the scalar type, or a class instance over it
            params += [_param_of(n, typ) for n in names]
    return tuple(params), parse_program(value.strip())


def same_spec(spec: InstrSpec, params: tuple[Param, ...], body: Expr) -> str | None:
    """None if `spec` is (params, body) up to renaming, else why not."""
    if [(p.kind, p.rank) for p in spec.params] != [(p.kind, p.rank) for p in params]:
        return (f"parameters differ: ours {[(p.name, p.kind, p.rank) for p in spec.params]}, "
                f"Coq's {[(p.name, p.kind, p.rank) for p in params]}")
    ts = {p.name: Var(f"#{k}") for k, p in enumerate(params) if p.kind != INDEX}
    ix = {p.name: IVar(f"#{k}") for k, p in enumerate(params) if p.kind == INDEX}
    ts2 = {p.name: Var(f"#{k}") for k, p in enumerate(spec.params) if p.kind != INDEX}
    ix2 = {p.name: IVar(f"#{k}") for k, p in enumerate(spec.params) if p.kind == INDEX}
    theirs, ours = substitute(body, ts, ix), substitute(spec.body, ts2, ix2)
    if not alpha_equal(theirs, ours):
        return f"bodies differ: ours {ours}, Coq's {theirs}"
    return None


# ---------------------------------------------------------------------------
# The AVX2 / AVX-512 instructions of the shared contract (coq/Targets/AVX.v)


def _lane_specs(prefix: str, lanes: int) -> list[InstrSpec]:
    """Loads, broadcast, arithmetic and stores of width `lanes`, exactly as the
    contract states them (`GEN [ l < lanes ] ...`)."""
    L = IConst(lanes)
    lv = IVar("l")

    def vec(body: Expr) -> Expr:
        return Gen("l", IConst(0), L, body)

    def at(x: str) -> Expr:
        return Get(Var(x), lv)

    t = lambda n: Param(n, TENSOR, 1)  # noqa: E731
    s = lambda n: Param(n, SCALAR)  # noqa: E731
    i = lambda n: Param(n, INDEX)  # noqa: E731
    fam = prefix.rstrip("_")
    mk = lambda name, params, body, doc: InstrSpec(  # noqa: E731
        prefix + name, tuple(params), body, fam, lanes, doc)
    return [
        mk("loadu", [t("v"), i("o")], vec(Get(Var("v"), IBin("+", IVar("o"), lv))),
           "lanes o .. o+W-1 of v"),
        mk("maskload", [t("v"), i("o"), i("n")],
           vec(Guard(PCmp("<", lv, IVar("n")), Get(Var("v"), IBin("+", IVar("o"), lv)))),
           "the first n lanes of v from o, zero elsewhere"),
        mk("broadcast", [s("x")], vec(Var("x")), "x in every lane"),
        mk("mul", [t("a"), t("b")], vec(SBin("*", at("a"), at("b"))), "lane-wise a * b"),
        mk("add", [t("a"), t("b")], vec(SBin("+", at("a"), at("b"))), "lane-wise a + b"),
        mk("max", [t("a"), t("b")], vec(SBin("max", at("a"), at("b"))),
           "lane-wise smax a b (class ScalarMax)"),
        mk("fmadd", [t("a"), t("b"), t("c")],
           vec(SBin("+", SBin("*", at("a"), at("b")), at("c"))), "lane-wise a * b + c"),
        mk("storeu", [t("v")], vec(at("v")), "v, stored with a vector store"),
        mk("maskstore", [i("n"), t("v")], vec(Guard(PCmp("<", lv, IVar("n")), at("v"))),
           "the first n lanes of v, stored with a masked store"),
    ]


AVX2_LANES = 8
AVX512_LANES = 16

for _spec in _lane_specs("avx2_", AVX2_LANES) + _lane_specs("avx512_", AVX512_LANES):
    register(_spec)
