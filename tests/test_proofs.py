"""The proof library's trust base: nothing admitted, nothing assumed.

`make test` builds the proofs before pytest runs, so these tests read the
compiled library.  The assumptions check goes through `verisched check`
(Coq's `Print Assumptions` on every derived program in coq/Examples/), and
is strict: only functional extensionality and the standard library's
real-number axioms may appear.
"""

from __future__ import annotations

import re
from pathlib import Path

from verisched.commands import check

REPO = Path(__file__).resolve().parents[1]
COQ = REPO / "coq"

# What the Coq sources must never contain (outside comments).
FORBIDDEN = re.compile(r"\b(Admitted|admit|Axiom|Axioms|Conjecture|Parameter|Parameters)\b")


def strip_comments(text: str) -> str:
    """Remove (possibly nested) Coq comments, keeping strings intact enough."""
    out, depth, i = [], 0, 0
    while i < len(text):
        if text.startswith("(*", i):
            depth += 1
            i += 2
        elif text.startswith("*)", i) and depth:
            depth -= 1
            i += 2
        else:
            if depth == 0:
                out.append(text[i])
            i += 1
    return "".join(out)


def test_no_admitted_or_axioms_in_coq_sources() -> None:
    offenders = []
    for path in sorted(COQ.rglob("*.v")):
        for lineno, line in enumerate(strip_comments(path.read_text()).splitlines(), 1):
            if FORBIDDEN.search(line):
                offenders.append(f"{path.relative_to(REPO)}:{lineno}: {line.strip()}")
    assert not offenders, "forbidden commands in coq/:\n" + "\n".join(offenders)


def test_top_level_variables_are_inside_sections() -> None:
    """A `Variable`/`Hypothesis` outside a section is an axiom in disguise."""
    offenders = []
    for path in sorted(COQ.rglob("*.v")):
        depth = 0
        for lineno, line in enumerate(strip_comments(path.read_text()).splitlines(), 1):
            if re.match(r"\s*Section\b", line):
                depth += 1
            elif re.match(r"\s*End\s+\w+\s*\.", line) and depth:
                # `End` closes a section or a module; modules are not tracked, so only
                # decrement when a section is open.
                depth -= 1
            elif re.match(r"\s*(Variables?|Hypothes[ie]s|Context)\b", line) and depth == 0:
                offenders.append(f"{path.relative_to(REPO)}:{lineno}: {line.strip()}")
    assert not offenders, "declarations outside a section:\n" + "\n".join(offenders)


def test_every_example_derivation_is_checked() -> None:
    programs = check.derived_programs(REPO)
    files = {m.split("Examples.", 1)[1] for m, _ in programs}
    examples = COQ / "Examples"
    expected = {".".join(p.relative_to(examples).with_suffix("").parts)
                for p in examples.rglob("*.v")}
    assert files == expected, f"examples without a Derive: {sorted(expected - files)}"


def test_print_assumptions_is_strict(capsys) -> None:
    parser_args = type("Args", (), {"repo": str(REPO), "no_build": True, "timeout": 600,
                                    "file": None})()
    code = check.run(parser_args)
    out = capsys.readouterr()
    assert code == 0, out.out + out.err
    for module, proof in check.derived_programs(REPO):
        assert f"{module}.{proof}:" in out.out, f"{module}.{proof} missing from the report"
    assert "NOT ALLOWED" not in out.out
