"""`verisched replay` and `verisched check` as a user runs them."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from verisched.cli import main

BAD = """From Coq Require Import ZArith.
From Coq Require Import derive.Derive.
From Verisched Require Import ATL.
Open Scope Z_scope. Open Scope atl_scope.
Section Bad.
  Context {S : Type} `{ScalarLaws S}.
  Variables (n : Z) (f : Z -> S).
  Definition p := GEN [ i < n ] f _[ i ].
  Derive q SuchThat (p = q) As q_correct.
  Proof.
    reschedule.
    rw no_such_lemma.
    done.
  Qed.
End Bad.
"""


def test_replay_prints_steps_and_verdict(repo: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "trace.json"
    rc = main(["replay", str(repo / "coq" / "Examples" / "Pipeline.v"), "--json", str(out)])
    text = capsys.readouterr().out
    assert rc == 0
    # Through rich, within 100 columns: each step, k of n, and what it changed.
    assert "[fused step 3/6] rw get_gen." in text
    assert "    |[ 0 <=? i - 1 ]| f _[i - 1]\n" in text
    assert "GEN [ i < n ] |[ 0 <=? i - 1 ]| f _[i - 1] <+> f _[i]" not in text
    assert "Coq accepted fused_correct" in text
    assert max(map(len, text.splitlines())) <= 100
    data = json.loads(out.read_text())
    assert data["ok"] and data["derivations"][0]["derivation"] == "fused"
    # --full: the whole program after each step too; --quiet: the verdict alone.
    assert main(["replay", str(repo / "coq" / "Examples" / "Pipeline.v"), "--full"]) == 0
    text = capsys.readouterr().out
    assert "GEN [ i < n ] |[ 0 <=? i - 1 ]| f _[i - 1] <+> f _[i]" in text
    assert main(["replay", str(repo / "coq" / "Examples" / "Pipeline.v"), "--quiet"]) == 0
    quiet = capsys.readouterr()
    assert "[fused step" not in quiet.out + quiet.err
    assert "Coq accepted fused_correct" in quiet.out


def test_failed_replay_names_step_tactic_and_message(tmp_path: Path, capsys) -> None:
    bad = tmp_path / "Bad.v"
    bad.write_text(BAD)
    rc = main(["replay", str(bad)])
    err = capsys.readouterr().err
    assert rc == 1
    assert "step 2" in err and "rw no_such_lemma." in err and "not found" in err


def test_a_failed_derivation_does_not_stop_the_others(tmp_path: Path, capsys) -> None:
    """One run reports every broken derivation, as a compiler reports every error: after
    a failure Coq goes back to the state before that Derive and the replay goes on.  A
    later derivation that uses the failed one's lemma fails with Coq's message and a note
    naming it; an independent one is checked; one before loads by name; one after loads
    by name too (it used to fail on the earlier derivation's error)."""
    before = ("  Derive q0 SuchThat (p = q0) As q0_correct.\n"
              "  Proof. reschedule. done. Qed.\n")
    after = ("  Derive q2 SuchThat (p = q2) As q2_correct.\n"
             "  Proof. reschedule. done. Qed.\n"
             "  Derive q3 SuchThat (p = q3) As q3_correct.\n"
             "  Proof. rewrite q_correct. reschedule. done. Qed.\n"
             "  Derive q4 SuchThat (p = q4) As q4_correct.\n"
             "  Proof. reschedule. done. Qed.\n")
    text = BAD.replace("  Derive q SuchThat", before + "  Derive q SuchThat")
    bad = tmp_path / "Bad3.v"
    bad.write_text(text.replace("End Bad.", after + "End Bad."))
    assert main(["replay", str(bad), "-q"]) == 1
    cap = capsys.readouterr()
    assert "Coq accepted q0_correct" in cap.out and "FAILED: q: step 2" in cap.err
    assert "Coq accepted q2_correct" in cap.out and "Coq accepted q4_correct" in cap.out
    assert re.search(r"FAILED: q3: step 1 \(rewrite q_correct\.\): Coq says: .*q_correct.* "
                     r"\(it uses q_correct, whose derivation failed at line 14\)", cap.err)
    assert "NOT CHECKED" not in cap.err
    assert main(["check", str(bad), "--no-build"]) == 1
    out = capsys.readouterr().out
    assert "q0 (q0_correct): closed under the global context" in out
    assert "q2 (q2_correct): closed under the global context" in out
    assert "q3: FAILED at" in out and "q: FAILED at" in out
    for name in ("q0", "q4"):
        assert main(["replay", str(bad), "-q", "--derivation", name]) == 0
        assert f"Coq accepted {name}_correct" in capsys.readouterr().out
    assert main(["compile", str(bad), "--derivation", "q4", "--unsafe", "-q", "--shape", "f=n",
                 "-o", str(tmp_path / "q4.c")]) == 0
    assert (tmp_path / "q4.c").is_file()
    # A failing command outside any derivation still stops the replay: the derivations
    # after it are listed as not checked (its definitions may be what they need).
    broken = bad.read_text().replace("  Derive q2 SuchThat",
                                     "  Definition r := no_such_name.\n  Derive q2 SuchThat")
    bad.write_text(broken)
    assert main(["replay", str(bad), "-q"]) == 1
    err = capsys.readouterr().err
    assert "no_such_name" in err and "NOT CHECKED: q2: the replay stopped at the failure " \
        "before it" in err


def test_a_rejected_derive_statement_does_not_stop_the_others(tmp_path: Path, capsys) -> None:
    """A Derive whose statement Coq rejects derives nothing: the replay goes past its
    proof, reports it once (not also as "not checked"), and replays the rest; a later
    derivation asked for by name loads; the one rejected, asked for, says why."""
    from verisched import pipeline

    good = "  Derive q SuchThat (p = q) As q_correct.\n  Proof. reschedule. done. Qed.\n"
    text = BAD.replace("  Derive q SuchThat (p = q)", "  Derive r SuchThat (p = nope r)")
    bad = tmp_path / "Rejected.v"
    bad.write_text(text.replace("End Bad.", good + "End Bad."))
    trace = tmp_path / "t.json"
    assert main(["replay", str(bad), "-q", "--json", str(trace)]) == 1
    cap = capsys.readouterr()
    assert "Coq accepted q_correct" in cap.out
    assert re.search(r"FAILED: .*Rejected.v:9: derivation r: Coq rejected its statement "
                     r"'Derive r SuchThat \(p = nope r\) As q_correct\.': .*nope", cap.err)
    assert "NOT CHECKED" not in cap.err
    data = json.loads(trace.read_text())
    assert not data["ok"] and data["failure"]["derivation"] == "r"
    assert [d["derivation"] for d in data["rejected"]] == ["r"]
    assert [d["derivation"] for d in data["derivations"]] == ["q"]
    assert main(["replay", str(bad), "-q", "--derivation", "q"]) == 0
    assert main(["check", str(bad), "--no-build"]) == 1
    assert "r: FAILED at" in capsys.readouterr().out
    assert pipeline.load(bad, "q").steps == 2
    try:
        pipeline.load(bad, "r")
    except pipeline.DerivationError as exc:
        assert "Rejected.v:9: Coq rejected" in str(exc) and "nope" in str(exc)
    else:
        raise AssertionError("the rejected derivation loaded")


def test_replay_unknown_derivation_and_missing_file(repo: Path, tmp_path: Path,
                                                    capsys) -> None:
    rc = main(["replay", str(repo / "coq" / "Examples" / "Pipeline.v"),
               "--derivation", "nope"])
    assert rc == 2 and "no derivation named 'nope'" in capsys.readouterr().err
    assert main(["replay", str(tmp_path / "missing.v")]) == 2


def test_check_reports_assumptions_without_building(repo: Path) -> None:
    # Run as a user would; --no-build because the suite must not rebuild the
    # library under other processes' feet.  Pipeline.v must be reported clean.
    proc = subprocess.run([sys.executable, "-m", "verisched.cli", "check", "--no-build"],
                          cwd=repo, capture_output=True, text=True, timeout=600)
    assert "Verisched.Examples.Pipeline.fused_correct: " \
           "FunctionalExtensionality.functional_extensionality_dep" in proc.stdout
    assert ("OK:" in proc.stdout) == (proc.returncode == 0)


def test_check_and_demo_refuse_a_bad_repository_or_output_by_its_argument(
        tmp_path: Path, capsys) -> None:
    assert main(["check", "--repo", str(tmp_path), "--no-build"]) == 2
    assert f"--repo {tmp_path}: not a verisched repository" in capsys.readouterr().err
    blocker = tmp_path / "file"
    blocker.write_text("")
    try:
        main(["demo", "--out", str(blocker / "out")])
    except SystemExit as stop:
        assert stop.code == 2
    else:
        raise AssertionError("demo accepted an --out under a file")
    assert f"argument --out: {blocker / 'out'}: cannot create it" in capsys.readouterr().err
    # An empty --out ("$DIR" unset) would have written into the current directory.
    try:
        main(["demo", "--out", ""])
    except SystemExit as stop:
        assert stop.code == 2
    else:
        raise AssertionError("demo accepted an empty --out")
    assert "argument --out: '': cannot create it (the path is empty)" in \
        capsys.readouterr().err
    # What the check cannot foresee (as root, os.access passes even in /proc) is said
    # when the directory is made, with the path and the cause, as the check says it.
    import pytest

    from verisched.pybridge.derivation import make_directory
    from verisched.pybridge.errors import OutputPathError

    with pytest.raises(OutputPathError, match=r"^/proc/vs-out/x: cannot create it \("):
        make_directory("/proc/vs-out/x")


def test_an_empty_path_is_refused_by_its_argument(capsys) -> None:
    """`"$F"` with F unset: the file was read as the current directory, and an empty
    -o or --json was dropped without a word (run printed instead of saving)."""
    import pytest

    v = "coq/Examples/Pipeline.v"
    cases = [
        (["replay", v, "--json", ""], "argument --json: '': the path is empty"),
        (["report", v, "-o", ""], "argument -o/--output: '': the path is empty"),
        (["compile", v, "--derivation", "fused", "-o", ""], "argument -o/--output: ''"),
        (["run", v, "--derivation", "fused", "--size", "n=4", "-o", ""],
         "argument -o/--output: '': the path is empty"),
        (["run", "", "--derivation", "fused"], "argument file: '': the path is empty"),
        (["replay", " "], "argument file: ' ': the path is empty"),
        (["check", ""], "argument FILE.v: '': the path is empty"),
    ]
    for argv, msg in cases:
        with pytest.raises(SystemExit) as stop:
            main(argv)
        assert stop.value.code == 2, argv
        assert msg in capsys.readouterr().err, argv


def test_a_later_lemmas_knock_on_failure_is_said_after_its_cause(tmp_path: Path, capsys) -> None:
    """A `Lemma` after a failed derivation that uses it stops the replay; its error used
    to be printed first, above the step that caused it.  The file's order now."""
    text = BAD.replace("End Bad.", "  Lemma q_again : p = q.\n  Proof. exact q_correct. Qed.\n"
                                   "End Bad.")
    bad = tmp_path / "Knock.v"
    bad.write_text(text)
    assert main(["replay", str(bad), "-q"]) == 1
    err = capsys.readouterr().err
    cause, knock = err.find("FAILED: q: step 2"), err.find("Coq rejected 'Lemma q_again")
    assert 0 <= cause < knock, err
