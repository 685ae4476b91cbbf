"""Every script in examples/ runs as written: each schedules a program with the
Python directives, compiles it, and checks the kernel against numpy or the
reference interpreter itself (sizes that are not multiples of the factors)."""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest
from conftest import requires_coq

EXAMPLES = sorted((Path(__file__).resolve().parents[1] / "examples").glob("*.py"))


@requires_coq
@pytest.mark.parametrize("script", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_example_runs(script: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                      capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    runpy.run_path(str(script), run_name="__main__")
    assert "checked against" in capsys.readouterr().out
