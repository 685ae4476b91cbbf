(** * The reshape rewrites (paper Sec. 6) in use: one small derivation per lemma.

    A regression check that each rewrite applies through [rw] (the lemma's
    side unifies with a program node, and [atl_side] proves the side
    conditions: bounds from the loop context, shapes through
    Reshape/ShapeRules.v), with the result stated explicitly.
    The second
    section covers the lemmas on tensors of rank 2 and up. *)

From Coq Require Import ZArith List.
From Coq Require Import derive.Derive.
From Verisched Require Import ATLGeneric.
Import ListNotations.
Open Scope Z_scope. Open Scope atl_scope.

Section Usage.
  Context {S : Type} `{ScalarLaws S}.
  Variables (n m k : Z) (g : Z -> Z -> S) (f h : Z -> S).
  Hypothesis Hg : shaped [n; m] g.
  Hypothesis Hf : shaped [n] f.
  Hypothesis Hm : 0 < m.
  Hypothesis Hk : 0 <= k <= n.

  (** Accesses *)
  Definition a_concat := GEN [ i < n + m ] (concat n m f h) _[ i ].
  Derive a_concat' SuchThat (a_concat = a_concat') As a_concat_c.
  Proof. reschedule. rw get_concat. done. Qed.
  Goal a_concat' = GEN [ i < n + m ] (|[ i <? n ]| f _[ i ]) <+> (|[ n <=? i ]| h _[ i - n ]).
  Proof. reflexivity. Qed.

  Definition a_flatten := GEN [ i < n * m ] (flatten n m g) _[ i ].
  Derive a_flatten' SuchThat (a_flatten = a_flatten') As a_flatten_c.
  Proof. reschedule. rw get_flatten. done. Qed.
  Goal a_flatten' = GEN [ i < n * m ] g _[ i / m ] _[ i mod m ].
  Proof. reflexivity. Qed.

  Definition a_pad := GEN [ i < n + 3 ] (pad_l 3 n f) _[ i ].
  Derive a_pad' SuchThat (a_pad = a_pad') As a_pad_c.
  Proof. reschedule. rw get_pad_l. done. Qed.
  Goal a_pad' = GEN [ i < n + 3 ] |[ 3 <=? i ]| f _[ i - 3 ].
  Proof. reflexivity. Qed.

  (** Generations through operators *)
  Definition g_split := split 4 n (GEN [ i < n ] f _[ i ]).
  Derive g_split' SuchThat (g_split = g_split') As g_split_c.
  Proof. reschedule. rw split_gen. done. Qed.
  Goal g_split' = GEN [ io < cdiv n 4 ] GEN [ ii < 4 ] |[ io * 4 + ii <? n ]| f _[ io * 4 + ii ].
  Proof. reflexivity. Qed.

  Definition g_trunc := trunc_r k (GEN [ i < n ] f _[ i ]).
  Derive g_trunc' SuchThat (g_trunc = g_trunc') As g_trunc_c.
  Proof. reschedule. rw trunc_r_gen. done. Qed.
  Goal g_trunc' = GEN [ i < k ] f _[ i ].
  Proof. reflexivity. Qed.

  (** Loop splitting, tiling, dual introduction *)
  Definition v1 := GEN [ i < n ] f _[ i ].
  Derive v1_split SuchThat (v1 = v1_split) As v1_split_c.
  Proof. reschedule. rw (gen_concat k). done. Qed.
  Goal v1_split = concat k (n - k) (GEN [ i < k ] f _[ i ]) (GENR [ k <= i < n ] f _[ i ]).
  Proof. reflexivity. Qed.

  Derive v1_tile SuchThat (v1 = v1_tile) As v1_tile_c.
  Proof. reschedule. rw (gen_tile 4). done. Qed.
  Goal v1_tile =
    trunc_r n (flatten (cdiv n 4) 4
      (GEN [ io < cdiv n 4 ] GEN [ ii < 4 ] |[ io * 4 + ii <? n ]| f _[ io * 4 + ii ])).
  Proof. reflexivity. Qed.

  Derive v1_pad SuchThat (v1 = v1_pad) As v1_pad_c.
  Proof. reschedule. rw <- (trunc_r_pad_r 3 n). rw <- (trunc_l_pad_l 2 (n + 3)) at (pad_r _ _ _). done. Qed.
  Goal v1_pad =
    trunc_r n (trunc_l (n + 3) (n + 3 + 2) (pad_l 2 (n + 3) (pad_r 3 n (GEN [ i < n ] f _[ i ])))).
  Proof. reflexivity. Qed.

  Derive g_dual SuchThat (g = g_dual) As g_dual_c.
  Proof. reschedule. rw <- (split_flatten n m). rw <- (transpose_transpose n m). done. Qed.
  Goal g_dual = transpose m n (transpose n m (split m (n * m) (flatten n m g))).
  Proof. reflexivity. Qed.
End Usage.

Section UsageRank2.
  Context {S : Type} `{ScalarLaws S}.
  Variables (n m k : Z) (g : Z -> Z -> S) (f : Z -> S).
  Hypothesis Hm : 0 < m.

  Definition a_transpose := GEN [ j < m ] GEN [ i < n ] (transpose n m g) _[ j ] _[ i ].
  Derive a_transpose' SuchThat (a_transpose = a_transpose') As a_transpose_c.
  Proof. reschedule. rw get_transpose. done. Qed.
  Goal a_transpose' = GEN [ j < m ] GEN [ i < n ] (GEN [ y < n ] g _[ y ] _[ j ]) _[ i ].
  Proof. reflexivity. Qed.

  Definition g_transpose := transpose n m (GEN [ i < n ] GEN [ j < m ] g _[ i ] _[ j ]).
  Derive g_transpose' SuchThat (g_transpose = g_transpose') As g_transpose_c.
  Proof. reschedule. rw transpose_gen. done. Qed.
  Goal g_transpose' = GEN [ j < m ] GEN [ i < n ] g _[ i ] _[ j ].
  Proof. reflexivity. Qed.

  Definition g_flatten := flatten n m (GEN [ i < n ] GEN [ j < m ] g _[ i ] _[ j ]).
  Derive g_flatten' SuchThat (g_flatten = g_flatten') As g_flatten_c.
  Proof. reschedule. rw flatten_gen. done. Qed.
  Goal g_flatten' = GEN [ i < n * m ] g _[ i / m ] _[ i mod m ].
  Proof. reflexivity. Qed.

  Definition a_split := GEN [ io < cdiv n 4 ] GEN [ ii < 4 ] (split 4 n f) _[ io ] _[ ii ].
  Derive a_split' SuchThat (a_split = a_split') As a_split_c.
  Proof. reschedule. rw get_split. done. Qed.
  Goal a_split' =
    GEN [ io < cdiv n 4 ] GEN [ ii < 4 ]
      (GEN [ j < 4 ] |[ io * 4 + j <? n ]| f _[ io * 4 + j ]) _[ ii ].
  Proof. reflexivity. Qed.

  Definition l_trunc := trunc_r k (|[ 0 <? n ]| (tlet x := f in x)).
  Derive l_trunc' SuchThat (l_trunc = l_trunc') As l_trunc_c.
  Proof. reschedule. rw guard_trunc_r. rw ll_trunc_r. done. Qed.
  Goal l_trunc' = |[ 0 <? n ]| (tlet x := f in trunc_r k x).
  Proof. reflexivity. Qed.

  Definition l_transpose := transpose n m (|[ 0 <? n ]| (tlet x := g in x)).
  Derive l_transpose' SuchThat (l_transpose = l_transpose') As l_transpose_c.
  Proof. reschedule. rw guard_transpose. rw ll_transpose. done. Qed.
  Goal l_transpose' = |[ 0 <? n ]| (tlet x := g in transpose n m x).
  Proof. reflexivity. Qed.
End UsageRank2.
