(** * The fused and two-stage blurs of Examples/Blur.v, with directives.

    Blur.v derives [blur_fused] (total fusion, border peeled) in nine
    steps after [reschedule] and [blur_two_stage] (Fig. 8's breadth-first
    buffer) in eleven.  From [blur_bc] (BlurTiled.v: the algorithm with
    the input's boundary condition, proved equal to Blur.v's [blur] by
    [blur_bc_eq], which stands for Blur.v's first four steps):

      blur_fused:      inline blur_xg.  peel y x.                  (2 lines)
      blur_two_stage:  stage_rows (fun r c => blur_xg n m v c r) at y into buf.
                       inline blur_xg.  peel y x.                  (3 lines)

    not counting [reschedule], [check_safe], [done].  [peel y x] peels the
    first and last row, then the first and last column of the middle rows
    in place, and drops the guards the new bounds decide (Blur.v's
    [gen_peel], [gen_peel_inner], [simpl_guard]); in the two-stage program
    the first loop named [y] is the buffer's ([stage_rows] names the
    buffer's loops after the consumer's), so the buffer is peeled and its
    first and last rows (image rows -1 and n) become [tzero].  Both
    results are Blur.v's programs ([same_program] against
    [blur_fused_expected], [blur_two_stage_expected]). *)

From Coq Require Import ZArith List Lia derive.Derive.
From Verisched Require Import ATLGeneric Examples.Blur Examples.Directives.BlurTiled.
Import ListNotations.
Open Scope Z_scope. Open Scope atl_scope.

Section BlurFusedDir.
  Context {S : Type} `{ScalarLaws S}.
  Variables (n m : Z) (v : Z -> Z -> S).
  Hypothesis Hv : shaped [n; m] v.
  Hypothesis Hn : 2 <= n.
  Hypothesis Hm : 2 <= m.

  Derive blur_fused_dir SuchThat (blur_bc n m v = blur_fused_dir) As blur_fused_dir_correct.
  Proof.
    reschedule.
    inline blur_xg.
    peel y x.
    check_safe.
    done.
  Qed.

  Lemma blur_fused_dir_same : blur_fused_dir = blur_fused_expected n m v.
  Proof. unfold blur_fused_expected. same_program. Qed.

  Lemma blur_fused_dir_blur : blur n m v = blur_fused_dir.
  Proof. rewrite (blur_bc_eq n m v Hv); exact blur_fused_dir_correct. Qed.

  Derive blur_two_stage_dir SuchThat (blur_bc n m v = blur_two_stage_dir) As blur_two_stage_dir_correct.
  Proof.
    reschedule.
    stage_rows (fun r c => blur_xg n m v c r) at y into buf.
    inline blur_xg.
    peel y x.
    check_safe.
    done.
  Qed.

  Lemma blur_two_stage_dir_same : blur_two_stage_dir = blur_two_stage_expected n m v.
  Proof. unfold blur_two_stage_expected. same_program. Qed.

  Lemma blur_two_stage_dir_blur : blur n m v = blur_two_stage_dir.
  Proof. rewrite (blur_bc_eq n m v Hv); exact blur_two_stage_dir_correct. Qed.
End BlurFusedDir.
