(** * The real-number instances of the scalar classes (Tensor/Scalar.v).

    In a file of their own so that the rest of the library does not load
    Coq's real numbers (about 0.2 s of every file's build); [ATL] exports
    it, so a derivation over [R] needs nothing more. *)

From Coq Require Import Reals.
From Verisched Require Import Tensor.Scalar.

#[global] Instance Scalar_R : Scalar R :=
  { szero := 0%R; sone := 1%R; sadd := Rplus; smul := Rmult; sdiv := Rdiv }.

#[global] Instance ScalarLaws_R : ScalarLaws R.
Proof.
  split; intros; cbv [sadd smul sdiv szero sone Scalar_R]; unfold Rdiv; ring.
Qed.

#[global] Instance FieldLaws_R : FieldLaws R.
Proof. split; intros; cbv [sadd smul sdiv szero sone Scalar_R]; unfold Rdiv; ring. Qed.
