"""A coqtop process driven through pexpect.

Why coqtop -emacs: in that mode coqtop ends every answer with a tagged
prompt `<prompt>NAME < STATE |STACK| N < </prompt>`, so the bridge waits for
exactly that marker instead of sleeping or guessing, and the state number in
it is what `BackTo` takes, which makes undo exact.  One sentence is sent at
a time (sentences.py), so prompts and answers stay paired.

Lifecycle: coqtop runs in its own session (pexpect forks it onto a new pty
as a session leader), so `close` kills its whole process group.  Every live
session is also closed at interpreter exit, and SIGTERM is turned into a
normal exit when nobody else handles it, so no coqtop outlives Python.
"""

from __future__ import annotations

import atexit
import math
import numbers
import os
import re
import shutil
import signal
import termios
import threading
import time
import weakref
from dataclasses import dataclass
from pathlib import Path

import pexpect

from .errors import (
    CoqCommandError,
    CoqCrashedError,
    CoqNotFoundError,
    CoqStartupError,
    CoqTimeoutError,
    LibraryNotBuiltError,
)
from .library import default_root, ensure_built
from .sentences import single_sentence

# The root whose coq/ is loaded: VERISCHED_REPO, else this source checkout, else the
# cache build of the sources a wheel ships (pybridge/library.py).
REPO_ROOT = default_root()

PROMPT_RE = re.compile(r"<prompt>(\S+) < (\d+) \|([^|]*)\| (\d+) < </prompt>")
_INFO_RE = re.compile(r"</?(?:infomsg|warning)>")
# Progress notes coqtop prints while loading proofs; never informative here.
_NOISE_RE = re.compile(r"(?m)^\s*(?:Fetching opaque proofs from disk for \S+|"
                       r"\[Loading ML file [^\]]*\])\s*\n?")
_ERROR_RE = re.compile(r"(?m)^Error:")

INSTALL_HINT = (
    "install Coq 8.16 (Debian: 'apt-get install coq'; opam: 'opam install coq.8.16.1') "
    "or put coqtop on PATH"
)

# Commands run once per session: the library, its scopes, and printing
# settings the term parser relies on (parentheses around every notation
# argument that needs them, no line-width surprises).
PRELUDE = (
    "From Coq Require Import ZArith.",
    "From Coq Require List.",
    "Import List.ListNotations.",
    "From Coq Require Import derive.Derive.",
    "From Verisched Require Import ATL.",
    "From Verisched Require Import Bridge.Print.",
    # Names of the Gemmini library (gemmini_acc_out) for programs Coq evaluates.
    "From Verisched Require Import Targets.Gemmini.",
    "Open Scope Z_scope.",
    "Open Scope atl_scope.",
    "Set Printing Parentheses.",
    "Set Printing Width 4000.",
    "Set Printing Depth 1000000.",
    # No automatic goal display: the bridge prints the program itself, once.
    "Set Silent.",
)


@dataclass(frozen=True)
class CoqResponse:
    """Coq's answer to one sentence."""

    sentence: str
    output: str
    error: str | None
    state_before: int
    state_after: int
    proof_name: str
    elapsed: float

    @property
    def ok(self) -> bool:
        return self.error is None


_LIVE: weakref.WeakSet[CoqSession] = weakref.WeakSet()
_HOOKS_INSTALLED = False
_HOOK_LOCK = threading.Lock()


def _close_all() -> None:
    for s in list(_LIVE):
        s.close()


def kill_all_sessions() -> None:
    """SIGKILL every live coqtop's process group without waiting for it: for a
    process about to `os._exit` (a tuning worker told to stop), where a `close()`
    that reaps its child could block."""
    for s in list(_LIVE):
        child = s._child
        if child is not None:
            try:
                os.killpg(child.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass


def _on_sigterm(signum: int, frame: object) -> None:
    _close_all()
    raise SystemExit(128 + signum)


def _install_exit_hooks() -> None:
    global _HOOKS_INSTALLED
    with _HOOK_LOCK:
        if _HOOKS_INSTALLED:
            return
        atexit.register(_close_all)
        if threading.current_thread() is threading.main_thread():
            if signal.getsignal(signal.SIGTERM) in (signal.SIG_DFL, None):
                signal.signal(signal.SIGTERM, _on_sigterm)
        _HOOKS_INSTALLED = True


def library_vo(repo: Path) -> Path:
    return repo / "coq" / "ATL.vo"


def is_seconds(value: object) -> bool:
    """Is `value` a time limit: a real number of seconds above 0 and finite (numpy's
    scalars too; not a bool)?  The one rule of every API that takes a `timeout`."""
    return (not isinstance(value, bool) and isinstance(value, numbers.Real)
            and 0 < value < math.inf)


def _raw_lines(fd: int) -> None:
    """Turn off the pty's canonical mode: its line discipline cuts a line at 4,095
    bytes, so a longer sentence (a big literal program, a long `Definition`) never
    reached coqtop whole and the session waited for its prompt until the timeout.
    Without it, coqtop reads what is sent as it is (echo is off already)."""
    attrs = termios.tcgetattr(fd)
    attrs[3] &= ~termios.ICANON
    termios.tcsetattr(fd, termios.TCSANOW, attrs)


class CoqSession:
    """One coqtop process with the Verisched library loaded.

    args:
        repo:     the repository whose `coq/` is bound to `Verisched`
        timeout:  default per-command limit, seconds
        coqtop:   executable name or path
        prelude:  sentences run at start (the library and printing settings)
    """

    def __init__(
        self,
        repo: Path | str | None = None,
        *,
        timeout: float = 120.0,
        coqtop: str = "coqtop",
        prelude: tuple[str, ...] = PRELUDE,
        startup_timeout: float = 60.0,
    ) -> None:
        self.repo = Path(repo) if repo else REPO_ROOT
        self.timeout = timeout
        self.coqtop = coqtop
        self.prelude = prelude
        self.startup_timeout = startup_timeout
        self._child: pexpect.spawn | None = None
        self.state = 0
        self.proof_name = "Coq"
        self.startup_seconds = 0.0

    # -- lifecycle ---------------------------------------------------------

    def __enter__(self) -> CoqSession:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def alive(self) -> bool:
        return self._child is not None and self._child.isalive()

    def start(self) -> None:
        """Spawn coqtop and load the prelude; raises a startup exception."""
        if self._child is not None:
            return
        exe = shutil.which(self.coqtop)
        if exe is None:
            raise CoqNotFoundError(f"coqtop not found ({self.coqtop!r} is not on PATH): "
                                   + INSTALL_HINT)
        if not library_vo(self.repo).exists():
            ensure_built(self.repo)  # an installed package's first use: built once
        if not library_vo(self.repo).exists():
            raise LibraryNotBuiltError(
                f"the Coq library is not built ({library_vo(self.repo)} is missing): "
                f"run `make proofs` in {self.repo}")
        _install_exit_hooks()
        t0 = time.perf_counter()
        try:
            self._child = pexpect.spawn(
                exe, ["-emacs", "-Q", str(self.repo / "coq"), "Verisched"],
                cwd=str(self.repo), echo=False, encoding="utf-8",
                codec_errors="replace", timeout=self.startup_timeout)
        except pexpect.ExceptionPexpect as exc:
            raise CoqStartupError(f"could not start coqtop: {exc}") from exc
        self._child.delaybeforesend = None
        _raw_lines(self._child.child_fd)
        _LIVE.add(self)
        try:
            self._wait_prompt(self.startup_timeout, "<startup>")
            for sentence in self.prelude:
                r = self.run(sentence, timeout=self.startup_timeout)
                if not r.ok:
                    self.close()
                    raise self._startup_failure(sentence, r.error or "")
        except (CoqCrashedError, CoqTimeoutError) as exc:
            self.close()
            raise CoqStartupError(f"coqtop did not start: {exc}") from exc
        self.startup_seconds = time.perf_counter() - t0

    def _startup_failure(self, sentence: str, msg: str) -> Exception:
        if "Verisched" in sentence and (
            "Cannot find" in msg or "inconsistent assumptions" in msg
            or "compiled" in msg.lower() or "not found" in msg
        ):
            return LibraryNotBuiltError(
                f"loading the Coq library failed ({msg.strip().splitlines()[-1]}): "
                f"run `make proofs` in {self.repo}")
        return CoqStartupError(f"startup command {sentence!r} failed: {msg.strip()}")

    def close(self) -> None:
        """Kill coqtop and its process group; safe to call twice."""
        child, self._child = self._child, None
        if child is None:
            return
        _LIVE.discard(self)
        pid = child.pid
        try:
            os.killpg(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            child.close(force=True)
        except Exception:  # noqa: BLE001 - the process is gone either way
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:
                pass

    # -- commands ----------------------------------------------------------

    def run(self, text: str, timeout: float | None = None) -> CoqResponse:
        """Send one sentence and wait for its prompt.

        Coq's rejection is reported in the response (`error`), not raised:
        Coq keeps its previous state and so does this object.  Raises
        CoqTimeoutError past `timeout` and CoqCrashedError if coqtop dies.
        """
        sentence = single_sentence(text)
        if self._child is None:
            raise CoqCrashedError("the Coq session is closed")
        limit = self.timeout if timeout is None else timeout
        before = self.state
        t0 = time.perf_counter()
        self._child.send(sentence + "\n")
        raw = self._wait_prompt(limit, sentence)
        elapsed = time.perf_counter() - t0
        output = _INFO_RE.sub("", raw.replace("\r\n", "\n"))
        output = _NOISE_RE.sub("", output).strip("\n")
        error = None
        m = _ERROR_RE.search(output)
        if m:
            error = output[m.end():].strip()
            output = output[: m.start()]
            output = re.sub(r"(?s)Toplevel input, characters.*\Z", "", output).rstrip()
        return CoqResponse(sentence, output, error, before, self.state, self.proof_name, elapsed)

    def run_ok(self, text: str, timeout: float | None = None) -> CoqResponse:
        """`run` for the bridge's own commands, whose failure is a bug or bad setup."""
        r = self.run(text, timeout)
        if not r.ok:
            raise CoqCommandError(f"Coq rejected {r.sentence!r}: {r.error}", r.sentence,
                                  r.error or "")
        return r

    def back_to(self, state: int) -> None:
        """Return Coq to an earlier state number (exact undo)."""
        if state == self.state:
            return
        self.run_ok(f"BackTo {state}.")

    def _wait_prompt(self, limit: float, sentence: str) -> str:
        child = self._child
        assert child is not None
        try:
            child.expect(PROMPT_RE, timeout=limit)
        except pexpect.TIMEOUT:
            raise self._interrupt(sentence, limit) from None
        except pexpect.EOF:
            status = self._reap(child)
            raise CoqCrashedError(_crash_message(status, sentence), status) from None
        m = child.match
        self.proof_name = m.group(1)
        self.state = int(m.group(2))
        return child.before or ""

    def _interrupt(self, sentence: str, limit: float) -> CoqTimeoutError:
        """Interrupt a runaway command; kill coqtop if it does not listen."""
        child = self._child
        assert child is not None
        recovered = False
        try:
            child.kill(signal.SIGINT)
            child.expect(PROMPT_RE, timeout=10)
            self.proof_name = child.match.group(1)
            self.state = int(child.match.group(2))
            recovered = True
        except (pexpect.TIMEOUT, pexpect.EOF):
            self.close()
        what = "interrupted, Coq is back in the state before it" if recovered else \
            "coqtop did not answer the interrupt and was killed"
        return CoqTimeoutError(f"timeout after {limit:g} s on {sentence[:80]!r} ({what})",
                               sentence, limit, recovered)

    def _reap(self, child: pexpect.spawn) -> int | None:
        self._child = None
        _LIVE.discard(self)
        try:
            child.close(force=True)
        except Exception:  # noqa: BLE001
            pass
        if child.signalstatus is not None:
            return 128 + child.signalstatus
        return child.exitstatus


def _crash_message(status: int | None, sentence: str) -> str:
    cause = f"exit status {status}"
    if status == 137:
        cause += " (killed by SIGKILL: out of memory or killed from outside)"
    return f"coqtop died while running {sentence[:80]!r} ({cause})"
