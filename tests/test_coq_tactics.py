"""Pinned output of the derivation tactics (stdpp-style `.v` + `.ref` tests).

Each `tests/coq/*.v` file shows tactics succeeding and refusing; Coq's output
(the derived programs and every error message) must match the `.ref` file
beside it.  Set VERISCHED_UPDATE_GOLDEN=1 to rewrite the `.ref` files after
an intended change, then review the diff.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
CASES = sorted((REPO / "tests" / "coq").glob("*.v"))


@pytest.mark.parametrize("case", CASES, ids=[c.stem for c in CASES])
def test_tactic_output_is_pinned(case: Path, tmp_path: Path) -> None:
    # Compile a copy so no .vo/.glob lands in the source tree.
    src = tmp_path / case.name
    src.write_text(case.read_text())
    proc = subprocess.run(
        ["coqc", "-Q", str(REPO / "coq"), "Verisched", str(src)],
        capture_output=True, text=True, cwd=tmp_path, timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    ref = case.with_suffix(".ref")
    if os.environ.get("VERISCHED_UPDATE_GOLDEN"):
        ref.write_text(proc.stdout)
    assert ref.exists(), f"missing {ref.name}: run with VERISCHED_UPDATE_GOLDEN=1"
    assert proc.stdout == ref.read_text()
