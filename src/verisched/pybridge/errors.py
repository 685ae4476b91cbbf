"""Exceptions of the Coq bridge.

Following LeanDojo's split (docs: style-anchors.md), an *expected* failure
-- a tactic Coq rejects, an unprovable side condition -- is a return value
(`derivation.StepError`), while a *broken process or setup* is one of these
exceptions, so callers can tell "your step is wrong" from "the bridge is
down" without parsing messages.
"""

from __future__ import annotations


class BridgeError(Exception):
    """Base class of every exception the bridge raises.

    A replay that is interrupted (a timeout, a dead coqtop, a bridge command
    that fails) re-raises the exception with two additions, so that no
    caller loses the place or the work done:

    - `where`: the file, line, derivation and step being run
      ("Bad.v:12: derivation q, step 2"), shown first by `str`;
    - `partial`: the `replay.ReplayResult` of everything completed, its
      `failure` describing the interruption (for a JSON trace).
    """

    where: str | None = None
    partial: object | None = None

    def __str__(self) -> str:
        text = super().__str__()
        return f"{self.where}: {text}" if self.where else text


class CoqNotFoundError(BridgeError):
    """`coqtop` is not on PATH; nothing can be checked without it."""


class LibraryNotBuiltError(BridgeError):
    """The Verisched Coq library has no (or stale) compiled .vo files."""


class CoqStartupError(BridgeError):
    """coqtop started but did not reach a usable prompt."""


class CoqCrashedError(BridgeError):
    """coqtop died in the middle of a session (killed, out of memory, ...)."""

    def __init__(self, message: str, exit_status: int | None = None) -> None:
        super().__init__(message)
        self.exit_status = exit_status


class CoqTimeoutError(BridgeError):
    """A command exceeded its time limit.

    `recovered` says whether coqtop answered the interrupt and is still
    usable (in the state before the command) or had to be killed.
    """

    def __init__(self, message: str, sentence: str, timeout: float, recovered: bool) -> None:
        super().__init__(message)
        self.sentence = sentence
        self.timeout = timeout
        self.recovered = recovered


class CoqCommandError(BridgeError):
    """A command the bridge itself issues (setup, printing) was rejected.

    User tactics never raise this: their failures are `StepError` values.
    """

    def __init__(self, message: str, sentence: str, coq_message: str) -> None:
        super().__init__(message)
        self.sentence = sentence
        self.coq_message = coq_message


class ScriptSyntaxError(BridgeError):
    """A proof script or .v file that cannot be split into sentences."""


class SourceFileError(BridgeError):
    """A .v file that cannot be read as text: unreadable, or not UTF-8.

    Raised where the bridge reads the file (sentences.read_source), so every
    caller -- replay, the loaders behind compile/run, check -- reports the
    file and the place instead of a UnicodeDecodeError traceback.  `offset`
    and `line` locate the first bad byte (None when the file could not be
    read at all).
    """

    def __init__(self, message: str, path: str, offset: int | None = None,
                 line: int | None = None) -> None:
        super().__init__(message)
        self.path = path
        self.offset = offset
        self.line = line


class UnknownDerivationError(BridgeError):
    """A derivation was asked for by a name the .v file does not derive.

    Found from the file's `Derive NAME SuchThat ... As ...` sentences before
    anything runs, so a typo costs no replay; `available` lists the names
    the file does derive, in file order, for the message and for callers.
    """

    def __init__(self, path: str, name: str, available: tuple[str, ...]) -> None:
        listed = ", ".join(available) if available else \
            "none (the file has no `Derive NAME SuchThat ... As ...`)"
        super().__init__(f"{path}: no derivation named {name!r} (available: {listed})")
        self.path = path
        self.name = name
        self.available = available


class OutputPathError(BridgeError):
    """A path the bridge was asked to write (a JSON trace) cannot be written.

    Checked before a replay starts (derivation.check_writable), because
    finding it out after minutes of Coq would throw the whole run away.
    """


class TermParseError(BridgeError):
    """Text that is not an ATL term in the bridge's grammar."""
