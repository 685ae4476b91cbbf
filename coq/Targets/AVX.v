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
    - [maskload_range v o a b] = [GEN [ l < w ] |[ a <=? l ]| |[ l <? b ]| v _[ o + l ]]
    - [maskload_min v o a b] = [GEN [ l < w ] |[ l <? a ]| |[ l <? b ]| v _[ o + l ]]
      (the first [min a b] lanes: a mask count the index language has no [min] for)
    - [maskload_range_min v o a b c] = [GEN [ l < w ] |[ a <=? l ]| |[ l <? b ]|
      |[ l <? c ]| v _[ o + l ]] (both: a border or a point [i =? 3] in a tail)
      (the same intrinsic, with the mask of lanes [a <= l < b]: a border
      on either side);
    - [broadcast x]     = [GEN [ l < w ] x]                      ([_mm256_set1_ps(x)])
    - [maskbroadcast_range x a b] = [GEN [ l < w ] |[ a <=? l ]| |[ l <? b ]| x]
      (a broadcast under a border's mask: a guarded constant);
    - [maskload_min3 v o a b c], [maskload_range_min3 v o a b c d] and
      [maskbroadcast_range_min x a b c]: three upper bounds on a load, a lower
      and three upper ones, a lower and two upper ones on a constant (a window
      under a split by a factor no multiple of the width);
    - [mul a b]         = [GEN [ l < w ] a _[ l ] * b _[ l ]]    ([_mm256_mul_ps])
    - [add a b]         = [GEN [ l < w ] a _[ l ] + b _[ l ]]    ([_mm256_add_ps])
    - [fmadd a b c]     = [GEN [ l < w ] a _[ l ] * b _[ l ] + c _[ l ]]  ([_mm256_fmadd_ps])
    - [max a b]         = [GEN [ l < w ] smax (a _[ l ]) (b _[ l ])]      ([_mm256_max_ps])
    - [storeu v]        = [GEN [ l < w ] v _[ l ]]: the identity on a
      vector, marking where the value is stored ([_mm256_storeu_ps]);
    - [maskstore n v]   = [GEN [ l < w ] |[ l <? n ]| v _[ l ]]
      ([_mm256_maskstore_ps] of the first [n] lanes);
    - [reduce_add v]    = [SUM [ l < w ] v _[ l ]]: the sum of the lanes, a
      scalar (the lowering's helpers [vs_hsum16] and [vs_hsum8]: the halves
      added, then their halves): over [R] any order of the adds is this sum.

    [smax] comes from the class [ScalarMax] (Tensor/Scalar.v; its instance
    for [R] is in Tensor/ScalarR.v); docs/decisions.md says why max is a
    separate class.

    The instruction set is written once, for any width: [vec_loadu w] ...
    [vec_max w] are the specifications above, and the lemmas are stated
    once over constants that are the width-[w] instructions (class
    [LaneISA]).  AVX2 and AVX-512F are its two instances: [avx2_loadu] is
    [vec_loadu 8] unfolded (so its printed body names the literal width),
    [avx2_add_gen] is [vec_add_gen] at width 8, stated with [avx2_add]. *)

From Coq Require Import ZArith Lia.
From Verisched Require Import Tensor.Scalar Tensor.Core Tensor.Sum Tensor.Arith.
From Verisched Require Import Rewrites.Gen Rewrites.Guard Targets.Instr.
From Verisched Require Import Reshape.Defs Reshape.Duals.
Open Scope Z_scope. Open Scope atl_scope.

(** ** Memories: the vector registers

    A let placed in [AVX2_REG] ([AVX512_REG]) becomes [__m256] ([__m512])
    variables, one per vector (docs/decisions.md #14). *)

Inductive avx_memory := AVX2_REG | AVX512_REG.
#[global] Instance Memory_avx_memory : Memory avx_memory := {}.

(** ** The instructions of one width, once

    Each instruction is written once, for a width [w]; AVX2 and AVX-512F
    are its instances at 8 and 16 lanes below. *)

Section Specs.
  Context {S : Type} `{Scalar S} (w : Z).

  Definition vec_loadu (v : Z -> S) (o : Z) : Z -> S :=
    GEN [ l < w ] v _[ o + l ].
  Definition vec_maskload (v : Z -> S) (o n : Z) : Z -> S :=
    GEN [ l < w ] |[ l <? n ]| v _[ o + l ].
  Definition vec_broadcast (x : S) : Z -> S :=
    GEN [ l < w ] x.
  Definition vec_mul (a b : Z -> S) : Z -> S :=
    GEN [ l < w ] a _[ l ] * b _[ l ].
  Definition vec_add (a b : Z -> S) : Z -> S :=
    GEN [ l < w ] a _[ l ] + b _[ l ].
  Definition vec_fmadd (a b c : Z -> S) : Z -> S :=
    GEN [ l < w ] a _[ l ] * b _[ l ] + c _[ l ].
  Definition vec_storeu (v : Z -> S) : Z -> S :=
    GEN [ l < w ] v _[ l ].
  Definition vec_maskstore (n : Z) (v : Z -> S) : Z -> S :=
    GEN [ l < w ] |[ l <? n ]| v _[ l ].
  Definition vec_max `{ScalarMax S} (a b : Z -> S) : Z -> S :=
    GEN [ l < w ] smax (a _[ l ]) (b _[ l ]).
  (** The lanes [a <= l < b] of [v] from [o], zero elsewhere: a load cut by
      a border on either side (the masked lanes are not read). *)
  Definition vec_maskload_range (v : Z -> S) (o a b : Z) : Z -> S :=
    GEN [ l < w ] |[ a <=? l ]| |[ l <? b ]| v _[ o + l ].
  (** The lanes [l < a] and [l < b] of [v] from [o], zero elsewhere: two
      upper bounds on the lane of which neither is provably the tighter (a
      window [|[ i <? 5 ]|] in the tail of [GEN [ i < n ]], a split's guard
      inside vectors that do not divide its factor); the mask's count is
      their minimum. *)
  Definition vec_maskload_min (v : Z -> S) (o a b : Z) : Z -> S :=
    GEN [ l < w ] |[ l <? a ]| |[ l <? b ]| v _[ o + l ].
  (** A lower bound and two upper ones: a border, or a point guard
      [|[ i =? 3 ]|], in a tail that keeps the loop's own bound. *)
  Definition vec_maskload_range_min (v : Z -> S) (o a b c : Z) : Z -> S :=
    GEN [ l < w ] |[ a <=? l ]| |[ l <? b ]| |[ l <? c ]| v _[ o + l ].
  (** Three upper bounds on the lane, none provably the tightest: a window
      ([|[ i <? 21 ]|]) in the vectors' tail of a split by a factor no
      multiple of the width, whose guarded tail is the third; the mask's
      count is their minimum. *)
  Definition vec_maskload_min3 (v : Z -> S) (o a b c : Z) : Z -> S :=
    GEN [ l < w ] |[ l <? a ]| |[ l <? b ]| |[ l <? c ]| v _[ o + l ].
  (** A lower bound and three upper ones: a border or a window with both
      ends ([|[ 2 <=? i ]| |[ i <? 21 ]|]) in that tail. *)
  Definition vec_maskload_range_min3 (v : Z -> S) (o a b c d : Z) : Z -> S :=
    GEN [ l < w ] |[ a <=? l ]| |[ l <? b ]| |[ l <? c ]| |[ l <? d ]| v _[ o + l ].
  (** [x] in the lanes [a <= l < b], zero elsewhere: a constant under a
      border's guard ([|[ 1 <=? i ]| c]). *)
  Definition vec_maskbroadcast_range (x : S) (a b : Z) : Z -> S :=
    GEN [ l < w ] |[ a <=? l ]| |[ l <? b ]| x.
  (** [x] in the lanes [a <= l < b] and [l < c]: a constant under a window in
      full vectors of a split by a factor no multiple of the width, whose
      guarded tail is the other upper bound (one bound with no lower is
      [lanes_const_hi2]'s, Targets/Vectorize.v: [0 <=? l]). *)
  Definition vec_maskbroadcast_range_min (x : S) (a b c : Z) : Z -> S :=
    GEN [ l < w ] |[ a <=? l ]| |[ l <? b ]| |[ l <? c ]| x.
  (** The sum of the lanes (a horizontal add): [vectorize] of a reduction. *)
  Definition vec_reduce_add (v : Z -> S) : S :=
    SUM [ l < w ] v _[ l ].
End Specs.

(** ** AVX2 (8 lanes) and AVX-512F (16 lanes)

    The width-[w] definitions with [w] fixed and unfolded ([Eval]), so
    each instruction's body is its specification with the literal width:
    [Print avx2_loadu] shows [GEN [ l < 8 ] v _[ o + l ]] (what the Python
    registry is checked against, tests/test_vector_specs_coq.py), and
    [use_instr], which unfolds the instruction once, sees the ATL term. *)

Definition avx2_loadu {S : Type} `{Scalar S} :=
  Eval cbv beta delta [vec_loadu] in @vec_loadu S _ 8.
Definition avx2_maskload {S : Type} `{Scalar S} :=
  Eval cbv beta delta [vec_maskload] in @vec_maskload S _ 8.
Definition avx2_broadcast {S : Type} `{Scalar S} :=
  Eval cbv beta delta [vec_broadcast] in @vec_broadcast S _ 8.
Definition avx2_mul {S : Type} `{Scalar S} :=
  Eval cbv beta delta [vec_mul] in @vec_mul S _ 8.
Definition avx2_add {S : Type} `{Scalar S} :=
  Eval cbv beta delta [vec_add] in @vec_add S _ 8.
Definition avx2_fmadd {S : Type} `{Scalar S} :=
  Eval cbv beta delta [vec_fmadd] in @vec_fmadd S _ 8.
Definition avx2_storeu {S : Type} `{Scalar S} :=
  Eval cbv beta delta [vec_storeu] in @vec_storeu S _ 8.
Definition avx2_maskstore {S : Type} `{Scalar S} :=
  Eval cbv beta delta [vec_maskstore] in @vec_maskstore S _ 8.
Definition avx2_max {S : Type} `{Scalar S} `{ScalarMax S} :=
  Eval cbv beta delta [vec_max] in @vec_max S _ 8 _.

Definition avx512_loadu {S : Type} `{Scalar S} :=
  Eval cbv beta delta [vec_loadu] in @vec_loadu S _ 16.
Definition avx512_maskload {S : Type} `{Scalar S} :=
  Eval cbv beta delta [vec_maskload] in @vec_maskload S _ 16.
Definition avx512_broadcast {S : Type} `{Scalar S} :=
  Eval cbv beta delta [vec_broadcast] in @vec_broadcast S _ 16.
Definition avx512_mul {S : Type} `{Scalar S} :=
  Eval cbv beta delta [vec_mul] in @vec_mul S _ 16.
Definition avx512_add {S : Type} `{Scalar S} :=
  Eval cbv beta delta [vec_add] in @vec_add S _ 16.
Definition avx512_fmadd {S : Type} `{Scalar S} :=
  Eval cbv beta delta [vec_fmadd] in @vec_fmadd S _ 16.
Definition avx512_storeu {S : Type} `{Scalar S} :=
  Eval cbv beta delta [vec_storeu] in @vec_storeu S _ 16.
Definition avx512_maskstore {S : Type} `{Scalar S} :=
  Eval cbv beta delta [vec_maskstore] in @vec_maskstore S _ 16.
Definition avx512_max {S : Type} `{Scalar S} `{ScalarMax S} :=
  Eval cbv beta delta [vec_max] in @vec_max S _ 16 _.
Definition avx2_maskload_range {S : Type} `{Scalar S} :=
  Eval cbv beta delta [vec_maskload_range] in @vec_maskload_range S _ 8.
Definition avx512_maskload_range {S : Type} `{Scalar S} :=
  Eval cbv beta delta [vec_maskload_range] in @vec_maskload_range S _ 16.
Definition avx2_maskload_min {S : Type} `{Scalar S} :=
  Eval cbv beta delta [vec_maskload_min] in @vec_maskload_min S _ 8.
Definition avx512_maskload_min {S : Type} `{Scalar S} :=
  Eval cbv beta delta [vec_maskload_min] in @vec_maskload_min S _ 16.
Definition avx2_maskload_range_min {S : Type} `{Scalar S} :=
  Eval cbv beta delta [vec_maskload_range_min] in @vec_maskload_range_min S _ 8.
Definition avx512_maskload_range_min {S : Type} `{Scalar S} :=
  Eval cbv beta delta [vec_maskload_range_min] in @vec_maskload_range_min S _ 16.
Definition avx2_maskload_min3 {S : Type} `{Scalar S} :=
  Eval cbv beta delta [vec_maskload_min3] in @vec_maskload_min3 S _ 8.
Definition avx512_maskload_min3 {S : Type} `{Scalar S} :=
  Eval cbv beta delta [vec_maskload_min3] in @vec_maskload_min3 S _ 16.
Definition avx2_maskload_range_min3 {S : Type} `{Scalar S} :=
  Eval cbv beta delta [vec_maskload_range_min3] in @vec_maskload_range_min3 S _ 8.
Definition avx512_maskload_range_min3 {S : Type} `{Scalar S} :=
  Eval cbv beta delta [vec_maskload_range_min3] in @vec_maskload_range_min3 S _ 16.
Definition avx2_maskbroadcast_range_min {S : Type} `{Scalar S} :=
  Eval cbv beta delta [vec_maskbroadcast_range_min] in @vec_maskbroadcast_range_min S _ 8.
Definition avx512_maskbroadcast_range_min {S : Type} `{Scalar S} :=
  Eval cbv beta delta [vec_maskbroadcast_range_min] in @vec_maskbroadcast_range_min S _ 16.
Definition avx2_maskbroadcast_range {S : Type} `{Scalar S} :=
  Eval cbv beta delta [vec_maskbroadcast_range] in @vec_maskbroadcast_range S _ 8.
Definition avx512_maskbroadcast_range {S : Type} `{Scalar S} :=
  Eval cbv beta delta [vec_maskbroadcast_range] in @vec_maskbroadcast_range S _ 16.
Definition avx2_reduce_add {S : Type} `{Scalar S} :=
  Eval cbv beta delta [vec_reduce_add] in @vec_reduce_add S _ 8.
Definition avx512_reduce_add {S : Type} `{Scalar S} :=
  Eval cbv beta delta [vec_reduce_add] in @vec_reduce_add S _ 16.

(** ** Float64 lanes: AVX2 (4 lanes, [__m256d]) and AVX-512F (8 lanes, [__m512d])

    The same specifications at the widths of a register of doubles: over [R]
    the instructions do not depend on the element type, so [avx512pd_loadu] is
    [vec_loadu 8], as [avx2_loadu] is; the names say which C they become
    ([_mm512_loadu_pd]) and keep a float64 kernel's instructions apart from a
    float32 one's (docs/decisions.md #154). *)

Definition avx2pd_loadu {S : Type} `{Scalar S} :=
  Eval cbv beta delta [vec_loadu] in @vec_loadu S _ 4.
Definition avx2pd_maskload {S : Type} `{Scalar S} :=
  Eval cbv beta delta [vec_maskload] in @vec_maskload S _ 4.
Definition avx2pd_broadcast {S : Type} `{Scalar S} :=
  Eval cbv beta delta [vec_broadcast] in @vec_broadcast S _ 4.
Definition avx2pd_mul {S : Type} `{Scalar S} :=
  Eval cbv beta delta [vec_mul] in @vec_mul S _ 4.
Definition avx2pd_add {S : Type} `{Scalar S} :=
  Eval cbv beta delta [vec_add] in @vec_add S _ 4.
Definition avx2pd_fmadd {S : Type} `{Scalar S} :=
  Eval cbv beta delta [vec_fmadd] in @vec_fmadd S _ 4.
Definition avx2pd_storeu {S : Type} `{Scalar S} :=
  Eval cbv beta delta [vec_storeu] in @vec_storeu S _ 4.
Definition avx2pd_maskstore {S : Type} `{Scalar S} :=
  Eval cbv beta delta [vec_maskstore] in @vec_maskstore S _ 4.
Definition avx2pd_max {S : Type} `{Scalar S} `{ScalarMax S} :=
  Eval cbv beta delta [vec_max] in @vec_max S _ 4 _.
Definition avx2pd_maskload_range {S : Type} `{Scalar S} :=
  Eval cbv beta delta [vec_maskload_range] in @vec_maskload_range S _ 4.
Definition avx2pd_maskload_min {S : Type} `{Scalar S} :=
  Eval cbv beta delta [vec_maskload_min] in @vec_maskload_min S _ 4.
Definition avx2pd_maskload_range_min {S : Type} `{Scalar S} :=
  Eval cbv beta delta [vec_maskload_range_min] in @vec_maskload_range_min S _ 4.
Definition avx2pd_maskload_min3 {S : Type} `{Scalar S} :=
  Eval cbv beta delta [vec_maskload_min3] in @vec_maskload_min3 S _ 4.
Definition avx2pd_maskload_range_min3 {S : Type} `{Scalar S} :=
  Eval cbv beta delta [vec_maskload_range_min3] in @vec_maskload_range_min3 S _ 4.
Definition avx2pd_maskbroadcast_range_min {S : Type} `{Scalar S} :=
  Eval cbv beta delta [vec_maskbroadcast_range_min] in @vec_maskbroadcast_range_min S _ 4.
Definition avx2pd_maskbroadcast_range {S : Type} `{Scalar S} :=
  Eval cbv beta delta [vec_maskbroadcast_range] in @vec_maskbroadcast_range S _ 4.
Definition avx2pd_reduce_add {S : Type} `{Scalar S} :=
  Eval cbv beta delta [vec_reduce_add] in @vec_reduce_add S _ 4.
Definition avx512pd_loadu {S : Type} `{Scalar S} :=
  Eval cbv beta delta [vec_loadu] in @vec_loadu S _ 8.
Definition avx512pd_maskload {S : Type} `{Scalar S} :=
  Eval cbv beta delta [vec_maskload] in @vec_maskload S _ 8.
Definition avx512pd_broadcast {S : Type} `{Scalar S} :=
  Eval cbv beta delta [vec_broadcast] in @vec_broadcast S _ 8.
Definition avx512pd_mul {S : Type} `{Scalar S} :=
  Eval cbv beta delta [vec_mul] in @vec_mul S _ 8.
Definition avx512pd_add {S : Type} `{Scalar S} :=
  Eval cbv beta delta [vec_add] in @vec_add S _ 8.
Definition avx512pd_fmadd {S : Type} `{Scalar S} :=
  Eval cbv beta delta [vec_fmadd] in @vec_fmadd S _ 8.
Definition avx512pd_storeu {S : Type} `{Scalar S} :=
  Eval cbv beta delta [vec_storeu] in @vec_storeu S _ 8.
Definition avx512pd_maskstore {S : Type} `{Scalar S} :=
  Eval cbv beta delta [vec_maskstore] in @vec_maskstore S _ 8.
Definition avx512pd_max {S : Type} `{Scalar S} `{ScalarMax S} :=
  Eval cbv beta delta [vec_max] in @vec_max S _ 8 _.
Definition avx512pd_maskload_range {S : Type} `{Scalar S} :=
  Eval cbv beta delta [vec_maskload_range] in @vec_maskload_range S _ 8.
Definition avx512pd_maskload_min {S : Type} `{Scalar S} :=
  Eval cbv beta delta [vec_maskload_min] in @vec_maskload_min S _ 8.
Definition avx512pd_maskload_range_min {S : Type} `{Scalar S} :=
  Eval cbv beta delta [vec_maskload_range_min] in @vec_maskload_range_min S _ 8.
Definition avx512pd_maskload_min3 {S : Type} `{Scalar S} :=
  Eval cbv beta delta [vec_maskload_min3] in @vec_maskload_min3 S _ 8.
Definition avx512pd_maskload_range_min3 {S : Type} `{Scalar S} :=
  Eval cbv beta delta [vec_maskload_range_min3] in @vec_maskload_range_min3 S _ 8.
Definition avx512pd_maskbroadcast_range_min {S : Type} `{Scalar S} :=
  Eval cbv beta delta [vec_maskbroadcast_range_min] in @vec_maskbroadcast_range_min S _ 8.
Definition avx512pd_maskbroadcast_range {S : Type} `{Scalar S} :=
  Eval cbv beta delta [vec_maskbroadcast_range] in @vec_maskbroadcast_range S _ 8.
Definition avx512pd_reduce_add {S : Type} `{Scalar S} :=
  Eval cbv beta delta [vec_reduce_add] in @vec_reduce_add S _ 8.

(** ** Which constants are the instructions of a width

    [LaneISA w loadu ... maskstore]: the eight constants are the width-[w]
    instructions ([LaneMax w max] for the maximum).  The lemmas below are
    stated once over such constants; instantiated at width 8 or 16, type
    class resolution picks the [avx2_] or [avx512_] constants, so each
    instance lemma's statement names the target's own instructions (what
    [rw] puts into the program). *)

Class LaneISA {S : Type} `{Scalar S} (w : Z)
    (loadu : (Z -> S) -> Z -> Z -> S) (maskload : (Z -> S) -> Z -> Z -> Z -> S)
    (broadcast : S -> Z -> S) (mul add : (Z -> S) -> (Z -> S) -> Z -> S)
    (fmadd : (Z -> S) -> (Z -> S) -> (Z -> S) -> Z -> S)
    (storeu : (Z -> S) -> Z -> S) (maskstore : Z -> (Z -> S) -> Z -> S) : Prop := {
  lane_loadu : loadu = vec_loadu w;
  lane_maskload : maskload = vec_maskload w;
  lane_broadcast : broadcast = vec_broadcast w;
  lane_mul : mul = vec_mul w;
  lane_add : add = vec_add w;
  lane_fmadd : fmadd = vec_fmadd w;
  lane_storeu : storeu = vec_storeu w;
  lane_maskstore : maskstore = vec_maskstore w
}.
#[global] Hint Mode LaneISA ! - ! - - - - - - - - : typeclass_instances.

Class LaneMax {S : Type} `{Scalar S} `{ScalarMax S} (w : Z)
    (max : (Z -> S) -> (Z -> S) -> Z -> S) : Prop :=
  lane_max : max = vec_max w.
#[global] Hint Mode LaneMax ! - - ! - : typeclass_instances.

#[global] Instance LaneISA_avx2 {S : Type} `{Scalar S} :
  LaneISA (S := S) 8 avx2_loadu avx2_maskload avx2_broadcast avx2_mul avx2_add avx2_fmadd
    avx2_storeu avx2_maskstore.
Proof. split; reflexivity. Qed.
#[global] Instance LaneMax_avx2 {S : Type} `{Scalar S} `{ScalarMax S} : LaneMax (S := S) 8 avx2_max.
Proof. reflexivity. Qed.
#[global] Instance LaneISA_avx512 {S : Type} `{Scalar S} :
  LaneISA (S := S) 16 avx512_loadu avx512_maskload avx512_broadcast avx512_mul avx512_add
    avx512_fmadd avx512_storeu avx512_maskstore.
Proof. split; reflexivity. Qed.
#[global] Instance LaneMax_avx512 {S : Type} `{Scalar S} `{ScalarMax S} : LaneMax (S := S) 16 avx512_max.
Proof. reflexivity. Qed.

(** The float64 families' constants are the instructions of widths 4 and 8,
    but not as instances: width 8 is also AVX2's, and resolution by the width
    must keep finding [avx2_] there.  Their lemmas below name these proofs. *)
Definition LaneISA_avx2pd {S : Type} `{Scalar S} :
  LaneISA (S := S) 4 avx2pd_loadu avx2pd_maskload avx2pd_broadcast avx2pd_mul avx2pd_add
    avx2pd_fmadd avx2pd_storeu avx2pd_maskstore.
Proof. split; reflexivity. Qed.
Definition LaneMax_avx2pd {S : Type} `{Scalar S} `{ScalarMax S} :
  LaneMax (S := S) 4 avx2pd_max.
Proof. reflexivity. Qed.
Definition LaneISA_avx512pd {S : Type} `{Scalar S} :
  LaneISA (S := S) 8 avx512pd_loadu avx512pd_maskload avx512pd_broadcast avx512pd_mul avx512pd_add
    avx512pd_fmadd avx512pd_storeu avx512pd_maskstore.
Proof. split; reflexivity. Qed.
Definition LaneMax_avx512pd {S : Type} `{Scalar S} `{ScalarMax S} :
  LaneMax (S := S) 8 avx512pd_max.
Proof. reflexivity. Qed.

(** ** Defining equations, usable by [rw] (specification to call) *)

Section LaneSpecs.
  Context {S : Type} `{Scalar S} {w : Z}
    {loadu : (Z -> S) -> Z -> Z -> S} {maskload : (Z -> S) -> Z -> Z -> Z -> S}
    {broadcast : S -> Z -> S} {mul add : (Z -> S) -> (Z -> S) -> Z -> S}
    {fmadd : (Z -> S) -> (Z -> S) -> (Z -> S) -> Z -> S}
    {storeu : (Z -> S) -> Z -> S} {maskstore : Z -> (Z -> S) -> Z -> S}
    {LI : LaneISA w loadu maskload broadcast mul add fmadd storeu maskstore}.

  Lemma vec_loadu_spec v o : (GEN [ l < w ] v _[ o + l ]) = loadu v o.
  Proof. destruct LI; subst; reflexivity. Qed.
  Lemma vec_maskload_spec v o n :
    (GEN [ l < w ] |[ l <? n ]| v _[ o + l ]) = maskload v o n.
  Proof. destruct LI; subst; reflexivity. Qed.
  Lemma vec_broadcast_spec (x : S) : (GEN [ l < w ] x) = broadcast x.
  Proof. destruct LI; subst; reflexivity. Qed.
  Lemma vec_mul_spec a b : (GEN [ l < w ] a _[ l ] * b _[ l ]) = mul a b.
  Proof. destruct LI; subst; reflexivity. Qed.
  Lemma vec_add_spec a b : (GEN [ l < w ] a _[ l ] + b _[ l ]) = add a b.
  Proof. destruct LI; subst; reflexivity. Qed.
  Lemma vec_fmadd_spec a b c :
    (GEN [ l < w ] a _[ l ] * b _[ l ] + c _[ l ]) = fmadd a b c.
  Proof. destruct LI; subst; reflexivity. Qed.
  Lemma vec_storeu_spec v : (GEN [ l < w ] v _[ l ]) = storeu v.
  Proof. destruct LI; subst; reflexivity. Qed.
  Lemma vec_maskstore_spec n v :
    (GEN [ l < w ] |[ l <? n ]| v _[ l ]) = maskstore n v.
  Proof. destruct LI; subst; reflexivity. Qed.

  Context `{ScalarMax S} {max : (Z -> S) -> (Z -> S) -> Z -> S} {LM : LaneMax w max}.

  Lemma vec_max_spec a b : (GEN [ l < w ] smax (a _[ l ]) (b _[ l ])) = max a b.
  Proof. rewrite LM; reflexivity. Qed.
End LaneSpecs.

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

(** ** A reduction in vectors: the sum of each vector's lanes

    [SUMR [ lo <= j < hi ] F j], of extent [N], as the sums of the lanes of
    its vectors of [w] consecutive terms: Halide's vectorized reduction
    ([f.update().atomic().vectorize(r)]), used on the lanes an [rfactor]
    left (Rewrites/Rfactor.v), whose final sum is then [N / w] horizontal
    adds instead of [N] scalar ones.  Over the reals the order of the adds
    is free (the proof regroups the sum); in floats it changes the rounding,
    as every vectorized reduction does.  Where [w] divides [N] (a literal
    extent): [N / w] vectors, no guard ([vec_sum_lanes_exact]); otherwise
    the full vectors and the partial one (0 or 1), whose lanes past [N] are
    guarded off ([vec_sum_lanes_tail], [gen_vectorize]'s split). *)
Section ReduceLanes.
  Context {S : Type} `{ScalarLaws S}.

  Lemma vec_sum_lanes_exact w lo hi q (F : Z -> S) :
    (hi - lo = w * q)%Z -> (0 < w)%Z -> (0 <= q)%Z ->
    sumr lo hi F = SUM [ jo < q ] vec_reduce_add w (GEN [ l < w ] F (lo + (w * jo + l))%Z).
  Proof.
    intros HN Hw Hq.
    rewrite (sum_shift lo hi F), HN.
    replace (w * q)%Z with (q * w)%Z by ring.
    rewrite (sumr_blocks q w) by lia.
    apply sumr_ext_ctx; intros jo Hjo; unfold vec_reduce_add.
    apply sumr_ext_ctx; intros l Hl; rewrite get_gen by lia; f_equal; lia.
  Qed.

  Lemma vec_sum_lanes_tail w lo hi N q (F : Z -> S) :
    (N = hi - lo)%Z -> (q = N / w)%Z -> (0 < w)%Z -> (0 <= N)%Z ->
    sumr lo hi F =
    (SUM [ jo < q ] vec_reduce_add w (GEN [ l < w ] F (lo + (w * jo + l))%Z))
    <+> (SUMR [ q <= jo < cdiv N w ]
           vec_reduce_add w (GEN [ l < w ] |[ (w * jo + l <? N)%Z ]| F (lo + (w * jo + l))%Z)).
  Proof.
    intros HN Hq Hw HN0.
    rewrite (sum_shift lo hi F), <- HN, (sumr_tile N w) by lia.
    assert (Hq0 : (0 <= q <= cdiv N w)%Z).
    { subst q; split; [apply Z.div_pos; lia|]; unfold cdiv.
      apply Z.div_le_mono; lia. }
    rewrite (sumr_split 0 q (cdiv N w)) by lia.
    f_equal.
    - apply sumr_ext_ctx; intros jo Hjo; unfold vec_reduce_add.
      apply sumr_ext_ctx; intros l Hl; rewrite get_gen by lia.
      rewrite guard_elim; [f_equal; lia|].
      apply Z.ltb_lt; subst q.
      assert (w * (N / w) <= N)%Z by (apply Z.mul_div_le; lia).
      assert (w * (jo + 1) <= w * (N / w))%Z by (apply Z.mul_le_mono_nonneg_l; lia). nia.
    - apply sumr_ext_ctx; intros jo Hjo; unfold vec_reduce_add.
      apply sumr_ext_ctx; intros l Hl; rewrite get_gen by lia.
      replace (jo * w + l)%Z with (w * jo + l)%Z by ring; f_equal; f_equal; lia.
  Qed.

  (** The two, stated with each target's instruction (what [rw] puts in). *)
  Lemma avx2_sum_lanes_exact lo hi q (F : Z -> S) :
    (hi - lo = 8 * q)%Z -> (0 <= q)%Z ->
    sumr lo hi F = SUM [ jo < q ] avx2_reduce_add (GEN [ l < 8 ] F (lo + (8 * jo + l))%Z).
  Proof. intros; apply vec_sum_lanes_exact; lia. Qed.
  Lemma avx512_sum_lanes_exact lo hi q (F : Z -> S) :
    (hi - lo = 16 * q)%Z -> (0 <= q)%Z ->
    sumr lo hi F = SUM [ jo < q ] avx512_reduce_add (GEN [ l < 16 ] F (lo + (16 * jo + l))%Z).
  Proof. intros; apply vec_sum_lanes_exact; lia. Qed.
  Lemma avx2_sum_lanes_tail lo hi N q (F : Z -> S) :
    (N = hi - lo)%Z -> (q = N / 8)%Z -> (0 <= N)%Z ->
    sumr lo hi F =
    (SUM [ jo < q ] avx2_reduce_add (GEN [ l < 8 ] F (lo + (8 * jo + l))%Z))
    <+> (SUMR [ q <= jo < cdiv N 8 ]
           avx2_reduce_add (GEN [ l < 8 ] |[ (8 * jo + l <? N)%Z ]| F (lo + (8 * jo + l))%Z)).
  Proof. intros; apply vec_sum_lanes_tail; lia. Qed.
  Lemma avx512_sum_lanes_tail lo hi N q (F : Z -> S) :
    (N = hi - lo)%Z -> (q = N / 16)%Z -> (0 <= N)%Z ->
    sumr lo hi F =
    (SUM [ jo < q ] avx512_reduce_add (GEN [ l < 16 ] F (lo + (16 * jo + l))%Z))
    <+> (SUMR [ q <= jo < cdiv N 16 ]
           avx512_reduce_add (GEN [ l < 16 ] |[ (16 * jo + l <? N)%Z ]|
                                F (lo + (16 * jo + l))%Z)).
  Proof. intros; apply vec_sum_lanes_tail; lia. Qed.
  Lemma avx2pd_sum_lanes_exact lo hi q (F : Z -> S) :
    (hi - lo = 4 * q)%Z -> (0 <= q)%Z ->
    sumr lo hi F = SUM [ jo < q ] avx2pd_reduce_add (GEN [ l < 4 ] F (lo + (4 * jo + l))%Z).
  Proof. intros; apply vec_sum_lanes_exact; lia. Qed.
  Lemma avx2pd_sum_lanes_tail lo hi N q (F : Z -> S) :
    (N = hi - lo)%Z -> (q = N / 4)%Z -> (0 <= N)%Z ->
    sumr lo hi F =
    (SUM [ jo < q ] avx2pd_reduce_add (GEN [ l < 4 ] F (lo + (4 * jo + l))%Z))
    <+> (SUMR [ q <= jo < cdiv N 4 ]
           avx2pd_reduce_add (GEN [ l < 4 ] |[ (4 * jo + l <? N)%Z ]|
                                F (lo + (4 * jo + l))%Z)).
  Proof. intros; apply vec_sum_lanes_tail; lia. Qed.
  Lemma avx512pd_sum_lanes_exact lo hi q (F : Z -> S) :
    (hi - lo = 8 * q)%Z -> (0 <= q)%Z ->
    sumr lo hi F = SUM [ jo < q ] avx512pd_reduce_add (GEN [ l < 8 ] F (lo + (8 * jo + l))%Z).
  Proof. intros; apply vec_sum_lanes_exact; lia. Qed.
  Lemma avx512pd_sum_lanes_tail lo hi N q (F : Z -> S) :
    (N = hi - lo)%Z -> (q = N / 8)%Z -> (0 <= N)%Z ->
    sumr lo hi F =
    (SUM [ jo < q ] avx512pd_reduce_add (GEN [ l < 8 ] F (lo + (8 * jo + l))%Z))
    <+> (SUMR [ q <= jo < cdiv N 8 ]
           avx512pd_reduce_add (GEN [ l < 8 ] |[ (8 * jo + l <? N)%Z ]|
                                F (lo + (8 * jo + l))%Z)).
  Proof. intros; apply vec_sum_lanes_tail; lia. Qed.
End ReduceLanes.

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

(** ** Bringing code into the form of the instructions *)

Section LaneForms.
  Context {S : Type} `{ScalarLaws S} {w : Z}
    {loadu : (Z -> S) -> Z -> Z -> S} {maskload : (Z -> S) -> Z -> Z -> Z -> S}
    {broadcast : S -> Z -> S} {mul add : (Z -> S) -> (Z -> S) -> Z -> S}
    {fmadd : (Z -> S) -> (Z -> S) -> (Z -> S) -> Z -> S}
    {storeu : (Z -> S) -> Z -> S} {maskstore : Z -> (Z -> S) -> Z -> S}
    {LI : LaneISA w loadu maskload broadcast mul add fmadd storeu maskstore}.

  (** Lane-wise [+], [<+>] (on scalars, the same), [*], [a * b + c]. *)
  Lemma vec_add_gen (f g : Z -> S) :
    (GEN [ l < w ] f l + g l) = add (GEN [ l < w ] f l) (GEN [ l < w ] g l).
  Proof. destruct LI; subst; apply (lanes_map2 w sadd). Qed.

  Lemma vec_add_gen_tadd (f g : Z -> S) :
    (GEN [ l < w ] f l <+> g l) = add (GEN [ l < w ] f l) (GEN [ l < w ] g l).
  Proof. destruct LI; subst; apply (lanes_map2 w sadd). Qed.

  (** Two vectors added with [<+>] (zero outside their lanes). *)
  Lemma vec_add_tadd (f g : Z -> S) :
    (GEN [ l < w ] f l) <+> (GEN [ l < w ] g l) = add (GEN [ l < w ] f l) (GEN [ l < w ] g l).
  Proof. destruct LI; subst; rewrite lanes_tadd; apply (lanes_map2 w sadd). Qed.

  Lemma vec_mul_gen (f g : Z -> S) :
    (GEN [ l < w ] f l * g l) = mul (GEN [ l < w ] f l) (GEN [ l < w ] g l).
  Proof. destruct LI; subst; apply (lanes_map2 w smul). Qed.

  Lemma vec_fmadd_gen (f g h : Z -> S) :
    (GEN [ l < w ] f l * g l + h l) =
    fmadd (GEN [ l < w ] f l) (GEN [ l < w ] g l) (GEN [ l < w ] h l).
  Proof. destruct LI; subst; apply (lanes_map3 w (fun a b c => a * b + c)). Qed.

  (** A lane-free scalar times a contiguous load. *)
  Lemma vec_mul_broadcast_loadu (x : S) (v : Z -> S) (o : Z) :
    (GEN [ l < w ] x * v _[ o + l ]) = mul (broadcast x) (loadu v o).
  Proof. destruct LI; subst; apply (lanes_map2 w smul (fun _ => x) (fun l => v _[ o + l ])). Qed.

  Lemma vec_mul_loadu_broadcast (x : S) (v : Z -> S) (o : Z) :
    (GEN [ l < w ] v _[ o + l ] * x) = mul (loadu v o) (broadcast x).
  Proof. destruct LI; subst; apply (lanes_map2 w smul (fun l => v _[ o + l ]) (fun _ => x)). Qed.

  (** A multiply whose result is added is a fused multiply-add (exact in
      the ATL semantics; in floats [fmadd] rounds once instead of twice). *)
  Lemma vec_add_mul_fmadd (a b c : Z -> S) : add (mul a b) c = fmadd a b c.
  Proof.
    destruct LI; subst; unfold vec_add, vec_mul, vec_fmadd; apply genr_ext_ctx; intros l Hl.
    rewrite get_gen by lia; reflexivity.
  Qed.

  Lemma vec_add_comm (a b : Z -> S) : add a b = add b a.
  Proof. destruct LI; subst; unfold vec_add; apply genr_ext_ctx; intros; apply sadd_comm. Qed.

  (** Tails: a bounds guard [o + l < N] on a contiguous load is its mask of
      [N - o] lanes; a lane guard [l < n] on a whole vector is a masked store. *)
  Lemma vec_maskload_guard (v : Z -> S) (o N : Z) :
    (GEN [ l < w ] |[ o + l <? N ]| v _[ o + l ]) = maskload v o (N - o).
  Proof. destruct LI; subst; apply (lanes_guard_shift w o N (fun l => v _[ o + l ])). Qed.

  Lemma vec_maskstore_gen (n : Z) (f : Z -> S) :
    (GEN [ l < w ] |[ l <? n ]| f l) = maskstore n (GEN [ l < w ] f l).
  Proof.
    destruct LI; subst; unfold vec_maskstore; apply genr_ext_ctx; intros l Hl.
    rewrite get_gen by lia; reflexivity.
  Qed.

  Lemma vec_maskstore_guard (n : Z) (f : Z -> S) :
    (GEN [ l < w ] |[ l <? n ]| f l) = maskstore n (GEN [ l < w ] |[ l <? n ]| f l).
  Proof. rewrite <- vec_maskstore_gen; apply genr_ext_ctx; intros; apply guard_dup. Qed.

  (** Mark a vector as stored (apply once, with a pattern). *)
  Lemma vec_storeu_gen (f : Z -> S) : (GEN [ l < w ] f l) = storeu (GEN [ l < w ] f l).
  Proof.
    destruct LI; subst; unfold vec_storeu; apply genr_ext_ctx; intros l Hl.
    rewrite get_gen by lia; reflexivity.
  Qed.

  (** Under a masked store of [n] lanes only the lanes [l < n] are kept, so
      its lanes may be rewritten knowing [l <? n] (the tail's guard: what
      [vectorize] does there, Targets/Vectorize.v: a lane-free operand loses the
      guard and stays a broadcast, an [smax] passes it to its operands). *)
  Lemma vec_maskstore_under (n : Z) (f g : Z -> S) :
    (forall l, 0 <= l < w -> (l <? n) = true -> f l = g l) ->
    maskstore n (GEN [ l < w ] f l) = maskstore n (GEN [ l < w ] g l).
  Proof.
    intros Hfg; destruct LI; subst; unfold vec_maskstore; apply genr_ext_ctx; intros l Hl.
    rewrite !get_gen by lia; destruct (l <? n)%Z eqn:E; [ rewrite Hfg by assumption | ];
      reflexivity.
  Qed.

  (** One lane of a load or broadcast (written for Examples/Sgemm.v): a
      lane of a product, written as a lane of an instruction's result, so
      that [use_instr avx2_mul] finds [GEN [ l < 8 ] a _[ l ] * b _[ l ]]. *)
  Lemma vec_loadu_lane (v : Z -> S) l : 0 <= l < w -> get v l = get (loadu v 0) l.
  Proof. destruct LI; subst; intros; unfold vec_loadu; rewrite get_gen by lia; reflexivity. Qed.

  Lemma vec_broadcast_lane (x : S) (v : Z -> S) l :
    0 <= l < w -> smul x (get v l) = smul (get (broadcast x) l) (get v l).
  Proof. destruct LI; subst; intros; unfold vec_broadcast; rewrite get_gen by lia; reflexivity. Qed.

  Context `{ScalarMax S} {max : (Z -> S) -> (Z -> S) -> Z -> S} {LM : LaneMax w max}.

  Lemma vec_max_gen (f g : Z -> S) :
    (GEN [ l < w ] smax (f l) (g l)) = max (GEN [ l < w ] f l) (GEN [ l < w ] g l).
  Proof. rewrite LM; apply (lanes_map2 w smax). Qed.

End LaneForms.

(** ** The lemmas at each width, under their instruction names *)

Section WidthSpecs.
  Context {S : Type} `{Scalar S} `{ScalarMax S}.

  Definition avx2_loadu_spec := vec_loadu_spec (S := S) (w := 8).
  Definition avx2_maskload_spec := vec_maskload_spec (S := S) (w := 8).
  Definition avx2_broadcast_spec := vec_broadcast_spec (S := S) (w := 8).
  Definition avx2_mul_spec := vec_mul_spec (S := S) (w := 8).
  Definition avx2_add_spec := vec_add_spec (S := S) (w := 8).
  Definition avx2_fmadd_spec := vec_fmadd_spec (S := S) (w := 8).
  Definition avx2_storeu_spec := vec_storeu_spec (S := S) (w := 8).
  Definition avx2_maskstore_spec := vec_maskstore_spec (S := S) (w := 8).
  Definition avx2_max_spec := vec_max_spec (S := S) (w := 8).

  Definition avx512_loadu_spec := vec_loadu_spec (S := S) (w := 16).
  Definition avx512_maskload_spec := vec_maskload_spec (S := S) (w := 16).
  Definition avx512_broadcast_spec := vec_broadcast_spec (S := S) (w := 16).
  Definition avx512_mul_spec := vec_mul_spec (S := S) (w := 16).
  Definition avx512_add_spec := vec_add_spec (S := S) (w := 16).
  Definition avx512_fmadd_spec := vec_fmadd_spec (S := S) (w := 16).
  Definition avx512_storeu_spec := vec_storeu_spec (S := S) (w := 16).
  Definition avx512_maskstore_spec := vec_maskstore_spec (S := S) (w := 16).
  Definition avx512_max_spec := vec_max_spec (S := S) (w := 16).
End WidthSpecs.

Section WidthForms.
  Context {S : Type} `{ScalarLaws S} `{ScalarMax S}.

  Definition avx2_add_gen := vec_add_gen (S := S) (w := 8).
  Definition avx2_add_gen_tadd := vec_add_gen_tadd (S := S) (w := 8).
  Definition avx2_add_tadd := vec_add_tadd (S := S) (w := 8).
  Definition avx2_mul_gen := vec_mul_gen (S := S) (w := 8).
  Definition avx2_fmadd_gen := vec_fmadd_gen (S := S) (w := 8).
  Definition avx2_max_gen := vec_max_gen (S := S) (w := 8).
  Definition avx2_mul_broadcast_loadu := vec_mul_broadcast_loadu (S := S) (w := 8).
  Definition avx2_mul_loadu_broadcast := vec_mul_loadu_broadcast (S := S) (w := 8).
  Definition avx2_add_mul_fmadd := vec_add_mul_fmadd (S := S) (w := 8).
  Definition avx2_add_comm := vec_add_comm (S := S) (w := 8).
  Definition avx2_maskload_guard := vec_maskload_guard (S := S) (w := 8).
  Definition avx2_maskstore_gen := vec_maskstore_gen (S := S) (w := 8).
  Definition avx2_maskstore_guard := vec_maskstore_guard (S := S) (w := 8).
  Definition avx2_maskstore_under := vec_maskstore_under (S := S) (w := 8).
  Definition avx2_storeu_gen := vec_storeu_gen (S := S) (w := 8).
  Definition avx2_loadu_lane := vec_loadu_lane (S := S) (w := 8).
  Definition avx2_broadcast_lane := vec_broadcast_lane (S := S) (w := 8).

  Definition avx512_add_gen := vec_add_gen (S := S) (w := 16).
  Definition avx512_add_gen_tadd := vec_add_gen_tadd (S := S) (w := 16).
  Definition avx512_add_tadd := vec_add_tadd (S := S) (w := 16).
  Definition avx512_mul_gen := vec_mul_gen (S := S) (w := 16).
  Definition avx512_fmadd_gen := vec_fmadd_gen (S := S) (w := 16).
  Definition avx512_max_gen := vec_max_gen (S := S) (w := 16).
  Definition avx512_mul_broadcast_loadu := vec_mul_broadcast_loadu (S := S) (w := 16).
  Definition avx512_mul_loadu_broadcast := vec_mul_loadu_broadcast (S := S) (w := 16).
  Definition avx512_add_mul_fmadd := vec_add_mul_fmadd (S := S) (w := 16).
  Definition avx512_add_comm := vec_add_comm (S := S) (w := 16).
  Definition avx512_maskload_guard := vec_maskload_guard (S := S) (w := 16).
  Definition avx512_maskstore_gen := vec_maskstore_gen (S := S) (w := 16).
  Definition avx512_maskstore_guard := vec_maskstore_guard (S := S) (w := 16).
  Definition avx512_maskstore_under := vec_maskstore_under (S := S) (w := 16).
  Definition avx512_storeu_gen := vec_storeu_gen (S := S) (w := 16).
  Definition avx512_loadu_lane := vec_loadu_lane (S := S) (w := 16).
  Definition avx512_broadcast_lane := vec_broadcast_lane (S := S) (w := 16).
End WidthForms.

(** The float64 families' lemmas, their instances named (not resolved). *)
Section WidthPd.
  Context {S : Type} `{ScalarLaws S} `{ScalarMax S}.

  Definition avx2pd_loadu_spec := vec_loadu_spec (S := S) (LI := LaneISA_avx2pd).
  Definition avx2pd_maskload_spec := vec_maskload_spec (S := S) (LI := LaneISA_avx2pd).
  Definition avx2pd_broadcast_spec := vec_broadcast_spec (S := S) (LI := LaneISA_avx2pd).
  Definition avx2pd_mul_spec := vec_mul_spec (S := S) (LI := LaneISA_avx2pd).
  Definition avx2pd_add_spec := vec_add_spec (S := S) (LI := LaneISA_avx2pd).
  Definition avx2pd_fmadd_spec := vec_fmadd_spec (S := S) (LI := LaneISA_avx2pd).
  Definition avx2pd_storeu_spec := vec_storeu_spec (S := S) (LI := LaneISA_avx2pd).
  Definition avx2pd_maskstore_spec := vec_maskstore_spec (S := S) (LI := LaneISA_avx2pd).
  Definition avx2pd_max_spec := vec_max_spec (S := S) (LM := LaneMax_avx2pd).
  Definition avx2pd_add_gen := vec_add_gen (S := S) (LI := LaneISA_avx2pd).
  Definition avx2pd_add_gen_tadd := vec_add_gen_tadd (S := S) (LI := LaneISA_avx2pd).
  Definition avx2pd_add_tadd := vec_add_tadd (S := S) (LI := LaneISA_avx2pd).
  Definition avx2pd_mul_gen := vec_mul_gen (S := S) (LI := LaneISA_avx2pd).
  Definition avx2pd_fmadd_gen := vec_fmadd_gen (S := S) (LI := LaneISA_avx2pd).
  Definition avx2pd_mul_broadcast_loadu := vec_mul_broadcast_loadu (S := S) (LI := LaneISA_avx2pd).
  Definition avx2pd_mul_loadu_broadcast := vec_mul_loadu_broadcast (S := S) (LI := LaneISA_avx2pd).
  Definition avx2pd_add_mul_fmadd := vec_add_mul_fmadd (S := S) (LI := LaneISA_avx2pd).
  Definition avx2pd_add_comm := vec_add_comm (S := S) (LI := LaneISA_avx2pd).
  Definition avx2pd_maskload_guard := vec_maskload_guard (S := S) (LI := LaneISA_avx2pd).
  Definition avx2pd_maskstore_gen := vec_maskstore_gen (S := S) (LI := LaneISA_avx2pd).
  Definition avx2pd_maskstore_guard := vec_maskstore_guard (S := S) (LI := LaneISA_avx2pd).
  Definition avx2pd_maskstore_under := vec_maskstore_under (S := S) (LI := LaneISA_avx2pd).
  Definition avx2pd_storeu_gen := vec_storeu_gen (S := S) (LI := LaneISA_avx2pd).
  Definition avx2pd_loadu_lane := vec_loadu_lane (S := S) (LI := LaneISA_avx2pd).
  Definition avx2pd_broadcast_lane := vec_broadcast_lane (S := S) (LI := LaneISA_avx2pd).
  Definition avx2pd_max_gen := vec_max_gen (S := S) (LM := LaneMax_avx2pd).

  Definition avx512pd_loadu_spec := vec_loadu_spec (S := S) (LI := LaneISA_avx512pd).
  Definition avx512pd_maskload_spec := vec_maskload_spec (S := S) (LI := LaneISA_avx512pd).
  Definition avx512pd_broadcast_spec := vec_broadcast_spec (S := S) (LI := LaneISA_avx512pd).
  Definition avx512pd_mul_spec := vec_mul_spec (S := S) (LI := LaneISA_avx512pd).
  Definition avx512pd_add_spec := vec_add_spec (S := S) (LI := LaneISA_avx512pd).
  Definition avx512pd_fmadd_spec := vec_fmadd_spec (S := S) (LI := LaneISA_avx512pd).
  Definition avx512pd_storeu_spec := vec_storeu_spec (S := S) (LI := LaneISA_avx512pd).
  Definition avx512pd_maskstore_spec := vec_maskstore_spec (S := S) (LI := LaneISA_avx512pd).
  Definition avx512pd_max_spec := vec_max_spec (S := S) (LM := LaneMax_avx512pd).
  Definition avx512pd_add_gen := vec_add_gen (S := S) (LI := LaneISA_avx512pd).
  Definition avx512pd_add_gen_tadd := vec_add_gen_tadd (S := S) (LI := LaneISA_avx512pd).
  Definition avx512pd_add_tadd := vec_add_tadd (S := S) (LI := LaneISA_avx512pd).
  Definition avx512pd_mul_gen := vec_mul_gen (S := S) (LI := LaneISA_avx512pd).
  Definition avx512pd_fmadd_gen := vec_fmadd_gen (S := S) (LI := LaneISA_avx512pd).
  Definition avx512pd_mul_broadcast_loadu := vec_mul_broadcast_loadu (S := S) (LI := LaneISA_avx512pd).
  Definition avx512pd_mul_loadu_broadcast := vec_mul_loadu_broadcast (S := S) (LI := LaneISA_avx512pd).
  Definition avx512pd_add_mul_fmadd := vec_add_mul_fmadd (S := S) (LI := LaneISA_avx512pd).
  Definition avx512pd_add_comm := vec_add_comm (S := S) (LI := LaneISA_avx512pd).
  Definition avx512pd_maskload_guard := vec_maskload_guard (S := S) (LI := LaneISA_avx512pd).
  Definition avx512pd_maskstore_gen := vec_maskstore_gen (S := S) (LI := LaneISA_avx512pd).
  Definition avx512pd_maskstore_guard := vec_maskstore_guard (S := S) (LI := LaneISA_avx512pd).
  Definition avx512pd_maskstore_under := vec_maskstore_under (S := S) (LI := LaneISA_avx512pd).
  Definition avx512pd_storeu_gen := vec_storeu_gen (S := S) (LI := LaneISA_avx512pd).
  Definition avx512pd_loadu_lane := vec_loadu_lane (S := S) (LI := LaneISA_avx512pd).
  Definition avx512pd_broadcast_lane := vec_broadcast_lane (S := S) (LI := LaneISA_avx512pd).
  Definition avx512pd_max_gen := vec_max_gen (S := S) (LM := LaneMax_avx512pd).
End WidthPd.

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
#[global] Instance AtlInstr_avx2_maskload_range : AtlInstr (@avx2_maskload_range) := {}.
#[global] Instance AtlInstr_avx512_maskload_range : AtlInstr (@avx512_maskload_range) := {}.
#[global] Instance AtlInstr_avx2_maskload_min : AtlInstr (@avx2_maskload_min) := {}.
#[global] Instance AtlInstr_avx512_maskload_min : AtlInstr (@avx512_maskload_min) := {}.
#[global] Instance AtlInstr_avx2_maskload_range_min : AtlInstr (@avx2_maskload_range_min) := {}.
#[global] Instance AtlInstr_avx512_maskload_range_min :
  AtlInstr (@avx512_maskload_range_min) := {}.
#[global] Instance AtlInstr_avx2_maskload_min3 :
  AtlInstr (@avx2_maskload_min3) := {}.
#[global] Instance AtlInstr_avx512_maskload_min3 :
  AtlInstr (@avx512_maskload_min3) := {}.
#[global] Instance AtlInstr_avx2_maskload_range_min3 :
  AtlInstr (@avx2_maskload_range_min3) := {}.
#[global] Instance AtlInstr_avx512_maskload_range_min3 :
  AtlInstr (@avx512_maskload_range_min3) := {}.
#[global] Instance AtlInstr_avx2_maskbroadcast_range_min :
  AtlInstr (@avx2_maskbroadcast_range_min) := {}.
#[global] Instance AtlInstr_avx512_maskbroadcast_range_min :
  AtlInstr (@avx512_maskbroadcast_range_min) := {}.
#[global] Instance AtlInstr_avx2_maskbroadcast_range : AtlInstr (@avx2_maskbroadcast_range) := {}.
#[global] Instance AtlInstr_avx512_maskbroadcast_range :
  AtlInstr (@avx512_maskbroadcast_range) := {}.
#[global] Instance AtlInstr_avx2_reduce_add : AtlInstr (@avx2_reduce_add) := {}.
#[global] Instance AtlInstr_avx512_reduce_add : AtlInstr (@avx512_reduce_add) := {}.
#[global] Instance AtlInstr_avx2pd_loadu : AtlInstr (@avx2pd_loadu) := {}.
#[global] Instance AtlInstr_avx2pd_maskload : AtlInstr (@avx2pd_maskload) := {}.
#[global] Instance AtlInstr_avx2pd_broadcast : AtlInstr (@avx2pd_broadcast) := {}.
#[global] Instance AtlInstr_avx2pd_mul : AtlInstr (@avx2pd_mul) := {}.
#[global] Instance AtlInstr_avx2pd_add : AtlInstr (@avx2pd_add) := {}.
#[global] Instance AtlInstr_avx2pd_fmadd : AtlInstr (@avx2pd_fmadd) := {}.
#[global] Instance AtlInstr_avx2pd_storeu : AtlInstr (@avx2pd_storeu) := {}.
#[global] Instance AtlInstr_avx2pd_maskstore : AtlInstr (@avx2pd_maskstore) := {}.
#[global] Instance AtlInstr_avx2pd_max : AtlInstr (@avx2pd_max) := {}.
#[global] Instance AtlInstr_avx2pd_maskload_range : AtlInstr (@avx2pd_maskload_range) := {}.
#[global] Instance AtlInstr_avx2pd_maskload_min : AtlInstr (@avx2pd_maskload_min) := {}.
#[global] Instance AtlInstr_avx2pd_maskload_range_min : AtlInstr (@avx2pd_maskload_range_min) := {}.
#[global] Instance AtlInstr_avx2pd_maskload_min3 : AtlInstr (@avx2pd_maskload_min3) := {}.
#[global] Instance AtlInstr_avx2pd_maskload_range_min3 : AtlInstr (@avx2pd_maskload_range_min3) := {}.
#[global] Instance AtlInstr_avx2pd_maskbroadcast_range_min : AtlInstr (@avx2pd_maskbroadcast_range_min) := {}.
#[global] Instance AtlInstr_avx2pd_maskbroadcast_range : AtlInstr (@avx2pd_maskbroadcast_range) := {}.
#[global] Instance AtlInstr_avx2pd_reduce_add : AtlInstr (@avx2pd_reduce_add) := {}.
#[global] Instance AtlInstr_avx512pd_loadu : AtlInstr (@avx512pd_loadu) := {}.
#[global] Instance AtlInstr_avx512pd_maskload : AtlInstr (@avx512pd_maskload) := {}.
#[global] Instance AtlInstr_avx512pd_broadcast : AtlInstr (@avx512pd_broadcast) := {}.
#[global] Instance AtlInstr_avx512pd_mul : AtlInstr (@avx512pd_mul) := {}.
#[global] Instance AtlInstr_avx512pd_add : AtlInstr (@avx512pd_add) := {}.
#[global] Instance AtlInstr_avx512pd_fmadd : AtlInstr (@avx512pd_fmadd) := {}.
#[global] Instance AtlInstr_avx512pd_storeu : AtlInstr (@avx512pd_storeu) := {}.
#[global] Instance AtlInstr_avx512pd_maskstore : AtlInstr (@avx512pd_maskstore) := {}.
#[global] Instance AtlInstr_avx512pd_max : AtlInstr (@avx512pd_max) := {}.
#[global] Instance AtlInstr_avx512pd_maskload_range : AtlInstr (@avx512pd_maskload_range) := {}.
#[global] Instance AtlInstr_avx512pd_maskload_min : AtlInstr (@avx512pd_maskload_min) := {}.
#[global] Instance AtlInstr_avx512pd_maskload_range_min : AtlInstr (@avx512pd_maskload_range_min) := {}.
#[global] Instance AtlInstr_avx512pd_maskload_min3 : AtlInstr (@avx512pd_maskload_min3) := {}.
#[global] Instance AtlInstr_avx512pd_maskload_range_min3 : AtlInstr (@avx512pd_maskload_range_min3) := {}.
#[global] Instance AtlInstr_avx512pd_maskbroadcast_range_min : AtlInstr (@avx512pd_maskbroadcast_range_min) := {}.
#[global] Instance AtlInstr_avx512pd_maskbroadcast_range : AtlInstr (@avx512pd_maskbroadcast_range) := {}.
#[global] Instance AtlInstr_avx512pd_reduce_add : AtlInstr (@avx512pd_reduce_add) := {}.
