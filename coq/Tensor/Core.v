(** * The ATL core language (paper Fig. 1-2), as a shallow embedding.

    A tensor of rank [r] over scalars [S] is a function [Z -> ... -> S]
    ([r] arrows).  Generation restricts its body to the generated range and
    is zero elsewhere, so an out-of-bounds access yields the zero of the
    element type (Fig. 2, last rule), and that zero has every shape at
    once.  This is the main departure from the paper's list model: it
    removes the shape-consistency side conditions from the guard context
    lemma, the sum/generation interchange and most other rewrites (the
    paper's Sec. 7.1 burden), at the cost of making extents explicit
    arguments of the reshape operators.  docs/decisions.md records why. *)

From Coq Require Import ZArith Bool List.
From Verisched Require Export Tensor.Scalar.

(** ** Element types: scalars and tensors of elements *)

(** The operations the polymorphic constructs need (Sec. 3.1): a zero, for
    guards, out-of-bounds accesses and empty sums; and [⊕]. *)
Class TensorElem (X : Type) := {
  tzero : X;
  tadd : X -> X -> X
}.

Class TensorLaws (X : Type) `{TensorElem X} := {
  tadd_comm : forall a b : X, tadd a b = tadd b a;
  tadd_assoc : forall a b c : X, tadd a (tadd b c) = tadd (tadd a b) c;
  tadd_0_l : forall a : X, tadd tzero a = a
}.

(** Resolve these classes only once the element type is known: searching
    [TensorElem ?X] with [?X] unknown would try [Z -> Z -> ...] forever. *)
#[global] Hint Mode TensorElem ! : typeclass_instances.
#[global] Hint Mode TensorLaws ! - : typeclass_instances.

#[global] Instance TensorElem_scalar {S : Type} `{Scalar S} : TensorElem S :=
  {| tzero := szero; tadd := sadd |}.

#[global] Instance TensorElem_fun {X : Type} `{TensorElem X} : TensorElem (Z -> X) :=
  {| tzero := fun _ => tzero; tadd := fun a b i => tadd (a i) (b i) |}.

#[global] Instance TensorLaws_scalar {S : Type} `{ScalarLaws S} : TensorLaws S.
Proof.
  split; cbn [tadd tzero TensorElem_scalar];
    [apply sadd_comm | apply sadd_assoc | apply sadd_0_l].
Qed.

From Coq Require Import FunctionalExtensionality.

#[global] Instance TensorLaws_fun {X : Type} `{TensorLaws X} : TensorLaws (Z -> X).
Proof.
  split; intros; cbn [tadd tzero TensorElem_fun]; apply functional_extensionality;
    intros; [apply tadd_comm | apply tadd_assoc | apply tadd_0_l].
Qed.

(** ** Constructs *)

(** [GENR [ lo <= i < hi ] e]: element [k] is [e] at [i = lo + k]. *)
Definition genr {X : Type} `{TensorElem X} (lo hi : Z) (f : Z -> X) : Z -> X :=
  fun k => if (0 <=? k)%Z && (k <? hi - lo)%Z then f (lo + k)%Z else tzero.

Fixpoint sum_nat {X : Type} `{TensorElem X} (k : nat) (lo : Z) (f : Z -> X) : X :=
  match k with
  | O => tzero
  | S k' => tadd (f lo) (sum_nat k' (Z.succ lo) f)
  end.

(** [SUMR [ lo <= i < hi ] e] = e[lo/i] ⊕ ... ⊕ e[hi-1/i]; zero when empty. *)
Definition sumr {X : Type} `{TensorElem X} (lo hi : Z) (f : Z -> X) : X :=
  sum_nat (Z.to_nat (hi - lo)) lo f.

(** Iverson bracket [ [p] · e ] (Fig. 2): [e] if [p] holds, else zero. *)
Definition iverson {X : Type} `{TensorElem X} (p : bool) (e : X) : X :=
  if p then e else tzero.

(** [tlet x := e1 in e2], kept as a constant so it survives reduction and
    prints as a binding: it marks a buffer for the lowering (Fig. 3). *)
Definition atl_let {X Y : Type} (e1 : X) (f : X -> Y) : Y := f e1.

(** Access [e[i]]; out of range it is zero because every tensor is. *)
Definition get {X : Type} (v : Z -> X) (i : Z) : X := v i.

(** Ceiling division, used by tiling (Fig. 1's ⌈I/I⌉). *)
Definition cdiv (a b : Z) : Z := ((a + b - 1) / b)%Z.

(** ** Notation, close to the paper's *)

Declare Scope atl_scope.
Delimit Scope atl_scope with atl.

Notation "'GEN' [ i < n ] e" := (genr 0 n (fun i => e))
  (at level 200, i name, n at level 200, e at level 200,
   format "'[hv  ' 'GEN'  [  i  <  n  ]  '/' e ']'") : atl_scope.
Notation "'GENR' [ lo <= i < hi ] e" := (genr lo hi (fun i => e))
  (at level 200, i name, lo at level 69, hi at level 200, e at level 200,
   format "'[hv  ' 'GENR'  [  lo  <=  i  <  hi  ]  '/' e ']'") : atl_scope.
Notation "'SUM' [ i < n ] e" := (sumr 0 n (fun i => e))
  (at level 200, i name, n at level 200, e at level 200,
   format "'[hv  ' 'SUM'  [  i  <  n  ]  '/' e ']'") : atl_scope.
Notation "'SUMR' [ lo <= i < hi ] e" := (sumr lo hi (fun i => e))
  (at level 200, i name, lo at level 69, hi at level 200, e at level 200,
   format "'[hv  ' 'SUMR'  [  lo  <=  i  <  hi  ]  '/' e ']'") : atl_scope.
Notation "'tlet' x := e1 'in' e2" := (atl_let e1 (fun x => e2))
  (at level 200, x name, e1 at level 200, e2 at level 200,
   format "'[v' 'tlet'  x  :=  e1  'in' '/' e2 ']'") : atl_scope.
Notation "|[ p ]| e" := (iverson p e)
  (at level 45, p at level 200, e at level 45, right associativity,
   format "|[  p  ]|  e") : atl_scope.
Notation "v _[ i ]" := (get v i)
  (at level 2, left associativity, i at level 200, format "v  _[ i ]") : atl_scope.
Infix "<+>" := tadd (at level 50, left associativity) : atl_scope.
Infix "+" := sadd : atl_scope.
Infix "*" := smul : atl_scope.
Infix "/" := sdiv : atl_scope.

Arguments genr {X _} (lo hi)%Z f%atl_scope _%Z.
Arguments sumr {X _} (lo hi)%Z f%atl_scope.
Arguments iverson {X _} p%Z e%atl_scope.
Arguments atl_let {X Y} e1%atl_scope f%atl_scope.
Arguments get {X} v%atl_scope i%Z.
Arguments tadd {X _} (a b)%atl_scope.
Arguments sadd {S _} (a b)%atl_scope.
Arguments smul {S _} (a b)%atl_scope.
Arguments sdiv {S _} (a b)%atl_scope.
Arguments smax {S _} (a b)%atl_scope.
Arguments cdiv (a b)%Z.
