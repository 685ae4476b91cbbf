(** * Scatter-to-gather (ATL paper, Sec. 8.2, Fig. 11), with directives.

    Examples/ScatterGather.v derives [gather] in 13 [rw] steps: four
    guard/indicator steps that introduce the kernel offset [r = i - p] as
    a sum around the product, six loop exchanges ([sum_gen_swap] four
    times, [sum_swap] twice) that bring the generations [n, k, p]
    outermost and the scattered index [i] innermost, and three steps that
    collapse the sum over [i] to its one term [i = p + r].

    Here it is 5 lines.  The six exchanges are one directive, [reorder n
    k p c r i] (Halide-semantics Sec. 8.2's swap; Exo's
    [reorder_loops]): GEN/SUM and SUM/GEN exchanges by [gen_sum_swap] /
    [sum_gen_swap], SUM/SUM by [sum_swap], legal because the nest is
    rectangular (a triangular one is refused, naming the two loops).  The
    indicator algebra is the paper's, one [rw] per line of the figure:
    [smul_sum_indicator_get] is Fig. 11's line 3 (the indicator sum
    introduced around the product, for a factor times a guarded access:
    first-order, and its loop is named [r]), and [sum_indicator_sub] its
    lines 11-12 (the sum over [i] collapsed where [r = i - p]).  The
    guard is first commuted into the range form ([guard_andb_comm]), and
    [simpl_guard] drops [0 <= p + r], which the loop bounds prove (the
    original's [guard_and_l]).

    The result is the same program as Examples/ScatterGather.v's
    ([gather_directive_same], [same_program]), with the paper's loop
    names [n, k, p, c, r], and [check_safe] proves every access in
    bounds. *)

From Coq Require Import ZArith List.
Import ListNotations.
From Coq Require Import derive.Derive.
From Verisched Require Import ATLGeneric Rewrites.Safety Examples.ScatterGather.
Open Scope Z_scope. Open Scope atl_scope.

Section ScatterGatherDirectives.
  Context {S : Type} `{ScalarLaws S}.
  Variables (B K C W R : Z).
  Variables (x w : Z -> Z -> Z -> S).
  Hypotheses (Hx : shaped [B; C; W] x) (Hw : shaped [K; C; R] w).

  Derive gather_directive SuchThat (scatter B K C W R x w = gather_directive)
    As gather_directive_correct.
  Proof.
    reschedule.
    rw guard_andb_comm.            (* 0 <= i - p < R, the indicator's range form *)
    rw smul_sum_indicator_get.     (* x[i] * w[i-p] = SUM r [r = i - p] x[i] * w[r] *)
    reorder n k p c r i.           (* Fig. 11's six loop exchanges *)
    rw sum_indicator_sub.          (* the sum over i: its one term i = p + r *)
    simpl_guard.                   (* 0 <= p + r holds under the loop bounds *)
    check_safe.
    done.
  Qed.

  Lemma gather_directive_same : gather_directive = gather_expected B K C W R x w.
  Proof. unfold gather_expected; cbv beta; same_program. Qed.

  Lemma gather_directive_gather : gather_directive = gather B K C W R x w.
  Proof. rewrite gather_directive_same; symmetry; apply gather_is_expected. Qed.
End ScatterGatherDirectives.
