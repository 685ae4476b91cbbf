(** * PolyBench's gemver: a rank-2 update, then two matrix-vector products.

    PolyBench/C computes [A^ = A + u1 v1^T + u2 v2^T], then
    [x = x + beta A^^T y + z], then [w = w + alpha A^ x], with [alpha = 1.5]
    and [beta = 1.2], and prints [w]: here [A^] and the new [x] are lets and
    [w] is the program's value.  The suite's second loop nest reads [A^] down
    a column ([A^[j][i]] with [j] inner).

    [gemver_rows]: [fission p] splits the new [x] into the old [x] plus [z]
    and the product, and [reorder q p] puts the product's reduction outside,
    so it adds one scaled row of [A^] per step: every pass reads [A^] row by
    row.

    Each row's dot product is split by 16 and [rfactor]ed into 16
    accumulators, as in Atax.v (decision #152). *)

From Coq Require Import ZArith List derive.Derive.
From Verisched Require Import ATLGeneric.
Import ListNotations.
Open Scope Z_scope. Open Scope atl_scope.

Section Gemver.
  Context {S : Type} `{ScalarLaws S}.
  Variables (n : Z).
  Variable A : Z -> Z -> S.
  Variables (u1 v1 u2 v2 w x y z : Z -> S).
  Hypotheses (HA : shaped [n; n] A) (Hu1 : shaped [n] u1) (Hv1 : shaped [n] v1)
             (Hu2 : shaped [n] u2) (Hv2 : shaped [n] v2) (Hw : shaped [n] w)
             (Hx : shaped [n] x) (Hy : shaped [n] y) (Hz : shaped [n] z) (Hn : 0 <= n).

  Definition gemver :=
    tlet Ah := GEN [ r < n ] GEN [ c < n ]
                 A _[r] _[c] + u1 _[r] * v1 _[c] + u2 _[r] * v2 _[c] in
    tlet xn := GEN [ p < n ]
                 x _[p] + z _[p] <+> SUM [ q < n ] slit 6 5 * Ah _[q] _[p] * y _[q] in
    GEN [ i < n ] w _[i] <+> SUM [ j < n ] slit 3 2 * Ah _[i] _[j] * xn _[j].

  Derive gemver_rows SuchThat (gemver = gemver_rows) As gemver_rows_correct.
  Proof.
    reschedule.
    fission p.
    reorder q p.
    split j by 16 into jo ji peel.
    rfactor ji into u as t.
    check_safe.
    done.
  Qed.
End Gemver.
