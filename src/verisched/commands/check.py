"""`verisched check`: build the proofs and report what they rest on.

Runs `make proofs`, then asks Coq (`Print Assumptions`) for the axioms
behind every derived program in coq/Examples/.  Only functional
extensionality and the standard library's real-number axioms are allowed;
anything else (an `Axiom`, an `Admitted` lemma) fails the check, so a green
check means every shipped derivation is fully proved.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

from verisched.pybridge.derivation import ALLOWED_AXIOM_PREFIXES, parse_axioms
from verisched.pybridge.errors import BridgeError
from verisched.pybridge.replay import DERIVE_RE
from verisched.pybridge.sentences import split_file
from verisched.pybridge.session import REPO_ROOT, CoqSession


def derived_programs(repo: Path) -> list[tuple[str, str]]:
    """(Coq module, proof name) of every Derive in coq/Examples/."""
    out: list[tuple[str, str]] = []
    for path in sorted((repo / "coq" / "Examples").glob("*.v")):
        module = "Verisched.Examples." + path.stem
        for s in split_file(path):
            m = DERIVE_RE.match(s.text)
            if m:
                out.append((module, m.group(3)))
    return out


def run(args: argparse.Namespace) -> int:
    repo = Path(args.repo).resolve()
    if not args.no_build:
        print("== make proofs", flush=True)
        proc = subprocess.run(["make", "proofs"], cwd=repo, capture_output=True, text=True)
        if proc.returncode != 0:
            tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-25:])
            print(f"{tail}\nFAILED: make proofs exited with {proc.returncode}", file=sys.stderr)
            return 1
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
                axioms = parse_axioms(r.output)
                wrong = [a for a in axioms if not a.startswith(ALLOWED_AXIOM_PREFIXES)]
                shown = ", ".join(axioms) if axioms else "closed under the global context"
                print(f"{module}.{proof}: {shown}" + ("  <-- NOT ALLOWED" if wrong else ""))
                bad += bool(wrong)
    except BridgeError as exc:
        print(f"verisched check: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2
    allowed = "functional extensionality, standard-library real-number axioms"
    if bad:
        print(f"FAILED: {bad} derived program(s) with a problem (allowed: {allowed})",
              file=sys.stderr)
        return 1
    print(f"OK: {len(programs)} derived programs; only allowed axioms ({allowed})")
    return 0


def register(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--repo", default=str(REPO_ROOT), help="repository root")
    parser.add_argument("--no-build", action="store_true", help="skip `make proofs`")
    parser.add_argument("--timeout", type=float, default=300.0, help="per-command limit, s")
    parser.set_defaults(handler=run)
