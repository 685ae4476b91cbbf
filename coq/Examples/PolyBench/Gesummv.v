(** * PolyBench's gesummv: [y := alpha A x + beta B x], with the suite's constants.

    PolyBench/C computes both products in one sweep over [j] per row: [tmp[i]]
    and [y[i]] accumulate [A[i][j] * x[j]] and [B[i][j] * x[j]] in the same
    loop, and the constants [alpha = 1.5], [beta = 1.2] scale them after it.
    Written from the definition, the two products are two sums.

    [gesummv_fused]: the constants move into the sums ([smul_sum_l]) and the
    two sums over the same range become one ([sumr_tadd] from right to left):
    one pass over [j] reading a row of [A] and of [B] together, as the suite's
    loop does.

    Each row's dot product is split by 16 and [rfactor]ed into 16
    accumulators, as in Atax.v (decision #152). *)

From Coq Require Import ZArith List derive.Derive.
From Verisched Require Import ATLGeneric.
Import ListNotations.
Open Scope Z_scope. Open Scope atl_scope.

Section Gesummv.
  Context {S : Type} `{ScalarLaws S}.
  Variables (n : Z).
  Variables (A B : Z -> Z -> S).
  Variable x : Z -> S.
  Hypotheses (HA : shaped [n; n] A) (HB : shaped [n; n] B) (Hx : shaped [n] x)
             (Hn : 0 <= n).

  Definition gesummv :=
    GEN [ i < n ]
      slit 3 2 * (SUM [ j < n ] A _[i] _[j] * x _[j])
      <+> slit 6 5 * (SUM [ j < n ] B _[i] _[j] * x _[j]).

  Derive gesummv_fused SuchThat (gesummv = gesummv_fused) As gesummv_fused_correct.
  Proof.
    reschedule.
    rw smul_sum_l.
    rw smul_sum_l.
    rw <- sumr_tadd.
    (* the sum took [sumr_tadd]'s binder name, [i]: its own name back *)
    rename_loop i into r. rename_loop i into j. rename_loop r into i.
    split j by 16 into jo ji peel.
    rfactor ji into u as t.
    check_safe.
    done.
  Qed.
End Gesummv.
