(** * SGEMM for AVX2 with [stage] for the packs.

    Examples/Sgemm.v derives [sgemm_avx2] in 48 steps (its Ltac phases
    expanded).  Here the same derivation with the packing phase (two
    [name_buffer]s and two [hoist]s) replaced by Exo's [stage_mem] as
    [stage B at io as Bp; compute_root Bp; stage A at ko as Ap]
    (Rewrites/Stage.v), and the depth blocking by [split k by kc into ko
    kk]; every other step is the original's, one per line: 39 lines
    between [reschedule] and [check_safe].  The result is
    [sgemm_avx2_expected], binder for binder
    ([sgemm_avx2_directive_same]), in the same instruction form
    ([avx2_mul] of [avx2_broadcast] and [avx2_loadu], [avx2_maskstore],
    [in_mem AVX2_REG]).

    Not done: the goal of at most 15 directive lines.  What blocks it:
    the register tile and the lane/instruction steps (guard2_sum_prod,
    guard_comm, guard_out, gen_split_lanes, name_buffer t, hoist t, three
    swap_sum, the edge steps guard_tile_skip / guard_lanes, the
    instruction steps) have no directive that produces exactly this form
    ([vectorize jr with avx2] gives a full-vector part and a masked tail,
    not [sgemm_avx2]'s two 8-lane vectors with a lane-count store), and
    the row blocking applies [gen_tile] to the product part only ([split
    i] would find [C]'s loop [i] first), so [C]'s copy is tiled again at
    the end (4 steps).  A [split] before [split_tadd] (tiling [C] with the
    product) might save those; not tried. *)

From Coq Require Import ZArith List Lia Bool.
Import ListNotations.
From Coq Require Import derive.Derive.
From Verisched Require Import ATL Rewrites.Safety Examples.Sgemm.
From Verisched Require Import Reshape.Defs Reshape.Access Reshape.Commute Reshape.Duals Reshape.Store.
Open Scope Z_scope. Open Scope atl_scope.

Section SgemmDirectives.
  Context {S : Type} `{ScalarLaws S}.
  Variables (M N K : Z) (mcr kc : Z).
  Hypotheses (Hmcr : 0 < mcr) (Hkc : 0 < kc) (HK : 0 <= K).
  Variables (A B C : Z -> Z -> S).
  Hypotheses (HA : shaped [M; K] A) (HB : shaped [K; N] B) (HC : shaped [M; N] C).

  Derive sgemm_avx2_directive SuchThat (sgemm M N K A B C = sgemm_avx2_directive) As sgemm_avx2_directive_correct.
  Proof.
    reschedule.
    rw sadd_tadd.
    split_tadd at (genr 0 N _).
    split_tadd at (genr 0 M _).
    rw (gen_tile (mcr * 6)%Z M) at (genr 0 M (fun i => genr 0 N (fun j => sumr _ _ _))).
    split k by kc into ko kk.
    guard_in at (iverson (_ <? M) _).
    guard_in at (iverson (_ <? M) _).
    swap_sum at (genr 0 N _).
    swap_sum at (genr 0 (mcr * 6) _).
    swap_gen at (genr 0 (mcr * 6) _).
    rw (gen_tile_cols 16 N) at (genr 0 N (fun _ => genr 0 _ _)).
    guard_in at (iverson (_ <? N) _).
    swap_gen at (genr 0 16 _).
    rw (gen_tile_exact mcr 6) at (genr 0 (mcr * 6) _).
    rw guard2_sum_prod.
    rw guard_comm at (iverson (_ <? N) (iverson _ _)).
    guard_out at (genr 0 16 _).
    rw (gen_split_lanes 16 2 8) at (genr 0 16 _).
    name_buffer (sumr 0 kc _) as t.
    hoist t past (genr 0 6 _).
    swap_sum at (genr 0 8 _).
    swap_sum at (genr 0 2 _).
    swap_sum at (genr 0 6 _).
    stage B at io as Bp.          (* B packed per row block ... *)
    compute_root Bp.              (* ... then once, at the root *)
    stage A at ko as Ap.          (* A's mc x kc block per depth block *)
    rw guard_tile_skip at (iverson (_ <? M) _).
    guard_out at (genr 0 6 _).
    guard_out at (atl_let _ _).
    rw guard_lanes at (iverson (_ <? N) _).
    use_instr avx2_maskstore.
    rw avx2_loadu_lane at (_ _[_] _[_] _[_] _[_] _[_]).
    rw avx2_broadcast_lane.
    use_instr avx2_mul.
    set_memory t AVX2_REG.
    rw (gen_tile (mcr * 6)%Z M) at (genr 0 M _).
    rw <- trunc_r_tadd.
    rw <- flatten_tadd.
    merge_tadd at (tadd _ _).
    check_safe.
    done.
  Qed.
  Lemma sgemm_avx2_directive_same : sgemm_avx2_directive = sgemm_avx2_expected M N K mcr kc A B C.
  Proof. unfold sgemm_avx2_expected; cbv beta; same_program. Qed.
End SgemmDirectives.
