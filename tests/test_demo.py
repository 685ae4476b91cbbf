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


def test_a_failed_demo_leaves_no_directory_it_made(tmp_path: Path, monkeypatch,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    # A full disk while writing the trace left an empty `--out` (and its new parents)
    # behind; the directories the run made are removed again, one that was there stays.
    import errno

    from verisched import pipeline
    from verisched.pybridge import derivation

    def full(*_a, **_k):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(pipeline, "load", lambda *_a, **_k: full())
    out = tmp_path / "a" / "b" / "out"
    assert main(["demo", "--out", str(out)]) == 1
    assert "No space left on device" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []
    assert main(["demo", "--out", str(tmp_path)]) == 1  # there before: kept
    assert tmp_path.is_dir()
    # the helper itself: a directory that holds something stays, with its parents
    with pytest.raises(KeyError), derivation.output_directory(out) as d:
        (d / "kept.txt").write_text("x")
        raise KeyError("stop")
    assert (out / "kept.txt").is_file()
