"""Replaying a .v file's derivations step by step.

The file is run sentence by sentence in a session.  Each `Derive` starts a
recorded derivation (derivation.py): every tactic sentence up to `Qed` or
`Defined` becomes a step with the program before and after, and the closing
sentence gives Coq's verdict.  Everything else (imports, definitions,
lemmas) is simply run, and must succeed.

Besides the trace, the replay collects what a semantic check of the
derivation needs: the section's variables (sizes, input tensors and their
ranks) and its integer hypotheses, read from the file's declarations.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from .derivation import Derivation, FinishResult, StepError, StepOk
from .errors import BridgeError, TermParseError, UnknownDerivationError
from .sentences import Sentence, split_file
from .session import CoqSession
from .terms import Expr

DERIVE_RE = re.compile(r"^Derive\s+([A-Za-z_][\w']*)\s+SuchThat\s+(.*)\s+As\s+([A-Za-z_][\w']*)"
                       r"\s*\.$", re.S)
_VARS_RE = re.compile(r"^(?:Variables?|Context)\s+(.*)\.$", re.S)
_HYP_RE = re.compile(r"^Hypothes(?:is|es)\s+(.*)\.$", re.S)
_CONTROL_RE = re.compile(r"^(?:(?:Time|Timeout\s+\d+|Instructions)\s+)+")
_BINDER_RE = re.compile(r"\(([^():]+):([^()]*(?:\([^()]*\)[^()]*)*)\)")


@dataclass(frozen=True)
class Signature:
    """What the section around a derivation declares."""

    sizes: tuple[str, ...]
    tensors: dict[str, int]                       # name -> rank (0: scalar)
    hypotheses: tuple[tuple[str, str], ...]       # (name, proposition)
    # The sizes that are Coq booleans (flags such as Gemmini's ReLU); sampled
    # as 0/1 and bound as false/true when Coq evaluates a program.
    bools: tuple[str, ...] = ()


@dataclass
class ReplayedDerivation:
    derivation: Derivation
    signature: Signature
    line: int
    error: StepError | None = None
    # With `semantics=True`: the program of the initial state and after each
    # step with user definitions unfolded (an AST, or why it has none).
    semantics: list[Expr | str] = field(default_factory=list)

    @property
    def verdict(self) -> FinishResult | None:
        return self.derivation.finish_result

    @property
    def ok(self) -> bool:
        v = self.verdict
        return self.error is None and v is not None and v.accepted and not v.disallowed_axioms


@dataclass
class ReplayFailure:
    """A sentence outside any derivation that Coq rejected."""

    line: int
    sentence: str
    message: str


@dataclass
class ReplayResult:
    path: Path
    start_state: int = 0
    derivations: list[ReplayedDerivation] = field(default_factory=list)
    failure: ReplayFailure | None = None

    @property
    def ok(self) -> bool:
        return self.failure is None and all(d.ok for d in self.derivations)


def parse_binders(text: str) -> list[tuple[str, str]]:
    """`(n m : Z) (f : Z -> S)` or `x : T` -> [(name, type), ...]."""
    out: list[tuple[str, str]] = []
    found = _BINDER_RE.findall(text)
    if not found and ":" in text and not text.lstrip().startswith(("{", "`")):
        names, ty = text.split(":", 1)
        found = [(names, ty)]
    for names, ty in found:
        for nm in names.split():
            out.append((nm, " ".join(ty.split())))
    return out


# Element types of a section's tensors: the generic scalar, and the integer data
# of the accelerator's kernels (Targets/Gemmini.v's `gint`, an alias of Z).
_ELEMENT_TYPES = ("S", "gint")


def _rank(ty: str) -> int | None:
    parts = [p.strip() for p in ty.split("->")]
    if parts[-1] not in _ELEMENT_TYPES or any(p != "Z" for p in parts[:-1]):
        return None
    return len(parts) - 1


class _Sig:
    def __init__(self) -> None:
        self.sizes: list[str] = []
        self.bools: list[str] = []
        self.tensors: dict[str, int] = {}
        self.hyps: list[tuple[str, str]] = []

    def declare(self, s: str) -> None:
        m = _VARS_RE.match(s)
        if m:
            for nm, ty in parse_binders(m.group(1)):
                if ty in ("Z", "bool"):
                    self.sizes.append(nm)
                    if ty == "bool":
                        self.bools.append(nm)
                elif (r := _rank(ty)) is not None:
                    self.tensors[nm] = r
            return
        m = _HYP_RE.match(s)
        if m:
            self.hyps.extend(parse_binders(m.group(1)))

    def freeze(self) -> Signature:
        return Signature(tuple(self.sizes), dict(self.tensors), tuple(self.hyps),
                         tuple(self.bools))


def derivation_names(sentences: list[Sentence]) -> tuple[str, ...]:
    """The names the sentences derive, in order.

    Exact, not a guess: the replay records a derivation only for a sentence
    DERIVE_RE matches, so no other name can ever appear in its result.
    """
    return tuple(m.group(1) for s in sentences if (m := DERIVE_RE.match(s.text)))


def check_derivation_name(path: str | Path, name: str) -> tuple[str, ...]:
    """Raise UnknownDerivationError unless `path` derives `name`; returns all names.

    Reads the file only (no Coq), so a command can refuse a mistyped name
    before paying for a session.
    """
    names = derivation_names(split_file(path))
    if name not in names:
        raise UnknownDerivationError(str(path), name, names)
    return names


def replay_file(
    session: CoqSession,
    path: str | Path,
    only: str | None = None,
    on_step: object = None,
    semantics: bool = False,
    keep_state: bool = False,
    stop_after: tuple[str, int] | None = None,
) -> ReplayResult:
    """Run `path` in `session`, recording its derivations.

    args:
        only:    record only the derivation of this name (others still run)
        on_step: callable(derivation, StepOk | StepError) for live printing
        semantics: also record every state's program with definitions unfolded
        keep_state: leave the file's definitions in the session (by default
                   Coq returns to the state before the file, so files that
                   reuse names can be replayed one after another)
        stop_after: (derivation, step): stop there, inside the proof (with
                   keep_state, the caller can go on stepping from it)
    """
    if session.proof_name != "Coq":
        raise BridgeError(f"cannot replay {path}: the session is inside proof "
                          f"{session.proof_name!r}; finish or abort it first")
    path = Path(path)
    sentences = split_file(path)
    if only is not None and only not in (names := derivation_names(sentences)):
        raise UnknownDerivationError(str(path), only, names)
    start = session.state
    try:
        result = _replay(session, path, sentences, only, on_step, semantics, stop_after)
        result.start_state = start
        return result
    finally:
        if not keep_state and session.alive:
            session.back_to(start)


def _replay(session: CoqSession, path: Path, sentences: list[Sentence], only: str | None,
            on_step: object, semantics: bool, stop_after: tuple[str, int] | None
            ) -> ReplayResult:
    result = ReplayResult(path)
    sig = _Sig()
    i = 0
    while i < len(sentences):
        s = sentences[i]
        m = DERIVE_RE.match(s.text)
        sig_end = s.text.startswith("End ")
        if m is None:
            r = session.run(s.text)
            if not r.ok:
                msg = r.error or ""
                if "inconsistent assumptions" in msg or "Cannot find a physical path" in msg:
                    msg += " (the compiled library is stale or being rebuilt: run `make proofs`)"
                result.failure = ReplayFailure(s.line, s.text, msg)
                return result
            sig.declare(s.text)
            if sig_end:
                sig = _Sig()
            i += 1
            continue
        name, _, proof_name = m.groups()
        record = only is None or only == name
        d = Derivation.begin(session, s.text, name, proof_name, source=str(path))
        rd = ReplayedDerivation(d, sig.freeze(), s.line)
        stop_at = stop_after[1] if stop_after and stop_after[0] == name else None
        i = _run_proof(d, rd, sentences, i + 1, on_step if record else None,
                       semantics and record, stop_at)
        if record:
            result.derivations.append(rd)
        if stop_at is not None:
            return result
        if rd.error is not None or (d.finish_result and not d.finish_result.accepted):
            return result
    return result


def _record_semantics(d: Derivation, rd: ReplayedDerivation) -> None:
    if d.state.program_text is None:
        return
    try:
        rd.semantics.append(d.semantics(d.state))
    except TermParseError as exc:
        rd.semantics.append(str(exc))


def _run_proof(d: Derivation, rd: ReplayedDerivation, sentences: list[Sentence], i: int,
               on_step: object, semantics: bool, stop_at: int | None = None) -> int:
    """Step through the proof script after a Derive; returns the next index."""
    if semantics:
        _record_semantics(d, rd)
    while i < len(sentences):
        s = sentences[i]
        word = _CONTROL_RE.sub("", s.text).split()[0].rstrip(".")
        if word == "Proof" and s.text in ("Proof.",):
            d.session.run_ok(s.text)
            d.state = d._observe()  # noqa: SLF001 - same goal, new state number
            i += 1
            continue
        if word in ("Qed", "Defined"):
            d.finish(s.text)
            return i + 1
        if word in ("Admitted", "Abort"):
            d.finish_result = FinishResult(False, f"line {s.line}: derivation ends with {word}")
            if word == "Abort":
                d.session.run(s.text)
            return i + 1
        res = d.run_tactic(s.text)
        if callable(on_step):
            on_step(d, res)
        if isinstance(res, StepError):
            rd.error = StepError(res.step, res.tactic, f"line {s.line}: {res.message}", res.state,
                                 res.details)
            return i + 1
        assert isinstance(res, StepOk)
        if semantics:
            _record_semantics(d, rd)
        i += 1
        if stop_at is not None and res.step >= stop_at:
            return i
    d.finish_result = FinishResult(False, "file ends inside the derivation")
    return i
