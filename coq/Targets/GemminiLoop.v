(** * Gemmini's hardware loop unroller [gemmini_loop_ws] as a specification
    (issue 16, item 2).

    [gemmini_loop_ws] is one command (six RoCC instructions: five
    configuration commands and [LOOP_WS]) after which the accelerator
    itself issues the moves, preloads, computes and stores of a
    weight-stationary tiled matmul: [mvin] of every 16 x 16 block of [A]
    and [B] (and [mvin3] of the bias [D], if given), a [preload] and a
    [compute] per (i, j, k) block triple, accumulated over k in the
    accumulator, and an [mvout] of every output block through the output
    path configured by [config_st].  Its argument list is that of
    Gemmini's [gemmini.h] (23 arguments); the simulator implements it in
    [src/verisched/targets/gemmini/include/gemmini_loop.h] by issuing
    exactly those single instructions, checked bit for bit against a
    hand-written sequence and numpy (tests/test_gemmini_loop.py).

    Following the scheme of Targets/Gemmini.v, the specification of the
    loop is the program of single instructions it stands for: the body of
    [gemmini_loop_ws] below is the per-tile schedule of the quantized
    matmul written with [gemmini_mvin], [gemmini_matmul] and
    [gemmini_mvout], over all [cdiv M 16] x [cdiv N 16] output blocks and
    all [cdiv K 16] reduction blocks, so "the loop equals its unrolling"
    holds by definition, and the value of each single instruction is the
    one Targets/Gemmini.v specifies.  The lemmas that it computes the
    quantized matmul ([qmatmul_nobias_loop_ws], [qmatmul_loop_ws]) are in
    Examples/GemminiMatmul.v, where they follow from the derivations of the
    per-tile schedules.

    The lowering (targets/gemmini/loops.py) emits one hardware
    [gemmini_loop_ws] per block of output tiles that fits the halves of the
    scratchpad and accumulator the hardware gives one loop (the hardware
    double-buffers two loops), splitting the reduction over calls that
    accumulate when [K] is too deep for one; every call computes a
    sub-block of this specification, with the same instructions.

    [gemmini_loop_ws_bias] starts each accumulator block from the bias
    block [gemmini_mvin_acc D] ([D] non-NULL, [ex_accumulate] set);
    [gemmini_loop_ws] from zero ([D] = NULL, [ex_accumulate] clear: the
    first product overwrites). *)

From Coq Require Import ZArith.
From Verisched Require Import Tensor.Scalar Tensor.Core Tensor.Arith Tensor.Sum Tensor.Shape.
From Verisched Require Import Reshape.Reshape Targets.Instr Targets.Gemmini.
Open Scope Z_scope. Open Scope atl_scope.

(** The quantized matmul [act(scale(A B))] of [A : M x K] and [B : K x N]
    as one [gemmini_loop_ws] (no bias). *)
Definition gemmini_loop_ws (sm se : Z) (act : bool) (A B : Z -> Z -> gint) (M N K : Z)
  : Z -> Z -> gint :=
  trunc_r M (flatten (cdiv M 16) 16 (GEN [ io < cdiv M 16 ]
    transpose N 16 (trunc_r N (flatten (cdiv N 16) 16 (GEN [ jo < cdiv N 16 ]
      transpose 16 16
        (tlet c := in_mem GEMMINI_ACC
           (SUM [ ko < cdiv K 16 ]
              tlet a := in_mem GEMMINI_SPAD (gemmini_mvin A (io * 16) (ko * 16) M K) in
              tlet b := in_mem GEMMINI_SPAD (gemmini_mvin B (ko * 16) (jo * 16) K N) in
              gemmini_matmul a b) in
         gemmini_mvout sm se act c (io * 16) (jo * 16) M N)))))).

(** The same with an int32 bias [D : M x N] loaded into the accumulator
    first ([act(scale(D + A B))]). *)
Definition gemmini_loop_ws_bias (sm se : Z) (act : bool) (A B D : Z -> Z -> gint)
  (M N K : Z) : Z -> Z -> gint :=
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

#[global] Instance AtlInstr_gemmini_loop_ws : AtlInstr (@gemmini_loop_ws) := {}.
#[global] Instance AtlInstr_gemmini_loop_ws_bias : AtlInstr (@gemmini_loop_ws_bias) := {}.

(** The loop is its unrolling: unfolding the instruction gives the
    per-tile program of single instructions. *)
Lemma gemmini_loop_ws_unroll sm se act A B M N K :
  gemmini_loop_ws sm se act A B M N K =
  trunc_r M (flatten (cdiv M 16) 16 (GEN [ io < cdiv M 16 ]
    transpose N 16 (trunc_r N (flatten (cdiv N 16) 16 (GEN [ jo < cdiv N 16 ]
      transpose 16 16
        (tlet c := in_mem GEMMINI_ACC
           (SUM [ ko < cdiv K 16 ]
              tlet a := in_mem GEMMINI_SPAD (gemmini_mvin A (io * 16) (ko * 16) M K) in
              tlet b := in_mem GEMMINI_SPAD (gemmini_mvin B (ko * 16) (jo * 16) K N) in
              gemmini_matmul a b) in
         gemmini_mvout sm se act c (io * 16) (jo * 16) M N)))))).
Proof. reflexivity. Qed.
