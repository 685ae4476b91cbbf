(** * Fig. 9's tiled blur of Examples/Blur.v, scheduled with directives.

    Examples/Blur.v derives [blur_tiled] (ATL paper Sec. 8.1, Fig. 9) in
    sixteen steps after [reschedule]: [inline blur_y], three
    [rw blur_x_guard], [inline blur_xg], two peeling lemmas, [simpl_guard],
    [gen_tile2], two [gen_concat], [guard_elim], [guard_and_l],
    [stage_rows3], [ll_transpose], [simpl_index].  Here the same program
    comes out of five directive lines (Rewrites/Directives.v):

      inline blur_xg.                                  (1)
      peel y x into yc xc.                             (2) border peeled
      tile yc xc by kn km into yo xo yi xi partition.  (3) guard-free full tiles
      stage_rows (fun r c => v _[r] _[c-1] <+> ..) at yi into buf.
                                                       (4) (kn+2) x km buffer
      simpl_index.                                     (5) Fig. 9's indices

    not counting [reschedule], [check_safe] and [done].  ([check_safe]
    used to need two asserts, [0 <= (n - 2) / kn] and its column twin, for
    the partial tiles' lower bounds; [zarith] (Tensor/Arith.v) now adds
    such quotient signs itself.)

    The starting program.  Halide writes a blur with a boundary condition
    on its input ([BoundaryConditions::constant_exterior]); here that is
    [blur_bc], the algorithm with [blur_x]'s out-of-image reads guarded
    ([blur_xg] of Blur.v).  [blur_bc_eq] proves it equal to Blur.v's
    [blur] under the input's shape, which is Blur.v's four steps
    [inline blur_y] + three [rw blur_x_guard], done once as a lemma rather
    than as scheduling.  So [blur_tiled_dir_correct] composed with
    [blur_bc_eq] is the same statement as Blur.v's [blur_tiled_correct],
    and [blur_tiled_dir_same] shows the derived program is Blur.v's
    [blur_tiled_expected] (hence [blur_tiled], [blur_tiled_is]) up to
    binder names: the directives name the buffer's loops [yi], [xi] after
    the tile loops, where the lemma [stage_rows3] said [y], [x]. *)

From Coq Require Import ZArith List Lia derive.Derive.
From Verisched Require Import ATLGeneric Examples.Blur.
Import ListNotations.
Open Scope Z_scope. Open Scope atl_scope.

Section BlurTiledDir.
  Context {S : Type} `{ScalarLaws S}.
  Variables (n m kn km : Z) (v : Z -> Z -> S).
  Hypothesis Hv : shaped [n; m] v.
  Hypothesis Hn : 2 <= n.
  Hypothesis Hm : 2 <= m.
  Hypothesis Hkn : 0 < kn.
  Hypothesis Hkm : 0 < km.

  (** The blur with its input's boundary condition (zero outside). *)
  Definition blur_bc :=
    GEN [ y < n ] GEN [ x < m ]
      blur_xg n m v x (y - 1) <+> blur_xg n m v x y <+> blur_xg n m v x (y + 1).

  Lemma blur_bc_eq : blur n m v = blur_bc.
  Proof.
    unfold blur, blur_bc; apply genr_ext_ctx; intros y Hy; apply genr_ext_ctx; intros x Hx.
    unfold blur_y; rewrite !(blur_x_guard n m v Hv) by lia; reflexivity.
  Qed.

  Derive blur_tiled_dir SuchThat (blur_bc = blur_tiled_dir) As blur_tiled_dir_correct.
  Proof.
    reschedule.
    inline blur_xg.
    peel y x into yc xc.
    tile yc xc by kn km into yo xo yi xi partition.
    stage_rows (fun r c => v _[ r ] _[ c - 1 ] <+> v _[ r ] _[ c ] <+> v _[ r ] _[ c + 1 ]) at yi into buf.
    simpl_index.
    check_safe.
    done.
  Qed.

  Lemma blur_tiled_dir_same : blur_tiled_dir = blur_tiled_expected n m v kn km.
  Proof. unfold blur_tiled_expected, blur_tiled_interior, blur9. same_program. Qed.

  (** The derivation proves what Blur.v's does. *)
  Lemma blur_tiled_dir_blur : blur n m v = blur_tiled_dir.
  Proof. rewrite blur_bc_eq; exact blur_tiled_dir_correct. Qed.
End BlurTiledDir.
