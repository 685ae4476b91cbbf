"""Bad input files and arguments to replay: a clear error, never a traceback.

Each test here is the regression test of a fault found by a differential
run: a non-UTF-8 .v file crashed every reader with a UnicodeDecodeError,
and an unknown `--derivation` was found only after replaying the whole file,
without saying which derivations the file has.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from verisched.cli import main
from verisched.pybridge.errors import SourceFileError
from verisched.pybridge.replay import replay_file
from verisched.pybridge.sentences import read_source
from verisched.pybridge.session import CoqSession

# Line 3 holds a Latin-1 "é" (0xe9) in a comment: valid for a Latin-1 editor,
# not for Coq, which reads UTF-8.
LATIN1 = (b"From Coq Require Import ZArith.\n"
          b"Open Scope Z_scope.\n"
          b"(* caf\xe9 *) Definition x := 1.\n")


@pytest.fixture()
def latin1(tmp_path: Path) -> Path:
    path = tmp_path / "Latin1.v"
    path.write_bytes(LATIN1)
    return path


def test_read_source_names_file_offset_and_line(latin1: Path) -> None:
    with pytest.raises(SourceFileError) as info:
        read_source(latin1)
    exc = info.value
    assert exc.path == str(latin1) and exc.line == 3
    assert exc.offset == LATIN1.index(b"\xe9")
    assert "Latin1.v" in str(exc) and "UTF-8" in str(exc)
    assert f"offset {exc.offset}" in str(exc) and "line 3" in str(exc)


def test_read_source_of_a_directory(tmp_path: Path) -> None:
    with pytest.raises(SourceFileError, match="cannot read"):
        read_source(tmp_path)


def test_replay_file_of_non_utf8_file(coq: CoqSession, latin1: Path) -> None:
    state = coq.state
    with pytest.raises(SourceFileError, match="line 3"):
        replay_file(coq, latin1)
    assert coq.state == state and coq.alive  # nothing was sent to Coq


def test_replay_cli_of_non_utf8_file(latin1: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["replay", str(latin1)])
    err = capsys.readouterr().err
    assert rc == 2
    assert "SourceFileError" in err and "Latin1.v" in err and "line 3" in err


def test_loader_of_non_utf8_file(latin1: Path) -> None:
    # compile/run load derivations through verisched.pipeline: they must get the
    # bridge's error (wrapped in their own), not a UnicodeDecodeError.
    from verisched.pipeline import DerivationError, load

    with pytest.raises(DerivationError, match="line 3"):
        load(latin1, "anything")


# Two derivations that are not even valid Coq: the name check must not run
# anything, so it cannot notice.
TWO_DERIVATIONS = """Derive first_one SuchThat (p = first_one) As first_ok.
Proof. done. Qed.
Derive second SuchThat (p = second) As second_ok.
Proof. done. Qed.
"""


class _NoCoq:
    """Stands in for CoqSession where a test proves no Coq is started."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        raise AssertionError("a Coq session was started")


def test_unknown_derivation_is_refused_before_running_anything(coq: CoqSession,
                                                               tmp_path: Path) -> None:
    from verisched.pybridge.errors import UnknownDerivationError

    src = tmp_path / "Two.v"
    src.write_text(TWO_DERIVATIONS)
    state = coq.state
    with pytest.raises(UnknownDerivationError) as info:
        replay_file(coq, src, only="nope")
    assert info.value.available == ("first_one", "second")
    assert "no derivation named 'nope' (available: first_one, second)" in str(info.value)
    assert coq.state == state  # not one sentence was sent


def test_replay_cli_unknown_derivation_lists_names_without_coq(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "Two.v"
    src.write_text(TWO_DERIVATIONS)
    monkeypatch.setattr("verisched.commands.replay.CoqSession", _NoCoq)
    rc = main(["replay", str(src), "--derivation", "nope"])
    err = capsys.readouterr().err
    assert rc == 2
    assert "no derivation named 'nope' (available: first_one, second)" in err


def test_unknown_derivation_in_a_file_without_any(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "None.v"
    src.write_text("Definition x := 1.\n")
    monkeypatch.setattr("verisched.commands.replay.CoqSession", _NoCoq)
    assert main(["replay", str(src), "--derivation", "x"]) == 2
    assert "available: none" in capsys.readouterr().err
