(** * im2col (ATL paper, Sec. 8.3, Fig. 12), in 1-D and in 2-D.

    The transformation binds the read-with-offset [x[n; c; p + r]] of a
    convolution as a buffer [a] and hoists that binding out of every loop
    (Sec. 8.3); the hoisted value is the im2col buffer, and what remains
    reads it as a matrix multiply.

    Reading of the paper.  In the formulas extracted from Fig. 12 every
    big operator looks alike.  From the prose and the shapes: the
    convolution's [n, k, p] are generations and [c, r] reductions, and the
    bound value becomes a generation over each index it is hoisted across
    ("let a := GEN r x[n;c;p+r] in SUM r w[k;c;r] * a[r]"), since a let
    hoisted out of a loop must hold one value per iteration.  Hoisting out
    of [k], which the value does not mention, just moves the let
    ([ll_gen]).  Each [rw] below is one line of Fig. 12.

    Tactical note.  The lifts use [let_gen_lift0]/[let_sum_lift0], the
    forms for loops starting at 0, so that uses print as [a[n; p; c; r]]
    as in the paper.  *)

From Coq Require Import ZArith List.
Import ListNotations.
From Coq Require Import derive.Derive.
From Verisched Require Import ATLGeneric Rewrites.Safety.
Open Scope Z_scope. Open Scope atl_scope.

(** ** 1-D convolution (Fig. 12) *)

Section Im2col1D.
  Context {S : Type} `{ScalarLaws S}.
  (** [x : B x C x W], [w : K x C x R]; as in the paper the output has
      width [W] and reads past the input's end are zero. *)
  Variables (B K C W R : Z).
  Variables (x w : Z -> Z -> Z -> S).
  Hypotheses (Hx : shaped [B; C; W] x) (Hw : shaped [K; C; R] w).

  Definition conv1d :=
    GEN [ n < B ] GEN [ k < K ] GEN [ p < W ] SUM [ c < C ] SUM [ r < R ]
      w _[ k ] _[ c ] _[ r ] * x _[ n ] _[ c ] _[ p + r ].

  Derive conv1d_im2col SuchThat (conv1d = conv1d_im2col) As conv1d_im2col_correct.
  Proof.
    reschedule.
    name_buffer (x _[ _ ] _[ _ ] _[ _ + _ ]) as a.  (* let a := x[n;c;p+r] in w[k;c;r] * a *)
    rw let_sum_lift0.      (* hoist out of r: a := GEN r ..., use a[r] *)
    rw let_sum_lift0.      (* out of c *)
    rw let_gen_lift0.      (* out of p *)
    rw ll_gen.             (* out of k: the value does not depend on k *)
    rw let_gen_lift0.      (* out of n *)
    done.
  Qed.

  (** The last line of Fig. 12: the im2col buffer [a : B x W x C x R],
      then for each [n] a [K x (C R)] by [(C R) x W] matrix product. *)
  Definition conv1d_im2col_expected :=
    tlet a := GEN [ n < B ] GEN [ p < W ] GEN [ c < C ] GEN [ r < R ] x _[ n ] _[ c ] _[ p + r ] in
    GEN [ n < B ] GEN [ k < K ] GEN [ p < W ] SUM [ c < C ] SUM [ r < R ]
      w _[ k ] _[ c ] _[ r ] * a _[ n ] _[ p ] _[ c ] _[ r ].

  Lemma conv1d_im2col_is_expected : conv1d_im2col = conv1d_im2col_expected.
  Proof. same_program. Qed.

  (** The paper's buffer reads [x] past its end ([p + r >= W]), relying on
      ATL's zero reads; the C lowering needs every read proved in bounds.
      The same derivation, preceded by one step that guards the read by
      its bounds ([get_bound_guard], from the shape of [x]), gives an
      im2col buffer that [check_safe] accepts. *)
  Derive conv1d_im2col_safe SuchThat (conv1d = conv1d_im2col_safe) As conv1d_im2col_safe_correct.
  Proof.
    reschedule.
    rw (get_bound_guard W []) at (x _[ _ ] _[ _ ] _[ _ ]).
    rw guard_and_l.       (* 0 <= p + r holds under the loop bounds *)
    name_buffer (|[ _ ]| x _[ _ ] _[ _ ] _[ _ ]) as a.
    rw let_sum_lift0.
    rw let_sum_lift0.
    rw let_gen_lift0.
    rw ll_gen.
    rw let_gen_lift0.
    check_safe.
    done.
  Qed.

  Definition conv1d_im2col_safe_expected :=
    tlet a := GEN [ n < B ] GEN [ p < W ] GEN [ c < C ] GEN [ r < R ]
                |[ p + r <? W ]| x _[ n ] _[ c ] _[ p + r ] in
    GEN [ n < B ] GEN [ k < K ] GEN [ p < W ] SUM [ c < C ] SUM [ r < R ]
      w _[ k ] _[ c ] _[ r ] * a _[ n ] _[ p ] _[ c ] _[ r ].

  Lemma conv1d_im2col_safe_is_expected : conv1d_im2col_safe = conv1d_im2col_safe_expected.
  Proof. same_program. Qed.
End Im2col1D.

(** ** 2-D convolution to im2col and a matrix multiply

    The 2-D version the paper mentions (Sec. 8.3: "would add in a vertical
    image dimension [q] and vertical filter offset [s]"): batch [B],
    [K] output and [C] input channels, an [KH x KW] kernel, an [H x W]
    image, stride 1, output [(H - KH + 1) x (W - KW + 1)] (a "valid"
    convolution, so every read is in bounds; [check_safe] proves it):
    [out[n;k;q;p] = SUM c SUM s SUM r w[k;c;s;r] * x[n;c;q+s;p+r]].

    Design choice: the reduction over [(c, s, r)] is flattened into one
    index [j < C * (KH * KW)] ([sum_flatten3]) before the buffers are
    hoisted, and the weights are packed as a [K x (C KH KW)] matrix [wm].
    Why: with nested sums the innermost reduction loop runs [KW] times
    (typically 3), too short for the C compiler to vectorise and paying
    loop overhead every 3 multiply-adds; flattened, the product is one
    dot product of length [C KH KW] over two rows that are contiguous in
    the packed buffers, i.e. an ordinary GEMM the lowering (and the tiled
    Matmul derivation of Matmul.v) handles.  The price, the [/] and [mod]
    of the flattened index, is paid only in the two packing loops, which
    run [B OH OW C KH KW] and [K C KH KW] times, not in the multiply's
    [B K OH OW C KH KW] iterations. *)

Section Im2col2D.
  (* Instances named so that [H] is free for the image height. *)
  Context {S : Type} {Sc : Scalar S} {ScL : ScalarLaws S}.
  Variables (B K C H W KH KW : Z).
  Hypotheses (HKH : 0 < KH) (HKW : 0 < KW).
  (** [x : B x C x H x W], [w : K x C x KH x KW]. *)
  Variables (x w : Z -> Z -> Z -> Z -> S).
  Hypotheses (Hx : shaped [B; C; H; W] x) (Hw : shaped [K; C; KH; KW] w).

  Definition conv2d :=
    GEN [ n < B ] GEN [ k < K ] GEN [ q < H - KH + 1 ] GEN [ p < W - KW + 1 ]
      SUM [ c < C ] SUM [ s < KH ] SUM [ r < KW ]
        w _[ k ] _[ c ] _[ s ] _[ r ] * x _[ n ] _[ c ] _[ q + s ] _[ p + r ].

  Derive conv2d_gemm SuchThat (conv2d = conv2d_gemm) As conv2d_gemm_correct.
  Proof.
    reschedule.
    (* One reduction index [j] for [(c, s, r)], row-major. *)
    rw sum_flatten3.
    (* The im2col buffer: bind the read of [x], hoist it out of j, p, q
       (each becomes a dimension of [a]), past k, and out of n. *)
    name_buffer (x _[ _ ] _[ _ ] _[ _ ] _[ _ ]) as a.
    rw let_sum_lift0.
    rw let_gen_lift0.
    rw let_gen_lift0.
    rw ll_gen.
    rw let_gen_lift0.
    (* The packed weights: bind the read of [w], hoist it out of j, past
       p and q, out of k, and past n. *)
    name_buffer (w _[ _ ] _[ _ ] _[ _ ] _[ _ ]) as wm.
    rw let_sum_lift0.
    rw ll_gen.
    rw ll_gen.
    rw let_gen_lift0.
    rw ll_gen.
    check_safe.
    done.
  Qed.

  Definition conv2d_gemm_expected :=
    tlet a :=
      GEN [ n < B ] GEN [ q < H - KH + 1 ] GEN [ p < W - KW + 1 ] GEN [ j < C * (KH * KW) ]
        x _[ n ] _[ j / (KH * KW) ] _[ q + (j / KW) mod KH ] _[ p + j mod KW ] in
    tlet wm :=
      GEN [ k < K ] GEN [ j < C * (KH * KW) ]
        w _[ k ] _[ j / (KH * KW) ] _[ (j / KW) mod KH ] _[ j mod KW ] in
    GEN [ n < B ] GEN [ k < K ] GEN [ q < H - KH + 1 ] GEN [ p < W - KW + 1 ]
      SUM [ j < C * (KH * KW) ] wm _[ k ] _[ j ] * a _[ n ] _[ q ] _[ p ] _[ j ].

  Lemma conv2d_gemm_is_expected : conv2d_gemm = conv2d_gemm_expected.
  Proof. same_program. Qed.
End Im2col2D.
