"""What `compile` and `run` say about a kernel's calls beyond its hypotheses (audit,
decision #138): every size is at least 1 at a call even where the proof allows 0 (a
size of 0 is compiled in, and a call with 0 says how), and an integer element type
floors a fractional constant as Coq's Z division does (`slit 1 4` is 0 in int32),
which `compile` and `run` now note."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from verisched.cli import main
from verisched.pybridge.literals import floored_note
from verisched.pybridge.terms import Lit, SBin, Var

pytestmark = pytest.mark.skipif(shutil.which("coqtop") is None, reason="needs coqtop")

SOURCE = """
From Coq Require Import ZArith List derive.Derive.
From Verisched Require Import ATL.
Import ListNotations.
Open Scope Z_scope. Open Scope atl_scope.
Section Q.
  Context {S : Type} `{ScalarLaws S}.
  Variables (n : Z) (u : Z -> S).
  Hypothesis Hu : shaped [n] u.
  Hypothesis Hn : 0 <= n.
  Definition q := GEN [ i < n ] slit 1 4 * u _[ i ] + slit 2 1 * u _[ i ].
  Derive q_d SuchThat (q = q_d) As q_d_ok.
  Proof. reschedule. check_safe. done. Qed.
End Q.
"""


def test_floored_note_names_only_fractions_in_integer_types() -> None:
    e = SBin("+", SBin("*", Lit(1, 4), Var("x")), SBin("*", Lit(6, 3), Lit(7, 2)))
    assert floored_note(e, "int32") == ("note: in int32 a constant is floored, as Coq's Z "
                                        "division does (the proof's semantics): 1/4 is 0, "
                                        "7/2 is 3")
    assert floored_note(e, np.int32) is not None
    assert floored_note(e, "float32") is None and floored_note(e, None) is None
    assert floored_note(SBin("*", Lit(6, 3), Var("x")), "int32") is None


def test_compile_and_run_say_the_floor_and_the_size_rule(tmp_path, capsys) -> None:
    v = tmp_path / "Q.v"
    v.write_text(SOURCE)
    assert main(["compile", str(v), "--derivation", "q_d", "--target", "c", "--dtype",
                 "int32", "-o", str(tmp_path / "q.c")]) == 0
    out = capsys.readouterr().out
    assert "sizes: each at least 1 at a call (the entry check)" in out
    assert "note: in int32 a constant is floored" in out and "1/4 is 0" in out
    assert main(["run", str(v), "--derivation", "q_d", "--target", "c", "--dtype", "int32",
                 "--size", "n=4", "--check"]) == 0
    out = capsys.readouterr().out
    assert "1/4 is 0" in out and "on the original program: OK" in out
    assert main(["run", str(v), "--derivation", "q_d", "--target", "c", "--size", "n=4"]) == 0
    assert "floored" not in capsys.readouterr().out   # float32: rounded, not floored
    # A size of 0: refused at the call, saying how to get it.
    assert main(["run", str(v), "--derivation", "q_d", "--target", "c", "--size", "n=0"]) != 0
    err = capsys.readouterr().err
    assert "n = 0 must be positive" in err and "--fix n=0" in err
