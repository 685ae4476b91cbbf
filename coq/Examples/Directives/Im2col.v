(** * im2col (ATL paper, Sec. 8.3, Fig. 12), with directives.

    Examples/Im2col.v hoists the bound read of [x] out of every loop by
    one [rw] per loop: [let_sum_lift0] / [let_gen_lift0] where the value
    mentions the loop's index (it gains a dimension) and [ll_gen] where it
    does not (it just moves past the loop).  That chain is Halide's
    [compute_root] of the producer (Halide-semantics Sec. 8.3, compute
    and store at the root; Exo's [lift_alloc], Exo thesis Table 3.1), and
    [compute_root a] (Rewrites/Producers.v) performs it in one directive,
    choosing the lifting or the plain move at each loop and keeping the
    program's loop names on the buffer's dimensions.

    - [conv1d_im2col]: 6 steps -> 2 lines ([name_buffer], [compute_root]).
    - [conv1d_im2col_safe]: 8 steps -> 4 lines (the two guard steps that
      make the buffer's reads provably in bounds stay [rw]s).
    - [conv2d_gemm]: 14 steps -> 5 lines ([sum_flatten3], then a
      [name_buffer] and a [compute_root] per packed operand).  The packed
      weights are hoisted first so that [compute_root a] then moves the
      im2col buffer past them, giving the original's let order ([a]
      outermost).

    Each result is the same program as Examples/Im2col.v's (the
    [_same] lemmas, [same_program]); [check_safe] proves the safe 1-D
    variant and the 2-D one in bounds. *)

From Coq Require Import ZArith List.
Import ListNotations.
From Coq Require Import derive.Derive.
From Verisched Require Import ATLGeneric Rewrites.Safety Examples.Im2col.
Open Scope Z_scope. Open Scope atl_scope.

Section Im2col1DDirectives.
  Context {S : Type} `{ScalarLaws S}.
  Variables (B K C W R : Z).
  Variables (x w : Z -> Z -> Z -> S).
  Hypotheses (Hx : shaped [B; C; W] x) (Hw : shaped [K; C; R] w).

  Derive conv1d_im2col_directive SuchThat (conv1d B K C W R x w = conv1d_im2col_directive)
    As conv1d_im2col_directive_correct.
  Proof.
    reschedule.
    name_buffer (x _[ _ ] _[ _ ] _[ _ + _ ]) as a.  (* let a := x[n;c;p+r] in .. *)
    compute_root a.                                 (* out of r, c, p; past k; out of n *)
    done.
  Qed.

  Lemma conv1d_im2col_directive_same :
    conv1d_im2col_directive = conv1d_im2col_expected B K C W R x w.
  Proof. unfold conv1d_im2col_expected; cbv beta; same_program. Qed.

  Lemma conv1d_im2col_directive_im2col :
    conv1d_im2col_directive = conv1d_im2col B K C W R x w.
  Proof.
    rewrite conv1d_im2col_directive_same; symmetry; apply conv1d_im2col_is_expected.
  Qed.

  Derive conv1d_im2col_safe_directive
    SuchThat (conv1d B K C W R x w = conv1d_im2col_safe_directive)
    As conv1d_im2col_safe_directive_correct.
  Proof.
    reschedule.
    rw (get_bound_guard W []) at (x _[ _ ] _[ _ ] _[ _ ]).  (* guard the read by x's shape *)
    rw guard_and_l.                                        (* 0 <= p + r: loop bounds *)
    name_buffer (|[ _ ]| x _[ _ ] _[ _ ] _[ _ ]) as a.
    compute_root a.
    check_safe.
    done.
  Qed.

  Lemma conv1d_im2col_safe_directive_same :
    conv1d_im2col_safe_directive = conv1d_im2col_safe_expected B K C W R x w.
  Proof. unfold conv1d_im2col_safe_expected; cbv beta; same_program. Qed.

  Lemma conv1d_im2col_safe_directive_safe :
    conv1d_im2col_safe_directive = conv1d_im2col_safe B K C W R x w.
  Proof.
    rewrite conv1d_im2col_safe_directive_same; symmetry;
      apply conv1d_im2col_safe_is_expected.
  Qed.
End Im2col1DDirectives.

Section Im2col2DDirectives.
  Context {S : Type} {Sc : Scalar S} {ScL : ScalarLaws S}.
  Variables (B K C H W KH KW : Z).
  Hypotheses (HKH : 0 < KH) (HKW : 0 < KW).
  Variables (x w : Z -> Z -> Z -> Z -> S).
  Hypotheses (Hx : shaped [B; C; H; W] x) (Hw : shaped [K; C; KH; KW] w).

  Derive conv2d_gemm_directive SuchThat (conv2d B K C H W KH KW x w = conv2d_gemm_directive)
    As conv2d_gemm_directive_correct.
  Proof.
    reschedule.
    rw sum_flatten3.                                       (* one reduction j for (c, s, r) *)
    name_buffer (w _[ _ ] _[ _ ] _[ _ ] _[ _ ]) as wm.     (* the packed weights ... *)
    compute_root wm.                                       (* ... K x (C KH KW), once *)
    name_buffer (x _[ _ ] _[ _ ] _[ _ ] _[ _ ]) as a.      (* the im2col buffer ... *)
    compute_root a.                                        (* ... outermost, past wm *)
    check_safe.
    done.
  Qed.

  Lemma conv2d_gemm_directive_same :
    conv2d_gemm_directive = conv2d_gemm_expected B K C H W KH KW x w.
  Proof. unfold conv2d_gemm_expected; cbv beta; same_program. Qed.

  Lemma conv2d_gemm_directive_gemm :
    conv2d_gemm_directive = conv2d_gemm B K C H W KH KW x w.
  Proof. rewrite conv2d_gemm_directive_same; symmetry; apply conv2d_gemm_is_expected. Qed.
End Im2col2DDirectives.
