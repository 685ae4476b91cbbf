"""Stage 1 for a program written in Python: an AST -> a derived program.

A program built with the AST constructors (pybridge/terms.py) has no
derivation, but it still needs Coq's word that its accesses are in bounds
before it becomes unchecked C.  `from_ast` asks Coq: it opens a derivation
of the program under its shape and size hypotheses (pybridge/derivation.py,
`Derivation.from_program`), runs `check_safe` and closes it.  If Coq
refuses, or the caller passes `prove=False`, the result carries the reason
as its safety gap, and the check stage refuses it unless `unsafe=True`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from verisched.pipeline.derive import DerivationError, DerivedProgram
from verisched.pybridge.coqterm import idx_to_coq
from verisched.pybridge.derivation import Derivation, StepError
from verisched.pybridge.errors import BridgeError, CoqCommandError
from verisched.pybridge.hypotheses import parse_hypotheses
from verisched.pybridge.instr_coq import resolving_with
from verisched.pybridge.session import CoqSession
from verisched.pybridge.terms import (
    Expr,
    Get,
    PAnd,
    PBool,
    PCmp,
    Pred,
    Shape,
    Var,
    free_vars,
    idx_free_vars,
    is_idx,
    walk_scoped,
)

NOT_PROVED = "a Python program built with prove=False: Coq was not asked to check its bounds"


def _check_env(name: str, env: object) -> None:
    """`env` is a mapping from tensor names to extents (index expressions: `IVar("n")`,
    `IConst(4)`, ...); said by name, where None or a string extent failed deep inside."""
    if not isinstance(env, Mapping):
        raise DerivationError(f"program {name}: env must map each tensor's name to its "
                              f"extents, got {type(env).__name__}")
    for t, shp in env.items():
        if not isinstance(t, str) or not isinstance(shp, (tuple, list)) \
                or not all(is_idx(i) for i in shp):
            raise DerivationError(f"program {name}: env[{t!r}] = {shp!r}: extents are a "
                                  "tuple of index expressions (IVar('n'), IConst(4), ...)")


def _check_ranks(name: str, expr: Expr, env: Mapping[str, Shape]) -> None:
    """No input is read with more indices than env gives it extents: said by the tensor,
    where Coq's refusal of the section it would reach named neither."""
    for x, bound in walk_scoped(expr):
        if not isinstance(x, Get):
            continue
        depth, base = 0, x
        while isinstance(base, Get):
            depth, base = depth + 1, base.tensor
        if isinstance(base, Var) and base.name not in bound and base.name in env \
                and depth > len(env[base.name]):
            rank = len(env[base.name])
            raise DerivationError(
                f"program {name}: tensor {base.name} is read with {depth} indices, but "
                f"env gives it {rank} extent{'' if rank == 1 else 's'} "
                f"({', '.join(idx_to_coq(i) for i in env[base.name]) or 'a scalar'})")


def prop_of(p: Pred) -> str:
    """A size predicate as a Coq proposition over Z (`2 <= n /\\ n < m`)."""
    if isinstance(p, PBool):
        return "True" if p.value else "False"
    if isinstance(p, PAnd):
        return f"({prop_of(p.left)} /\\ {prop_of(p.right)})"
    assert isinstance(p, PCmp)
    return f"({idx_to_coq(p.left)} {p.op} {idx_to_coq(p.right)})"


def from_ast(expr: Expr, env: Mapping[str, Shape], *, name: str = "kernel",
             sizes: Sequence[str] | None = None, assume: Sequence[Pred | str] = (),
             prove: bool = True, scalar: str = "S", bools: Sequence[str] = (),
             timeout: float = 120.0) -> DerivedProgram:
    """`expr` over the inputs `env` (name -> extents) as a derived program.

    `sizes` orders the size parameters (default: sorted); `assume` are
    hypotheses over them (predicates or Coq propositions such as "2 <= n"),
    which become the kernel's preconditions.  With `prove`, Coq's `check_safe`
    is run on the program (a Coq session, about a second), over the element type
    `scalar` (generic by default; a target states its own, Target.coq_scalar).
    `bools` are the sizes that are Coq booleans (passed to the kernel as 0 or 1)."""
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
        raise DerivationError(f"program name {name!r} is not an identifier")
    _check_env(name, env)
    # A tensor read but given no extents: said here, by the argument that lacks it.
    unshaped = sorted({x.name for x, bound in walk_scoped(expr)
                       if isinstance(x, Var) and x.name not in bound and x.name not in env})
    if unshaped:
        raise DerivationError(f"program {name}: tensor {', '.join(unshaped)} is read but has "
                              f"no entry in env (its extents; env has "
                              f"{', '.join(env) or 'none'})")
    _check_ranks(name, expr, env)
    names: set[str] = set(free_vars(expr)) - set(env)
    for shp in env.values():
        for i in shp:
            names |= idx_free_vars(i)
    order = list(sizes) if sizes is not None else sorted(names)
    if set(order) != names:
        raise DerivationError(f"program {name}: size parameters {sorted(names)} differ from "
                              f"the given order {order}")
    hyps = [(f"Hshape_{t}", f"shaped [{'; '.join(idx_to_coq(i) for i in shp)}] {t}")
            for t, shp in env.items() if shp]
    hyps += [(f"Hsize{k}", a if isinstance(a, str) else prop_of(a))
             for k, a in enumerate(assume)]
    stray = [b for b in bools if b not in order]
    if stray:
        raise DerivationError(f"program {name}: {', '.join(stray)} in bools is not a size")
    try:
        gap = _prove_safe(expr, env, name, order, [h for _, h in hyps], scalar, tuple(bools),
                          timeout) if prove else NOT_PROVED
    except CoqCommandError as exc:  # a hypothesis Coq rejected
        bad = re.match(r"Hypothesis VS_H(\d+) : (.*)\.$", exc.sentence)
        k = int(bad.group(1)) - (len(hyps) - len(assume)) if bad else -1  # shapes come first
        if k < 0:
            raise DerivationError(f"program {name}: Coq rejected {exc.sentence!r}: "
                                  f"{exc.coq_message}") from None
        raise DerivationError(f"program {name}: assume[{k}] {bad.group(2)!r}: Coq rejected "
                              f"it: {exc.coq_message}") from None
    return DerivedProgram(
        source=f"Python program {name}", name=name, expr=expr, original=expr,
        sizes=tuple(order), tensors=tuple((t, len(s)) for t, s in env.items()),
        hypotheses=parse_hypotheses(hyps), safety_gap=gap, bools=tuple(bools))


def _prove_safe(expr: Expr, env: Mapping[str, Shape], name: str, sizes: list[str],
                hypotheses: list[str], scalar: str, bools: tuple[str, ...],
                timeout: float) -> str | None:
    """None when Coq's check_safe proves every access of `expr` in bounds; else why not."""
    try:
        with CoqSession(timeout=timeout) as session, resolving_with(session):
            d = Derivation.from_program(session, f"vs_api_{name}", expr,
                                        {t: len(s) for t, s in env.items()}, sizes,
                                        hypotheses, scalar=scalar, bools=bools)
            for tactic in ("reschedule.", "check_safe.", "done."):
                res = d.run_tactic(tactic)
                if isinstance(res, StepError):
                    return f"Coq's {tactic[:-1]} failed on the program: {res.message}"
            verdict = d.finish()
            if not verdict.accepted:
                return f"Coq did not accept the safety proof: {verdict.message}"
    except CoqCommandError as exc:
        if exc.sentence.startswith("Hypothesis VS_H"):
            raise  # the caller's hypothesis, not Coq's availability: from_ast names it
        return f"Coq could not be asked ({type(exc).__name__}: {exc})"
    except BridgeError as exc:
        return f"Coq could not be asked ({type(exc).__name__}: {exc})"
    return None
