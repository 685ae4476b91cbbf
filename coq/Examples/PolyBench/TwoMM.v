(** * PolyBench's 2mm: [D := alpha A B C + beta D].

    PolyBench/C computes [tmp = alpha A B] and then [D = tmp C + beta D], each
    in the loop order i, j, k (reading the right operand down a column);
    [alpha = 1.5], [beta = 1.2] are its constants.  [two_mm_ikj]: the same
    change as Gemm.v in both products: [reorder k1 j1] in the first (its body
    is the sum alone), [fission j2] and [reorder k2 j2] in the second. *)

From Coq Require Import ZArith List derive.Derive.
From Verisched Require Import ATLGeneric.
Import ListNotations.
Open Scope Z_scope. Open Scope atl_scope.

Section TwoMM.
  Context {S : Type} `{ScalarLaws S}.
  Variables (ni nj nk nl : Z).
  Variables (A B C D : Z -> Z -> S).
  Hypotheses (HA : shaped [ni; nk] A) (HB : shaped [nk; nj] B) (HC : shaped [nj; nl] C)
             (HD : shaped [ni; nl] D).

  Definition two_mm :=
    tlet tmp := GEN [ i1 < ni ] GEN [ j1 < nj ] SUM [ k1 < nk ]
                  slit 3 2 * A _[i1] _[k1] * B _[k1] _[j1] in
    GEN [ i2 < ni ] GEN [ j2 < nl ]
      slit 6 5 * D _[i2] _[j2] <+> SUM [ k2 < nj ] tmp _[i2] _[k2] * C _[k2] _[j2].

  Derive two_mm_ikj SuchThat (two_mm = two_mm_ikj) As two_mm_ikj_correct.
  Proof.
    reschedule.
    reorder k1 j1.
    fission j2.
    reorder k2 j2.
    check_safe.
    done.
  Qed.
End TwoMM.
