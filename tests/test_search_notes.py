"""What `verisched search` says about the hypotheses it adds (audit, decision #138): an
input with no `shaped` hypothesis gets its shape from the loops that index it, stated
in the found derivation, and the run now says so in a note; loops of two extents
indexing one dimension are named in Coq's notation (no Python reprs) with the fix."""

from __future__ import annotations

from pathlib import Path

from conftest import requires_coq

from verisched.cli import main

SOURCE = """
From Coq Require Import ZArith List.
From Verisched Require Import ATL.
Import ListNotations.
Open Scope Z_scope. Open Scope atl_scope.
Section V.
  Context {S : Type} `{ScalarLaws S}.
  Variables (n m : Z) (A : Z -> Z -> S) (x : Z -> S).
  Hypothesis HA : shaped [n; m] A.
  Definition mv := GEN [ i < n ] SUM [ j < m ] A _[ i ] _[ j ] * x _[ j ].
  Definition bad := GEN [ i < n ] SUM [ j < m ] A _[ i ] _[ j ] * x _[ j ] + x _[ i ].
End V.
"""


@requires_coq
def test_inferred_shapes_are_noted_and_conflicts_named_in_coq(tmp_path: Path, capsys) -> None:
    v = tmp_path / "inf.v"
    v.write_text(SOURCE)
    assert main(["search", str(v), "--program", "mv", "--out", str(tmp_path / "o"),
                 "-q"]) == 0
    out = capsys.readouterr().out
    assert ("note: input x has no shape hypothesis in the file: its shape [m], read off the "
            "loops that index it, is stated in the found derivation (Hypothesis Hshape_x : "
            "shaped [m] x.)") in out
    assert "note: input A" not in out          # stated in the file
    found = (tmp_path / "o" / "mv_found.v").read_text()
    assert "shaped [m] x" in found
    assert main(["search", str(v), "--program", "bad", "--out", str(tmp_path / "p"),
                 "-q"]) != 0
    err = capsys.readouterr().err
    assert "input x: dimension 1 is indexed by loops of extents m and n" in err
    assert "IVar" not in err and "shaped [...] x" in err


@requires_coq
def test_no_idiom_is_said_plainly(tmp_path: Path, capsys) -> None:
    v = tmp_path / "none.v"
    v.write_text(SOURCE.replace("  Definition bad", "  Definition sq := GEN [ i < m ] "
                                "x _[ i ] * x _[ i ].\n  Definition bad"))
    assert main(["search", str(v), "--program", "sq", "--out", str(tmp_path / "o"),
                 "-q"]) == 0
    out = capsys.readouterr().out
    assert ("idioms: none: no blas idiom was found in sq; the program found is the original"
            in out)
