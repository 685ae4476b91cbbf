(** * PolyBench's 3mm: [G := (A B) (C D)].

    PolyBench/C computes [E = A B], [F = C D] and [G = E F], each in the loop
    order i, j, k.  Here [E] and [F] are lets, and [three_mm_ikj] puts each
    product's reduction outside its [j] loop ([reorder k j] three times, the
    loops named apart), so every inner loop runs along a row of the right
    operand and of the result. *)

From Coq Require Import ZArith List derive.Derive.
From Verisched Require Import ATLGeneric.
Import ListNotations.
Open Scope Z_scope. Open Scope atl_scope.

Section ThreeMM.
  Context {S : Type} `{ScalarLaws S}.
  Variables (ni nj nk nl nm : Z).
  Variables (A B C D : Z -> Z -> S).
  Hypotheses (HA : shaped [ni; nk] A) (HB : shaped [nk; nj] B) (HC : shaped [nj; nm] C)
             (HD : shaped [nm; nl] D).

  Definition three_mm :=
    tlet E := GEN [ i1 < ni ] GEN [ j1 < nj ] SUM [ k1 < nk ] A _[i1] _[k1] * B _[k1] _[j1] in
    tlet F := GEN [ i2 < nj ] GEN [ j2 < nl ] SUM [ k2 < nm ] C _[i2] _[k2] * D _[k2] _[j2] in
    GEN [ i3 < ni ] GEN [ j3 < nl ] SUM [ k3 < nj ] E _[i3] _[k3] * F _[k3] _[j3].

  Derive three_mm_ikj SuchThat (three_mm = three_mm_ikj) As three_mm_ikj_correct.
  Proof.
    reschedule.
    reorder k1 j1.
    reorder k2 j2.
    reorder k3 j3.
    check_safe.
    done.
  Qed.
End ThreeMM.
