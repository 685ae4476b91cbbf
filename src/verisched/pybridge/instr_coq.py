"""Instruction specifications read from Coq itself.

A target's Coq file defines each instruction as an ATL term and registers it
(`AtlInstr`, coq/Targets/Instr.v).  `learn` asks a Coq session whether a
constant is such an instruction and reads its printed definition into a
specification for the registry (instrs.py); `resolving_with(session)` makes
the parser do that for every applied constant it does not know, so a
derivation using a new target's instructions replays, parses and evaluates
without a Python specification.  `parse_coq_print` is also how the tests
compare each target's Python templates with Coq's definitions.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from verisched.pybridge.coqterm import parse_program
from verisched.pybridge.errors import TermParseError
from verisched.pybridge.instrs import (
    INDEX,
    LEARNED,
    SCALAR,
    TENSOR,
    InstrError,
    InstrSpec,
    Param,
    register,
    resolver,
)
from verisched.pybridge.terms import Expr, Gen, Guard, IConst, Let

if TYPE_CHECKING:
    from verisched.pybridge.session import CoqSession


_IDENT = re.compile(r"[A-Za-z_][\w']*")


def learn(session: CoqSession, name: str) -> InstrSpec | None:
    """Read instruction `name` from Coq and register it, or None if Coq does not know
    it as a registered instruction (`AtlInstr`, coq/Targets/Instr.v) whose body is an
    ATL term.  Family: the name's prefix (`avx2_loadu` -> avx2); lanes: the extent of
    the body's last generation when it is a constant."""
    if not _IDENT.fullmatch(name) or name == "in_mem":
        return None
    if not session.run(f"Check (ltac:(typeclasses eauto) : AtlInstr (@{name})).").ok:
        return None
    printed = session.run(f"Print {name}.")
    if not printed.ok:
        return None
    try:
        params, body = parse_coq_print(printed.output)
    except (InstrError, TermParseError):
        return None  # not an ATL term (a native primitive): its target must register it
    family = name.split("_", 1)[0]
    spec = InstrSpec(name, params, body, family, _lanes(body), LEARNED)
    try:
        return register(spec)
    except InstrError:
        return None


def _lanes(body: Expr) -> int | None:
    while isinstance(body, (Gen, Guard, Let)):
        if isinstance(body, Gen) and not isinstance(body.body, Gen):
            n = body.hi
            return n.value if isinstance(n, IConst) and body.lo == IConst(0) else None
        body = body.body
    return None


@contextmanager
def resolving_with(session: CoqSession) -> Iterator[None]:
    """While active, unregistered instructions are read from `session` (`learn`);
    names Coq does not know as instructions are remembered, so each costs one query."""
    misses: set[str] = set()

    def resolve(name: str) -> InstrSpec | None:
        if name in misses or not session.alive:
            return None
        spec = learn(session, name)
        if spec is None:
            misses.add(name)
        return spec

    with resolver(resolve):
        yield


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
        groups = [(m.group(1), m.group(2)) for m in _BINDER_RE.finditer(binders)]
        if not groups and ":" in binders:  # one group, unparenthesised: `fun a b : T =>`
            names_text, _, typ_text = binders.partition(":")
            groups = [(names_text, typ_text)]
        for names_text, typ_text in groups:
            names, typ = names_text.split(), " ".join(typ_text.split())
            if _IMPLICIT_TYPE_RE.match(typ):
                continue  # the scalar type, or a class instance over it
            params += [_param_of(n, typ) for n in names]
    return tuple(params), parse_program(value.strip())
