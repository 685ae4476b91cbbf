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

From Coq Require Import ZArith Reals.
From Verisched Require Import Tensor.Scalar Tensor.Core.
From Verisched Require Import Targets.Instr.
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
