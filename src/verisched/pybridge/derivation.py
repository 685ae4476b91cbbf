"""Derivations driven step by step through a Coq session.

A derivation is Coq's `Derive p SuchThat (prog = p) As p_correct` goal,
rewritten tactic by tactic (coq/Rewrites/Tactics.v).  Following LeanDojo,
each step returns a frozen value: `StepOk` with the new state, or
`StepError` with Coq's own message, while a dead or hung coqtop raises
(errors.py).  States are handles: any earlier `ProofState` can be passed
back to `run_tactic` to branch from it, because it records the coqtop state
number that `BackTo` returns to.

After every tactic the bridge asks Coq to print the goals between markers
(`bridge_show_goal`, coq/Bridge/Print.v) and parses the current program into
the AST; when it mentions user definitions (named stages) it also asks for
the program with those unfolded (`semantics`), which is what the
interpreter evaluates.
"""

from __future__ import annotations

import json
import os
import re
import stat
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .coqterm import (
    loop_aliases,
    parse_program,
    pretty,
    shadowed_loops,
    to_coq,
    with_loop_names,
)
from .errors import CoqCommandError, OutputPathError, TermParseError
from .session import CoqSession
from .terms import Expr, shape_of

_PROG_RE = re.compile(r"<VS-PROGRAM>(.*?)</VS-PROGRAM>", re.S)
_GOAL_RE = re.compile(r"<VS-GOAL>(.*?)</VS-GOAL>", re.S)
_LOOPNAMES_RE = re.compile(r"<VS-LOOPNAMES>(.*?)</VS-LOOPNAMES>", re.S)
_GOALS_DISPLAY_RE = re.compile(
    r"(?m)^(?:\d+ (?:focused )?goals?\b|No more goals|All the remaining)")
_SEM_RE = re.compile(r"<VS-SEMANTICS>(.*?)</VS-SEMANTICS>", re.S)

# Axioms a derived program may depend on (preamble: functional
# extensionality and the standard library's real numbers).
ALLOWED_AXIOM_PREFIXES = (
    "FunctionalExtensionality.functional_extensionality_dep",
    "ClassicalDedekindReals.",
    "Coq.Reals.",
    "Rdefinitions.",
    "Raxioms.",
)


@dataclass(frozen=True)
class ProofState:
    """A handle on one state of a derivation.

    `program` is None when the printed program is not in the AST's grammar
    (`parse_error` says why); `program_text` is Coq's own printing.
    """

    state_id: int
    program_text: str | None
    program: Expr | None
    side_goals: tuple[str, ...]
    parse_error: str | None = None
    # Every loop's name as its binder holds it, in pre-order (Bridge/Print.v): Coq
    # prints a loop whose body does not use its index as `_`; `program` has the name
    # (coqterm.with_loop_names), `program_text` not.
    loop_names: tuple[str, ...] = ()

    @property
    def finished(self) -> bool:
        return self.program_text is None and not self.side_goals

    @property
    def loop_aliases(self) -> dict[str, tuple[str, bool]]:
        """{printed: (held, first)} for the loops Coq prints under another name than
        the one a directive matches (coqterm.loop_aliases)."""
        return loop_aliases(self.program, self.loop_names) if self.program else {}

    @property
    def shadowed_loops(self) -> frozenset[str]:
        """The printed names of loops that share a held name with a loop printed
        under another (coqterm.shadowed_loops)."""
        return shadowed_loops(self.program, self.loop_names) if self.program else frozenset()

    def same_program(self, other: ProofState) -> bool:
        """Does `other` hold the same program (a renamed unused loop prints the same
        in Coq's text)?  `same_program` asks the same of a trace's states."""
        return (self.program_text, self.loop_names) == (other.program_text, other.loop_names)


@dataclass(frozen=True)
class StepOk:
    step: int
    tactic: str
    before: ProofState
    after: ProofState
    coq_seconds: float
    bridge_seconds: float
    messages: str = ""


@dataclass(frozen=True)
class StepError:
    """Coq rejected the tactic; the derivation stays in `state`."""

    step: int
    tactic: str
    message: str
    state: ProofState
    details: str = ""  # what the tactic printed first, e.g. rw's candidate sites

    def describe(self) -> str:
        extra = f"\n{self.details}" if self.details else ""
        return f"step {self.step} ({self.tactic}) failed: {self.message}{extra}"


StepResult = StepOk | StepError


@dataclass(frozen=True)
class FinishResult:
    """Coq's verdict on the closed derivation."""

    accepted: bool
    message: str
    axioms: tuple[str, ...] = ()

    @property
    def disallowed_axioms(self) -> tuple[str, ...]:
        return tuple(a for a in self.axioms if not a.startswith(ALLOWED_AXIOM_PREFIXES))


@dataclass
class Derivation:
    """One open `Derive` in a session."""

    session: CoqSession
    name: str
    proof_name: str
    state: ProofState
    steps: list[StepOk] = field(default_factory=list)
    source: str = ""
    finish_result: FinishResult | None = None
    start_state: int = 0
    _end_sentences: tuple[str, ...] = ()

    # -- opening -----------------------------------------------------------

    @classmethod
    def begin(cls, session: CoqSession, derive_sentence: str, name: str, proof_name: str,
              source: str = "") -> Derivation:
        """Run a `Derive` sentence (the context before it already loaded)."""
        start = session.state
        r = session.run(derive_sentence)
        if not r.ok:
            raise CoqCommandError(f"Coq rejected the Derive of {name}: {r.error}",
                                  derive_sentence, r.error or "")
        d = cls(session, name, proof_name, ProofState(session.state, None, None, ()),
                source=source, start_state=start)
        d.state = d._observe()
        return d

    @classmethod
    def from_program(
        cls, session: CoqSession, name: str, program: Expr,
        tensors: dict[str, int], sizes: list[str],
        hypotheses: list[str] | None = None, result_rank: int | None = None,
        scalar: str = "S", bools: tuple[str, ...] | list[str] = (),
    ) -> Derivation:
        """Open a derivation of an AST program over generic scalars.

        args:
            tensors:    input name -> rank (0 for a scalar input)
            sizes:      names of the Z size parameters
            hypotheses: Coq propositions assumed (e.g. "shaped [n; m] v", "0 < k")
            scalar:     the element type: "S" (generic, with ScalarLaws) or a concrete
                        one such as Gemmini's "gint"
            bools:      the sizes that are Coq booleans (flags such as Gemmini's ReLU)
        """
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
            raise ValueError(f"derivation name {name!r} is not a Coq identifier")
        rank = result_rank if result_rank is not None else _rank_of(program, tensors)
        sec = f"VS_{name}"
        # Generic scalars by default; a concrete element type (Gemmini's `gint`) when the
        # program's instructions are stated over one.
        sentences = [f"Section {sec}."]
        if scalar == "S":
            # Named instances (not Coq's automatic H, H0): a size may then be called H.
            sentences.append("Context {S : Type} {Scalar_S : Scalar S} "
                             "{ScalarLaws_S : ScalarLaws S}.")
        ints = [x for x in sizes if x not in bools]
        if ints:
            sentences.append(f"Variables ({' '.join(ints)} : Z).")
        if bools:
            sentences.append(f"Variables ({' '.join(bools)} : bool).")
        for t, r in tensors.items():
            sentences.append(f"Variable {t} : {' -> '.join(['Z'] * r + [scalar])}.")
        for k, h in enumerate(hypotheses or []):
            sentences.append(f"Hypothesis VS_H{k} : {h}.")
        ty = " -> ".join(["Z"] * rank + [scalar])
        sentences.append(f"Definition {name} : {ty} := {to_coq(program)}.")
        start = session.state
        for s in sentences:
            r = session.run(s)
            if not r.ok:
                session.back_to(start)
                raise CoqCommandError(f"setting up derivation {name}: Coq rejected {s!r}: "
                                      f"{r.error}", s, r.error or "")
        derive = (f"Derive {name}_derived SuchThat ({name} = {name}_derived) "
                  f"As {name}_correct.")
        try:
            d = cls.begin(session, derive, name + "_derived", name + "_correct")
        except CoqCommandError:
            session.back_to(start)
            raise
        d._end_sentences = (f"End {sec}.",)
        d.start_state = start
        return d

    # -- observing ---------------------------------------------------------

    def _observe(self) -> ProofState:
        r = self.session.run_ok("all: bridge_show_goal.")
        progs = _PROG_RE.findall(r.output)
        goals = tuple(" ".join(g.split()) for g in _GOAL_RE.findall(r.output))
        text = progs[0].strip() if progs else None
        program = None
        error = None
        names = _loop_names(r.output) if text is not None else ()
        if text is not None:
            try:
                program = with_loop_names(parse_program(text), names)
            except TermParseError as exc:
                error = str(exc)
        return ProofState(self.session.state, text, program, goals, error, names)

    def semantics(self, state: ProofState | None = None) -> Expr:
        """The program of `state` with user definitions unfolded, as an AST."""
        st = state or self.state
        if st.program_text is None:
            raise TermParseError("no program in this state (derivation finished)")
        self._goto(st)
        r = self.session.run_ok("all: bridge_show_semantics.")
        m = _SEM_RE.search(r.output)
        if not m:
            raise TermParseError("Coq printed no program")
        return with_loop_names(parse_program(m.group(1).strip()), _loop_names(r.output))

    def _goto(self, st: ProofState) -> None:
        if self.session.state != st.state_id:
            self.session.back_to(st.state_id)

    # -- stepping ----------------------------------------------------------

    def run_tactic(self, tactic: str, state: ProofState | None = None,
                   timeout: float | None = None) -> StepResult:
        """Apply one tactic sentence from `state` (default: the current one)."""
        st = state or self.state
        t0 = time.perf_counter()
        self._goto(st)
        if state is not None and state is not self.state:
            self.steps = [s for s in self.steps if s.after.state_id <= st.state_id]
        step_no = len(self.steps) + 1
        r = self.session.run(tactic, timeout=timeout)
        if not r.ok:
            return StepError(step_no, r.sentence, r.error or "", st, r.output.strip())
        after = self._observe()
        total = time.perf_counter() - t0
        msgs = _GOALS_DISPLAY_RE.split(r.output, maxsplit=1)[0].strip()
        step = StepOk(step_no, r.sentence, st, after, r.elapsed, total - r.elapsed, msgs)
        self.steps.append(step)
        self.state = after
        return step

    def undo(self) -> ProofState:
        """Go back one step; returns the state now current."""
        if not self.steps:
            return self.state
        last = self.steps.pop()
        self._goto(last.before)
        self.state = last.before
        return self.state

    def abort(self) -> None:
        """Forget the derivation: Coq returns to the state before it began."""
        self.session.back_to(self.start_state)

    def finish(self, closer: str = "Qed.") -> FinishResult:
        """Close the proof and ask Coq which axioms the result rests on."""
        r = self.session.run(closer)
        if not r.ok:
            self.finish_result = FinishResult(False, r.error or "")
            return self.finish_result
        for s in self._end_sentences:
            self.session.run_ok(s)
        pa = self.session.run_ok(f"Print Assumptions {self.proof_name}.")
        axioms = parse_axioms(pa.output)
        self.finish_result = FinishResult(True, pa.output.strip(), axioms)
        return self.finish_result

    # -- export ------------------------------------------------------------

    def trace(self) -> dict:
        """The whole derivation as JSON-ready data."""
        return {
            "derivation": self.name,
            "proof": self.proof_name,
            "source": self.source,
            "steps": [
                {
                    "step": s.step,
                    "tactic": s.tactic,
                    "before": _state_json(s.before),
                    "after": _state_json(s.after),
                    "coq_seconds": round(s.coq_seconds, 6),
                    "bridge_seconds": round(s.bridge_seconds, 6),
                    "messages": s.messages,
                }
                for s in self.steps
            ],
            "verdict": asdict(self.finish_result) if self.finish_result else None,
        }

    def export_json(self, path: str | Path) -> None:
        write_json_atomic(path, self.trace())


def _loop_names(output: str) -> tuple[str, ...]:
    """Every loop's held name, in pre-order, as `bridge_show_loop_names` printed them
    after the program (coq/Bridge/Print.v); none where it printed nothing."""
    m = _LOOPNAMES_RE.search(output)
    return tuple(m.group(1).split()) if m else ()


def _state_json(st: ProofState) -> dict:
    return {
        "coq": st.program_text,
        "loop_names": list(st.loop_names),
        "program": pretty(st.program) if st.program is not None else None,
        "parse_error": st.parse_error,
        "side_goals": list(st.side_goals),
    }


def traced_program(st: Mapping[str, Any]) -> Expr | None:
    """The program of a state of a JSON trace (`_state_json`) as an AST, its unused
    loops named as the derivation saw them; None where Coq printed no program or one
    outside the AST's grammar."""
    if st.get("coq") is None:
        return None
    try:
        return with_loop_names(parse_program(st["coq"]), st.get("loop_names") or ())
    except TermParseError:
        return None


def same_program(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Do two states of a JSON trace hold the same program (a renamed unused loop
    prints the same in Coq's text)?"""
    return a.get("coq") == b.get("coq") and a.get("loop_names", []) == b.get("loop_names", [])


def parse_axioms(output: str) -> tuple[str, ...]:
    """Axiom names from `Print Assumptions` output."""
    if "Closed under the global context" in output:
        return ()
    names: list[str] = []
    in_axioms = False
    for line in output.splitlines():
        if re.match(r"^[A-Z][A-Za-z ]*:\s*$", line):
            in_axioms = line.startswith("Axioms")
            continue
        if in_axioms and line and not line[0].isspace():
            names.append(line.split(" :", 1)[0].strip())
    return tuple(names)


def _umask() -> int:
    """The process's umask, read from /proc where Linux shows it: setting the umask to
    read it back races with any other thread of the caller's program that creates a
    file meanwhile (the Python API may be called from threads)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def write_text_atomic(path: str | Path, text: str | bytes) -> Path:
    """Write `text` (or bytes) so a reader sees the old file or the new one, never half.

    The file gets the mode a plain `open(path, "w")` would give it (the old
    file's, or 0666 less the umask): mkstemp's private 0600 would otherwise
    make every trace or report unreadable to the rest of a team sharing the tree.
    """
    write_texts_atomic([(path, text)])
    return Path(path)


def write_texts_atomic(files: Sequence[tuple[str | Path, str | bytes]]) -> None:
    """Write several files so that none is replaced unless all were written: each goes
    to a temporary file next to it first, and only when every one is complete are they
    renamed into place (`compile`'s C file and header: a full disk once left a new
    header beside an old C file).  An error names the file it was writing (a full
    disk's ENOSPC carries no file name of its own)."""
    for path, _ in files:  # checked again here: the path may have changed since
        why = not_a_plain_file(Path(path))
        if why is not None:
            raise OutputPathError(why)
    staged: list[tuple[str, Path]] = []
    try:
        for path, text in files:
            staged.append((_stage(Path(path), text), Path(path)))
        for tmp, path in staged:
            try:
                os.replace(tmp, path)
            except OSError as exc:
                raise _naming(exc, path) from None
    finally:
        for tmp, _ in staged:
            Path(tmp).unlink(missing_ok=True)


def _stage(path: Path, text: str | bytes) -> str:
    """`text` in a temporary file next to `path`, with the mode `path` would get; its
    name.  Removed again if it cannot be written whole."""
    try:
        mode = path.stat().st_mode & 0o7777
    except OSError:
        mode = 0o666 & ~_umask()
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp",
                                   dir=str(path.parent or "."))
    except OSError as exc:
        raise _naming(exc, path) from None
    try:
        os.fchmod(fd, mode)
        if isinstance(text, bytes):
            with os.fdopen(fd, "wb") as fb:
                fb.write(text)
        else:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(text)
    except BaseException as exc:
        Path(tmp).unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise _naming(exc, path) from None
        raise
    return tmp


def _naming(exc: OSError, path: Path) -> OSError:
    """`exc` with `path` as its file name (the one the user gave, not the temporary
    file's), so the message says which output could not be written."""
    if exc.errno is None:
        return exc
    return type(exc)(exc.errno, exc.strerror, str(path))


def write_json_atomic(path: str | Path, data: object) -> None:
    """`data` as indented JSON, written atomically (write_text_atomic)."""
    write_text_atomic(path, json.dumps(data, indent=2) + "\n")


def same_file(a: str | Path, b: str | Path) -> bool:
    """Do `a` and `b` name one file (through links, `..`, or a relative path)?"""
    a, b = Path(a), Path(b)
    try:
        if a.exists() and b.exists():
            return os.path.samefile(a, b)
        return a.resolve() == b.resolve()
    except (OSError, RuntimeError):  # a link loop: not provably the same file
        return False


def not_a_plain_file(path: Path) -> str | None:
    """Why an output may not be written at `path` by renaming a new file over it, or
    None: a device, a FIFO or a socket would be replaced by a regular file (as root,
    `-o /dev/null` replaced the device), and a symbolic link to a missing file by the
    file, where the user may have meant its target.  A directory is checked apart."""
    try:
        st = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):  # nothing there: the parent's matter
        return None
    except OSError as exc:
        return f"{path}: {exc.strerror or exc}"
    if stat.S_ISLNK(st.st_mode):
        if not path.exists():
            return f"{path} is a symbolic link to a missing file (give the target's path)"
        st = os.stat(path)
    if stat.S_ISDIR(st.st_mode) or stat.S_ISREG(st.st_mode):
        return None
    return (f"{path} is not a regular file (a device, a FIFO or a socket): writing the "
            "output would replace it (give a file's path)")


def check_writable(path: str | Path, *, inputs: Sequence[str | Path | None] = ()) -> None:
    """Raise OutputPathError unless `write_json_atomic(path, ...)` can succeed.

    Called before a long run, so a typo in an output path is reported at
    once rather than after the work it was meant to keep.  It does what the
    write will do -- create a temporary file next to `path` -- instead of
    trusting permission bits (root ignores them, read-only mounts do not).
    An existing read-only file is refused too: the atomic rename would
    silently replace it, which its owner presumably did not want.  So is one
    of the command's own `inputs` (`replay P.v --json P.v`): the write would
    replace the user's source with the output made from it.
    """
    path = Path(path)
    for source in inputs:
        if source is not None and same_file(path, source):
            raise OutputPathError(f"{path} is the input {source}: writing the output "
                                  "there would destroy it (give another path)")
    parent = path.parent
    if path.is_dir():
        raise OutputPathError(f"{path} is a directory")
    if not parent.exists():
        raise OutputPathError(f"directory {parent} does not exist")
    if not parent.is_dir():
        raise OutputPathError(f"{parent} is not a directory")
    why = not_a_plain_file(path)
    if why is not None:
        raise OutputPathError(why)
    if path.exists() and not os.access(path, os.W_OK):
        raise OutputPathError(f"{path} is not writable")
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=str(parent))
    except OSError as exc:
        raise OutputPathError(f"cannot create a file in {parent}: "
                              f"{exc.strerror or exc}") from None
    os.close(fd)
    Path(tmp).unlink(missing_ok=True)


def unmakeable_directory(path: str | Path) -> str | None:
    """Why `path` cannot be used as an output directory (made with its parents later,
    then written into), or None: checked before a long run and without creating
    anything, so the answer is "P is a broken symbolic link", "P is not a directory"
    or "P is not writable" for the nearest existing ancestor P (or `path` itself).
    One rule for the command line's `--out`/`-o`/`--out-dir` and the API's `out`,
    `out_dir`.  An empty path (`--out "$DIR"` with DIR unset) would write into the
    current directory: refused."""
    if not str(path).strip():
        return "the path is empty"
    probe = Path(path)
    while not probe.exists() and probe != probe.parent:
        if probe.is_symlink():  # a dangling link: mkdir would fail on it
            return f"{probe} is a broken symbolic link"
        probe = probe.parent
    if not probe.is_dir():
        return f"{probe} is not a directory"
    if not os.access(probe, os.W_OK | os.X_OK):
        return f"{probe} is not writable"
    return None


def make_directory(path: str | Path) -> Path:
    """Make the output directory `path` with its parents.  Where unmakeable_directory
    could not foresee the failure (root passes os.access everywhere, /proc among
    others), the error names the path and the cause, as its refusals do."""
    out = Path(path)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputPathError(f"{path}: cannot create it ({exc.strerror or exc})") from None
    return out


@contextmanager
def output_directory(path: str | Path) -> Iterator[Path]:
    """make_directory for a command's whole run: if the run fails (a full disk, a failed
    replay, Ctrl-C), the directories it made, `path` and its missing parents, are removed
    again where still empty, so a failed run leaves nothing behind; a directory holding
    anything, or one that was there before, stays."""
    made = []
    p = Path(path).absolute()
    while not p.exists() and p.parent != p:
        made.append(p)  # innermost first
        p = p.parent
    out = make_directory(path)
    try:
        yield out
    except BaseException:
        for d in made:
            try:
                d.rmdir()
            except OSError:  # not empty (or gone): keep it and what is above it
                break
        raise


def _rank_of(e: Expr, tensors: dict[str, int]) -> int:
    env = {k: tuple([None] * r) for k, r in tensors.items()}
    return len(shape_of(e, env))
