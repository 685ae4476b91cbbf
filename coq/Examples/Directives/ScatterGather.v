(** * Scatter-to-gather (ATL paper, Sec. 8.2, Fig. 11), with directives.

    Examples/ScatterGather.v derives [gather] in 13 [rw] steps: four
    guard/indicator steps that introduce the kernel offset [r = i - p] as
    a sum, six loop exchanges ([sum_gen_swap] four times, [sum_swap]
    twice) that bring the generations [n, k, p] outermost and the
    scattered index [i] innermost, and three steps that collapse the sum
    over [i] to its one term [i = p + r].

    Here the six exchanges are one directive, done first: [reorder n k p
    c i] (Halide-semantics Sec. 8.2's swap; Exo's [reorder_loops]) puts
    the outer reduction [i] under the generations and under [c]
    ([Rewrites/Directives.v]: GEN/SUM and SUM/GEN exchanges by
    [gen_sum_swap] / [sum_gen_swap], legal because the nest is
    rectangular; a triangular nest is refused).  The indicator algebra is
    the paper's, step for step (ATL paper Fig. 11, lines 3 and 11-13), as
    [rw] lines; [simpl_guard] drops the guard [0 <= p + r] that the loop
    bounds prove (the original's [guard_and_l]).  One exchange remains a
    [rw]: the sum over [r] is created by [smul_sum_l], which names its
    binder [i] like the enclosing scattered loop, so no directive can
    name it; [sum_swap] at the sum over [W] needs no name.

    9 lines instead of 13; the result is the same program as
    Examples/ScatterGather.v's ([gather_directive_same]), and [check_safe]
    proves every access in bounds. *)

From Coq Require Import ZArith List.
Import ListNotations.
From Coq Require Import derive.Derive.
From Verisched Require Import ATL Rewrites.Safety Examples.ScatterGather.
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
    reorder n k p c i.            (* the six loop exchanges of Fig. 11 *)
    rw guard_andb_comm.           (* 0 <= i - p < R, the indicator's range form *)
    rw sum_indicator_get.         (* w[k;c;i-p] = SUM r [r = i - p] w[k;c;r] *)
    rw smul_sum_l.                (* x[n;c;i] into the sum over r *)
    rw pg_iverson.                (* the guard over the product *)
    rw sum_swap at (sumr 0 W _).  (* i below r *)
    rw guard_eqb_sub.             (* [r = i - p] as [i = p + r] *)
    rw sum_indicator.             (* the sum over i: its one term i = p + r *)
    simpl_guard.                  (* 0 <= p + r holds under the loop bounds *)
    check_safe.
    done.
  Qed.

  Lemma gather_directive_same : gather_directive = gather_expected B K C W R x w.
  Proof. unfold gather_expected; cbv beta; same_program. Qed.

  Lemma gather_directive_gather : gather_directive = gather B K C W R x w.
  Proof. rewrite gather_directive_same; symmetry; apply gather_is_expected. Qed.
End ScatterGatherDirectives.
