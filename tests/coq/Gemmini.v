(* Pinned behaviour of the Gemmini library's tactics (output compared with
   Gemmini.ref): the capacity check accepting and refusing, the renaming
   tactics, and how Coq prints an instruction call. *)
From Coq Require Import ZArith List derive.Derive.
From Verisched Require Import ATL Targets.Gemmini.
Import ListNotations.
Open Scope Z_scope. Open Scope atl_scope.

Section Fit.
  Variables (M K : Z) (A : Z -> Z -> gint).

  (* Two 16-row tiles in the scratchpad, one in the accumulator: fits. *)
  Definition small :=
    tlet a := in_mem GEMMINI_SPAD (GEN [ i < 16 ] GEN [ j < 16 ] A _[ i ] _[ j ]) in
    tlet b := in_mem GEMMINI_SPAD (GEN [ i < 16 ] GEN [ j < 16 ] A _[ j ] _[ i ]) in
    tlet c := in_mem GEMMINI_ACC (GEN [ i < 16 ] GEN [ j < 16 ] a _[ i ] _[ j ] + b _[ i ] _[ j ]) in
    c.
  Derive small_d SuchThat (small = small_d) As small_ok.
  Proof. reschedule. gemmini_check_fit. done. Qed.

  (* 20000 rows exceed the scratchpad's 4 x 4096. *)
  Definition big := tlet a := in_mem GEMMINI_SPAD (GEN [ i < 20000 ] GEN [ j < 16 ] A _[ i ] _[ j ]) in a.
  Derive big_d SuchThat (big = big_d) As big_ok.
  Proof. reschedule. Fail gemmini_check_fit. done. Qed.

  (* 1025 rows exceed the accumulator. *)
  Definition bigacc := tlet c := in_mem GEMMINI_ACC (GEN [ i < 1025 ] GEN [ j < 16 ] A _[ i ] _[ j ]) in c.
  Derive bigacc_d SuchThat (bigacc = bigacc_d) As bigacc_ok.
  Proof. reschedule. Fail gemmini_check_fit. done. Qed.

  (* Rows must be 16 elements wide. *)
  Definition wide := tlet a := in_mem GEMMINI_SPAD (GEN [ i < 16 ] GEN [ j < 32 ] A _[ i ] _[ j ]) in a.
  Derive wide_d SuchThat (wide = wide_d) As wide_ok.
  Proof. reschedule. Fail gemmini_check_fit. done. Qed.

  (* A buffer sized by an enclosing loop variable is refused. *)
  Definition dep :=
    GEN [ r < 4 ] tlet a := in_mem GEMMINI_SPAD (GEN [ i < r ] GEN [ j < 16 ] A _[ i ] _[ j ]) in a.
  Derive dep_d SuchThat (dep = dep_d) As dep_ok.
  Proof. reschedule. Fail gemmini_check_fit. done. Qed.

  (* A symbolic size needs a hypothesis bounding it. *)
  Definition sym := tlet a := in_mem GEMMINI_SPAD (GEN [ i < cdiv K 16 ] GEN [ t < 16 ] GEN [ j < 16 ] A _[ i * 16 + t ] _[ j ]) in a.
  Derive sym_d SuchThat (sym = sym_d) As sym_ok.
  Proof. reschedule. Fail gemmini_check_fit. done. Qed.
  Hypothesis (HK : 0 <= K <= 16384).
  Derive sym_d' SuchThat (sym = sym_d') As sym_ok'.
  Proof. reschedule. gemmini_check_fit. done. Qed.
End Fit.

Section Names.
  Variables (M K : Z) (A : Z -> Z -> gint).

  (* An instruction call as Coq prints it, and the renaming tactics. *)
  Definition tiles :=
    GEN [ io < cdiv M 16 ]
      tlet t := GEN [ i < 16 ] GEN [ j < 16 ]
                  |[ (io * 16 + i <? M) && (0 + j <? K) ]| A _[ io * 16 + i ] _[ 0 + j ] in
      t.
  Derive tiles_d SuchThat (tiles = tiles_d) As tiles_ok.
  Proof.
    reschedule.
    use_instr (gemmini_mvin A).
    rename_buffer t into tile.
    rename_loop io into r.
    Fail rename_loop io into s.
    Fail rename_buffer t into u.
    done.
  Qed.
  Print tiles_d.
End Names.

Section Safety.
  Variables (n : Z) (A : Z -> gint).
  Hypothesis HA : shaped [n] A.

  (* check_safe enters gint scalar expressions (they mention accesses; see
     atl_is_index in Rewrites/Tactics.v): the out-of-bounds A[i + 1] is caught. *)
  Definition shifted := GEN [ i < n ] A _[ i + 1 ] * A _[ i ].
  Derive shifted_d SuchThat (shifted = shifted_d) As shifted_ok.
  Proof. reschedule. Fail check_safe. done. Qed.

  Definition guarded := GEN [ i < n ] |[ i + 1 <? n ]| A _[ i + 1 ] * A _[ i ].
  Derive guarded_d SuchThat (guarded = guarded_d) As guarded_ok.
  Proof. reschedule. check_safe. done. Qed.
End Safety.
