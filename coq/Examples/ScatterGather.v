(** * Scatter-to-gather (ATL paper, Sec. 8.2, Fig. 11).

    The scattering program walks over the input positions [i] in an
    outermost reduction and accumulates, into every output position [p],
    the product of the input [x[n;c;i]] with the weight at offset [i - p]
    (guarded to the kernel's extent [R]).  The gather form has generations
    over the output [(n, k, p)] outermost, so the outer loop nest is
    parallel, and reduces over [(c, r)] reading [x[n; c; p + r]].

    Reading of the paper.  The formulas extracted from Fig. 11 lose the
    GEN/SUM distinction of the big operators.  From the prose ("an
    outermost summation that cannot be trivially parallelized", "the
    summations have been moved inside the loop nests") and from the shapes
    (the output is [B x K x W]; [c] is contracted), the scatter is
    [SUM i, GEN n, GEN k, SUM c, GEN p] and the gather
    [GEN n, GEN k, GEN p, SUM c, SUM r]; each line of Fig. 11 is then one
    [sum_gen_swap] or [sum_swap] or one guard step, as below.

    Departures from the figure's order, and why.  Fig. 11 first floats
    the guard over the product and then introduces [SUM r [r = i - p]]
    around the whole product.  Introducing the indicator sum around an
    arbitrary body needs higher-order unification for the body, which
    [rw] cannot do ([rw (lemma args)] cannot name loop variables either:
    see the report), so we introduce it at the guarded access to [w]
    ([sum_indicator_get]), and then move [x[n;c;i]] and the guard inside
    ([smul_sum_l], [pg_iverson]).  The guard [i - p < R /\ 0 <= i - p] is
    written in the figure's order and commuted first.

    [check_safe] (Sec. 7.2) then proves every access of the gather in
    bounds, from the shapes of [x] and [w]. *)

From Coq Require Import ZArith List.
Import ListNotations.
From Coq Require Import derive.Derive.
From Verisched Require Import ATLGeneric Rewrites.Safety.
Open Scope Z_scope. Open Scope atl_scope.

Section ScatterGather.
  Context {S : Type} `{ScalarLaws S}.
  (** Batch [B], output channels [K], input channels [C], width [W],
      kernel width [R]; [x : B x C x W], [w : K x C x R]. *)
  Variables (B K C W R : Z).
  Variables (x w : Z -> Z -> Z -> S).
  Hypotheses (Hx : shaped [B; C; W] x) (Hw : shaped [K; C; R] w).

  (** The scatter (Sec. 8.2, first display). *)
  Definition scatter :=
    SUM [ i < W ] GEN [ n < B ] GEN [ k < K ] SUM [ c < C ] GEN [ p < W ]
      x _[ n ] _[ c ] _[ i ] * (|[ (i - p <? R) && (0 <=? i - p) ]| w _[ k ] _[ c ] _[ i - p ]).

  Derive gather SuchThat (scatter = gather) As gather_correct.
  Proof.
    reschedule.
    (* [0 <= i - p /\ i - p < R]: the range form the indicator lemmas use. *)
    rw guard_andb_comm.
    (* Indicator introduction: [[..] w[k;c;i-p] = SUM r [r = i-p] w[k;c;r]]. *)
    rw sum_indicator_get.
    (* Fig. 11 line 3: [SUM r [r = i - p] (x[n;c;i] * w[k;c;r])]. *)
    rw smul_sum_l.
    rw pg_iverson.
    (* Lines 4-7: [c] below [p]; then [i] below [n], [k] and [p]. *)
    rw sum_gen_swap at (sumr 0 C _).
    rw sum_gen_swap.
    rw sum_gen_swap.
    rw sum_gen_swap.
    (* Lines 8-9: [i] below [c] and [r]. *)
    rw sum_swap at (sumr 0 W _).
    rw sum_swap at (sumr 0 W _).
    (* Line 11: [[r = i - p]] as [[i = p + r]]. *)
    rw guard_eqb_sub.
    (* Line 12: the sum over [i] collapses to its one term [i = p + r]. *)
    rw sum_indicator.
    (* Line 13: [0 <= p + r] holds under the loop bounds. *)
    rw guard_and_l.
    check_safe.
    done.
  Qed.

  (** The derived program, as the paper prints it after Fig. 11. *)
  Definition gather_expected :=
    GEN [ n < B ] GEN [ k < K ] GEN [ p < W ] SUM [ c < C ] SUM [ r < R ]
      |[ p + r <? W ]| x _[ n ] _[ c ] _[ p + r ] * w _[ k ] _[ c ] _[ r ].

  Lemma gather_is_expected : gather = gather_expected.
  Proof. same_program. Qed.

  Lemma scatter_gather : scatter = gather_expected.
  Proof. rewrite gather_correct; apply gather_is_expected. Qed.
End ScatterGather.
