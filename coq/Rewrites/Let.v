(** * Let rewrites: inlining, introduction and lifting (Sec. 4.1, 8.3). *)

From Coq Require Import ZArith Lia FunctionalExtensionality.
From Verisched Require Import Tensor.Core Tensor.Sum.
Open Scope Z_scope.

(** [let x := e1 in e2 = e2[e1/x]] (Sec. 4.1). *)
Lemma unfold_let {X Y} (e1 : X) (f : X -> Y) : atl_let e1 f = f e1.
Proof. reflexivity. Qed.

(** Let introduction: name a subterm [e] of [f e] as a buffer. *)
Lemma let_intro {X Y} (e : X) (f : X -> Y) : f e = atl_let e f.
Proof. reflexivity. Qed.

Section LetLift.
  Context {X Y : Type} `{TensorLaws X} `{TensorLaws Y}.

  (** The paper's [ll_*] family: a let whose bound value does not depend
      on the enclosing binder moves out of it. *)
  Lemma ll_gen lo hi (e1 : Y) (f : Z -> Y -> X) :
    genr lo hi (fun i => atl_let e1 (fun x => f i x)) =
    atl_let e1 (fun x => genr lo hi (fun i => f i x)).
  Proof. reflexivity. Qed.

  Lemma ll_sum lo hi (e1 : Y) (f : Z -> Y -> X) :
    sumr lo hi (fun i => atl_let e1 (fun x => f i x)) =
    atl_let e1 (fun x => sumr lo hi (fun i => f i x)).
  Proof. reflexivity. Qed.

  Lemma ll_guard p (e1 : Y) (f : Y -> X) :
    iverson p (atl_let e1 f) = atl_let e1 (fun x => iverson p (f x)).
  Proof. reflexivity. Qed.

  Lemma ll_tadd_l (e1 : Y) (f : Y -> X) (e2 : X) :
    tadd (atl_let e1 f) e2 = atl_let e1 (fun x => tadd (f x) e2).
  Proof. reflexivity. Qed.

  Lemma ll_tadd_r (e1 : Y) (e2 : X) (f : Y -> X) :
    tadd e2 (atl_let e1 f) = atl_let e1 (fun x => tadd e2 (f x)).
  Proof. reflexivity. Qed.

  Lemma ll_get (e1 : Y) (f : Y -> Z -> X) k :
    get (atl_let e1 f) k = atl_let e1 (fun x => get (f x) k).
  Proof. reflexivity. Qed.

  (** Lifting a let whose value depends on the loop index: the value
      becomes a generation over that index, and each use an access into it
      (Fig. 12's step from [let a := x[..r..]] to [let a := GEN_r ...]). *)
  Lemma let_gen_lift lo hi (e1 : Z -> Y) (f : Z -> Y -> X) :
    genr lo hi (fun i => atl_let (e1 i) (fun x => f i x)) =
    atl_let (genr lo hi e1) (fun a => genr lo hi (fun i => f i (get a (i - lo)))).
  Proof.
    unfold atl_let; apply genr_ext_ctx; intros i Hi.
    rewrite get_genr by lia; f_equal; f_equal; lia.
  Qed.

  Lemma let_sum_lift lo hi (e1 : Z -> Y) (f : Z -> Y -> X) :
    sumr lo hi (fun i => atl_let (e1 i) (fun x => f i x)) =
    atl_let (genr lo hi e1) (fun a => sumr lo hi (fun i => f i (get a (i - lo)))).
  Proof.
    unfold atl_let; apply sumr_ext_ctx; intros i Hi.
    rewrite get_genr by lia; f_equal; f_equal; lia.
  Qed.

  (** [let_gen_lift] and [let_sum_lift] (Rewrites/Let.v) for loops from 0:
      the use becomes [a[i]] rather than [a[i - 0]] (Fig. 12's [a[r]],
      [a[c; r]], ...), which keeps the printed buffer accesses as in the
      paper and spares the lowering an index simplification. *)
  Lemma let_gen_lift0 n (e1 : Z -> Y) (f : Z -> Y -> X) :
    genr 0 n (fun i => atl_let (e1 i) (fun x => f i x)) =
    atl_let (genr 0 n e1) (fun a => genr 0 n (fun i => f i (get a i))).
  Proof.
    rewrite let_gen_lift; unfold atl_let; apply genr_ext_ctx; intros.
    rewrite Z.sub_0_r; reflexivity.
  Qed.

  Lemma let_sum_lift0 n (e1 : Z -> Y) (f : Z -> Y -> X) :
    sumr 0 n (fun i => atl_let (e1 i) (fun x => f i x)) =
    atl_let (genr 0 n e1) (fun a => sumr 0 n (fun i => f i (get a i))).
  Proof.
    rewrite let_sum_lift; unfold atl_let; apply sumr_ext_ctx; intros.
    rewrite Z.sub_0_r; reflexivity.
  Qed.
End LetLift.

Section LetGuard.
  Context {X Y : Type} `{TensorLaws X} `{TensorElem Y}.

  (** Lifting a let out of a guard while keeping the guard on the bound
      value too.  [ll_guard] alone would compute the value unguarded, so a
      packing buffer lifted out of an edge guard would read its operand
      out of bounds in C (zero in ATL, but [check_safe] rejects it); with
      the guard copied the buffer is zero exactly where it is never used. *)
  Lemma ll_guard_dup p (e1 : Y) (f : Y -> X) :
    iverson p (atl_let e1 f) = atl_let (iverson p e1) (fun x => iverson p (f x)).
  Proof. destruct p; reflexivity. Qed.
End LetGuard.

Section LetLet.
  Context {X : Type} `{TensorLaws X}.

  (** A let out of the body of another let whose value it does not use. *)
  Lemma ll_let_body {Y W} (e1 : Y) (e2 : W) (f : Y -> W -> X) :
    atl_let e1 (fun x => atl_let e2 (fun y => f x y)) =
    atl_let e2 (fun y => atl_let e1 (fun x => f x y)).
  Proof. reflexivity. Qed.

  Lemma ll_let_value {Y W} (e1 : Y) (f : Y -> W) (g : W -> X) :
    atl_let (atl_let e1 f) g = atl_let e1 (fun x => atl_let (f x) g).
  Proof. reflexivity. Qed.
End LetLet.

Section LetScalar.
  Context {S Y : Type} `{ScalarLaws S}.

  Lemma ll_smul_l (e1 : Y) (f : Y -> S) (e2 : S) :
    smul (atl_let e1 f) e2 = atl_let e1 (fun x => smul (f x) e2).
  Proof. reflexivity. Qed.

  Lemma ll_smul_r (e1 : Y) (e2 : S) (f : Y -> S) :
    smul e2 (atl_let e1 f) = atl_let e1 (fun x => smul e2 (f x)).
  Proof. reflexivity. Qed.
End LetScalar.
