(** * Shapes of reshaped terms, and [solve_shape] extended to them
    (paper Sec. 7.1: one shape lemma per construct, applied syntax-directed).

    - [shaped_concat], [shaped_transpose], ...: the shape of each operator
      of Reshape/Defs.v from the shape of its operand.  The extents of the
      result are separate equations, so the lemmas apply whatever form the
      goal's extents take (an evar, [n - 0], ...).
    - [solve_shape_reshape]: [solve_shape] (Tensor/Shape.v) plus these
      lemmas, plus accesses into non-variable tensors and generations with
      extents still to be determined.

    [atl_side] (Rewrites/Tactics.v), which proves [rw]'s side conditions,
    calls [solve_shape_reshape] for shape goals.  (It used to be an Ltac
    hook redefined here with [Ltac atl_side ::= ...]; Coq 8.16 undoes
    such a redefinition whenever the file defining the tactic is imported
    again, coq/coq#10556, so a second [Require Import Rewrites.Tactics]
    silently dropped these lemmas from every side condition.) *)

From Coq Require Import ZArith Bool List Lia.
From Verisched Require Import Tensor.Core Tensor.Arith Tensor.Sum Tensor.Shape.
From Verisched Require Import Reshape.Defs.
Import ListNotations.
Open Scope Z_scope.

Section ShapeRules.
  Context {X : Type} `{TensorLaws X} `{!Shaped X}.

  Lemma shaped_elem_tzero n s (v : Z -> X) : shaped (n :: s) v -> shaped s (@tzero X _).
  Proof. cbn; tauto. Qed.

  Lemma shaped_elem_tzero2 n m s (v : Z -> Z -> X) :
    shaped (n :: m :: s) v -> shaped s (@tzero X _).
  Proof. cbn; intros (Hz & _ & _); exact (proj1 Hz). Qed.

  Lemma shaped_get2 n m s (v : Z -> Z -> X) i j :
    shaped (n :: m :: s) v -> shaped s (get (get v i) j).
  Proof. intros Hv; eapply (shaped_get m); eapply (shaped_get n); exact Hv. Qed.

  Local Ltac elems He :=
    first [ eapply shaped_elem_tzero; exact He
          | eapply shaped_elem_tzero2; exact He
          | eapply shaped_get2; exact He
          | eapply shaped_get; exact He ].

  Lemma shaped_concat n1 n2 n s (a b : Z -> X) :
    n1 + n2 = n -> shaped (n1 :: s) a -> shaped (n2 :: s) b ->
    shaped (n :: s) (concat n1 n2 a b).
  Proof.
    intros <- Ha Hb; unfold concat; apply shaped_genr; [lia | elems Ha |].
    intros; apply shaped_tadd; apply shaped_iverson; [elems Ha | elems Hb].
  Qed.

  Lemma shaped_transpose n m a b s (e : Z -> Z -> X) :
    a = m -> b = n -> shaped (n :: m :: s) e -> shaped (a :: b :: s) (transpose n m e).
  Proof.
    intros -> -> He; unfold transpose; apply shaped_genr; [lia | |].
    - apply shaped_zero_fun; elems He.
    - intros; apply shaped_genr; [lia | elems He | intros; elems He].
  Qed.

  Lemma shaped_flatten n m a s (e : Z -> Z -> X) :
    a = n * m -> shaped (n :: m :: s) e -> shaped (a :: s) (flatten n m e).
  Proof.
    intros -> He; unfold flatten; apply shaped_genr; [lia | elems He |]; intros.
    apply shaped_sumr; [elems He | intros; apply shaped_sumr; [elems He | intros]].
    apply shaped_iverson; elems He.
  Qed.

  Lemma shaped_split k n a b s (e : Z -> X) :
    a = cdiv n k -> b = k -> shaped (n :: s) e -> shaped (a :: b :: s) (split k n e).
  Proof.
    intros -> -> He; unfold split; apply shaped_genr; [lia | |].
    - apply shaped_zero_fun; elems He.
    - intros; apply shaped_genr; [lia | elems He | intros; apply shaped_iverson; elems He].
  Qed.

  Lemma shaped_pad_r k n a s (e : Z -> X) :
    a = n + k -> shaped (n :: s) e -> shaped (a :: s) (pad_r k n e).
  Proof.
    intros -> He; unfold pad_r; apply shaped_genr; [lia | elems He |].
    intros; apply shaped_iverson; elems He.
  Qed.

  Lemma shaped_pad_l k n a s (e : Z -> X) :
    a = n + k -> shaped (n :: s) e -> shaped (a :: s) (pad_l k n e).
  Proof.
    intros -> He; unfold pad_l; apply shaped_genr; [lia | elems He |].
    intros; apply shaped_iverson; elems He.
  Qed.

  (** Truncation keeps the element shape whatever the operand's extent. *)
  Lemma shaped_trunc_r k m a s (e : Z -> X) :
    a = k -> shaped (m :: s) e -> shaped (a :: s) (trunc_r k e).
  Proof.
    intros -> He; unfold trunc_r; apply shaped_genr; [lia | elems He | intros; elems He].
  Qed.

  Lemma shaped_trunc_l k n a s (e : Z -> X) :
    a = k -> shaped (n :: s) e -> shaped (a :: s) (trunc_l k n e).
  Proof.
    intros -> He; unfold trunc_l; apply shaped_genr; [lia | elems He | intros; elems He].
  Qed.

  (** An access into a generation, whatever the index. *)
  Lemma shaped_get_genr lo hi s (f : Z -> X) k :
    shaped s (@tzero X _) -> (forall i, lo <= i < hi -> shaped s (f i)) ->
    shaped s (get (genr lo hi f) k).
  Proof.
    intros Hz Hf; eapply (shaped_get (hi - lo)); apply shaped_genr; auto.
  Qed.
End ShapeRules.

(** Extent equations: instantiate an evar, or prove by arithmetic. *)
Ltac reshape_extent := first [ reflexivity | solve_idx ].

(** One syntax-directed step on a shape goal that [solve_shape] cannot
    take: a reshape operator, a generation whose extent is still an evar,
    a let-bound buffer, or an access into something other than a shaped
    variable. *)
Ltac reshape_shape_step :=
  lazymatch goal with
  | |- @shaped _ _ _ _ _ => idtac
  end;
  first
  [ shape_scalar_try
  | match goal with
      | |- shaped _ (concat _ _ _ _) => eapply shaped_concat; [reshape_extent | |]
      | |- shaped _ (transpose _ _ _) => eapply shaped_transpose; [reshape_extent | reshape_extent |]
      | |- shaped _ (flatten _ _ _) => eapply shaped_flatten; [reshape_extent |]
      | |- shaped _ (split _ _ _) => eapply shaped_split; [reshape_extent | reshape_extent |]
      | |- shaped _ (pad_r _ _ _) => eapply shaped_pad_r; [reshape_extent |]
      | |- shaped _ (pad_l _ _ _) => eapply shaped_pad_l; [reshape_extent |]
      | |- shaped _ (trunc_r _ _) => eapply shaped_trunc_r; [reshape_extent |]
      | |- shaped _ (trunc_l _ _ _) => eapply shaped_trunc_l; [reshape_extent |]
      | |- shaped _ (genr _ _ _) => eapply shaped_genr; [reshape_extent | | intros ? ?]
      | |- shaped _ (get (genr _ _ _) _) => eapply shaped_get_genr; [| intros ? ?]
      | |- shaped _ ?v =>
          (* a let-bound buffer: the traversal put [Hv : v = e1] in context *)
          is_var v; match goal with Hv : v = _ |- _ => rewrite Hv end
      | |- shaped _ (get ?v _) =>
          (* an input with a shape hypothesis is left to [solve_shape]; a
             let-bound buffer is read through its binding *)
          lazymatch goal with
          | Hv : shaped _ v |- _ => fail
          | _ =>
              tryif is_var v
              then (match goal with Hv : v = _ |- _ => eapply shaped_get end)
              else eapply shaped_get
          end
      end ].

Ltac solve_shape_reshape :=
  lazymatch goal with
  | |- @shaped _ _ _ _ _ => idtac
  | _ => fail "not a shape goal"
  end;
  repeat first [ reshape_shape_step | progress solve_shape | progress cbv beta ].
