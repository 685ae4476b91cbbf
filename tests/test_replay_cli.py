"""`verisched replay` and `verisched check` as a user runs them."""

from __future__ import annotations

import json
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
