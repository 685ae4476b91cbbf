(** * The tiled two-stage pipeline (paper Sec. 2, with Sec. 6.3's tiling).

    The two-stage pipeline of Examples/Pipeline.v,
      [tlet buf := GEN [j < n] f[j] in GEN [i < n] [0 <= i-1] buf[i-1] + buf[i]],
    scheduled like Halide's [output.split(x, xo, xi, 8); buf.compute_at(output, xo)]
    of Sec. 2: fuse the stages, tile the loop by 8 with the dual identity
    [flatten_trunc_tile_id] (Fig. 7), then give each tile its own buffer
    [v] that the tile computes and copies out, guarded so the partial last
    tile writes only inside the output.  The result, stated explicitly in
    [tiled_is], is the paper's program of Sec. 2:
      [trunc_r n (flatten (GEN [io < ceil(n/8)]
                   tlet v := GEN [ii < 8] [io*8+ii < n] ([0 <= io*8+ii-1] f[..-1] + f[..])
                   in GEN [ii < 8] [io*8+ii < n] v[ii]))].
    The paper's eleven steps become seven: [split_gen] is its [inline tile]
    plus access simplification, [gen_store_guard] its buffer steps.

    [tiled_k] is the same derivation for any tile size [k > 0].

    Two more schedules use concatenation to peel guarded iterations off:
    [peeled] splits the fused loop at 1 (Sec. 6.1, the program after
    [simpl_guard]), and [tiled_peeled] splits the tiled loop into a first
    tile, the full tiles, and the last, partial ones (the final program of
    Sec. 6.3), leaving guards only where they can fail.  Guards are
    removed by [rw guard_elim] / [rw guard_zero] steps, each proving its
    predicate from the loop bounds in context.

    Before [done], [check_safe] (Sec. 7.2) proves every access of the
    derived program in bounds, given the extent of the input
    ([Hf : shaped [n] f]), so the lowering may drop the zero-outside
    semantics.  [peeled] is not checked: its first part comes out
    eta-reduced ([GEN [i < 1] f _[i]] is stored as [genr 0 1 (get f)]),
    which the traversal of [check_safe] does not handle. *)

From Coq Require Import ZArith List.
From Coq Require Import derive.Derive.
From Verisched Require Import ATLGeneric Reshape.Reshape Examples.Pipeline.
Import ListNotations.
Open Scope Z_scope. Open Scope atl_scope.

Section TiledBy8.
  Context {S : Type} `{ScalarLaws S}.
  Variables (n : Z) (f : Z -> S).
  Hypothesis Hf : shaped [n] f.

  Derive tiled SuchThat (pipeline n f = tiled) As tiled_correct.
  Proof.
    reschedule.
    inline.                              (* buf into its two uses *)
    rw get_gen.                          (* fuse: buf[i-1], under the guard 0 <= i-1 *)
    rw get_gen.                          (* fuse: buf[i] *)
    rw <- (flatten_trunc_tile_id 8 n).   (* v = trunc_r n (flatten (split 8 v)) *)
    rw split_gen.                        (* split the loop into 8-wide tiles *)
    rw gen_store_guard at (GEN [ ii < 8 ] _).  (* each tile into its own buffer v *)
    check_safe.
    done.
  Qed.

  Lemma tiled_is :
    tiled =
    trunc_r n (flatten (cdiv n 8) 8
      (GEN [ io < cdiv n 8 ]
         tlet v := GEN [ ii < 8 ]
                     |[ io * 8 + ii <? n ]|
                       ((|[ 0 <=? io * 8 + ii - 1 ]| f _[ io * 8 + ii - 1 ]) <+> f _[ io * 8 + ii ]) in
         GEN [ ii < 8 ] |[ io * 8 + ii <? n ]| v _[ ii ])).
  Proof. same_program. Qed.
End TiledBy8.

Section TiledByK.
  Context {S : Type} `{ScalarLaws S}.
  Variables (n k : Z) (f : Z -> S).
  Hypothesis Hf : shaped [n] f.
  Hypothesis Hk : 0 < k.

  Derive tiled_k SuchThat (pipeline n f = tiled_k) As tiled_k_correct.
  Proof.
    reschedule.
    inline.
    rw get_gen.
    rw get_gen.
    rw <- (flatten_trunc_tile_id k n).
    rw split_gen.
    rw gen_store_guard at (GEN [ ii < k ] _).
    check_safe.
    done.
  Qed.

  Lemma tiled_k_is :
    tiled_k =
    trunc_r n (flatten (cdiv n k) k
      (GEN [ io < cdiv n k ]
         tlet v := GEN [ ii < k ]
                     |[ io * k + ii <? n ]|
                       ((|[ 0 <=? io * k + ii - 1 ]| f _[ io * k + ii - 1 ]) <+> f _[ io * k + ii ]) in
         GEN [ ii < k ] |[ io * k + ii <? n ]| v _[ ii ])).
  Proof. same_program. Qed.
End TiledByK.

Section Peeled.
  Context {S : Type} `{ScalarLaws S}.
  Variables (n : Z) (f : Z -> S).
  Hypothesis Hf : shaped [n] f.
  Hypothesis Hn : 1 <= n.

  Derive peeled SuchThat (pipeline n f = peeled) As peeled_correct.
  Proof.
    reschedule.
    inline.
    rw get_gen.
    rw get_gen.
    rw (gen_concat 1).       (* GEN [i < n] = GEN [i < 1] ++ GENR [1 <= i < n] *)
    rw guard_zero.           (* i = 0: the guard 0 <= i - 1 fails *)
    rw tadd_0_l'.
    rw guard_elim.           (* 1 <= i: it holds *)
    done.
  Qed.

  Lemma peeled_is :
    peeled =
    concat 1 (n - 1)
      (GEN [ i < 1 ] f _[ i ])
      (GENR [ 1 <= i < n ] f _[ i - 1 ] <+> f _[ i ]).
  Proof. same_program. Qed.
End Peeled.

Section TiledPeeled.
  Context {S : Type} `{ScalarLaws S}.
  Variables (n : Z) (f : Z -> S).
  Hypothesis Hf : shaped [n] f.
  Hypothesis Hn : 8 <= n.

  Derive tiled_peeled SuchThat (pipeline n f = tiled_peeled) As tiled_peeled_correct.
  Proof.
    reschedule.
    inline.
    rw get_gen.
    rw get_gen.
    rw (gen_tile 8).                                          (* Sec. 6.3 in one step *)
    rw (gen_concat 1) at (GEN [ io < cdiv n 8 ] _).           (* first tile *)
    rw (genr_concat _ (n / 8)) at (GENR [ 1 <= io < cdiv n 8 ] _).  (* full | partial *)
    rw guard_elim.           (* first tile: io * 8 + ii < n *)
    rw guard_elim.           (* full tiles: io * 8 + ii < n *)
    rw guard_elim.           (* full tiles: 0 <= io * 8 + ii - 1 *)
    rw guard_elim.           (* partial tiles: 0 <= io * 8 + ii - 1 *)
    check_safe.
    done.
  Qed.

  Lemma tiled_peeled_is :
    tiled_peeled =
    trunc_r n (flatten (cdiv n 8) 8
      (concat 1 (cdiv n 8 - 1)
         (GEN [ io < 1 ] GEN [ ii < 8 ]
            (|[ 0 <=? io * 8 + ii - 1 ]| f _[ io * 8 + ii - 1 ]) <+> f _[ io * 8 + ii ])
         (concat (n / 8 - 1) (cdiv n 8 - n / 8)
            (GENR [ 1 <= io < n / 8 ] GEN [ ii < 8 ]
               f _[ io * 8 + ii - 1 ] <+> f _[ io * 8 + ii ])
            (GENR [ n / 8 <= io < cdiv n 8 ] GEN [ ii < 8 ]
               |[ io * 8 + ii <? n ]| (f _[ io * 8 + ii - 1 ] <+> f _[ io * 8 + ii ]))))).
  Proof. same_program. Qed.
End TiledPeeled.
