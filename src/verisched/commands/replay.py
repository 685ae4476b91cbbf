"""`verisched replay FILE.v`: re-run a derivation script step by step.

Every tactic is shown with the program it produces, in the paper-like
notation, and the run ends with Coq's verdict (Qed accepted, axioms used).
A failed step exits non-zero naming the step, the tactic and Coq's message,
so a broken derivation is diagnosed without opening an IDE.  `--json OUT`
is written however the run ends: every completed step, and in `failure`
the derivation, step, tactic, line and message of what went wrong (a
rejected tactic, a timeout, a coqtop that died), `null` only when `ok`.
"""

from __future__ import annotations

import argparse
import sys
import textwrap
from pathlib import Path

from verisched.commands.common import path_arg, positive_float
from verisched.commands.terminal import LiveSteps, console
from verisched.pybridge.derivation import (
    check_writable,
    write_json_atomic,
)
from verisched.pybridge.errors import BridgeError, OutputPathError
from verisched.pybridge.replay import (
    ReplayFailure,
    ReplayResult,
    outline_file,
    precheck_file,
    replay_file,
)
from verisched.pybridge.session import CoqSession


def run(args: argparse.Namespace) -> int:
    """Replay, report, then write the JSON trace if asked.

    Everything a user can get wrong (the output path, the file, its
    encoding and syntax, the derivation's name) is checked before Coq
    starts, and such a mistake leaves OUT as it was (nothing was replayed;
    the message says why).  Once Coq has started, the trace is written
    however the replay ends -- a failing step, a timeout, a dead coqtop --
    with every completed step and the failure, so nothing done is lost and
    an old OUT is never left looking like this run's result.  The report comes before the write, so
    a trace that cannot be written never hides what the replay found.
    """
    path = Path(args.file)
    if args.json:
        try:
            check_writable(args.json, inputs=[args.file])
        except OutputPathError as exc:
            print(f"verisched replay: --json {args.json}: {exc}", file=sys.stderr)
            return 2
    try:  # the file and the derivation's name: before Coq, and before any trace
        precheck_file(path, args.derivation)
    except BridgeError as exc:  # nothing was replayed: an old OUT is left as it was
        print(f"verisched replay: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2
    result = ReplayResult(path)
    try:
        with CoqSession(timeout=args.timeout) as session:
            result = replay_file(session, path, only=args.derivation,
                                 on_step=None if args.quiet else _live_steps(path, args.full))
    except BridgeError as exc:
        print(f"verisched replay: {type(exc).__name__}: {exc}", file=sys.stderr)
        if isinstance(exc.partial, ReplayResult):
            result = exc.partial
        else:
            result.failure = ReplayFailure(None, "", f"{type(exc).__name__}: {exc}",
                                           kind="error")
        status = 2
    else:
        status = _report(path, result)
        if not result.derivations and result.failure is None and not result.rejected:
            result.failure = ReplayFailure(None, "", f"{path} has no derivation "
                                           "(Derive ... SuchThat ... As ...)", kind="error")
    if args.json:
        try:
            write_json_atomic(args.json, result.trace())
        except OSError as exc:  # the directory went away, the disk filled up, ...
            print(f"verisched replay: --json {args.json}: cannot write the trace: "
                  f"{exc.strerror or exc}", file=sys.stderr)
            return 2
    return status


def _live_steps(path: Path, full: bool) -> LiveSteps:
    """Each step as Coq accepts it, on stdout through rich: "[NAME step k/n] TACTIC" and
    the subterms it changed (the whole program with --full), within 100 columns."""
    try:
        totals = {n: o.steps for n, o in outline_file(path).items()}
    except BridgeError:
        totals = {}
    return LiveSteps(console(), totals, full)


def _say(text: str, *, err: bool = False) -> None:
    """One line of the verdict through rich, as plain text (a `[` in Coq's message is
    not markup); a verdict is wrapped within 100 columns, an error is not (Coq's message
    is searched for as a whole, and a terminal wraps it anyway)."""
    console(stderr=err).print(text, markup=False, highlight=False, soft_wrap=err)


def _report(path: Path, result: ReplayResult) -> int:
    """Print every derivation's outcome, in the file's order, then where the replay
    stopped, if it did (after them all: a later `Lemma` that fails because a derivation
    did is a knock-on, said after its cause); the exit status (1 if anything failed)."""
    status = 1 if result.failure else 0
    if not result.failure and not result.derivations and not result.rejected:
        _say(f"verisched replay: {path} has no derivation (Derive ... SuchThat ...)", err=True)
        return 1
    for f in result.rejected:  # the replay went on past them
        _say(f"FAILED: {path}:{f.line}: derivation {f.derivation}: Coq rejected its "
             f"statement {f.sentence!r}: {f.message}", err=True)
        status = 1
    for rd in result.derivations:
        d = rd.derivation
        if rd.error is not None:
            e = rd.error
            _say(f"FAILED: {d.name}: step {e.step} ({e.tactic}): Coq says: {e.message}", err=True)
            if e.details:
                _say(textwrap.indent(e.details, "    "), err=True)
            status = 1
            continue
        v = rd.verdict
        if v is None or not v.accepted:
            msg = v.message if v else "not closed"
            _say(f"FAILED: {d.name}: Coq did not accept the proof: {msg}", err=True)
            status = 1
            continue
        axioms = ", ".join(v.axioms) if v.axioms else "none"
        _say(f"{d.name}: Coq accepted {d.proof_name} ({len(d.steps)} steps); axioms: {axioms}")
        if v.disallowed_axioms:
            _say(f"FAILED: {d.name} depends on disallowed axioms: "
                 f"{', '.join(v.disallowed_axioms)}", err=True)
            status = 1
    if result.failure:
        f = result.failure  # outside the derivations replayed: the replay stopped there
        where = f"{path}:{f.line}"
        if f.derivation is not None:
            where += f": derivation {f.derivation}" + (f", step {f.step}" if f.step else "")
        _say(f"FAILED: {where}: Coq rejected {f.sentence!r}: {f.message}", err=True)
    for name in result.unreached:  # after a failure the file's later ones never ran
        _say(f"NOT CHECKED: {name}: the replay stopped at the failure before it", err=True)
        status = 1
    return status


def register(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", type=path_arg,
                        help="a .v file containing Derive ... SuchThat ... derivations")
    parser.add_argument("--derivation", metavar="NAME", help="replay only this derivation")
    parser.add_argument("--json", metavar="OUT", type=path_arg, help="write the full trace as JSON")
    parser.add_argument("--timeout", type=positive_float, default=300.0,
                        help="per-command limit in seconds (default 300)")
    parser.add_argument("-q", "--quiet", action="store_true",
                        help="print only the verdict, not every step")
    parser.add_argument("--full", action="store_true",
                        help="print the whole program after every step, not only what changed")
    parser.set_defaults(handler=run)
