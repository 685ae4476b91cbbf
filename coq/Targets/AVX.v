(** * AVX2 and AVX-512F vector instructions as ATL specifications.

    The shared contract of issue 5 (Exo thesis Sec. 2.3 and 3.4:
    instructions are procedures whose body is their specification).  Each
    instruction is a definition whose body says what it computes on one
    vector of 8 (AVX2, [__m256]) or 16 (AVX-512F, [__m512]) lanes; the
    lowering emits the intrinsic named in the comment.  The definitions are
    generic over the scalar class, like the rest of the library: over [R]
    they are the single-precision float instructions up to rounding, which
    the ATL semantics does not model (Exo thesis Sec. 4: its semantics is
    also over the reals).

    A vector is a width-[w] tensor [Z -> S]: out of [0, w) it is zero, as
    any generation.  Loads take a rank-1 tensor and an offset; masked loads
    and stores take the number of active lanes [n] (lanes [n ..] are zero):
    - [loadu v o]       = [GEN [ l < w ] v _[ o + l ]]          ([_mm256_loadu_ps(&v[o])])
    - [maskload v o n]  = [GEN [ l < w ] |[ l <? n ]| v _[ o + l ]]  ([_mm256_maskload_ps])
    - [broadcast x]     = [GEN [ l < w ] x]                      ([_mm256_set1_ps(x)])
    - [mul a b]         = [GEN [ l < w ] a _[ l ] * b _[ l ]]    ([_mm256_mul_ps])
    - [add a b]         = [GEN [ l < w ] a _[ l ] + b _[ l ]]    ([_mm256_add_ps])
    - [fmadd a b c]     = [GEN [ l < w ] a _[ l ] * b _[ l ] + c _[ l ]]  ([_mm256_fmadd_ps])
    - [max a b]         = [GEN [ l < w ] smax (a _[ l ]) (b _[ l ])]      ([_mm256_max_ps])
    - [storeu v]        = [GEN [ l < w ] v _[ l ]]: the identity on a
      vector, marking where the value is stored ([_mm256_storeu_ps]);
    - [maskstore n v]   = [GEN [ l < w ] |[ l <? n ]| v _[ l ]]
      ([_mm256_maskstore_ps] of the first [n] lanes).

    [smax] comes from the class [ScalarMax] below (instances for [R] and
    [Z]); docs/decisions.md says why max is a separate class. *)

From Coq Require Import ZArith Reals Lia.
From Verisched Require Import Tensor.Scalar Tensor.Core Tensor.Sum Tensor.Arith.
From Verisched Require Import Rewrites.Gen Rewrites.Guard Targets.Instr.
From Verisched Require Import Reshape.Defs Reshape.Duals.
Open Scope Z_scope. Open Scope atl_scope.

(** ** An ordered scalar: the maximum *)

Class ScalarMax (S : Type) := { smax : S -> S -> S }.
#[global] Hint Mode ScalarMax ! : typeclass_instances.
Arguments smax {S _} (a b)%atl_scope.

#[global] Instance ScalarMax_R : ScalarMax R := { smax := Rmax }.
#[global] Instance ScalarMax_Z : ScalarMax Z := { smax := Z.max }.

Section AVX.
  Context {S : Type} `{Scalar S}.

  (** ** AVX2: 8 lanes *)

  Definition avx2_loadu (v : Z -> S) (o : Z) : Z -> S :=
    GEN [ l < 8 ] v _[ o + l ].
  Definition avx2_maskload (v : Z -> S) (o n : Z) : Z -> S :=
    GEN [ l < 8 ] |[ l <? n ]| v _[ o + l ].
  Definition avx2_broadcast (x : S) : Z -> S :=
    GEN [ l < 8 ] x.
  Definition avx2_mul (a b : Z -> S) : Z -> S :=
    GEN [ l < 8 ] a _[ l ] * b _[ l ].
  Definition avx2_add (a b : Z -> S) : Z -> S :=
    GEN [ l < 8 ] a _[ l ] + b _[ l ].
  Definition avx2_fmadd (a b c : Z -> S) : Z -> S :=
    GEN [ l < 8 ] a _[ l ] * b _[ l ] + c _[ l ].
  Definition avx2_storeu (v : Z -> S) : Z -> S :=
    GEN [ l < 8 ] v _[ l ].
  Definition avx2_maskstore (n : Z) (v : Z -> S) : Z -> S :=
    GEN [ l < 8 ] |[ l <? n ]| v _[ l ].
  Definition avx2_max `{ScalarMax S} (a b : Z -> S) : Z -> S :=
    GEN [ l < 8 ] smax (a _[ l ]) (b _[ l ]).

  (** ** AVX-512F: 16 lanes *)

  Definition avx512_loadu (v : Z -> S) (o : Z) : Z -> S :=
    GEN [ l < 16 ] v _[ o + l ].
  Definition avx512_maskload (v : Z -> S) (o n : Z) : Z -> S :=
    GEN [ l < 16 ] |[ l <? n ]| v _[ o + l ].
  Definition avx512_broadcast (x : S) : Z -> S :=
    GEN [ l < 16 ] x.
  Definition avx512_mul (a b : Z -> S) : Z -> S :=
    GEN [ l < 16 ] a _[ l ] * b _[ l ].
  Definition avx512_add (a b : Z -> S) : Z -> S :=
    GEN [ l < 16 ] a _[ l ] + b _[ l ].
  Definition avx512_fmadd (a b c : Z -> S) : Z -> S :=
    GEN [ l < 16 ] a _[ l ] * b _[ l ] + c _[ l ].
  Definition avx512_storeu (v : Z -> S) : Z -> S :=
    GEN [ l < 16 ] v _[ l ].
  Definition avx512_maskstore (n : Z) (v : Z -> S) : Z -> S :=
    GEN [ l < 16 ] |[ l <? n ]| v _[ l ].
  Definition avx512_max `{ScalarMax S} (a b : Z -> S) : Z -> S :=
    GEN [ l < 16 ] smax (a _[ l ]) (b _[ l ]).

  (** ** Defining equations, usable by [rw] (specification to call) *)

  Lemma avx2_loadu_spec v o : (GEN [ l < 8 ] v _[ o + l ]) = avx2_loadu v o.
  Proof. reflexivity. Qed.
  Lemma avx2_maskload_spec v o n :
    (GEN [ l < 8 ] |[ l <? n ]| v _[ o + l ]) = avx2_maskload v o n.
  Proof. reflexivity. Qed.
  Lemma avx2_broadcast_spec (x : S) : (GEN [ l < 8 ] x) = avx2_broadcast x.
  Proof. reflexivity. Qed.
  Lemma avx2_mul_spec a b : (GEN [ l < 8 ] a _[ l ] * b _[ l ]) = avx2_mul a b.
  Proof. reflexivity. Qed.
  Lemma avx2_add_spec a b : (GEN [ l < 8 ] a _[ l ] + b _[ l ]) = avx2_add a b.
  Proof. reflexivity. Qed.
  Lemma avx2_fmadd_spec a b c :
    (GEN [ l < 8 ] a _[ l ] * b _[ l ] + c _[ l ]) = avx2_fmadd a b c.
  Proof. reflexivity. Qed.
  Lemma avx2_storeu_spec v : (GEN [ l < 8 ] v _[ l ]) = avx2_storeu v.
  Proof. reflexivity. Qed.
  Lemma avx2_maskstore_spec n v :
    (GEN [ l < 8 ] |[ l <? n ]| v _[ l ]) = avx2_maskstore n v.
  Proof. reflexivity. Qed.
  Lemma avx2_max_spec `{ScalarMax S} a b :
    (GEN [ l < 8 ] smax (a _[ l ]) (b _[ l ])) = avx2_max a b.
  Proof. reflexivity. Qed.

  Lemma avx512_loadu_spec v o : (GEN [ l < 16 ] v _[ o + l ]) = avx512_loadu v o.
  Proof. reflexivity. Qed.
  Lemma avx512_maskload_spec v o n :
    (GEN [ l < 16 ] |[ l <? n ]| v _[ o + l ]) = avx512_maskload v o n.
  Proof. reflexivity. Qed.
  Lemma avx512_broadcast_spec (x : S) : (GEN [ l < 16 ] x) = avx512_broadcast x.
  Proof. reflexivity. Qed.
  Lemma avx512_mul_spec a b : (GEN [ l < 16 ] a _[ l ] * b _[ l ]) = avx512_mul a b.
  Proof. reflexivity. Qed.
  Lemma avx512_add_spec a b : (GEN [ l < 16 ] a _[ l ] + b _[ l ]) = avx512_add a b.
  Proof. reflexivity. Qed.
  Lemma avx512_fmadd_spec a b c :
    (GEN [ l < 16 ] a _[ l ] * b _[ l ] + c _[ l ]) = avx512_fmadd a b c.
  Proof. reflexivity. Qed.
  Lemma avx512_storeu_spec v : (GEN [ l < 16 ] v _[ l ]) = avx512_storeu v.
  Proof. reflexivity. Qed.
  Lemma avx512_maskstore_spec n v :
    (GEN [ l < 16 ] |[ l <? n ]| v _[ l ]) = avx512_maskstore n v.
  Proof. reflexivity. Qed.
  Lemma avx512_max_spec `{ScalarMax S} a b :
    (GEN [ l < 16 ] smax (a _[ l ]) (b _[ l ])) = avx512_max a b.
  Proof. reflexivity. Qed.
End AVX.

(** ** Splitting a loop into vectors

    Exo's [divide_loop] with a cut tail (Exo thesis Sec. 3.3), as one
    rewrite: [GENR [ lo <= x < hi ] f x], of extent [N = hi - lo], is [q =
    N / w] full vectors of [w] lanes, with no guard, and the remaining
    [cdiv N w - q] (0 or 1) vectors, whose lanes past [N] are guarded
    off; flattened and truncated back to [N].  The lane [l] of vector [io]
    is element [w * io + l]. *)
Section Vectorize.
  Context {X : Type} `{TensorLaws X}.

  Lemma gen_vectorize w lo hi N q (f : Z -> X) :
    (N = hi - lo)%Z -> (q = N / w)%Z -> (0 < w)%Z -> (0 <= N)%Z ->
    genr lo hi f =
    trunc_r N (flatten (cdiv N w) w
      (concat q (cdiv N w - q)
         (GEN [ io < q ] GEN [ l < w ] f (lo + (w * io + l))%Z)
         (GENR [ q <= io < cdiv N w ] GEN [ l < w ]
            |[ (w * io + l <? N)%Z ]| f (lo + (w * io + l))%Z))).
  Proof.
    intros HN Hq Hw HN0.
    rewrite (gen_shift lo hi f), <- HN, (gen_tile w N) by lia.
    assert (Hq0 : 0 <= q <= cdiv N w).
    { subst q; split; [apply Z.div_pos; lia|]; unfold cdiv.
      apply Z.div_le_mono; lia. }
    rewrite (gen_concat q (cdiv N w)) by lia.
    f_equal; f_equal; f_equal.
    - apply genr_ext_ctx; intros io Hio; apply genr_ext_ctx; intros l Hl.
      replace (io * w + l)%Z with (w * io + l)%Z by ring.
      rewrite guard_elim; [reflexivity|].
      apply Z.ltb_lt; subst q.
      assert (w * (N / w) <= N)%Z by (apply Z.mul_div_le; lia).
      assert (w * (io + 1) <= w * (N / w))%Z by (apply Z.mul_le_mono_nonneg_l; lia). nia.
    - apply genr_ext_ctx; intros io Hio; apply genr_ext_ctx; intros l Hl.
      replace (io * w + l)%Z with (w * io + l)%Z by ring; reflexivity.
  Qed.
End Vectorize.

Arguments gen_vectorize {X _ _} (w lo hi N q)%Z f%atl_scope.

(** [|[ p ]| e] as [|[ p ]| |[ p ]| e]: keep a lane guard inside a masked
    store (its loads must stay in bounds too). *)
Lemma guard_dup {X} `{TensorElem X} p (e : X) : |[ p ]| e = |[ p ]| (|[ p ]| e).
Proof. destruct p; reflexivity. Qed.

(** ** Lane-wise lemmas, for any width

    A lane-wise operation on generations of one width is the generation
    of the operation: reading a generation at a lane inside it gives the
    body back ([get_gen]). *)

Section Lanes.
  Context {S : Type} `{ScalarLaws S}.

  Lemma lanes_map2 w (op : S -> S -> S) (f g : Z -> S) :
    genr 0 w (fun l => op (f l) (g l)) =
    genr 0 w (fun l => op ((genr 0 w f) _[ l ]) ((genr 0 w g) _[ l ])).
  Proof. apply genr_ext_ctx; intros l Hl; rewrite !get_gen by lia; reflexivity. Qed.

  Lemma lanes_map3 w (op : S -> S -> S -> S) (f g h : Z -> S) :
    genr 0 w (fun l => op (f l) (g l) (h l)) =
    genr 0 w (fun l => op ((genr 0 w f) _[ l ]) ((genr 0 w g) _[ l ]) ((genr 0 w h) _[ l ])).
  Proof. apply genr_ext_ctx; intros l Hl; rewrite !get_gen by lia; reflexivity. Qed.

  Lemma lanes_tadd w (f g : Z -> S) :
    genr 0 w f <+> genr 0 w g = genr 0 w (fun l => f l <+> g l).
  Proof. apply tadd_gen. Qed.

  Lemma lanes_guard_shift w o N (f : Z -> S) :
    genr 0 w (fun l => |[ o + l <? N ]| f l) = genr 0 w (fun l => |[ l <? N - o ]| f l).
  Proof.
    apply genr_ext_ctx; intros l Hl; f_equal.
    destruct (Z.ltb_spec (o + l) N), (Z.ltb_spec l (N - o)); lia.
  Qed.
End Lanes.

(** ** Bringing code into the form of the avx2 instructions (width 8) *)

Section avx2Helpers.
  Context {S : Type} `{ScalarLaws S}.

  (** Lane-wise [+], [<+>] (on scalars, the same), [*], [a * b + c], max. *)
  Lemma avx2_add_gen (f g : Z -> S) :
    (GEN [ l < 8 ] f l + g l) = avx2_add (GEN [ l < 8 ] f l) (GEN [ l < 8 ] g l).
  Proof. apply (lanes_map2 8 sadd). Qed.

  Lemma avx2_add_gen_tadd (f g : Z -> S) :
    (GEN [ l < 8 ] f l <+> g l) = avx2_add (GEN [ l < 8 ] f l) (GEN [ l < 8 ] g l).
  Proof. apply (lanes_map2 8 sadd). Qed.

  (** Two vectors added with [<+>] (zero outside their lanes). *)
  Lemma avx2_add_tadd (f g : Z -> S) :
    (GEN [ l < 8 ] f l) <+> (GEN [ l < 8 ] g l) = avx2_add (GEN [ l < 8 ] f l) (GEN [ l < 8 ] g l).
  Proof. rewrite lanes_tadd; apply (lanes_map2 8 sadd). Qed.

  Lemma avx2_mul_gen (f g : Z -> S) :
    (GEN [ l < 8 ] f l * g l) = avx2_mul (GEN [ l < 8 ] f l) (GEN [ l < 8 ] g l).
  Proof. apply (lanes_map2 8 smul). Qed.

  Lemma avx2_fmadd_gen (f g h : Z -> S) :
    (GEN [ l < 8 ] f l * g l + h l) =
    avx2_fmadd (GEN [ l < 8 ] f l) (GEN [ l < 8 ] g l) (GEN [ l < 8 ] h l).
  Proof. apply (lanes_map3 8 (fun a b c => a * b + c)). Qed.

  Lemma avx2_max_gen `{ScalarMax S} (f g : Z -> S) :
    (GEN [ l < 8 ] smax (f l) (g l)) = avx2_max (GEN [ l < 8 ] f l) (GEN [ l < 8 ] g l).
  Proof. apply (lanes_map2 8 smax). Qed.

  (** A lane-free scalar times a contiguous load. *)
  Lemma avx2_mul_broadcast_loadu (x : S) (v : Z -> S) (o : Z) :
    (GEN [ l < 8 ] x * v _[ o + l ]) = avx2_mul (avx2_broadcast x) (avx2_loadu v o).
  Proof. apply (lanes_map2 8 smul (fun _ => x) (fun l => v _[ o + l ])). Qed.

  Lemma avx2_mul_loadu_broadcast (x : S) (v : Z -> S) (o : Z) :
    (GEN [ l < 8 ] v _[ o + l ] * x) = avx2_mul (avx2_loadu v o) (avx2_broadcast x).
  Proof. apply (lanes_map2 8 smul (fun l => v _[ o + l ]) (fun _ => x)). Qed.

  (** A multiply whose result is added is a fused multiply-add (exact in
      the ATL semantics; in floats [fmadd] rounds once instead of twice). *)
  Lemma avx2_add_mul_fmadd (a b c : Z -> S) : avx2_add (avx2_mul a b) c = avx2_fmadd a b c.
  Proof.
    unfold avx2_add, avx2_mul, avx2_fmadd; apply genr_ext_ctx; intros l Hl.
    rewrite get_gen by lia; reflexivity.
  Qed.

  Lemma avx2_add_comm (a b : Z -> S) : avx2_add a b = avx2_add b a.
  Proof. unfold avx2_add; apply genr_ext_ctx; intros; apply sadd_comm. Qed.

  (** Tails: a bounds guard [o + l < N] on a contiguous load is its mask of
      [N - o] lanes; a lane guard [l < n] on a whole vector is a masked store. *)
  Lemma avx2_maskload_guard (v : Z -> S) (o N : Z) :
    (GEN [ l < 8 ] |[ o + l <? N ]| v _[ o + l ]) = avx2_maskload v o (N - o).
  Proof. apply (lanes_guard_shift 8 o N (fun l => v _[ o + l ])). Qed.

  Lemma avx2_maskstore_gen (n : Z) (f : Z -> S) :
    (GEN [ l < 8 ] |[ l <? n ]| f l) = avx2_maskstore n (GEN [ l < 8 ] f l).
  Proof.
    unfold avx2_maskstore; apply genr_ext_ctx; intros l Hl; rewrite get_gen by lia; reflexivity.
  Qed.

  Lemma avx2_maskstore_guard (n : Z) (f : Z -> S) :
    (GEN [ l < 8 ] |[ l <? n ]| f l) = avx2_maskstore n (GEN [ l < 8 ] |[ l <? n ]| f l).
  Proof. rewrite <- avx2_maskstore_gen; apply genr_ext_ctx; intros; apply guard_dup. Qed.

  (** Mark a vector as stored (apply once, with a pattern). *)
  Lemma avx2_storeu_gen (f : Z -> S) : (GEN [ l < 8 ] f l) = avx2_storeu (GEN [ l < 8 ] f l).
  Proof.
    unfold avx2_storeu; apply genr_ext_ctx; intros l Hl; rewrite get_gen by lia; reflexivity.
  Qed.
End avx2Helpers.

(** ** Bringing code into the form of the avx512 instructions (width 16) *)

Section avx512Helpers.
  Context {S : Type} `{ScalarLaws S}.

  (** Lane-wise [+], [<+>] (on scalars, the same), [*], [a * b + c], max. *)
  Lemma avx512_add_gen (f g : Z -> S) :
    (GEN [ l < 16 ] f l + g l) = avx512_add (GEN [ l < 16 ] f l) (GEN [ l < 16 ] g l).
  Proof. apply (lanes_map2 16 sadd). Qed.

  Lemma avx512_add_gen_tadd (f g : Z -> S) :
    (GEN [ l < 16 ] f l <+> g l) = avx512_add (GEN [ l < 16 ] f l) (GEN [ l < 16 ] g l).
  Proof. apply (lanes_map2 16 sadd). Qed.

  (** Two vectors added with [<+>] (zero outside their lanes). *)
  Lemma avx512_add_tadd (f g : Z -> S) :
    (GEN [ l < 16 ] f l) <+> (GEN [ l < 16 ] g l) = avx512_add (GEN [ l < 16 ] f l) (GEN [ l < 16 ] g l).
  Proof. rewrite lanes_tadd; apply (lanes_map2 16 sadd). Qed.

  Lemma avx512_mul_gen (f g : Z -> S) :
    (GEN [ l < 16 ] f l * g l) = avx512_mul (GEN [ l < 16 ] f l) (GEN [ l < 16 ] g l).
  Proof. apply (lanes_map2 16 smul). Qed.

  Lemma avx512_fmadd_gen (f g h : Z -> S) :
    (GEN [ l < 16 ] f l * g l + h l) =
    avx512_fmadd (GEN [ l < 16 ] f l) (GEN [ l < 16 ] g l) (GEN [ l < 16 ] h l).
  Proof. apply (lanes_map3 16 (fun a b c => a * b + c)). Qed.

  Lemma avx512_max_gen `{ScalarMax S} (f g : Z -> S) :
    (GEN [ l < 16 ] smax (f l) (g l)) = avx512_max (GEN [ l < 16 ] f l) (GEN [ l < 16 ] g l).
  Proof. apply (lanes_map2 16 smax). Qed.

  (** A lane-free scalar times a contiguous load. *)
  Lemma avx512_mul_broadcast_loadu (x : S) (v : Z -> S) (o : Z) :
    (GEN [ l < 16 ] x * v _[ o + l ]) = avx512_mul (avx512_broadcast x) (avx512_loadu v o).
  Proof. apply (lanes_map2 16 smul (fun _ => x) (fun l => v _[ o + l ])). Qed.

  Lemma avx512_mul_loadu_broadcast (x : S) (v : Z -> S) (o : Z) :
    (GEN [ l < 16 ] v _[ o + l ] * x) = avx512_mul (avx512_loadu v o) (avx512_broadcast x).
  Proof. apply (lanes_map2 16 smul (fun l => v _[ o + l ]) (fun _ => x)). Qed.

  (** A multiply whose result is added is a fused multiply-add (exact in
      the ATL semantics; in floats [fmadd] rounds once instead of twice). *)
  Lemma avx512_add_mul_fmadd (a b c : Z -> S) : avx512_add (avx512_mul a b) c = avx512_fmadd a b c.
  Proof.
    unfold avx512_add, avx512_mul, avx512_fmadd; apply genr_ext_ctx; intros l Hl.
    rewrite get_gen by lia; reflexivity.
  Qed.

  Lemma avx512_add_comm (a b : Z -> S) : avx512_add a b = avx512_add b a.
  Proof. unfold avx512_add; apply genr_ext_ctx; intros; apply sadd_comm. Qed.

  (** Tails: a bounds guard [o + l < N] on a contiguous load is its mask of
      [N - o] lanes; a lane guard [l < n] on a whole vector is a masked store. *)
  Lemma avx512_maskload_guard (v : Z -> S) (o N : Z) :
    (GEN [ l < 16 ] |[ o + l <? N ]| v _[ o + l ]) = avx512_maskload v o (N - o).
  Proof. apply (lanes_guard_shift 16 o N (fun l => v _[ o + l ])). Qed.

  Lemma avx512_maskstore_gen (n : Z) (f : Z -> S) :
    (GEN [ l < 16 ] |[ l <? n ]| f l) = avx512_maskstore n (GEN [ l < 16 ] f l).
  Proof.
    unfold avx512_maskstore; apply genr_ext_ctx; intros l Hl; rewrite get_gen by lia; reflexivity.
  Qed.

  Lemma avx512_maskstore_guard (n : Z) (f : Z -> S) :
    (GEN [ l < 16 ] |[ l <? n ]| f l) = avx512_maskstore n (GEN [ l < 16 ] |[ l <? n ]| f l).
  Proof. rewrite <- avx512_maskstore_gen; apply genr_ext_ctx; intros; apply guard_dup. Qed.

  (** Mark a vector as stored (apply once, with a pattern). *)
  Lemma avx512_storeu_gen (f : Z -> S) : (GEN [ l < 16 ] f l) = avx512_storeu (GEN [ l < 16 ] f l).
  Proof.
    unfold avx512_storeu; apply genr_ext_ctx; intros l Hl; rewrite get_gen by lia; reflexivity.
  Qed.
End avx512Helpers.

(** ** One lane of a load or broadcast (written for Examples/Sgemm.v)

    A lane of a product, written as a lane of an instruction's result, so
    that [use_instr avx2_mul] finds [GEN [ l < 8 ] a _[ l ] * b _[ l ]]. *)
Section AVXHelpers.
  Context {S : Type} `{ScalarLaws S}.

  Lemma avx2_loadu_lane (v : Z -> S) l : 0 <= l < 8 -> get v l = get (avx2_loadu v 0) l.
  Proof. intros; unfold avx2_loadu; rewrite get_gen by lia; reflexivity. Qed.

  Lemma avx2_broadcast_lane (x : S) (v : Z -> S) l :
    0 <= l < 8 -> smul x (get v l) = smul (get (avx2_broadcast x) l) (get v l).
  Proof. intros; unfold avx2_broadcast; rewrite get_gen by lia; reflexivity. Qed.

  Lemma avx512_loadu_lane (v : Z -> S) l : 0 <= l < 16 -> get v l = get (avx512_loadu v 0) l.
  Proof. intros; unfold avx512_loadu; rewrite get_gen by lia; reflexivity. Qed.

  Lemma avx512_broadcast_lane (x : S) (v : Z -> S) l :
    0 <= l < 16 -> smul x (get v l) = smul (get (avx512_broadcast x) l) (get v l).
  Proof. intros; unfold avx512_broadcast; rewrite get_gen by lia; reflexivity. Qed.
End AVXHelpers.

(** ** Registration: held abstract by [same_program], unfolded by [check_safe] *)

#[global] Instance AtlInstr_avx2_loadu : AtlInstr (@avx2_loadu) := {}.
#[global] Instance AtlInstr_avx2_maskload : AtlInstr (@avx2_maskload) := {}.
#[global] Instance AtlInstr_avx2_broadcast : AtlInstr (@avx2_broadcast) := {}.
#[global] Instance AtlInstr_avx2_mul : AtlInstr (@avx2_mul) := {}.
#[global] Instance AtlInstr_avx2_add : AtlInstr (@avx2_add) := {}.
#[global] Instance AtlInstr_avx2_fmadd : AtlInstr (@avx2_fmadd) := {}.
#[global] Instance AtlInstr_avx2_storeu : AtlInstr (@avx2_storeu) := {}.
#[global] Instance AtlInstr_avx2_maskstore : AtlInstr (@avx2_maskstore) := {}.
#[global] Instance AtlInstr_avx2_max : AtlInstr (@avx2_max) := {}.
#[global] Instance AtlInstr_avx512_loadu : AtlInstr (@avx512_loadu) := {}.
#[global] Instance AtlInstr_avx512_maskload : AtlInstr (@avx512_maskload) := {}.
#[global] Instance AtlInstr_avx512_broadcast : AtlInstr (@avx512_broadcast) := {}.
#[global] Instance AtlInstr_avx512_mul : AtlInstr (@avx512_mul) := {}.
#[global] Instance AtlInstr_avx512_add : AtlInstr (@avx512_add) := {}.
#[global] Instance AtlInstr_avx512_fmadd : AtlInstr (@avx512_fmadd) := {}.
#[global] Instance AtlInstr_avx512_storeu : AtlInstr (@avx512_storeu) := {}.
#[global] Instance AtlInstr_avx512_maskstore : AtlInstr (@avx512_maskstore) := {}.
#[global] Instance AtlInstr_avx512_max : AtlInstr (@avx512_max) := {}.
