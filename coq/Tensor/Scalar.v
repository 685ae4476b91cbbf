(** * Scalars: the algebraic structure every ATL program is generic over.

    The ATL paper (Sec. 3.1) fixes scalars to the reals.  We abstract them
    so that one derivation serves float kernels (instantiate with [R]) and
    the accelerator's integer kernels (instantiate with [Z]), and so that
    small examples can be computed inside Coq with [vm_compute] over [Z].

    [ScalarLaws] are the commutative-semiring laws plus [0 / a = 0] and
    [a / 1 = a]; they hold for both [R] and [Z] (floor division).  Laws that hold only in a
    field, such as distributing a division over a sum, live in the separate
    class [FieldLaws] so a rewrite that needs them says so in its type.
    docs/decisions.md lists which rewrites need which class. *)

From Coq Require Import ZArith Lia.

Class Scalar (S : Type) := {
  szero : S;
  sone : S;
  sadd : S -> S -> S;
  smul : S -> S -> S;
  sdiv : S -> S -> S
}.

Class ScalarLaws (S : Type) `{Scalar S} := {
  sadd_comm : forall a b, sadd a b = sadd b a;
  sadd_assoc : forall a b c, sadd a (sadd b c) = sadd (sadd a b) c;
  sadd_0_l : forall a, sadd szero a = a;
  smul_comm : forall a b, smul a b = smul b a;
  smul_assoc : forall a b c, smul a (smul b c) = smul (smul a b) c;
  smul_1_l : forall a, smul sone a = a;
  smul_add_distr_r : forall a b c, smul (sadd a b) c = sadd (smul a c) (smul b c);
  smul_0_l : forall a, smul szero a = szero;
  sdiv_0_l : forall a, sdiv szero a = szero;
  sdiv_1_r : forall a, sdiv a sone = a
}.

(** Laws of a field's division, needed only by rewrites that move a
    division across a sum or a product.  [Z]'s floor division fails them. *)
Class FieldLaws (S : Type) `{Scalar S} := {
  sdiv_add_distr : forall a b c, sdiv (sadd a b) c = sadd (sdiv a c) (sdiv b c);
  sdiv_mul_assoc : forall a b c, sdiv (smul a b) c = smul a (sdiv b c)
}.

(** An ordered scalar's maximum, for the vector [max] instructions
    (Targets/AVX.v).  A class of its own rather than a field of [Scalar], so
    no instance, law or derivation that does not use it changes
    (docs/decisions.md #21); instances for [Z] below and for [R] in ScalarR.v.
    Its one law, idempotence, holds of every maximum (and of C's [a < b ? b : a]
    and [maxps]); with it a guard passes onto [smax]'s operands as onto [+]'s
    ([smax 0 0 = 0]: the vectorizer's masked lanes, Targets/Vectorize.v). *)
Class ScalarMax (S : Type) := {
  smax : S -> S -> S;
  smax_idem : forall a, smax a a = a
}.

#[global] Hint Mode Scalar ! : typeclass_instances.
#[global] Hint Mode ScalarLaws ! - : typeclass_instances.
#[global] Hint Mode FieldLaws ! - : typeclass_instances.
#[global] Hint Mode ScalarMax ! : typeclass_instances.

Section Derived.
  Context {S : Type} `{ScalarLaws S}.

  Lemma sadd_0_r (a : S) : sadd a szero = a.
  Proof. rewrite sadd_comm; apply sadd_0_l. Qed.

  Lemma smul_0_r (a : S) : smul a szero = szero.
  Proof. rewrite smul_comm; apply smul_0_l. Qed.

  Lemma smul_1_r (a : S) : smul a sone = a.
  Proof. rewrite smul_comm; apply smul_1_l. Qed.

  Lemma smul_add_distr_l (a b c : S) : smul a (sadd b c) = sadd (smul a b) (smul a c).
  Proof. rewrite !(smul_comm a); apply smul_add_distr_r. Qed.
End Derived.

(** ** Literal constants (issue 13)

    A literal is a nonnegative rational [n / d], written [slit n d], and
    defined for every scalar type from [sone], [sadd] and [sdiv] alone (binary
    expansion: [spos]), so a derivation that mentions a constant needs no new
    class or hypothesis and every rewrite of the library applies to it
    unchanged: to a rewrite, [slit n d] is a scalar like any input.  Its value
    in each instance is stated below ([slit_Z]) and in ScalarR.v ([slit_R]).
    Negative constants would need a subtraction, which ATL's scalar language
    does not have (docs/decisions.md #54).  [simpl never]: tactics must not
    unfold a literal into its binary expansion. *)

Fixpoint spos {S : Type} `{Scalar S} (p : positive) : S :=
  match p with
  | xH => sone
  | xO q => sadd (spos q) (spos q)
  | xI q => sadd sone (sadd (spos q) (spos q))
  end.

Definition slit {S : Type} `{Scalar S} (n d : positive) : S := sdiv (spos n) (spos d).
Arguments slit {S _} (n d)%positive : simpl never.
Arguments spos {S _} p%positive : simpl never.

(** The literal one is [sone] (LIAR's latent idioms multiply by it: BlasLatent.v). *)
Lemma slit_1 {S : Type} `{ScalarLaws S} : slit 1 1 = (sone : S).
Proof. unfold slit; change (@spos S _ 1%positive) with (@sone S _); apply sdiv_1_r. Qed.

(** ** Instances (those for [R] are in Tensor/ScalarR.v) *)

#[global] Instance Scalar_Z : Scalar Z :=
  { szero := 0%Z; sone := 1%Z; sadd := Z.add; smul := Z.mul; sdiv := Z.div }.

#[global] Instance ScalarLaws_Z : ScalarLaws Z.
Proof.
  split; intros; cbv [sadd smul sdiv szero sone Scalar_Z]; try ring.
  - apply Zdiv_0_l.
  - apply Z.div_1_r.
Qed.

#[global] Instance ScalarMax_Z : ScalarMax Z := { smax := Z.max; smax_idem := Z.max_id }.

Lemma spos_Z (p : positive) : spos p = Zpos p.
Proof.
  induction p as [q IH|q IH|].
  - change (@spos Z _ (xI q)) with (@sadd Z _ 1%Z (sadd (spos q) (spos q))).
    rewrite IH; cbv [sadd sone Scalar_Z]; lia.
  - change (@spos Z _ (xO q)) with (@sadd Z _ (spos q) (spos q)).
    rewrite IH; cbv [sadd Scalar_Z]; lia.
  - reflexivity.
Qed.

(** Over [Z], a literal is the floor of its quotient. *)
Lemma slit_Z (n d : positive) : slit n d = (Zpos n / Zpos d)%Z.
Proof. unfold slit; rewrite !spos_Z; reflexivity. Qed.
