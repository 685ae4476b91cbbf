"""`verisched check [FILE.v]`: build the proofs and report what they rest on.

Runs `make proofs`, then asks Coq (`Print Assumptions`) for the axioms
behind every derived program in coq/Examples/ -- or, given a FILE, behind
every derivation of that file (a user's own script, which is not part of
the library, so it is replayed rather than loaded).  Only functional
extensionality and the standard library's real-number axioms are allowed;
anything else (an `Axiom`, an `Admitted` lemma) fails the check, so a green
check means every derivation checked is fully proved.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import textwrap
from pathlib import Path

from verisched.commands.common import path_arg, positive_float
from verisched.pybridge.derivation import ALLOWED_AXIOM_PREFIXES, parse_axioms
from verisched.pybridge.errors import BridgeError
from verisched.pybridge.replay import DERIVE_RE, precheck_file, replay_file
from verisched.pybridge.sentences import split_file
from verisched.pybridge.session import REPO_ROOT, CoqSession


def derived_programs(repo: Path) -> list[tuple[str, str]]:
    """(Coq module, proof name) of every Derive in coq/Examples/ and its subfolders
    (coq/Examples/Directives/: the re-derivations with directives)."""
    out: list[tuple[str, str]] = []
    examples = repo / "coq" / "Examples"
    for path in sorted(examples.rglob("*.v")):
        module = "Verisched.Examples." + ".".join(path.relative_to(examples).with_suffix("").parts)
        for s in split_file(path):
            m = DERIVE_RE.match(s.text)
            if m:
                out.append((module, m.group(3)))
    return out


_ALLOWED = "functional extensionality, standard-library real-number axioms"


def _assumptions_line(name: str, axioms: tuple[str, ...]) -> tuple[str, bool]:
    """One report line, and whether it names an axiom that is not allowed."""
    wrong = [a for a in axioms if not a.startswith(ALLOWED_AXIOM_PREFIXES)]
    shown = ", ".join(axioms) if axioms else "closed under the global context"
    return f"{name}: {shown}" + ("  <-- NOT ALLOWED" if wrong else ""), bool(wrong)


def check_file(path: Path, repo: Path, timeout: float) -> int:
    """Replay a user's .v file and report each derivation's assumptions.

    Replaying (not `Require`) because the file is no module of the library;
    the replay closes every derivation with Print Assumptions already.
    """
    try:
        with CoqSession(repo, timeout=timeout) as session:
            result = replay_file(session, path)
    except BridgeError as exc:
        print(f"verisched check: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2
    print(f"== assumptions of every derived program in {path}")
    bad = 0
    for rd in result.derivations:
        d, f = rd.derivation, rd.failure
        v = rd.verdict
        if v is not None and v.accepted:
            line, wrong = _assumptions_line(f"{d.name} ({d.proof_name})", v.axioms)
            print(line)
            bad += wrong
        elif f is not None:
            step = f", step {f.step} ({f.sentence})" if f.step is not None else ""
            # What the tactic printed before failing (the lane loop left, the bound it
            # could not prove), which its message points to as "printed above": listed
            # under the derivation's line here, so said to be below.
            msg = f.message.replace("printed above", "printed below") if f.details else f.message
            print(f"{d.name}: FAILED at {path}:{f.line}{step}: {msg}")
            if f.details:
                print(textwrap.indent(f.details.strip(), "    "))
            bad += 1
        else:
            print(f"{d.name}: FAILED: not closed")
            bad += 1
    for f in result.rejected:  # the replay went on past them
        print(f"{f.derivation}: FAILED at {path}:{f.line}: Coq rejected its statement: "
              f"{f.message}")
        bad += 1
    for name in result.unreached:  # after a failure the file's later ones never ran
        print(f"{name}: NOT CHECKED: the replay stopped at the failure before it")
        bad += 1
    if result.failure is not None:
        f = result.failure
        print(f"FAILED: {path}:{f.line}: Coq rejected {f.sentence!r}: {f.message}",
              file=sys.stderr)
        return 1
    if not result.derivations and not result.rejected:
        print(f"FAILED: {path} has no derivation (Derive ... SuchThat ... As ...)",
              file=sys.stderr)
        return 1
    if bad:
        print(f"FAILED: {bad} derivation(s) with a problem (allowed: {_ALLOWED})",
              file=sys.stderr)
        return 1
    print(f"OK: {len(result.derivations)} derived program(s) in {path}; "
          f"only allowed axioms ({_ALLOWED})")
    return 0


def run(args: argparse.Namespace) -> int:
    repo = Path(args.repo).resolve()
    if not (repo / "_CoqProject").is_file():  # else `make proofs` fails, saying less
        print(f"verisched check: --repo {args.repo}: not a verisched repository (no "
              "_CoqProject there)", file=sys.stderr)
        return 2
    path = Path(args.file) if args.file else None
    if path is not None:
        try:  # a bad file is reported before minutes of `make proofs`
            precheck_file(path)
        except BridgeError as exc:
            print(f"verisched check: {type(exc).__name__}: {exc}", file=sys.stderr)
            return 2
    if not args.no_build:
        print("== make proofs", flush=True)
        proc = subprocess.run(["make", "proofs"], cwd=repo, capture_output=True, text=True)
        if proc.returncode != 0:
            tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-25:])
            print(f"{tail}\nFAILED: make proofs exited with {proc.returncode}", file=sys.stderr)
            return 1
    if path is not None:
        return check_file(path, repo, args.timeout)
    try:
        programs = derived_programs(repo)
    except BridgeError as exc:  # an unreadable or malformed example file
        print(f"verisched check: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2
    if not programs:
        print("FAILED: no derivation found in coq/Examples/", file=sys.stderr)
        return 1
    bad = 0
    try:
        with CoqSession(repo, timeout=args.timeout) as session:
            loaded: set[str] = set()
            failed: set[str] = set()
            print("== assumptions of every derived program")
            for module, proof in programs:
                if module in failed:
                    bad += 1
                    continue
                if module not in loaded:
                    r = session.run(f"Require {module}.")
                    if not r.ok:
                        print(f"{module}: FAILED to load: {r.error}")
                        failed.add(module)
                        bad += 1
                        continue
                    loaded.add(module)
                r = session.run(f"Print Assumptions {module}.{proof}.")
                if not r.ok:
                    print(f"{module}.{proof}: FAILED: {r.error} (derivation not completed?)")
                    bad += 1
                    continue
                line, wrong = _assumptions_line(f"{module}.{proof}", parse_axioms(r.output))
                print(line)
                bad += wrong
    except BridgeError as exc:
        print(f"verisched check: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2
    if bad:
        print(f"FAILED: {bad} derived program(s) with a problem (allowed: {_ALLOWED})",
              file=sys.stderr)
        return 1
    print(f"OK: {len(programs)} derived programs; only allowed axioms ({_ALLOWED})")
    return 0


def register(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", nargs="?", metavar="FILE.v", type=path_arg,
                        help="check this derivation script instead of coq/Examples/")
    parser.add_argument("--repo", default=str(REPO_ROOT), help="repository root")
    parser.add_argument("--no-build", action="store_true", help="skip `make proofs`")
    parser.add_argument("--timeout", type=positive_float, default=300.0,
                        help="per-command limit, s")
    parser.set_defaults(handler=run)
