"""`verisched demo` read as a person reads it: it fits a 100-column terminal, shows
each step's change rather than the whole program, checks the kernel, and ends with
warm timings and what to try next."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import requires_coq

from verisched.cli import main


@requires_coq
def test_demo_output_is_readable(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert max(len(x) for x in lines) <= 100, max(lines, key=len)
    steps = [x for x in lines if re.match(r"step \d+/\d+ ", x)]
    assert len(steps) >= 10 and steps[0].startswith("step 1/")
    # Changes, not whole programs: far fewer lines than the programs would take.
    assert len(lines) < 40 * len(steps)
    assert "Coq accepted it" in out
    assert out.count(": OK") == 2  # derived and original program against the interpreter
    assert re.search(r"median \d+\.\d+ ms over \d+ warm calls", out)
    assert re.search(r"total \d+\.\d s", out)
    assert "verisched report" in out.split("next")[-1]
    assert (tmp_path / "blur_tiled.c").is_file() and (tmp_path / "blur_tiled.json").is_file()
