(** * Typeclass modes for the element classes.

    A lemma applied to arguments that do not fix its element type, as in
    [rw <- (flatten_trunc_tile_id 8 n) at pat] or [rw (eta n)], is
    elaborated before [rw] unifies it with the program, so typeclass
    resolution meets [TensorElem ?X].  Every such goal matches
    [TensorElem_fun] again ([TensorElem (Z -> ?Y)]), and the search never
    ends (it exhausts memory).  These modes make resolution wait until the
    element type's head is known, which unification then provides.

    Tensor/Core.v and Tensor/Shape.v now declare the same modes next to
    the classes; this module stays because Reshape/Partition.v exports it,
    and repeating a mode is harmless. *)

From Verisched Require Import Tensor.Core Tensor.Shape.

#[export] Hint Mode TensorElem ! : typeclass_instances.
#[export] Hint Mode TensorLaws ! - : typeclass_instances.
#[export] Hint Mode Shaped ! - : typeclass_instances.
