"""From a derivation in a .v file to a program the lowering accepts.

The bridge (pybridge/replay.py) replays the file and records the program
after every step, with user definitions unfolded; the last one before
`done` is the derived program.  Shapes of the inputs come from the
section's `shaped [..] v` hypotheses (the same facts the derivation's side
conditions used), or from the caller; integer hypotheses (`2 <= n`) are
kept so a run can refuse sizes the proof does not cover.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from verisched.codegen.errors import CodegenError, KernelCallError
from verisched.codegen.poly import evaluate, from_idx
from verisched.pybridge.terms import Expr, Idx, Shape

_SHAPED_RE = re.compile(r"^shaped\s*\[(.*)\]\s*([A-Za-z_][\w']*)$")
_CMP_RE = re.compile(r"(<=|<|=|>=|>)")


class DerivationError(CodegenError):
    """The derivation could not be replayed or did not yield a program."""


@dataclass
class DerivedProgram:
    name: str
    expr: Expr
    env: dict[str, Shape]
    sizes: tuple[str, ...]
    # (hypothesis name, text, chain of index expressions and comparison operators)
    conditions: list[tuple[str, str, list]] = field(default_factory=list)
    unchecked: list[tuple[str, str]] = field(default_factory=list)
    # None when `check_safe` (Sec. 7.2) proved every access of the final program
    # in bounds; otherwise why it did not.
    safety_gap: str | None = None
    # The program the derivation started from (user definitions unfolded), when parsed.
    original: Expr | None = None
    # The derived program with every definition unfolded, instructions included (the
    # bridge's view); `expr` keeps instruction calls and memories for the lowering.
    unfolded: Expr | None = None


def safety_gap(steps: list) -> str | None:
    """Why the derived program's accesses are not known to be in bounds, or None.

    The C kernel reads arrays without bounds checks, so the lowering needs
    Coq's `check_safe` to have succeeded on the *final* program: the last
    `check_safe` step must come after every step that changed the program.
    """
    checks = [k for k, s in enumerate(steps) if s.tactic.strip().startswith("check_safe")]
    if not checks:
        return "the derivation never runs check_safe"
    proved = steps[checks[-1]].after.program_text
    for s in steps[checks[-1] + 1:]:
        text = s.after.program_text
        if text is not None and text != proved:
            return f"step {s.step} ({s.tactic.strip()}) changed the program after check_safe"
    return None


def parse_shape(text: str) -> Shape:
    """`n, m*2` (CLI) or `n; m` (Coq list) to extents."""
    from verisched.pybridge.coqterm import parse_index

    parts = [p.strip() for p in re.split(r"[;,]", text) if p.strip()]
    return tuple(parse_index(p) for p in parts)


def _parse_condition(text: str) -> list | None:
    from verisched.pybridge.coqterm import parse_index
    from verisched.pybridge.errors import TermParseError

    pieces = _CMP_RE.split(text)
    if len(pieces) < 3:
        return None
    try:
        return [parse_index(p) if k % 2 == 0 else p for k, p in enumerate(pieces)]
    except TermParseError:
        return None


def assumptions(dp: DerivedProgram, sizes: set[str]) -> list:
    """The integer hypotheses over `sizes` as predicates, for `lower(assume=...)`."""
    from verisched.pybridge.terms import PCmp, pred_free_vars

    flip = {">=": "<=", ">": "<"}
    out = []
    for _, _, chain in dp.conditions:
        for k in range(1, len(chain), 2):
            a, op, b = chain[k - 1], chain[k], chain[k + 1]
            p = PCmp(flip[op], b, a) if op in flip else PCmp(op, a, b)
            if pred_free_vars(p) <= sizes:
                out.append(p)
    return out


def check_conditions(dp: DerivedProgram, sizes: dict[str, int]) -> None:
    """Refuse sizes that violate an integer hypothesis of the derivation."""
    for name, text, chain in dp.conditions:
        try:
            vals = [evaluate(from_idx(c), sizes) if k % 2 == 0 else c
                    for k, c in enumerate(chain)]
        except KeyError as exc:
            raise KernelCallError(f"no value for size {exc.args[0]} (needed by hypothesis "
                                  f"{name} : {text}); pass --size {exc.args[0]}=...") from None
        for k in range(1, len(vals), 2):
            a, op, b = vals[k - 1], vals[k], vals[k + 1]
            ok = {"<=": a <= b, "<": a < b, "=": a == b, ">=": a >= b, ">": a > b}[op]
            if not ok:
                raise KernelCallError(f"sizes {sizes} violate hypothesis {name} : {text} of "
                                      f"derivation {dp.name}; the derived kernel is only "
                                      "proved equal to the program under it")


def _replay(path: Path, only: str | None, timeout: float):
    from verisched.pybridge.errors import BridgeError
    from verisched.pybridge.replay import replay_file
    from verisched.pybridge.session import CoqSession

    if not path.is_file():
        raise DerivationError(f"derivation: no such file: {path}")
    try:
        with CoqSession(timeout=timeout) as session:
            result = replay_file(session, path, only=only, semantics=True)
    except BridgeError as exc:
        raise DerivationError(f"derivation: replaying {path}: {type(exc).__name__}: {exc}"
                              ) from exc
    if result.failure:
        f = result.failure
        raise DerivationError(f"derivation: {path}:{f.line}: Coq rejected {f.sentence!r}: "
                              f"{f.message}")
    return result


def load_derived(path: str | Path, name: str, shapes: dict[str, Shape] | None = None,
                 timeout: float = 300.0) -> DerivedProgram:
    """Replay derivation `name` of `path` and return its final program."""
    path = Path(path)
    result = _replay(path, name, timeout)
    rds = [rd for rd in result.derivations if rd.derivation.name == name]
    if not rds:
        raise DerivationError(f"derivation: {path} has no derivation named {name!r}")
    return _derived_program(rds[0], name, shapes)


def load_all_derived(path: str | Path, shapes: dict[str, Shape] | None = None,
                     timeout: float = 300.0) -> dict[str, DerivedProgram]:
    """Replay every derivation of `path` once (one Coq session) and return each
    final program by name (a file deriving several kernels costs one replay)."""
    result = _replay(Path(path), None, timeout)
    return {rd.derivation.name: _derived_program(rd, rd.derivation.name, shapes)
            for rd in result.derivations}


def _derived_program(rd, name: str, shapes: dict[str, Shape] | None) -> DerivedProgram:
    if rd.error is not None:
        raise DerivationError(f"derivation {name}: {rd.error.describe()}")
    if not rd.ok:
        v = rd.verdict
        raise DerivationError(f"derivation {name}: Coq did not accept it: "
                              f"{v.message if v else 'not closed'}")
    progs = [p for p in rd.semantics if not isinstance(p, str)]
    if not rd.semantics or isinstance(rd.semantics[-1], str):
        why = rd.semantics[-1] if rd.semantics else "no program recorded"
        raise DerivationError(f"derivation {name}: the derived program is outside the AST's "
                              f"grammar: {why}")
    expr = _instruction_form(rd, progs[-1])
    sig = rd.signature
    env: dict[str, Shape] = {}
    dp = DerivedProgram(name, expr, env, tuple(sig.sizes),
                        safety_gap=safety_gap(rd.derivation.steps),
                        original=progs[0] if progs and progs[0] is not rd.semantics[-1] else None,
                        unfolded=progs[-1])
    for hname, text in sig.hypotheses:
        text = " ".join(text.split())
        m = _SHAPED_RE.match(text)
        if m:
            env[m.group(2)] = parse_shape(m.group(1))
            continue
        chain = _parse_condition(text)
        if chain is not None:
            dp.conditions.append((hname, text, chain))
        else:
            dp.unchecked.append((hname, text))
    for k, v in (shapes or {}).items():
        env[k] = v
    for t, rank in sig.tensors.items():
        if rank == 0:
            env.setdefault(t, ())
        elif t not in env:
            raise DerivationError(f"derivation {name}: no shape for input {t} (rank {rank}): "
                                  f"add a hypothesis  shaped [..] {t}  or pass --shape {t}=...")
        elif len(env[t]) != rank:
            raise DerivationError(f"derivation {name}: shape {len(env[t])}-d given for input "
                                  f"{t} of rank {rank}")
    return dp


def _instruction_form(rd, semantic: Expr) -> Expr:
    """The derived program as Coq printed it, if it uses instructions or memories.

    The bridge records each state with every non-ATL definition unfolded (so the
    interpreter can run programs naming user stages), which also unfolds the
    instruction calls and `in_mem` markers the lowering needs (they are
    definitions too, coq/Targets/Instr.v).  The final state's own printing keeps
    them; it is used when it parses and names nothing the unfolded program does
    not (no user definition left folded)."""
    from verisched.codegen.vector import has_instr
    from verisched.pybridge.terms import Mem, free_vars

    steps = [s for s in rd.derivation.steps if getattr(s, "after", None) is not None]
    for s in reversed(steps):
        raw = s.after.program
        if raw is None:
            if s.after.program_text is None:
                continue  # the finished state
            return semantic
        if (has_instr(raw) or _has_mem(raw, Mem)) and free_vars(raw) <= free_vars(semantic):
            return raw
        return semantic
    return semantic


def _has_mem(e: object, mem_cls: type) -> bool:
    if isinstance(e, mem_cls):
        return True
    fields = getattr(e, "__dataclass_fields__", None)
    if isinstance(e, tuple):
        return any(_has_mem(x, mem_cls) for x in e)
    return bool(fields) and any(_has_mem(getattr(e, f), mem_cls) for f in fields)


def idx_names(shape: Shape) -> set[str]:
    from verisched.pybridge.terms import idx_free_vars

    out: set[str] = set()
    for i in shape:
        out |= idx_free_vars(i)
    return out


__all__ = ["DerivedProgram", "DerivationError", "load_derived", "load_all_derived",
           "check_conditions", "assumptions", "parse_shape", "Idx"]
