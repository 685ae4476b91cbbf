(** * The quantized matrix-multiply layer on Gemmini (issue 6).

    The fixed-point matmul with fused ReLU that the Exo thesis schedules
    for Gemmini (Sec. 7.1, Fig. 7-4: "a fixed-point matrix multiply neural
    network layer (with fused ReLU activation)"):
    [C = act(sat8(round(scale * (D + A B))))], [A : M x K] and [B : K x N]
    int8, [D : M x N] an int32 bias, the product accumulated in int32, and
    [gemmini_acc_out sm se act] (Targets/Gemmini.v) the output path of the
    accelerator: scale by the float [sm * 2^se], round half to even,
    saturate to int8, ReLU if [act].

    The derivation maps it onto the instructions of Targets/Gemmini.v in
    the way Exo's schedule does (thesis Sec. 2.2-2.4): the output is tiled
    in 16 x 16 blocks ([gen_tile], as in Matmul.v), the reduction in
    blocks of 16 ([sum_tile]); each output block is accumulated in an
    accumulator tile [c] (initialised with the bias block), each
    [16 x 16] block of [A] and of [B] is staged in a scratchpad tile [a],
    [b], and the moves, the 16 x 16 x 16 products and the output path are
    replaced by [gemmini_mvin_acc], [gemmini_mvin], [gemmini_matmul] and
    [gemmini_mvout] ([use_instr]: Coq checks each replaced subterm is the
    instruction's specification).  [M], [N], [K] are arbitrary: the edge
    blocks carry the guards of the tiling, which are exactly the clipping
    of the moves' windows ([r + i <? R]); the lowering turns them into the
    rows and columns of partial moves.

    Reading the derived program ([qmatmul_gemmini_expected]): for each
    output block [(io, jo)], [c] := the bias block, plus, for each [ko],
    the product of the staged blocks [a] (rows [io], columns [ko] of [A])
    and [b] (rows [ko], columns [jo] of [B]); then [c] goes out through
    the output path.  The two [transpose]s only say where each block is
    stored in the row-major result (no data movement).

    [qmatmul_nobias] is the same layer without a bias: the accumulator
    starts from zero (the lowering zero-fills it, e.g. with an [mvin] from
    DRAM address 0, which the simulator loads as zeros).

    Two more schedules of [qmatmul] reuse staged blocks (Exo's Gemmini
    schedules do the same, thesis Sec. 7.1): [qmatmul_gemmini_panel] stages
    a row panel of [A] once per row of output blocks ([K <= 8192]);
    [qmatmul_gemmini_staged] also stages all of [B] once ([K <= 256],
    [N <= 1008]), so every block of [A] and [B] is moved in exactly once.
    [gemmini_check_fit] proves from these hypotheses that the buffers fit
    in the scratchpad.

    Compile time: about 8 s of CPU for the four derivations (the blocking
    they share is derived once: [qmatmul_blocked_sig] below). *)

From Coq Require Import ZArith List.
Import ListNotations.
From Coq Require Import derive.Derive.
From Verisched Require Import ATLGeneric Rewrites.Safety Reshape.Defs Reshape.Commute Reshape.Duals.
From Verisched Require Import Targets.Gemmini.
Open Scope Z_scope. Open Scope atl_scope.

(** The blocking and staging shared by the matmul-layer schedules (per-tile,
    panel, staged): 16 x 16 output blocks, the accumulator block bound as
    [c], 16-deep k blocks, and the A and B blocks staged as [a] and [b].
    The panel and staged schedules continue from here. *)
Ltac qmatmul_blocks M N K A B D :=
  (* 16 x 16 output blocks: tile i, move the row guard in, exchange the
     row-in-block loop with j (a transpose), tile j likewise. *)
  rw (gen_tile 16 M);
  rw <- guard_gen at (iverson (_ <? M) _);
  rw <- transpose_gen at (genr 0 16 _);
  rw (gen_tile 16 N);
  rw <- guard_gen at (iverson (_ <? N) _);
  rw <- transpose_gen at (genr 0 16 _);
  rw guard_comm at (iverson (_ <? N) _);
  rw guard_merge;
  (* The accumulator block: bind what enters the output path, keep the
     edge guard on it, lift it out of the block's two loops. *)
  name_buffer (D _[ _ ] _[ _ ] <+> _) as c;
  rw ll_guard_dup;
  rw let_gen_lift0 at (genr 0 16 _);
  rw let_gen_lift0 at (genr 0 16 _);
  (* Bias block and product block separately. *)
  rw tadd_guard;
  rw <- tadd_gen;
  rw <- tadd_gen;
  (* Blocks of 16 along k; the k-block loop outside the block's loops. *)
  rw (sum_tile K 16);
  rw <- guard_sum at (iverson (_ && _) (sumr 0 (cdiv K 16) _));
  rw <- guard_sum at (iverson (_ && _) (sumr 0 16 _));
  rw guard_merge;
  rw gen_sum_swap at (genr 0 16 (fun _ => sumr 0 (cdiv K 16) _));
  rw gen_sum_swap at (genr 0 16 (fun _ => sumr 0 (cdiv K 16) _));
  (* Each operand gets its own edge guards (the clipping of its move). *)
  rw guard_mul_split;
  (* Stage the A block: out of kk, past jj, out of ii. *)
  name_buffer (|[ _ ]| A _[ _ ] _[ _ ]) as a;
  rw let_sum_lift0;
  rw ll_gen;
  rw let_gen_lift0;
  (* Stage the B block: jj inside kk, out of jj and kk, past ii, and jj
     back outside kk. *)
  rw gen_sum_swap at (genr 0 16 (fun _ => sumr 0 16 _));
  name_buffer (|[ _ ]| B _[ _ ] _[ _ ]) as b;
  rw let_gen_lift0;
  rw let_sum_lift0 at (sumr 0 16 _);
  rw ll_gen at (genr 0 16 _);
  rw sum_gen_swap at (sumr 0 16 _).

(** Build time (issue 16): the blocking is derived once, here, and the
    schedules of [qmatmul] below start from its result
    ([qmatmul_blocks_ok]) instead of re-running [qmatmul_blocks] (about
    1.3 s of tactics and 0.6 s of kernel check each).  The program is taken
    from this derivation itself, binder names included, not retyped.  It is
    a top-level definition (its arguments those of the sections below that
    the blocking uses: the schedules' correctness lemmas keep their
    hypotheses) so that closing a section does not re-check its proof. *)
Definition qmatmul_blocked_sig (M N K : Z) (HK : 0 <= K) (A B D : Z -> Z -> gint)
    (sm se : Z) (act : bool) :
  { p : Z -> Z -> gint | (GEN [ i < M ] GEN [ j < N ]
          gemmini_acc_out sm se act
            (D _[ i ] _[ j ] <+> SUM [ k < K ] A _[ i ] _[ k ] * B _[ k ] _[ j ])) = p }.
Proof. eexists. qmatmul_blocks M N K A B D. done. Defined.

Section GemminiMatmul.
  Variables (M N K : Z).
  Hypotheses (HM : 0 <= M) (HN : 0 <= N) (HK : 0 <= K).
  (** int8 operands, int32 bias (as integers; Targets/Gemmini.v, "Data"). *)
  Variables (A B D : Z -> Z -> gint).
  Hypotheses (HA : shaped [M; K] A) (HB : shaped [K; N] B) (HD : shaped [M; N] D).
  (** The output scale [sm * 2^se] and the ReLU flag. *)
  Variables (sm se : Z) (act : bool).

  Definition qmatmul :=
    GEN [ i < M ] GEN [ j < N ]
      gemmini_acc_out sm se act
        (D _[ i ] _[ j ] <+> SUM [ k < K ] A _[ i ] _[ k ] * B _[ k ] _[ j ]).

  (** The blocked form, derived once ([qmatmul_blocked_sig] above) and
      stated here as a lemma: the three schedules of [qmatmul] start with
      [rw qmatmul_blocks_ok], one step as [qmatmul_blocks] was. *)
  Lemma qmatmul_blocks_ok :
    ltac:(let q := eval cbv delta [qmatmul] beta in qmatmul in
          let s := eval red in (qmatmul_blocked_sig M N K HK A B D sm se act) in
          lazymatch s with exist _ ?p _ => exact (q = p) end).
  Proof. exact (proj2_sig (qmatmul_blocked_sig M N K HK A B D sm se act)). Qed.

  Derive qmatmul_gemmini SuchThat (qmatmul = qmatmul_gemmini) As qmatmul_gemmini_correct.
  Proof.
    reschedule.
    rw qmatmul_blocks_ok.
    (* Instructions (the bias move's specification is also [gemmini_mvin]'s:
       the DRAM argument given picks the site). *)
    use_instr (gemmini_mvin_acc D).
    use_instr (gemmini_mvin A).
    use_instr (gemmini_mvin B).
    use_instr gemmini_matmul.
    use_instr gemmini_mvout.
    (* Memories. *)
    rename_buffer a into c.
    rename_buffer x into b.
    rename_loop io0 into jo.
    rename_loop j into ko.
    set_memory c GEMMINI_ACC.
    set_memory a GEMMINI_SPAD.
    set_memory b GEMMINI_SPAD.
    gemmini_check_fit.
    check_safe.
    done.
  Qed.

  Definition qmatmul_gemmini_expected :=
    trunc_r M (flatten (cdiv M 16) 16 (GEN [ io < cdiv M 16 ]
      transpose N 16 (trunc_r N (flatten (cdiv N 16) 16 (GEN [ jo < cdiv N 16 ]
        transpose 16 16
          (tlet c := in_mem GEMMINI_ACC
             (gemmini_mvin_acc D (io * 16) (jo * 16) M N <+>
              SUM [ ko < cdiv K 16 ]
                tlet a := in_mem GEMMINI_SPAD (gemmini_mvin A (io * 16) (ko * 16) M K) in
                tlet b := in_mem GEMMINI_SPAD (gemmini_mvin B (ko * 16) (jo * 16) K N) in
                gemmini_matmul a b) in
           gemmini_mvout sm se act c (io * 16) (jo * 16) M N)))))).

  Lemma qmatmul_gemmini_is_expected : qmatmul_gemmini = qmatmul_gemmini_expected.
  Proof. same_program. Qed.

  Lemma qmatmul_gemmini_spec : qmatmul = qmatmul_gemmini_expected.
  Proof. rewrite qmatmul_gemmini_correct; apply qmatmul_gemmini_is_expected. Qed.

  (** ** Without a bias *)

  Definition qmatmul_nobias :=
    GEN [ i < M ] GEN [ j < N ]
      gemmini_acc_out sm se act (SUM [ k < K ] A _[ i ] _[ k ] * B _[ k ] _[ j ]).

  Derive qmatmul_nobias_gemmini SuchThat (qmatmul_nobias = qmatmul_nobias_gemmini)
    As qmatmul_nobias_gemmini_correct.
  Proof.
    reschedule.
    rw (gen_tile 16 M).
    rw <- guard_gen at (iverson (_ <? M) _).
    rw <- transpose_gen at (genr 0 16 _).
    rw (gen_tile 16 N).
    rw <- guard_gen at (iverson (_ <? N) _).
    rw <- transpose_gen at (genr 0 16 _).
    rw guard_comm at (iverson (_ <? N) _).
    rw guard_merge.
    name_buffer (sumr _ _ _) as c.
    rw ll_guard_dup.
    rw let_gen_lift0 at (genr 0 16 _).
    rw let_gen_lift0 at (genr 0 16 _).
    rw (sum_tile K 16).
    rw <- guard_sum at (iverson (_ && _) (sumr 0 (cdiv K 16) _)).
    rw <- guard_sum at (iverson (_ && _) (sumr 0 16 _)).
    rw guard_merge.
    rw gen_sum_swap at (genr 0 16 (fun _ => sumr 0 (cdiv K 16) _)).
    rw gen_sum_swap at (genr 0 16 (fun _ => sumr 0 (cdiv K 16) _)).
    rw guard_mul_split.
    name_buffer (|[ _ ]| A _[ _ ] _[ _ ]) as a.
    rw let_sum_lift0.
    rw ll_gen.
    rw let_gen_lift0.
    rw gen_sum_swap at (genr 0 16 (fun _ => sumr 0 16 _)).
    name_buffer (|[ _ ]| B _[ _ ] _[ _ ]) as b.
    rw let_gen_lift0.
    rw let_sum_lift0 at (sumr 0 16 _).
    rw ll_gen at (genr 0 16 _).
    rw sum_gen_swap at (sumr 0 16 _).
    use_instr (gemmini_mvin A).
    use_instr (gemmini_mvin B).
    use_instr gemmini_matmul.
    use_instr gemmini_mvout.
    rename_buffer a into c.
    rename_buffer x into b.
    rename_loop io0 into jo.
    rename_loop j into ko.
    set_memory c GEMMINI_ACC.
    set_memory a GEMMINI_SPAD.
    set_memory b GEMMINI_SPAD.
    gemmini_check_fit.
    check_safe.
    done.
  Qed.

  Definition qmatmul_nobias_gemmini_expected :=
    trunc_r M (flatten (cdiv M 16) 16 (GEN [ io < cdiv M 16 ]
      transpose N 16 (trunc_r N (flatten (cdiv N 16) 16 (GEN [ jo < cdiv N 16 ]
        transpose 16 16
          (tlet c := in_mem GEMMINI_ACC
             (SUM [ ko < cdiv K 16 ]
                tlet a := in_mem GEMMINI_SPAD (gemmini_mvin A (io * 16) (ko * 16) M K) in
                tlet b := in_mem GEMMINI_SPAD (gemmini_mvin B (ko * 16) (jo * 16) K N) in
                gemmini_matmul a b) in
           gemmini_mvout sm se act c (io * 16) (jo * 16) M N)))))).

  Lemma qmatmul_nobias_gemmini_is_expected :
    qmatmul_nobias_gemmini = qmatmul_nobias_gemmini_expected.
  Proof. same_program. Qed.

  (** ** As Gemmini's hardware loop (Targets/GemminiLoop.v, issue 16)

      The per-tile schedules are, term for term, the specifications of
      [gemmini_loop_ws] and [gemmini_loop_ws_bias]: the whole layer is one
      loop instruction (which the lowering issues as hardware loops over
      blocks of output tiles). *)
  Lemma qmatmul_nobias_loop_ws : qmatmul_nobias = gemmini_loop_ws sm se act A B M N K.
  Proof.
    rewrite qmatmul_nobias_gemmini_correct, qmatmul_nobias_gemmini_is_expected.
    reflexivity.
  Qed.

  Lemma qmatmul_loop_ws : qmatmul = gemmini_loop_ws_bias sm se act A B D M N K.
  Proof. rewrite qmatmul_gemmini_spec. reflexivity. Qed.

  (** The same as a derivation, for the bridge and the lowering: one step,
      the layer rewritten into the loop instruction by the lemma above. *)
  Lemma qmatmul_nobias_is_loop_ws :
    (GEN [ i < M ] GEN [ j < N ]
       gemmini_acc_out sm se act (SUM [ k < K ] A _[ i ] _[ k ] * B _[ k ] _[ j ]))
    = gemmini_loop_ws sm se act A B M N K.
  Proof. exact qmatmul_nobias_loop_ws. Qed.

  Derive qmatmul_nobias_loop SuchThat (qmatmul_nobias = qmatmul_nobias_loop)
    As qmatmul_nobias_loop_correct.
  Proof.
    reschedule.
    rw qmatmul_nobias_is_loop_ws.
    check_safe.
    done.
  Qed.
End GemminiMatmul.

(** ** Reusing the A row panel

    The schedule above moves every [A] block into the scratchpad once per
    output block, i.e. [cdiv N 16] times.  Here the [A] blocks of a row of
    output blocks ([cdiv K 16] of them, the row panel) are staged once per
    [io] and read by every column block [jo]: the panel's let is lifted
    out of the [ko] reduction, out of the accumulator's value
    ([let_let]), and out of the [jo] loop and its reshapes (it does not
    depend on [jo]).  Scratchpad use grows to [cdiv K 16 * 16 + 16] rows,
    so the derivation assumes [K <= 8192] and [gemmini_check_fit] proves
    the fit from it.  The [mvin]s of [A] drop from
    [cdiv M 16 * cdiv N 16 * cdiv K 16] to [cdiv M 16 * cdiv K 16]. *)

Lemma let_let {X Y W} (e1 : X) (f : X -> Y) (g : Y -> W) :
  atl_let (atl_let e1 f) g = atl_let e1 (fun x => atl_let (f x) g).
Proof. reflexivity. Qed.

Section GemminiMatmulPanel.
  Variables (M N K : Z).
  Hypotheses (HM : 0 <= M) (HN : 0 <= N) (HK : 0 <= K).
  Hypothesis (HKcap : K <= 8192).
  Variables (A B D : Z -> Z -> gint).
  Hypotheses (HA : shaped [M; K] A) (HB : shaped [K; N] B) (HD : shaped [M; N] D).
  Variables (sm se : Z) (act : bool).

  Derive qmatmul_gemmini_panel SuchThat (qmatmul M N K A B D sm se act = qmatmul_gemmini_panel)
    As qmatmul_gemmini_panel_correct.
  Proof.
    reschedule.
    (* As in [qmatmul_gemmini] up to the staging of the blocks. *)
    rw qmatmul_blocks_ok.
    (* The A row panel: out of ko, out of the accumulator's value, out of
       the column-block loop and its reshapes. *)
    rw let_sum_lift0 at (sumr 0 (cdiv K 16) _).
    rw ll_tadd_r.
    rw let_let.
    rw ll_transpose at (transpose 16 16 _).
    rw ll_gen at (genr 0 (cdiv N 16) _).
    rw ll_flatten at (flatten (cdiv N 16) 16 _).
    rw ll_trunc_r at (trunc_r N _).
    rw ll_transpose at (transpose N 16 _).
    use_instr (gemmini_mvin_acc D).
    use_instr (gemmini_mvin A).
    use_instr (gemmini_mvin B).
    use_instr gemmini_matmul.
    use_instr gemmini_mvout.
    rename_buffer a into c.
    rename_buffer x into a.
    rename_buffer x into b.
    rename_loop i into ko.
    rename_loop i into jo.
    rename_loop i0 into ko.
    set_memory a GEMMINI_SPAD.
    set_memory c GEMMINI_ACC.
    set_memory b GEMMINI_SPAD.
    gemmini_check_fit.
    check_safe.
    done.
  Qed.

  Definition qmatmul_gemmini_panel_expected :=
    trunc_r M (flatten (cdiv M 16) 16 (GEN [ io < cdiv M 16 ]
      tlet a := in_mem GEMMINI_SPAD
        (GEN [ ko < cdiv K 16 ] gemmini_mvin A (io * 16) (ko * 16) M K) in
      transpose N 16 (trunc_r N (flatten (cdiv N 16) 16 (GEN [ jo < cdiv N 16 ]
        transpose 16 16
          (tlet c := in_mem GEMMINI_ACC
             (gemmini_mvin_acc D (io * 16) (jo * 16) M N <+>
              SUM [ ko < cdiv K 16 ]
                tlet b := in_mem GEMMINI_SPAD (gemmini_mvin B (ko * 16) (jo * 16) K N) in
                gemmini_matmul (a _[ ko ]) b) in
           gemmini_mvout sm se act c (io * 16) (jo * 16) M N)))))).

  Lemma qmatmul_gemmini_panel_is_expected :
    qmatmul_gemmini_panel = qmatmul_gemmini_panel_expected.
  Proof. same_program. Qed.
End GemminiMatmulPanel.

(** ** Staging all of B and the A row panel

    With [K] and [N] small enough, all of [B] fits in the scratchpad next
    to one [A] row panel: [B] is staged once for the whole kernel (its
    let lifted out of every loop; [let_swap] moves it past the [A]
    block's), the [A] panel once per row of output blocks, so every
    block of [A] and of [B] is moved in exactly once:
    [cdiv M 16 * cdiv K 16 + cdiv K 16 * cdiv N 16] moves instead of
    [2 * cdiv M 16 * cdiv N 16 * cdiv K 16].  The capacity is
    [16 * cdiv K 16 * (cdiv N 16 + 1)] rows; the hypotheses bound the
    block counts ([K <= 256], [N <= 1008]) and [gemmini_check_fit] proves
    the fit. *)

Lemma let_swap {X Y W} (e1 : X) (e2 : Y) (F : X -> Y -> W) :
  atl_let e1 (fun x => atl_let e2 (fun y => F x y)) =
  atl_let e2 (fun y => atl_let e1 (fun x => F x y)).
Proof. reflexivity. Qed.

Section GemminiMatmulStaged.
  Variables (M N K : Z).
  Hypotheses (HM : 0 <= M) (HN : 0 <= N) (HK : 0 <= K).
  Hypotheses (HKt : cdiv K 16 <= 16) (HNt : cdiv N 16 <= 63).
  Variables (A B D : Z -> Z -> gint).
  Hypotheses (HA : shaped [M; K] A) (HB : shaped [K; N] B) (HD : shaped [M; N] D).
  Variables (sm se : Z) (act : bool).

  Derive qmatmul_gemmini_staged SuchThat (qmatmul M N K A B D sm se act = qmatmul_gemmini_staged)
    As qmatmul_gemmini_staged_correct.
  Proof.
    reschedule.
    rw qmatmul_blocks_ok.
    (* All of B: past the A block's let, out of ko, out of the accumulator's
       value, out of jo (a dimension of the buffer) and io (independent). *)
    rw let_swap.
    rw let_sum_lift0 at (sumr 0 (cdiv K 16) _).
    rw ll_tadd_r.
    rw let_let.
    rw ll_transpose at (transpose 16 16 _).
    rw let_gen_lift0 at (genr 0 (cdiv N 16) _).
    rw ll_flatten at (flatten (cdiv N 16) 16 _).
    rw ll_trunc_r at (trunc_r N _).
    rw ll_transpose at (transpose N 16 _).
    rw ll_gen at (genr 0 (cdiv M 16) _).
    rw ll_flatten at (flatten (cdiv M 16) 16 _).
    rw ll_trunc_r at (trunc_r M _).
    (* The A row panel, as in [qmatmul_gemmini_panel]. *)
    rw let_sum_lift0 at (sumr 0 (cdiv K 16) _).
    rw ll_tadd_r.
    rw let_let.
    rw ll_transpose at (transpose 16 16 _).
    rw ll_gen at (genr 0 (cdiv N 16) _).
    rw ll_flatten at (flatten (cdiv N 16) 16 _).
    rw ll_trunc_r at (trunc_r N _).
    rw ll_transpose at (transpose N 16 _).
    use_instr (gemmini_mvin_acc D).
    use_instr (gemmini_mvin A).
    use_instr (gemmini_mvin B).
    use_instr gemmini_matmul.
    use_instr gemmini_mvout.
    rename_buffer a into c.
    rename_buffer x into b.
    rename_buffer x0 into a.    (* printed x0: its binder is also named x *)
    rename_loop i into jo.
    rename_loop i0 into ko.
    rename_loop i into io.
    rename_loop i0 into ko.
    rename_loop i0 into jo.
    rename_loop i1 into ko.
    set_memory b GEMMINI_SPAD.
    set_memory a GEMMINI_SPAD.
    set_memory c GEMMINI_ACC.
    gemmini_check_fit.
    check_safe.
    done.
  Qed.

  Definition qmatmul_gemmini_staged_expected :=
    tlet b := in_mem GEMMINI_SPAD
      (GEN [ jo < cdiv N 16 ] GEN [ ko < cdiv K 16 ] gemmini_mvin B (ko * 16) (jo * 16) K N) in
    trunc_r M (flatten (cdiv M 16) 16 (GEN [ io < cdiv M 16 ]
      tlet a := in_mem GEMMINI_SPAD
        (GEN [ ko < cdiv K 16 ] gemmini_mvin A (io * 16) (ko * 16) M K) in
      transpose N 16 (trunc_r N (flatten (cdiv N 16) 16 (GEN [ jo < cdiv N 16 ]
        transpose 16 16
          (tlet c := in_mem GEMMINI_ACC
             (gemmini_mvin_acc D (io * 16) (jo * 16) M N <+>
              SUM [ ko < cdiv K 16 ] gemmini_matmul (a _[ ko ]) (b _[ jo ] _[ ko ])) in
           gemmini_mvout sm se act c (io * 16) (jo * 16) M N)))))).

  Lemma qmatmul_gemmini_staged_is_expected :
    qmatmul_gemmini_staged = qmatmul_gemmini_staged_expected.
  Proof. same_program. Qed.
End GemminiMatmulStaged.
