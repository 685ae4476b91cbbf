"""From a Gemmini derivation in a .v file to a lowered kernel (replay, then lower).

The C targets read the derived program with every definition unfolded
(`bridge_show_semantics`, codegen/fromcoq.py).  For Gemmini that unfolding is
wrong twice over: it would replace each instruction call by its
specification (the lowering needs the calls), and it would normalise
`gemmini_acc_out` (Z.log2, powers, parity) under symbolic arguments, which
does not finish.  So the program is taken as Coq prints it after the last
step, calls and `in_mem` markers intact (the bridge parses every state), and
the section's hypotheses give the inputs' shapes (`shaped [..] v`) and the
integer conditions, as in fromcoq.load_derived.
"""

from __future__ import annotations

from pathlib import Path

from verisched.codegen.errors import CodegenError
from verisched.codegen.fromcoq import (
    DerivationError,
    DerivedProgram,
    _parse_condition,
    assumptions,
    parse_shape,
    safety_gap,
)
from verisched.pybridge.terms import free_vars, idx_free_vars
from verisched.targets.gemmini.lower import GemminiKernel, config_names, lower_gemmini

_SHAPED = "shaped"


def load_derivation(path: str | Path, name: str, timeout: float = 300.0) -> DerivedProgram:
    """Replay derivation `name` of `path`; its final program with instruction calls."""
    return load_derivations(path, [name], timeout)[name]


def load_derivations(path: str | Path, names: list[str], timeout: float = 300.0
                     ) -> dict[str, DerivedProgram]:
    """Replay the derivations `names` of `path` in one Coq session (the whole file is
    replayed when there are several)."""
    from verisched.pybridge.errors import BridgeError
    from verisched.pybridge.replay import replay_file
    from verisched.pybridge.session import CoqSession

    path = Path(path)
    if not path.is_file():
        raise DerivationError(f"derivation: no such file: {path}")
    only = names[0] if len(names) == 1 else None
    try:
        with CoqSession(timeout=timeout) as session:
            result = replay_file(session, path, only=only, semantics=False)
    except BridgeError as exc:
        raise DerivationError(f"derivation: replaying {path}: {type(exc).__name__}: {exc}"
                              ) from exc
    if result.failure:
        f = result.failure
        raise DerivationError(f"derivation: {path}:{f.line}: Coq rejected {f.sentence!r}: "
                              f"{f.message}")
    out = {}
    for name in names:
        rds = [rd for rd in result.derivations if rd.derivation.name == name]
        if not rds:
            raise DerivationError(f"derivation: {path} has no derivation named {name!r}")
        out[name] = _derived_program(name, rds[0])
    return out


def _derived_program(name: str, rd: object) -> DerivedProgram:
    if rd.error is not None:  # type: ignore[attr-defined]
        raise DerivationError(f"derivation {name}: {rd.error.describe()}")  # type: ignore
    if not rd.ok:  # type: ignore[attr-defined]
        v = rd.verdict  # type: ignore[attr-defined]
        raise DerivationError(f"derivation {name}: Coq did not accept it: "
                              f"{v.message if v else 'not closed'}")
    steps = rd.derivation.steps  # type: ignore[attr-defined]
    states = [s.after for s in steps if s.after.program_text is not None]
    if not states:
        raise DerivationError(f"derivation {name}: no program recorded")
    last = states[-1]
    if last.program is None:
        raise DerivationError(f"derivation {name}: the derived program is outside the AST's "
                              f"grammar: {last.parse_error}")
    original = states[0].program if states[0] is not last else None
    env: dict = {}
    sig = rd.signature  # type: ignore[attr-defined]
    dp = DerivedProgram(name, last.program, env, tuple(sig.sizes),
                        safety_gap=safety_gap(steps), original=original)
    for hname, text in sig.hypotheses:
        text = " ".join(text.split())
        if text.startswith(_SHAPED):
            body = text[len(_SHAPED):].strip()
            if body.startswith("[") and "]" in body:
                dims, tensor = body[1:].split("]", 1)
                env[tensor.strip()] = parse_shape(dims)
                continue
        chain = _parse_condition(text)
        if chain is not None:
            dp.conditions.append((hname, text, chain))
        else:
            dp.unchecked.append((hname, text))
    # A section's hypotheses may shape tensors this derivation does not use.
    used = free_vars(dp.expr)
    for t in [t for t in env if t not in used]:
        del env[t]
    return dp


def lower_derivation(dp: DerivedProgram, kernel_name: str | None = None,
                     allow_unproved_safety: bool = False) -> GemminiKernel:
    """Lower a replayed Gemmini derivation, refusing one whose accesses are not proved
    in bounds (the kernel reads DRAM unchecked, like the C targets)."""
    if dp.safety_gap is not None and not allow_unproved_safety:
        raise CodegenError(f"refusing to lower {dp.name}: accesses not proved in bounds "
                           f"({dp.safety_gap}); end the derivation with check_safe")
    used: set[str] = set(free_vars(dp.expr)) - set(dp.env)
    for s in dp.env.values():
        for i in s:
            used |= idx_free_vars(i)
    sizes = sorted(used)
    configs = config_names(dp.expr)
    real_sizes = {s for s in sizes if s not in configs}
    name = kernel_name or dp.name.replace("'", "_")
    return lower_gemmini(dp.expr, dp.env, name=name, sizes=sizes,
                         assume=assumptions(dp, real_sizes))
