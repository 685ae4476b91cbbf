(** * The blur of Examples/Blur.v scheduled with producer directives.

    Halide's blur written as two funcs, [blur_x] the producer, [blur_y] the
    consumer, with the schedule [blur_x.compute_at(blur_y, y)]: each output
    row computes the three rows of [blur_x] it reads (Halide formal
    semantics Sec. 8.3; Rewrites/Producers.v).  In ATL the producer is a
    let buffer [bx] over the whole image; [compute_at bx y] sinks it into
    the row loop and restricts it to rows [y - 1 .. y + 1] (a 3-row window,
    guarded by the image bounds), read at [bx _[0]], [bx _[1]], [bx _[2]].
    One directive and [check_safe], against Blur.v's thirteen steps.

    Deliberately not [blur_fused] of Blur.v.  [blur_fused] is total fusion
    (the producer inlined into the consumer, then its borders peeled); in
    producer terms it is [inline bx] on the program below, and the
    peeling is loop splitting, not a producer directive.  The program
    derived here keeps a per-row buffer (Halide's compute_at), so it is a
    different program and no [same_program] lemma relates the two; its
    shape is pinned by [blur_at_is] instead.  Not done: proving the
    two-stage algorithm below equal to Blur.v's [blur] (both are the same
    9-point sum; the link is left for the loop-directive work). *)

From Coq Require Import ZArith List Lia derive.Derive.
From Verisched Require Import ATLGeneric.
Import ListNotations.
Open Scope Z_scope. Open Scope atl_scope.

Section BlurAt.
  Context {S : Type} `{ScalarLaws S}.
  Variables (n m : Z) (v : Z -> Z -> S).
  Hypothesis Hv : shaped [n; m] v.

  (** Two stages: [bx] (blur_x, columns guarded) over the whole image, then
      blur_y reading it at rows [y - 1], [y], [y + 1] (rows outside the
      image read as zero). *)
  Definition blur_stages :=
    tlet bx := GEN [ r < n ] GEN [ x < m ]
                 (|[ 0 <=? x - 1 ]| v _[ r ] _[ x - 1 ]) <+> v _[ r ] _[ x ] <+>
                 (|[ x + 1 <? m ]| v _[ r ] _[ x + 1 ]) in
    GEN [ y < n ] GEN [ x < m ] bx _[ y - 1 ] _[ x ] <+> bx _[ y ] _[ x ] <+> bx _[ y + 1 ] _[ x ].

  Derive blur_at SuchThat (blur_stages = blur_at) As blur_at_correct.
  Proof.
    reschedule.
    compute_at bx y.
    check_safe.
    done.
  Qed.

  Lemma blur_at_is :
    blur_at =
    GEN [ y < n ]
      tlet bx := GEN [ r < 3 ]
                   |[ (0 <=? y - 1 + r) && (y - 1 + r <? n) ]|
                   (GEN [ x < m ]
                      (|[ 0 <=? x - 1 ]| v _[ y - 1 + r ] _[ x - 1 ]) <+> v _[ y - 1 + r ] _[ x ] <+>
                      (|[ x + 1 <? m ]| v _[ y - 1 + r ] _[ x + 1 ])) in
      GEN [ x < m ] bx _[ 0 ] _[ x ] <+> bx _[ 1 ] _[ x ] <+> bx _[ 2 ] _[ x ].
  Proof. same_program. Qed.
End BlurAt.
