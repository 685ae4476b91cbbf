"""`verisched check FILE.v`: the assumptions report for a user's own script.

Before, `check` only looked at the shipped coq/Examples/ (issue 15: "`check`
cannot take a user's file").
"""

from __future__ import annotations

from pathlib import Path

import pytest

from verisched.cli import main

HEAD = """From Coq Require Import ZArith.
From Coq Require Import derive.Derive.
From Verisched Require Import ATL.
Open Scope Z_scope. Open Scope atl_scope.
Axiom vs_check_bad : forall (T : Type) (a b : T), a = b.
Section T.
  Context {S : Type} `{ScalarLaws S}.
  Variables (n : Z) (f : Z -> S).
  Definition p := GEN [ i < n ] f _[ i ].
  Derive q SuchThat (p = q) As q_correct.
  Proof.
    reschedule.
"""


def _check(tmp_path: Path, step2: str, capsys: pytest.CaptureFixture[str]
           ) -> tuple[int, str, str]:
    src = tmp_path / "Mine.v"
    src.write_text(HEAD + f"    {step2}\n    done.\n  Qed.\nEnd T.\n")
    # --no-build: the suite must not rebuild the library under other processes.
    rc = main(["check", "--no-build", str(src)])
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_check_a_users_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = _check(tmp_path, "idtac.", capsys)
    assert rc == 0, err
    assert "== assumptions of every derived program in" in out
    assert "q (q_correct): " in out and "NOT ALLOWED" not in out
    assert "OK: 1 derived program(s)" in out


def test_check_flags_a_users_axiom(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # the axiom "proves" the program equal to its reverse
    rc, out, err = _check(tmp_path, "rewrite (vs_check_bad _ (GEN [ i < n ] f _[ i ]) "
                          "(GEN [ i < n ] f _[ n - 1 - i ])).", capsys)
    assert rc == 1
    assert "q (q_correct): " in out and "vs_check_bad" in out and "NOT ALLOWED" in out
    assert "FAILED: 1 derivation(s)" in err


def test_check_a_users_failing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                    ) -> None:
    rc, out, _ = _check(tmp_path, "rw no_such_lemma.", capsys)
    assert rc == 1
    assert "q: FAILED at" in out and "Mine.v:13, step 2 (rw no_such_lemma.)" in out
    assert "not found" in out


def test_check_refuses_a_bad_file_before_building(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "Latin1.v"
    src.write_bytes(b"(* caf\xe9 *)\n")
    # no --no-build: the file is refused before `make proofs` would run
    assert main(["check", str(src)]) == 2
    captured = capsys.readouterr()
    assert "SourceFileError" in captured.err and "line 1" in captured.err
    assert "make proofs" not in captured.out


def test_check_prints_what_a_failing_tactic_printed(tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """A refusal whose message says the cause is "printed above" (vectorize's lane loop)
    was listed with the cause dropped: it now follows, indented (audit, #138)."""
    src = tmp_path / "Mine.v"
    src.write_text(HEAD.replace("Definition p := GEN [ i < n ] f _[ i ].",
                                "Hypothesis Hn : 0 <= n.\n"
                                "  Definition p := GEN [ i < n ] f _[ 2 * i ].")
                   + "    vectorize i with avx2.\n    done.\n  Qed.\nEnd T.\n")
    assert main(["check", "--no-build", str(src)]) == 1
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if x.startswith("q: FAILED at"))
    assert "not lane-wise (the lane loop left is printed below)" in line
    after = out.split(line + "\n", 1)[1].splitlines()[0]
    assert after.startswith("    vectorize: the body of loop i is not lane-wise: (GEN [ l < 8 ]")
