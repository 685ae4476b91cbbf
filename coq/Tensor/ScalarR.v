(** * The real-number instances of the scalar classes (Tensor/Scalar.v).

    In a file of their own so that the rest of the library does not load
    Coq's real numbers (about 0.2 s of every file's build); [ATL] exports
    it, so a derivation over [R] needs nothing more.  Only [Rbase] (the
    field [R], its order, [IZR]): all of [Reals] (series, trigonometry,
    derivatives) took 0.09 s more to load on its own, about 0.03 s in a
    file that loads ZArith and [Lia] anyway (decision #100); a derivation
    that needs them requires [Reals] itself. *)

From Coq Require Import Rbase Rbasic_fun.
From Verisched Require Import Tensor.Scalar.

#[global] Instance Scalar_R : Scalar R :=
  { szero := 0%R; sone := 1%R; sadd := Rplus; smul := Rmult; sdiv := Rdiv }.

(** [Rmax] is in [Rbasic_fun], the one module beyond [Rbase] this file loads. *)
#[global] Instance ScalarMax_R : ScalarMax R :=
  { smax := Rmax; smax_idem := fun a => Rmax_left a a (Rle_refl a) }.

#[global] Instance ScalarLaws_R : ScalarLaws R.
Proof.
  split; intros; cbv [sadd smul sdiv szero sone Scalar_R]; unfold Rdiv;
    try rewrite Rinv_1; ring.
Qed.

#[global] Instance FieldLaws_R : FieldLaws R.
Proof. split; intros; cbv [sadd smul sdiv szero sone Scalar_R]; unfold Rdiv; ring. Qed.

Lemma spos_R (p : positive) : spos p = IZR (Zpos p).
Proof.
  induction p as [q IH|q IH|].
  - change (@spos R _ (xI q)) with (@sadd R _ 1%R (sadd (spos q) (spos q))).
    rewrite IH, Pos2Z.inj_xI, plus_IZR, mult_IZR; cbv [sadd sone Scalar_R]; simpl IZR; ring.
  - change (@spos R _ (xO q)) with (@sadd R _ (spos q) (spos q)).
    rewrite IH, Pos2Z.inj_xO, mult_IZR; cbv [sadd Scalar_R]; simpl IZR; ring.
  - reflexivity.
Qed.

(** Over [R], a literal is the exact rational [n / d]; the lowering rounds it once,
    to nearest, into the kernel's element type (targets/base.py's ROUNDING banner). *)
Lemma slit_R (n d : positive) : slit n d = (IZR (Zpos n) / IZR (Zpos d))%R.
Proof. unfold slit; rewrite !spos_R; reflexivity. Qed.
