"""`verisched replay --json OUT`: the trace is written whole, or not at all.

Regression tests of faults found by a differential run: a failing step
wrote `"failure": null`; a timeout or a killed coqtop wrote no JSON at all,
losing every completed step, and its error named no step or line; an
unwritable OUT raised a traceback after the whole replay.
"""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest

from verisched.cli import main
from verisched.pybridge.derivation import Derivation, StepError, StepOk
from verisched.pybridge.errors import CoqCrashedError
from verisched.pybridge.replay import replay_file
from verisched.pybridge.session import CoqSession

# A derivation whose second step (line 12) is filled in per test.
HEAD = """From Coq Require Import ZArith.
From Coq Require Import derive.Derive.
From Verisched Require Import ATL.
Open Scope Z_scope. Open Scope atl_scope.
Section T.
  Context {S : Type} `{ScalarLaws S}.
  Variables (n : Z) (f : Z -> S).
  Definition p := GEN [ i < n ] f _[ i ].
  Derive q SuchThat (p = q) As q_correct.
  Proof.
    reschedule.
"""
# Runs for hours in constant memory and answers an interrupt (a recursive
# Ltac loop is no good here: it can end in a stack overflow within seconds).
LOOP = "let x := eval cbv in (Pos.iter (fun u : unit => u) tt 1000000000000%positive) in idtac."


def _script(tmp_path: Path, step2: str, tail: str = "") -> Path:
    src = tmp_path / "T.v"
    src.write_text(HEAD + f"    {step2}\n    done.\n  Qed.\nEnd T.\n" + tail)
    assert src.read_text().splitlines()[11].strip() == step2  # line 12
    return src


def _replay_json(tmp_path: Path, src: Path, *extra: str) -> tuple[int, dict]:
    out = tmp_path / "trace.json"
    rc = main(["replay", str(src), "--json", str(out), *extra])
    return rc, json.loads(out.read_text())


def test_json_records_a_failing_step(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                     ) -> None:
    rc, data = _replay_json(tmp_path, _script(tmp_path, "rw no_such_lemma."))
    assert rc == 1 and data["ok"] is False
    f = data["failure"]
    assert (f["kind"], f["derivation"], f["step"], f["tactic"], f["line"]) == \
        ("step", "q", 2, "rw no_such_lemma.", 12)
    assert "no_such_lemma" in f["message"] and "not found" in f["message"]
    (d,) = data["derivations"]
    assert d["failure"] == f
    assert [s["tactic"] for s in d["steps"]] == ["reschedule."]  # the completed step
    assert "step 2" in capsys.readouterr().err


def test_json_records_a_rejected_command(tmp_path: Path) -> None:
    src = tmp_path / "C.v"
    src.write_text("From Coq Require Import ZArith.\nCheck vs_undefined_xyz.\n")
    rc, data = _replay_json(tmp_path, src)
    assert rc == 1 and data["ok"] is False
    f = data["failure"]
    assert (f["kind"], f["derivation"], f["step"], f["tactic"], f["line"], f["sentence"]) == \
        ("command", None, None, None, 2, "Check vs_undefined_xyz.")
    assert "vs_undefined_xyz" in f["message"]


def test_json_records_a_rejected_qed(tmp_path: Path) -> None:
    # `done` is dropped: Qed meets an unfinished proof.
    src = tmp_path / "Q.v"
    src.write_text(HEAD + "  Qed.\nEnd T.\n")
    rc, data = _replay_json(tmp_path, src)
    assert rc == 1 and data["ok"] is False
    f = data["failure"]
    assert (f["kind"], f["derivation"], f["line"], f["sentence"]) == ("closing", "q", 12, "Qed.")
    assert f["message"]


def test_timeout_keeps_completed_steps_and_says_where(tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]
                                                     ) -> None:
    src = _script(tmp_path, LOOP)
    rc, data = _replay_json(tmp_path, src, "--timeout", "5")
    err = capsys.readouterr().err
    assert rc == 2
    assert "CoqTimeoutError" in err and f"{src}:12: derivation q, step 2" in err
    f = data["failure"]
    assert data["ok"] is False
    assert (f["kind"], f["derivation"], f["step"], f["tactic"], f["line"]) == \
        ("timeout", "q", 2, LOOP, 12)
    assert "timeout after 5 s" in f["message"]
    (d,) = data["derivations"]
    assert [s["tactic"] for s in d["steps"]] == ["reschedule."]


def test_dead_coqtop_keeps_completed_steps_and_says_where(tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]
                                                         ) -> None:
    # `Quit.` makes coqtop exit mid-proof: to the bridge, a coqtop that died.
    src = _script(tmp_path, "Quit.")
    rc, data = _replay_json(tmp_path, src)
    err = capsys.readouterr().err
    assert rc == 2 and "CoqCrashedError" in err and f"{src}:12: derivation q, step 2" in err
    f = data["failure"]
    assert (f["kind"], f["derivation"], f["step"], f["tactic"], f["line"]) == \
        ("crash", "q", 2, "Quit.", 12)
    assert [s["tactic"] for s in data["derivations"][0]["steps"]] == ["reschedule."]


def test_kill_9_during_replay_keeps_the_partial_result(tmp_path: Path) -> None:
    src = _script(tmp_path, "idtac.")

    def kill_after_first(d: Derivation, res: StepOk | StepError) -> None:
        if isinstance(res, StepOk) and res.step == 1:
            os.kill(d.session._child.pid, signal.SIGKILL)  # noqa: SLF001

    with CoqSession() as session, pytest.raises(CoqCrashedError) as info:
        replay_file(session, src, on_step=kill_after_first)
    exc = info.value
    assert exc.exit_status == 137
    assert str(exc).startswith(f"{src}:12: derivation q, step 2: coqtop died")
    partial = exc.partial
    assert partial is not None and not partial.ok
    assert (partial.failure.kind, partial.failure.step, partial.failure.line) == ("crash", 2, 12)
    (rd,) = partial.derivations
    assert [s.tactic for s in rd.derivation.steps] == ["reschedule."]
    assert partial.trace()["failure"]["tactic"] == "idtac."


def test_a_failed_derivation_not_asked_for_is_passed_over(tmp_path: Path) -> None:
    # --derivation r, but q (before it) fails: Coq goes back to the state before q and
    # the replay goes on to r.  r does not use q, so it is checked and loads; r2 uses
    # q's lemma, so it fails with Coq's message and a note naming q's failure.
    tail = ("Section U.\n  Context {S : Type} `{ScalarLaws S}.\n"
            "  Variables (n : Z) (f : Z -> S).\n  Definition p2 := GEN [ i < n ] f _[ i ].\n"
            "  Derive r SuchThat (p2 = r) As r_correct.\n  Proof. reschedule. done. Qed.\n"
            "  Derive r2 SuchThat (p2 = r2) As r2_correct.\n"
            "  Proof. rewrite q_correct. done. Qed.\n"
            "End U.\n")
    src = _script(tmp_path, "rw no_such_lemma.", tail)
    rc, data = _replay_json(tmp_path, src, "--derivation", "r")
    assert rc == 0 and data["ok"] is True and data["failure"] is None
    assert [d["derivation"] for d in data["derivations"]] == ["r"]
    assert data["derivations"][0]["verdict"]["accepted"] is True
    rc, data = _replay_json(tmp_path, src, "--derivation", "r2")
    assert rc == 1 and data["ok"] is False
    f = data["failure"]
    assert (f["kind"], f["derivation"], f["step"], f["line"]) == ("step", "r2", 1, 23)
    assert "q_correct" in f["message"] and \
        f["message"].endswith("(it uses q_correct, whose derivation failed at line 12)")


def test_file_without_derivation_is_not_ok(tmp_path: Path) -> None:
    src = tmp_path / "D.v"
    src.write_text("Definition x := 1.\n")
    rc, data = _replay_json(tmp_path, src)
    assert rc == 1 and data["ok"] is False
    assert data["failure"]["kind"] == "error" and "has no derivation" in data["failure"]["message"]


def test_ok_replay_has_no_failure(repo: Path, tmp_path: Path) -> None:
    rc, data = _replay_json(tmp_path, repo / "coq" / "Examples" / "Pipeline.v")
    assert rc == 0 and data["ok"] is True and data["failure"] is None
    assert data["derivations"][0]["failure"] is None


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
