"""`verisched replay --json OUT`: the trace is written whole, or not at all.

Regression tests of faults found by a differential run: an unwritable OUT
raised a traceback after the whole replay.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from verisched.cli import main


class _NoCoq:
    """Stands in for CoqSession where a test proves no Coq is started."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        raise AssertionError("a Coq session was started")


@pytest.fixture()
def no_coq(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("verisched.commands.replay.CoqSession", _NoCoq)


@pytest.mark.parametrize("where, cause", [
    ("missing/out.json", "does not exist"),
    ("", "is a directory"),
    ("file.txt/out.json", "is not a directory"),
])
def test_unwritable_json_is_refused_before_coq(repo: Path, tmp_path: Path, no_coq: None,
                                               capsys: pytest.CaptureFixture[str],
                                               where: str, cause: str) -> None:
    (tmp_path / "file.txt").write_text("x")
    out = tmp_path / where if where else tmp_path
    rc = main(["replay", str(repo / "coq" / "Examples" / "Pipeline.v"), "--json", str(out)])
    err = capsys.readouterr().err
    assert rc == 2
    assert f"--json {out}" in err and cause in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file.txt"]  # nothing left behind


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes through permission bits")
def test_read_only_directory_is_refused(tmp_path: Path) -> None:
    from verisched.pybridge.derivation import check_writable
    from verisched.pybridge.errors import OutputPathError

    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        with pytest.raises(OutputPathError, match="cannot create a file"):
            check_writable(ro / "out.json")
    finally:
        ro.chmod(0o700)


def test_check_writable_leaves_nothing_behind(tmp_path: Path) -> None:
    from verisched.pybridge.derivation import check_writable

    check_writable(tmp_path / "out.json")
    assert list(tmp_path.iterdir()) == []


def test_write_failing_at_the_end_is_an_error_not_a_traceback(
        repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    # The path was fine when checked, then the disk filled up.
    def full(path: object, data: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("verisched.commands.replay.write_json_atomic", full)
    out = tmp_path / "t.json"
    rc = main(["replay", str(repo / "coq" / "Examples" / "Pipeline.v"), "--json", str(out)])
    captured = capsys.readouterr()
    assert rc == 2
    assert f"--json {out}: cannot write the trace: No space left on device" in captured.err
    assert "Coq accepted fused_correct" in captured.out  # the replay itself is still reported
    assert not out.exists()
