(** * Storing a generation in a buffer and reading it back (paper Sec. 2).

    The tiled pipeline of Sec. 2 computes each tile into its own buffer
    [v] and then copies the buffer to the output, guarding the copy so
    that the last, partial tile writes only inside the output:
    [GEN [ii < 8] |[p]| e  ~>  tlet v := GEN [ii < 8] |[p]| e in
                                GEN [ii < 8] |[p]| v _[ii]].
    The paper obtains this with [lbind_helper] and [ll_gen]; here it is one
    lemma, [gen_store_guard], with [gen_store] its unguarded form.  The
    loops are named [ii] as the tile loops they are meant for, since a
    rewrite names the binders it creates after the lemma's. *)

From Coq Require Import ZArith Lia.
From Verisched Require Import Tensor.Core Tensor.Sum Rewrites.Gen.
Open Scope Z_scope.

Section Store.
  Context {X : Type} `{TensorLaws X}.

  Lemma gen_store n (f : Z -> X) :
    genr 0 n f = atl_let (genr 0 n f) (fun v => genr 0 n (fun ii => get v ii)).
  Proof.
    unfold atl_let; apply genr_ext_ctx; intros ii Hii; rewrite get_gen by lia; reflexivity.
  Qed.

  Lemma gen_store_guard n (p : Z -> bool) (f : Z -> X) :
    genr 0 n (fun ii => iverson (p ii) (f ii)) =
    atl_let (genr 0 n (fun ii => iverson (p ii) (f ii)))
      (fun v => genr 0 n (fun ii => iverson (p ii) (get v ii))).
  Proof.
    unfold atl_let; apply genr_ext_ctx; intros ii Hii; rewrite get_gen by lia.
    destruct (p ii); reflexivity.
  Qed.
  (** A read of [b] inside the window [lo, lo + len) is a read of the
      window, stored as its own generation: with [name_buffer] this gives
      each tile its own copy of the part of a stage it reads (Halide's
      [compute_at], Sec. 2). *)
  Lemma get_window (b : Z -> X) lo len k :
    lo <= k < lo + len ->
    get b k = get (genr 0 len (fun w => get b (lo + w))) (k - lo).
  Proof. intros; rewrite get_gen by lia; f_equal; lia. Qed.

  (** Rewrite an index to an equal one (proved by [solve_idx]). *)
  Lemma get_reindex (v : Z -> X) i j : i = j -> get v i = get v j.
  Proof. intros ->; reflexivity. Qed.
End Store.
