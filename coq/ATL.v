(** The library in one import: language, shapes, rewrites, tactics, targets
    (ATLGeneric.v) and the real-number instances of the scalar classes
    (Tensor/ScalarR.v), so that a derivation over [R] needs nothing more. *)
From Verisched Require Export ATLGeneric.
From Verisched Require Export Tensor.ScalarR.
