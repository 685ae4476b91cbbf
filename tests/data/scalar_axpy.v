From Coq Require Import ZArith List derive.Derive.
From Verisched Require Import ATL.
Import ListNotations.
Open Scope Z_scope. Open Scope atl_scope.
Section Scale.
  Context {S : Type} `{ScalarLaws S}.
  Variables (n : Z).
  Variable alpha : S.
  Variables (x y : Z -> S).
  Hypotheses (Hx : shaped [n] x) (Hy : shaped [n] y).
  Definition axpy := GEN [ i < n ] alpha * x _[i] + y _[i].
  Derive axpy_s SuchThat (axpy = axpy_s) As axpy_ok.
  Proof. reschedule. check_safe. done. Qed.
End Scale.
