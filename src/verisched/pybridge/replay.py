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

import dataclasses
import re
from dataclasses import dataclass, field
from pathlib import Path

from .derivation import Derivation, FinishResult, StepError, StepOk
from .errors import (
    BridgeError,
    CoqCommandError,
    CoqCrashedError,
    CoqTimeoutError,
    TermParseError,
    UnknownDerivationError,
)
from .instr_coq import resolving_with
from .sentences import Sentence, split_file
from .session import CoqSession
from .terms import Expr

DERIVE_RE = re.compile(r"^Derive\s+([A-Za-z_][\w']*)\s+SuchThat\s+(.*)\s+As\s+([A-Za-z_][\w']*)"
                       r"\s*\.$", re.S)
_VARS_RE = re.compile(r"^(?:Variables?|Context)\s+(.*)\.$", re.S)
_HYP_RE = re.compile(r"^Hypothes(?:is|es)\s+(.*)\.$", re.S)
_CONTROL_RE = re.compile(r"^(?:(?:Time|Timeout\s+\d+|Instructions)\s+)+")
# The sentences that end a proof.
_CLOSERS = ("Qed", "Defined", "Admitted", "Abort")


def _word(s: Sentence) -> str:
    """A sentence's command word, past any control prefix (`Time`, `Timeout 5`)."""
    return _CONTROL_RE.sub("", s.text).split()[0].rstrip(".")
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
    # Each tensor's element type: the generic `S`, or Gemmini's integers `gint`.
    elements: dict[str, str] = field(default_factory=dict)


@dataclass
class ReplayFailure:
    """Why a replay, or one derivation in it, failed, and where.

    kind:
        "command"  a sentence outside any proof (or a Derive) Coq rejected
        "step"     a tactic Coq rejected (`step` is its number, from 1)
        "closing"  Qed/Defined rejected, Admitted, Abort, or no end at all
        "axioms"   accepted, but resting on an axiom that is not allowed
        "timeout"  a sentence ran past the time limit (the replay stopped)
        "crash"    coqtop died (the replay stopped)
        "error"    any other bridge error (the replay stopped)

    `message` is Coq's own message where Coq gave one (the bridge's
    otherwise); `details` is what a failing tactic printed first (rw's
    candidate sites).
    """

    line: int | None
    sentence: str
    message: str
    derivation: str | None = None
    step: int | None = None
    kind: str = "command"
    details: str = ""

    def to_json(self) -> dict:
        """The JSON trace's record; `tactic` is set only for a step of a proof."""
        return {
            "kind": self.kind,
            "derivation": self.derivation,
            "step": self.step,
            "tactic": self.sentence if self.step is not None else None,
            "line": self.line,
            "sentence": self.sentence,
            "message": self.message,
            "details": self.details,
        }


@dataclass
class ReplayedDerivation:
    derivation: Derivation
    signature: Signature
    line: int
    error: StepError | None = None
    # With `semantics=True`: the program of the initial state and after each
    # step with user definitions unfolded (an AST, or why it has none).
    semantics: list[Expr | str] = field(default_factory=list)
    # Set whenever `ok` is False once the derivation is over: the failing
    # step, the rejected closing, the disallowed axioms, with its line.
    failure: ReplayFailure | None = None

    @property
    def verdict(self) -> FinishResult | None:
        return self.derivation.finish_result

    @property
    def ok(self) -> bool:
        v = self.verdict
        return self.error is None and v is not None and v.accepted and not v.disallowed_axioms

    def trace(self) -> dict:
        """The derivation's JSON trace with its failure, if any."""
        return {**self.derivation.trace(),
                "failure": self.failure.to_json() if self.failure else None}


@dataclass
class ReplayResult:
    """What a replay recorded.

    `failure` is set when the replay stopped outside the record of a
    recorded derivation: a command Coq rejected, or an interruption (then
    the result is the exception's `partial`).  A derivation's own failure is
    in its `failure`, and does not stop the replay: Coq goes back to the
    state before it and the file's later derivations are replayed, so one
    run reports each broken one (a failure that names a constant of an
    earlier failed derivation says so).  `first_failure` gives whichever
    applies.
    """

    path: Path
    start_state: int = 0
    derivations: list[ReplayedDerivation] = field(default_factory=list)
    failure: ReplayFailure | None = None
    # Derivations whose Derive statement Coq rejected (an unknown name, a type error in
    # the equation): nothing was derived, so nothing is recorded of them, and the replay
    # went past their proofs to the file's later derivations, as past a failed step.
    rejected: list[ReplayFailure] = field(default_factory=list)
    # Derivations of the file (all of them, or the one asked for) the replay never got
    # to, because it stopped at a failure before them: unchecked, not correct.
    unreached: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return (self.failure is None and not self.rejected
                and all(d.ok for d in self.derivations))

    def first_failure(self) -> ReplayFailure | None:
        """The failure that stopped the replay, else the first in the file among the
        derivations' (a rejected Derive statement's included)."""
        if self.failure is not None:
            return self.failure
        found = [*self.rejected, *(d.failure for d in self.derivations if d.failure)]
        return min(found, key=lambda f: f.line or 0, default=None)

    def trace(self) -> dict:
        """The whole replay as JSON-ready data: `ok` is false exactly when
        `failure` is set, and every completed step is in `derivations`."""
        failure = self.first_failure()
        return {
            "file": str(self.path),
            "ok": self.ok and failure is None,
            "failure": failure.to_json() if failure else None,
            "rejected": [f.to_json() for f in self.rejected],
            "derivations": [rd.trace() for rd in self.derivations],
        }


@dataclass
class _Cursor:
    """The sentence being run, so an interruption can say where it happened."""

    line: int | None = None
    sentence: str = ""
    derivation: str | None = None
    step: int | None = None

    def at(self, s: Sentence, step: int | None = None) -> None:
        self.line, self.sentence, self.step = s.line, s.text, step

    def where(self, path: Path) -> str:
        out = f"{path}:{self.line}" if self.line is not None else str(path)
        if self.derivation is not None:
            out += f": derivation {self.derivation}"
            if self.step is not None:
                out += f", step {self.step}"
        return out


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
        self.elements: dict[str, str] = {}
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
                    self.elements[nm] = ty.rsplit("->", 1)[-1].strip()
            return
        m = _HYP_RE.match(s)
        if m:
            self.hyps.extend(parse_binders(m.group(1)))

    def freeze(self) -> Signature:
        return Signature(tuple(self.sizes), dict(self.tensors), tuple(self.hyps),
                         tuple(self.bools), dict(self.elements))


def derivation_names(sentences: list[Sentence]) -> tuple[str, ...]:
    """The names the sentences derive, in order.

    Exact, not a guess: the replay records a derivation only for a sentence
    DERIVE_RE matches, so no other name can ever appear in its result.
    """
    return tuple(m.group(1) for s in sentences if (m := DERIVE_RE.match(s.text)))


def precheck_file(path: str | Path, only: str | None = None) -> tuple[str, ...]:
    """Read and split `path` without Coq; the names it derives.

    Raises what replay_file would raise on the same input (SourceFileError,
    ScriptSyntaxError, UnknownDerivationError when `only` is not derived),
    so a command can refuse bad input before paying for a session.
    """
    names = derivation_names(split_file(path))
    if only is not None and only not in names:
        raise UnknownDerivationError(str(path), only, names)
    return names


@dataclass(frozen=True)
class Outline:
    """What a derivation's text says before Coq runs it: its section's declarations
    and how many tactic steps it has (for "step k of n" progress and for checking a
    command's arguments before paying for a replay)."""

    name: str
    signature: Signature
    steps: int


def outline_file(path: str | Path) -> dict[str, Outline]:
    """Every derivation of `path`, read statically (no Coq): the declarations in
    scope at its `Derive` (as the replay reads them, _Sig) and its tactic count (the
    sentences _run_proof runs as steps: all but `Proof.` and the closing one)."""
    sentences = split_file(path)
    out: dict[str, Outline] = {}
    sig = _Sig()
    i = 0
    while i < len(sentences):
        text = sentences[i].text
        m = DERIVE_RE.match(text)
        if m is None:
            sig.declare(text)
            if text.startswith("End "):
                sig = _Sig()
            i += 1
            continue
        steps = 0
        i += 1
        while i < len(sentences):
            word = _word(sentences[i])
            i += 1
            if word in _CLOSERS:
                break
            if sentences[i - 1].text != "Proof.":
                steps += 1
        out.setdefault(m.group(1), Outline(m.group(1), sig.freeze(), steps))
    return out


_DEFINITION_RE = re.compile(r"^Definition\s+([A-Za-z_][\w']*)\s*:=(.*)\.$", re.S)


def definitions_in_scope(path: str | Path) -> dict[str, tuple[str, Signature]]:
    """Every untyped `Definition NAME := TERM.` of `path`: its term's text and the
    declarations in scope at it, read as the replay reads them (_Sig: every binder of
    `Variables (A : Z -> Z -> S) (x : Z -> S).`, `Hypotheses (H1 : ...) (H2 : ...).`,
    a section's declarations forgotten at its `End`).  The search reads its programs
    here, so a program sees exactly what Coq's section gives it."""
    out: dict[str, tuple[str, Signature]] = {}
    sig = _Sig()
    for s in split_file(path):
        m = _DEFINITION_RE.match(s.text)
        if m:
            out[m.group(1)] = (m.group(2).strip(), sig.freeze())
            continue
        sig.declare(s.text)
        if s.text.startswith("End "):
            sig = _Sig()
    return out


def replay_file(
    session: CoqSession,
    path: str | Path,
    only: str | None = None,
    on_step: object = None,
    semantics: bool = False,
    keep_state: bool = False,
    stop_after: tuple[str, int] | None = None,
    upto: str | None = None,
) -> ReplayResult:
    """Run `path` in `session`, recording its derivations.

    args:
        only:    record only the derivation of this name; the ones before it still
                 run (it may build on them; one that fails is passed over, as in a
                 whole-file replay), the ones after it do not (so a broken later
                 derivation does not stop an earlier one from loading)
        on_step: callable(derivation, StepOk | StepError) for live printing
        semantics: also record every state's program with definitions unfolded
        keep_state: leave the file's definitions in the session (by default
                   Coq returns to the state before the file, so files that
                   reuse names can be replayed one after another)
        stop_after: (derivation, step): stop there, inside the proof (with
                   keep_state, the caller can go on stepping from it)
        upto:    record every derivation, as a whole-file replay does, but stop
                 after the one of this name: the ones before it run anyway (`only`),
                 so recording them costs little and lets a cache keep them all
    """
    if session.proof_name != "Coq":
        raise BridgeError(f"cannot replay {path}: the session is inside proof "
                          f"{session.proof_name!r}; finish or abort it first")
    path = Path(path)
    sentences = split_file(path)
    if only is not None and upto is not None:
        raise BridgeError("replay_file: give `only` or `upto`, not both")
    names = derivation_names(sentences)
    for n in (only, upto):
        if n is not None and n not in names:
            raise UnknownDerivationError(str(path), n, names)
    start = session.state
    result = ReplayResult(path, start_state=start)
    cursor = _Cursor()
    try:
        # Instructions no Python target registered are read from Coq (instr_coq.py).
        with resolving_with(session):
            _replay(session, path, sentences, only, on_step, semantics, stop_after, result,
                    cursor, upto)
    except BaseException as exc:
        if isinstance(exc, BridgeError) and exc.partial is None:
            # Keep the work done and say where: the caller may write the
            # partial trace, and the message names the line and step.
            kind = ("timeout" if isinstance(exc, CoqTimeoutError) else
                    "crash" if isinstance(exc, CoqCrashedError) else "error")
            result.failure = ReplayFailure(cursor.line, cursor.sentence, str(exc),
                                           cursor.derivation, cursor.step, kind)
            exc.where = cursor.where(path)
            exc.partial = result
        if not keep_state and session.alive:
            try:
                session.back_to(start)
            except BridgeError:
                # Coq is in no known state: a session left so would mislead
                # its next user, and this error must not hide the first one.
                session.close()
        raise
    if not keep_state and session.alive:
        session.back_to(start)
    seen = {rd.derivation.name for rd in result.derivations}
    seen |= {f.derivation for f in [*result.rejected, result.failure] if f is not None}
    asked = ([only] if only else names[:names.index(upto) + 1] if upto else names)
    result.unreached = [n for n in asked if n not in seen]
    return result


def _replay(session: CoqSession, path: Path, sentences: list[Sentence], only: str | None,
            on_step: object, semantics: bool, stop_after: tuple[str, int] | None,
            result: ReplayResult, cursor: _Cursor, upto: str | None = None) -> None:
    """Run the sentences, filling `result` as it goes (so an exception leaves
    everything completed in it) and keeping `cursor` on the current one."""
    sig = _Sig()
    failed: dict[str, str] = {}  # a failed derivation's constants -> what to say of them
    i = 0
    while i < len(sentences):
        s = sentences[i]
        cursor.at(s)
        m = DERIVE_RE.match(s.text)
        sig_end = s.text.startswith("End ")
        if m is None:
            r = session.run(s.text)
            if not r.ok:
                msg = r.error or ""
                if "inconsistent assumptions" in msg or "Cannot find a physical path" in msg:
                    msg += " (the compiled library is stale or being rebuilt: run `make proofs`)"
                result.failure = ReplayFailure(s.line, s.text, _cascade(msg, failed))
                return
            sig.declare(s.text)
            if sig_end:
                sig = _Sig()
            i += 1
            continue
        name, _, proof_name = m.groups()
        record = only is None or only == name
        last = name in (only, upto)  # the one asked for: nothing after it is run
        cursor.derivation = name
        try:
            d = Derivation.begin(session, s.text, name, proof_name, source=str(path))
        except CoqCommandError as exc:
            if exc.sentence != s.text:
                raise  # the Derive went through; a bridge command after it failed
            rejected = ReplayFailure(s.line, s.text, _cascade(exc.coq_message, failed), name,
                                     kind="command")
            if last:
                result.failure = rejected
                return
            # Nothing was derived and Coq is where it was before the Derive: go on past
            # its proof, as past a derivation that failed at a step.
            if record:
                result.rejected.append(rejected)
            failed.update(dict.fromkeys((name, proof_name), "whose Derive statement Coq "
                                        f"rejected at line {s.line}"))
            i = _past_proof(sentences, i)
            cursor.derivation = None
            continue
        rd = ReplayedDerivation(d, sig.freeze(), s.line)
        if record:
            result.derivations.append(rd)  # now, so an interruption keeps its steps
        stop_at = stop_after[1] if stop_after and stop_after[0] == name else None
        i = _run_proof(d, rd, sentences, i + 1, on_step if record else None,
                       semantics and record, cursor, stop_at)
        cursor.derivation = None
        if stop_at is not None:
            return
        if rd.failure is not None and rd.failure.kind != "axioms":
            _mark_cascade(rd, failed)
            if only is not None and record:  # the one asked for: it stays where it failed
                return
            # Go on past it, as a compiler goes on past an error, so that one run
            # reports every broken derivation: Coq returns to the state before the
            # Derive (neither the program nor its lemma exists after it), and a later
            # sentence that uses them fails with Coq's own message, marked (_cascade).
            d.abort()
            if rd.error is not None:  # stopped at a step: skip the rest of its proof
                i = _past_proof(sentences, i)
            note = f"whose derivation failed at line {rd.failure.line}"
            failed.update(dict.fromkeys((name, proof_name), note))
            if name == upto:  # (with `only`, it returned above, where it failed)
                return
            continue
        if last:  # nothing after it can change it
            return


def _past_proof(sentences: list[Sentence], i: int) -> int:
    """The index after the sentence closing the proof that sentence i is inside."""
    while i < len(sentences):
        i += 1
        if _word(sentences[i - 1]) in _CLOSERS:
            break
    return i


def _cascade(message: str, failed: dict[str, str]) -> str:
    """`message`, with a note when it names a constant of a derivation that failed
    earlier in the file (the replay went on past it): the failure may follow from it."""
    hits = [f"{c}, {why}" for c, why in failed.items()
            if re.search(rf"(?<![\w.']){re.escape(c)}(?![\w'])", message)]
    return message + "".join(f" (it uses {h})" for h in hits[:1])


def _mark_cascade(rd: ReplayedDerivation, failed: dict[str, str]) -> None:
    """Note on `rd`'s failure that it may follow from an earlier one (_cascade)."""
    f = rd.failure
    if not failed or f is None:
        return
    f.message = _cascade(f.message, failed)
    if rd.error is not None:
        rd.error = dataclasses.replace(rd.error, message=_cascade(rd.error.message, failed))


def _record_semantics(d: Derivation, rd: ReplayedDerivation) -> None:
    if d.state.program_text is None:
        return
    try:
        rd.semantics.append(d.semantics(d.state))
    except TermParseError as exc:
        rd.semantics.append(str(exc))


def _run_proof(d: Derivation, rd: ReplayedDerivation, sentences: list[Sentence], i: int,
               on_step: object, semantics: bool, cursor: _Cursor,
               stop_at: int | None = None) -> int:
    """Step through the proof script after a Derive; returns the next index."""
    if semantics:
        _record_semantics(d, rd)

    def closing(s: Sentence, message: str, kind: str = "closing") -> None:
        rd.failure = ReplayFailure(s.line, s.text, message, d.name, None, kind)

    while i < len(sentences):
        s = sentences[i]
        cursor.at(s)
        word = _word(s)
        if word == "Proof" and s.text in ("Proof.",):
            d.session.run_ok(s.text)
            d.state = d._observe()  # noqa: SLF001 - same goal, new state number
            i += 1
            continue
        if word in ("Qed", "Defined"):
            v = d.finish(s.text)
            if not v.accepted:
                closing(s, v.message)
            elif v.disallowed_axioms:
                closing(s, "depends on disallowed axioms: " + ", ".join(v.disallowed_axioms),
                        "axioms")
            return i + 1
        if word in ("Admitted", "Abort"):
            d.finish_result = FinishResult(False, f"line {s.line}: derivation ends with {word}")
            closing(s, f"derivation ends with {word}")
            if word == "Abort":
                d.session.run(s.text)
            return i + 1
        cursor.step = len(d.steps) + 1
        res = d.run_tactic(s.text)
        if callable(on_step):
            on_step(d, res)
        if isinstance(res, StepError):
            rd.error = StepError(res.step, res.tactic, f"line {s.line}: {res.message}", res.state,
                                 res.details)
            rd.failure = ReplayFailure(s.line, res.tactic, res.message, d.name, res.step,
                                       "step", res.details)
            return i + 1
        assert isinstance(res, StepOk)
        if semantics:
            _record_semantics(d, rd)
        i += 1
        if stop_at is not None and res.step >= stop_at:
            return i
    d.finish_result = FinishResult(False, "file ends inside the derivation")
    last = sentences[i - 1] if sentences else Sentence("", rd.line, 0)
    closing(last, "file ends inside the derivation (no Qed or Defined)")
    return i
