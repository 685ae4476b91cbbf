(** * The tiled two-stage pipeline, scheduled with loop directives.

    Examples/PipelineTiled.v derives [tiled] (Halide's
    [output.split(x, xo, xi, 8); buf.compute_at(output, xo)], paper Sec. 2)
    by aiming rewrites by hand: [rw <- (flatten_trunc_tile_id 8 n)] then
    [rw split_gen].  Here the loop split is the directive
    [split i by 8 into io ii] (Rewrites/Directives.v), which names the new
    loops as asked; the buffer step is unchanged.  [tiled_directive_same]
    shows both derivations end in the same program ([tiled_k] likewise for
    any tile size). *)

From Coq Require Import ZArith List.
From Coq Require Import derive.Derive.
From Verisched Require Import ATLGeneric Reshape.Reshape Examples.Pipeline Examples.PipelineTiled.
Import ListNotations.
Open Scope Z_scope. Open Scope atl_scope.

Section TiledBy8.
  Context {S : Type} `{ScalarLaws S}.
  Variables (n : Z) (f : Z -> S).
  Hypothesis Hf : shaped [n] f.

  Derive tiled_directive SuchThat (pipeline n f = tiled_directive) As tiled_directive_correct.
  Proof.
    reschedule.
    inline.                              (* buf into its two uses *)
    rw get_gen.                          (* fuse: buf[i-1], under the guard 0 <= i-1 *)
    rw get_gen.                          (* fuse: buf[i] *)
    split i by 8 into io ii.             (* Halide: output.split(x, xo, xi, 8) *)
    rw gen_store_guard at (GEN [ ii < 8 ] _).  (* each tile into its own buffer v *)
    check_safe.
    done.
  Qed.

  (** [tiled] is closed over its section's variables: unfold it at [n f]. *)
  Lemma tiled_directive_same : tiled_directive = tiled n f.
  Proof. unfold tiled; cbv beta; same_program. Qed.
End TiledBy8.

Section TiledByK.
  Context {S : Type} `{ScalarLaws S}.
  Variables (n k : Z) (f : Z -> S).
  Hypothesis Hf : shaped [n] f.
  Hypothesis Hk : 0 < k.

  Derive tiled_k_directive SuchThat (pipeline n f = tiled_k_directive) As tiled_k_directive_correct.
  Proof.
    reschedule.
    inline.
    rw get_gen.
    rw get_gen.
    split i by k into io ii.
    rw gen_store_guard at (GEN [ ii < k ] _).
    check_safe.
    done.
  Qed.

  Lemma tiled_k_directive_same : tiled_k_directive = tiled_k n k f.
  Proof. unfold tiled_k; cbv beta; same_program. Qed.
End TiledByK.
