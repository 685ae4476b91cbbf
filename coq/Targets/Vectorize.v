(** * [vectorize i with avx2] / [avx512] / [avx2pd] / [avx512pd]: a directive.

    Halide's [vectorize] is a traversal order of a pure loop (Halide
    formal semantics, Sec. 8.2, [traverse] and its footnote 7: vectorized
    traversal is in the practical system, not formalized there); Exo
    obtains it from two primitives (Exo thesis Sec. 3.3-3.4):
    [divide_loop] by the vector width with a cut tail, then [replace] of
    each lane loop by the instruction whose body it is.  This directive is
    that sequence as one tactic, on the derivation goal [prog = ?derived]:

    1. the first [GEN] loop (pre-order) whose binder is named [i], with
       bounds [lo], [hi]: its extent [N] (the [ring_simplify] form of
       [hi - lo]) must be proved nonnegative from the facts in context
       ([atl_side]), and its body must be a scalar (the innermost loop);
    2. [vec_split_stores] (below; [gen_vectorize] of Targets/AVX.v with
       the stores): [N / w] full vectors, each a [storeu] of its lane
       loop, and the partial one (0 or 1 vector) a [maskstore] of
       [N - w * io] lanes whose lane guard is kept inside;
    3. the lanes turned into instructions, each step skipped where it
       does not apply: [vector_index] (accesses [o + l], guards [l <? c]);
       the tail's lane guard pushed through [<+>], [+], [*] onto the
       factors that depend on the lane; a lane-free body as [broadcast];
       lane-wise [<+>] / [+] as [add], [*] as [mul], [smax] as [max]
       (where the scalar has one); [add (mul a b) c] and [add c (mul a b)]
       as [fmadd]; then the instructions by their specifications
       ([use_instr]): [loadu], [maskload], [maskload_range], [maskload_min],
       [maskbroadcast_range] (a guarded constant), [broadcast];
       a border's guard on a load (a stencil's [|[ 0 <=? i - 1 ]| w _[ i - 1 ]]
       or [|[ i + 1 <? n ]| w _[ i + 1 ]], Halide's constant exterior) is
       pushed onto the load, of two upper bounds one that the loops'
       bounds imply dropped (a split's tail guard under vectors that divide
       its factor) or else the provably tighter kept (neither: both, for
       [maskload_min]), and
       becomes a masked load: [maskload] for an upper bound, [maskload_range]
       (lanes [a <= l < b]) for a lower one, so borders need no peeling;
    4. no lane loop [GEN [ l < w ] _] may remain outside an instruction:
       otherwise the directive refuses, printing the first one left.

    Refusals name the directive, the loop and the condition; the
    reason that depends on the loop's context (the extent, the remaining
    lane loop) is printed just before, as [check_safe] does.  A failed
    [vectorize] leaves the program unchanged. *)

From Coq Require Import ZArith Lia.
From Verisched Require Import Tensor.Scalar Tensor.Core Tensor.Sum Tensor.Arith.
From Verisched Require Import Rewrites.Context Rewrites.Gen Rewrites.Guard Rewrites.Tactics.
From Verisched Require Import Reshape.Defs Targets.Instr Targets.AVX.
Open Scope Z_scope. Open Scope atl_scope.

(** ** Lemmas *)

(** The loop split into vectors, with its stores: [gen_vectorize], the
    full vectors marked [storeu], the partial one a [maskstore] whose lane
    guard is in lane form and kept inside (its loads must stay in bounds). *)
Section SplitStores.
  Context {S : Type} `{ScalarLaws S} {w : Z}
    {loadu : (Z -> S) -> Z -> Z -> S} {maskload : (Z -> S) -> Z -> Z -> Z -> S}
    {broadcast : S -> Z -> S} {mul add : (Z -> S) -> (Z -> S) -> Z -> S}
    {fmadd : (Z -> S) -> (Z -> S) -> (Z -> S) -> Z -> S}
    {storeu : (Z -> S) -> Z -> S} {maskstore : Z -> (Z -> S) -> Z -> S}
    {LI : LaneISA w loadu maskload broadcast mul add fmadd storeu maskstore}.

  Lemma vec_split_stores lo hi N q (c : Z -> Z) (f : Z -> S) :
    (N = hi - lo)%Z -> (q = N / w)%Z -> (0 < w)%Z -> (0 <= N)%Z ->
    (forall io, c io = N - w * io)%Z ->
    genr lo hi f =
    trunc_r N (flatten (cdiv N w) w
      (concat q (cdiv N w - q)
         (GEN [ io < q ] storeu (GEN [ l < w ] f (lo + (w * io + l))%Z))
         (GENR [ q <= io < cdiv N w ] maskstore (c io)
            (GEN [ l < w ] |[ (l <? c io)%Z ]| f (lo + (w * io + l))%Z)))).
  Proof.
    intros HN Hq Hw HN0 Hc.
    rewrite (gen_vectorize w lo hi N q f HN Hq Hw HN0).
    f_equal; f_equal; f_equal.
    - apply genr_ext_ctx; intros io Hio.
      exact (vec_storeu_gen (LI := LI) (fun l => f (lo + (w * io + l))%Z)).
    - apply genr_ext_ctx; intros io Hio.
      rewrite Hc, <- (vec_maskstore_guard (LI := LI) (N - w * io)%Z (fun l => f (lo + (w * io + l))%Z)).
      apply genr_ext_ctx; intros l Hl; f_equal.
      destruct (Z.ltb_spec (w * io + l) N), (Z.ltb_spec l (N - w * io)); lia.
  Qed.

  (** A vector whose lanes are all under one bound [l <? n] (a split's
      guarded tail inside full vectors, [split i by 64 into io ii.
      vectorize ii]): a masked store of [n] lanes, so that its lanes are
      rewritten knowing the bound ([vec_maskstore_under]: a lane-free
      operand loses it, [smax] passes it on).  The lowering stores it
      unmasked where the destination ends at or before lane [n]
      (codegen/vector.py), as it did the plain store. *)
  Lemma vec_storeu_maskstore (n : Z) (f : Z -> S) :
    storeu (GEN [ l < w ] |[ l <? n ]| f l) = maskstore n (GEN [ l < w ] |[ l <? n ]| f l).
  Proof.
    rewrite <- (vec_storeu_gen (LI := LI)); apply (vec_maskstore_guard (LI := LI)).
  Qed.

  Lemma vec_add_mul_fmadd_r (a b c : Z -> S) : add c (mul a b) = fmadd a b c.
  Proof. rewrite (vec_add_comm (LI := LI)); apply (vec_add_mul_fmadd (LI := LI)). Qed.
End SplitStores.

Section WidthSplit.
  Context {S : Type} `{ScalarLaws S}.
  Definition avx2_split_stores := vec_split_stores (S := S) (w := 8).
  Definition avx512_split_stores := vec_split_stores (S := S) (w := 16).
  Definition avx2_storeu_maskstore := vec_storeu_maskstore (S := S) (w := 8).
  Definition avx512_storeu_maskstore := vec_storeu_maskstore (S := S) (w := 16).
  Definition avx2_add_mul_fmadd_r := vec_add_mul_fmadd_r (S := S) (w := 8).
  Definition avx512_add_mul_fmadd_r := vec_add_mul_fmadd_r (S := S) (w := 16).
  (* the float64 families: their instances named, not resolved (Targets/AVX.v) *)
  Definition avx2pd_split_stores := vec_split_stores (S := S) (LI := LaneISA_avx2pd).
  Definition avx512pd_split_stores := vec_split_stores (S := S) (LI := LaneISA_avx512pd).
  Definition avx2pd_storeu_maskstore := vec_storeu_maskstore (S := S) (LI := LaneISA_avx2pd).
  Definition avx512pd_storeu_maskstore :=
    vec_storeu_maskstore (S := S) (LI := LaneISA_avx512pd).
  Definition avx2pd_add_mul_fmadd_r := vec_add_mul_fmadd_r (S := S) (LI := LaneISA_avx2pd).
  Definition avx512pd_add_mul_fmadd_r :=
    vec_add_mul_fmadd_r (S := S) (LI := LaneISA_avx512pd).
End WidthSplit.

(** Which instruction library [vectorize] uses: float32 lanes ([avx2]: 8,
    [avx512]: 16) or float64 lanes ([avx2pd]: 4, [avx512pd]: 8).  A tag for
    the tactics below, not part of any program. *)
Inductive vec_isa := VAVX2 | VAVX512 | VAVX2PD | VAVX512PD.

Ltac atl_vec_width isa :=
  lazymatch isa with
  | VAVX2 => constr:(8%Z) | VAVX512 => constr:(16%Z)
  | VAVX2PD => constr:(4%Z) | VAVX512PD => constr:(8%Z)
  end.

(** [h] is one of the libraries' masked stores. *)
Ltac atl_vec_is_maskstore h :=
  first [ constr_eq h @avx2_maskstore | constr_eq h @avx512_maskstore
        | constr_eq h @avx2pd_maskstore | constr_eq h @avx512pd_maskstore ].

(** A lane guard through scalar operations (for the partial vector). *)
Section Guards.
  Context {S : Type} `{ScalarLaws S}.

  Lemma guard_sadd p (a b : S) : |[ p ]| (a + b) = (|[ p ]| a) + (|[ p ]| b).
  Proof. destruct p; cbn; [reflexivity|]; symmetry; apply sadd_0_l. Qed.

  Lemma guard_smul_both p (a b : S) : |[ p ]| (a * b) = (|[ p ]| a) * (|[ p ]| b).
  Proof. destruct p; cbn; [reflexivity|]; symmetry; apply smul_0_l. Qed.

  (** Where the guard holds (under a masked store, [vec_maskstore_under]): it
      goes onto the operands that depend on the lane only, the others stay
      lane-free (broadcasts), and through [smax]. *)
  Lemma guard_true_sadd_l p (a b : S) : p = true -> |[ p ]| (a + b) = (|[ p ]| a) + b.
  Proof. intros ->; reflexivity. Qed.
  Lemma guard_true_sadd_r p (a b : S) : p = true -> |[ p ]| (a + b) = a + (|[ p ]| b).
  Proof. intros ->; reflexivity. Qed.
  Lemma guard_true_tadd_l p (a b : S) : p = true -> |[ p ]| (a <+> b) = (|[ p ]| a) <+> b.
  Proof. intros ->; reflexivity. Qed.
  Lemma guard_true_tadd_r p (a b : S) : p = true -> |[ p ]| (a <+> b) = a <+> (|[ p ]| b).
  Proof. intros ->; reflexivity. Qed.
  (** Anywhere: [smax 0 0 = 0] by the class's idempotence, so a guard passes
      onto both operands as onto [+]'s ([guard_sadd]). *)
  Lemma guard_smax `{ScalarMax S} p (a b : S) :
    |[ p ]| smax a b = smax (|[ p ]| a) (|[ p ]| b).
  Proof. destruct p; cbn; [reflexivity|]; symmetry; apply smax_idem. Qed.
  Lemma guard_true_smax `{ScalarMax S} p (a b : S) :
    p = true -> |[ p ]| smax a b = smax (|[ p ]| a) (|[ p ]| b).
  Proof. intros ->; reflexivity. Qed.
  Lemma guard_true_smax_l `{ScalarMax S} p (a b : S) :
    p = true -> |[ p ]| smax a b = smax (|[ p ]| a) b.
  Proof. intros ->; reflexivity. Qed.
  Lemma guard_true_smax_r `{ScalarMax S} p (a b : S) :
    p = true -> |[ p ]| smax a b = smax a (|[ p ]| b).
  Proof. intros ->; reflexivity. Qed.

  (** Two upper bounds on the lane: the tighter one is kept (a border's
      guard inside the tail's, or the reverse), so that no lane past either
      is read. *)
  Lemma guard_lt_nest_l (x c c2 : Z) (e : S) :
    (c2 <= c)%Z -> |[ x <? c ]| |[ x <? c2 ]| e = |[ x <? c2 ]| e.
  Proof.
    intros Hc; destruct (Z.ltb_spec x c2), (Z.ltb_spec x c); try reflexivity; lia.
  Qed.
  Lemma guard_lt_nest_r (x c c2 : Z) (e : S) :
    (c <= c2)%Z -> |[ x <? c ]| |[ x <? c2 ]| e = |[ x <? c ]| e.
  Proof.
    intros Hc; destruct (Z.ltb_spec x c2), (Z.ltb_spec x c); try reflexivity; lia.
  Qed.

  (** A bound on the lane that the loops' bounds already imply (a split's
      tail guard inside vectors that divide its extent, [l <? 64 - 8 io0]
      with [io0 < 8]): dropped, so the other bound alone makes the mask
      ([guard_lt_true] above a guard or any term, [guard_lt_true_in] below one). *)
  Lemma guard_lt_true (x c : Z) (e : S) : (x < c)%Z -> |[ x <? c ]| e = e.
  Proof. intros Hc; rewrite (proj2 (Z.ltb_lt x c) Hc); reflexivity. Qed.
  Lemma guard_lt_true_in p (x c : Z) (e : S) :
    (x < c)%Z -> |[ p ]| |[ x <? c ]| e = |[ p ]| e.
  Proof. intros Hc; rewrite (proj2 (Z.ltb_lt x c) Hc); reflexivity. Qed.

  (** Two guards around an operation, pushed together onto its operands
      (onto the factors of [*] that depend on the lane): a border's bound
      and the tail's, or both bounds of a border, around a sum of loads. *)
  Lemma guard2_tadd p q (a b : S) :
    |[ p ]| |[ q ]| (a <+> b) = (|[ p ]| |[ q ]| a) <+> (|[ p ]| |[ q ]| b).
  Proof. rewrite !tadd_guard; reflexivity. Qed.
  Lemma guard2_sadd p q (a b : S) :
    |[ p ]| |[ q ]| (a + b) = (|[ p ]| |[ q ]| a) + (|[ p ]| |[ q ]| b).
  Proof. rewrite !guard_sadd; reflexivity. Qed.
  Lemma guard2_smax `{ScalarMax S} p q (a b : S) :
    |[ p ]| |[ q ]| smax a b = smax (|[ p ]| |[ q ]| a) (|[ p ]| |[ q ]| b).
  Proof. rewrite !guard_smax; reflexivity. Qed.
  Lemma guard2_smul_l p q (a b : S) : |[ p ]| |[ q ]| (a * b) = (|[ p ]| |[ q ]| a) * b.
  Proof. rewrite !gp_iverson; reflexivity. Qed.
  Lemma guard2_smul_r p q (a b : S) : |[ p ]| |[ q ]| (a * b) = a * (|[ p ]| |[ q ]| b).
  Proof. rewrite !pg_iverson; reflexivity. Qed.
  Lemma guard2_smul_both p q (a b : S) :
    |[ p ]| |[ q ]| (a * b) = (|[ p ]| |[ q ]| a) * (|[ p ]| |[ q ]| b).
  Proof. rewrite !guard_smul_both; reflexivity. Qed.

  (** A lower bound on the lane alone (a left border): its upper bound is
      the width, the form of [maskload_range] (Targets/AVX.v). *)
  Lemma lanes_border_lo w a o (v : Z -> S) :
    (GEN [ l < w ] |[ a <=? l ]| v _[ o + l ]) =
    GEN [ l < w ] |[ a <=? l ]| |[ l <? w ]| v _[ o + l ].
  Proof.
    apply genr_ext_ctx; intros l Hl; rewrite (proj2 (Z.ltb_lt l w)) by lia; reflexivity.
  Qed.

  (** A constant under a border's bound (a lane-free [x]): both bounds, the
      form of [maskbroadcast_range] (Targets/AVX.v). *)
  Lemma lanes_const_lo w a (x : S) :
    (GEN [ l < w ] |[ a <=? l ]| x) = GEN [ l < w ] |[ a <=? l ]| |[ l <? w ]| x.
  Proof.
    apply genr_ext_ctx; intros l Hl; rewrite (proj2 (Z.ltb_lt l w)) by lia; reflexivity.
  Qed.
  (** Two upper bounds on a constant (a window in a split's guarded full
      vectors): the lower bound [0], the form of [maskbroadcast_range_min]. *)
  Lemma lanes_const_hi2 w a b (x : S) :
    (GEN [ l < w ] |[ l <? a ]| |[ l <? b ]| x) =
    GEN [ l < w ] |[ 0 <=? l ]| |[ l <? a ]| |[ l <? b ]| x.
  Proof.
    apply genr_ext_ctx; intros l Hl; rewrite (proj2 (Z.leb_le 0 l)) by lia; reflexivity.
  Qed.
  Lemma lanes_const_hi w b (x : S) :
    (GEN [ l < w ] |[ l <? b ]| x) = GEN [ l < w ] |[ 0 <=? l ]| |[ l <? b ]| x.
  Proof.
    apply genr_ext_ctx; intros l Hl; rewrite (proj2 (Z.leb_le 0 l)) by lia; reflexivity.
  Qed.

  (** The guard onto the left factor only (the tuner's lanes template, before
      [stage] moves it into the packed, zero-padded operand): the right factor
      stays a lane-free broadcast. *)
  Lemma guard_smul_l p (a b : S) : |[ p ]| (a * b) = (|[ p ]| a) * b.
  Proof. destruct p; cbn; [reflexivity|]; symmetry; apply smul_0_l. Qed.

  (** A reduction as a sum of lanes (decisions #78): [SUM [ l < w ] g l] names
      its [w] terms as a buffer [t] and sums that, so that, once the depth sum
      is moved inside the lanes' generation ([reorder]), [vectorize] gives [w]
      independent vector accumulators over the depth and the buffer's lanes are
      summed once at the end.  The [rfactor] directive (Rewrites/Rfactor.v,
      #146) does this in one step, with the user's names, and is what the
      tuner's [dot] template uses now; the lemma stays for derivations that
      name it. *)
  Lemma sum_lanes_let w (g : Z -> S) :
    sumr 0 w g = atl_let (genr 0 w g) (fun t => sumr 0 w (fun l => get t l)).
  Proof.
    unfold atl_let; apply sumr_ext_ctx; intros; rewrite get_gen by lia; reflexivity.
  Qed.
End Guards.

(** ** The directive *)

(** A transient marker on the loop being vectorized, so that every later
    step works on that loop only (the first named [i]); the directive
    removes it (it rewrites the marked node), or fails as a whole. *)
Definition vec_mark {X : Type} (e : X) : X := e.

(** Mark the goal's left side [L], a loop whose body is [F], if its binder is
    named [i]: the GEN form below, the SUM form ([atl_vec_smark_root]) further
    on. *)
Ltac atl_vec_mark_as i F L :=
  lazymatch F with fun z => _ => atl_same_name i z end; atl_named_binder;
  exact (@eq_refl _ (vec_mark L)).

Ltac atl_vec_mark_root i :=
  atl_eta_binder;
  lazymatch goal with
  | |- @genr ?X ?E ?lo ?hi ?F = _ => atl_vec_mark_as i F (@genr X E lo hi F)
  end.

(** The tail's lane count [N - w * io], in its guard and its
    [maskstore], [ring_simplify]ed (as [vector_index] writes guards). *)
Ltac atl_vec_norm_root :=
  idtac;
  lazymatch goal with
  | |- iverson (?x <? ?c)%Z ?e = _ =>
      is_var x;
      atl_ring_norm c ltac:(fun c' =>
        tryif constr_eq c c' then fail else
        (transitivity (iverson (x <? c')%Z e); [ apply guard_lane_shift; ring | reflexivity ]))
  | |- ?ms ?c ?v = _ =>
      let h := atl_head ms in
      atl_vec_is_maskstore h;
      atl_ring_norm c ltac:(fun c' =>
        tryif constr_eq c c' then fail else
        (transitivity (ms c' v); [ f_equal; ring | reflexivity ]))
  end.

(** Where [atl_vec_norm_root] can fire: a guard, or a masked store (its
    two heads), so [atl_everywhere_may] makes no proof step elsewhere. *)
Ltac atl_vec_norm_may t :=
  lazymatch t with
  | iverson _ _ => idtac
  | ?ms _ _ =>
      let h := atl_head ms in
      atl_vec_is_maskstore h
  end.

(** No guard and no masked store in [t]: no node of [t] passes
    [atl_vec_norm_may]. *)
Ltac atl_vec_norm_none t :=
  lazymatch t with
  | context [iverson _ _] => fail
  | context [@avx2_maskstore] => fail
  | context [@avx512_maskstore] => fail
  | context [@avx2pd_maskstore] => fail
  | context [@avx512pd_maskstore] => fail
  | _ => idtac
  end.

(** No guard in [t]: [atl_vec_guard_root] fires only at a guard. *)
Ltac atl_vec_guard_none t := lazymatch t with context [iverson _ _] => fail | _ => idtac end.

(** The marked loop's extent, [ring_simplify]ed. *)
Ltac atl_vec_extent lo hi k := atl_ring_norm constr:((hi - lo)%Z) k.

(** Checks at the marked node, printing the reason when refused. *)
Ltac atl_vec_scalar_or_fail i X :=
  tryif (let _ := constr:(_ : ScalarLaws X) in idtac) then reflexivity
  else (idtac "vectorize: the body of loop" i "is not a scalar but has type" X
              "(vectorize the innermost loop)"; fail).
Ltac atl_vec_check_scalar i :=
  idtac;
  lazymatch goal with
  | |- vec_mark (@genr ?X _ _ _ _) = _ => atl_vec_scalar_or_fail i X
  | |- vec_mark (@sumr ?X _ _ _ _) = _ => atl_vec_scalar_or_fail i X
  end.

(** (A GEN or a SUM: the marked node is [genr lo hi F] or [sumr lo hi F].) *)
Ltac atl_vec_check_extent i :=
  idtac;
  lazymatch goal with
  | |- vec_mark (_ ?lo ?hi _) = _ =>
      atl_vec_extent lo hi ltac:(fun N =>
        tryif assert_succeeds (assert (0 <= N)%Z by atl_side) then reflexivity
        else (idtac "vectorize: the extent of loop" i "is" N
                    "which cannot be proved nonnegative from the facts in context"; fail))
  end.

(** The tail's lane guard [l <? c], pushed through [<+>], [+] and onto
    each factor of [*] that depends on the lane [l], so that only loads keep
    it (masked loads).  Under the masked store ([vec_maskstore_under]: its
    lanes rewritten knowing [Hp : (l <? c) = true], as only those are kept),
    a lane-free operand of [+], [<+>] or [smax] loses it ([guard_true_sadd_l]
    and the like: [x + c] keeps [c] a broadcast) and an [smax] passes it to
    the operands that depend on the lane ([guard_true_smax]).  Elsewhere an
    [smax] passes it to both operands ([guard_smax], by the class's
    idempotence: [smax 0 0 = 0]), once no cheaper way is left. *)
(** [left] where only [a] depends on the lane [x], [right] where only [b]
    does, [both] otherwise: which operands of a binary operation keep the guard. *)
Ltac atl_vec_sides x a b left right both :=
  let dep t := lazymatch t with context [x] => constr:(true) | _ => constr:(false) end in
  let da := dep a in let db := dep b in
  lazymatch constr:((da, db)) with
  | (true, false) => left
  | (false, true) => right
  | _ => both
  end.

(** Does [t] mention the lane [x]? *)
Ltac atl_vec_dep x t := lazymatch t with context [x] => idtac | _ => fail end.

(** A guard on the lane meeting an operation: pushed onto its operands, onto the
    factors of [*] that depend on the lane ([two]: two nested guards at once,
    [guard2_*]). *)
Ltac atl_vec_push x e two :=
  lazymatch e with
  | tadd _ _ => lazymatch two with true => eapply guard2_tadd | false => eapply tadd_guard end
  | sadd _ _ => lazymatch two with true => eapply guard2_sadd | false => eapply guard_sadd end
  | smul ?a ?b =>
      lazymatch a with
      | context [x] =>
          lazymatch b with
          | context [x] =>
              lazymatch two with
              | true => eapply guard2_smul_both | false => eapply guard_smul_both end
          | _ =>
              lazymatch two with
              | true => eapply guard2_smul_l | false => eapply eq_sym; eapply gp_iverson end
          end
      | _ =>
          lazymatch two with
          | true => eapply guard2_smul_r | false => eapply eq_sym; eapply pg_iverson end
      end
  end.

(** Two nested guards around a leaf, put in the order the instructions take:
    a lane-free guard outside the lane's (taken out of the lane loop later), a
    lower bound outside an upper one ([maskload_range]), and of two upper
    bounds the provably tighter kept. *)
(** The fact that a lane is stored, under a tail's masked store
    ([vec_maskstore_under]): held apart from the facts of the guards and
    loops, as [lia] does not unfold it.  Only a guard on a lane-free value
    or an operation is dropped by it (its lanes past the count are computed
    and not stored); a bound on a load must be kept or replaced by the
    guards' and loops' facts, as the load's mask says which lanes are read,
    and a bound that only the store implies would leave the other bounds to
    choose them, past the array ([|[ 3 <=? i ]| |[ i <? 4 ]| f _[ i ]] at
    [n <= 3] read [f[3]]). *)
Definition vec_stored (b : bool) : Prop := b = true.

(** [x < c] from the loops' bounds alone: every other fact on the lane
    is cleared first.  Under a tail's masked store the lanes past its count
    are not stored, so the tail's guard holds there, but dropping it would
    leave the other bound to choose the lanes read, and those can lie past
    the array ([|[ i <? 5 ]| f _[ i ]] at [n < 5]). *)
Ltac atl_vec_lane_lt x :=
  repeat match goal with
         | H : ?T |- _ =>
             lazymatch T with
             | (0 <= x < _)%Z => fail
             | context [x] => clear H
             end
         end;
  (* [solve_idx]: an empty tail loop ([64 / 8 <= io0 < cdiv 64 8]) is a
     contradiction that needs the quotients *)
  first [ lia | solve_idx ].

Ltac atl_vec_guard_pair x p q :=
  lazymatch p with
  | (x <? _)%Z =>
      lazymatch q with
      | (x <? _)%Z =>
          first [ eapply guard_lt_true; atl_vec_lane_lt x
                | eapply guard_lt_true_in; atl_vec_lane_lt x
                | eapply guard_lt_nest_l; lia | eapply guard_lt_nest_r; lia ]
      | (_ <=? x)%Z => eapply guard_comm
      | _ => lazymatch q with context [x] => fail | _ => eapply guard_comm end
      end
  | (_ <=? x)%Z => lazymatch q with context [x] => fail | _ => eapply guard_comm end
  end.

(** [e] is a lane-free value under guards (which may depend on the lane):
    no memory is read under them. *)
Ltac atl_vec_leaf_free x e :=
  lazymatch e with
  | iverson _ ?e' => atl_vec_leaf_free x e'
  | _ => lazymatch e with context [x] => fail | _ => idtac end
  end.

(** Of two bounds around a lane-free value (a constant under a window in a
    tail, [|[ l <? n - 8 io ]| |[ l <? 5 - 8 io ]| c], or under more guards),
    the one that only the
    masked store implies is dropped: no memory is read under it, so the
    other bound choosing the lanes reads nothing past an array (the caveat
    of [vec_stored]), and the lanes it no longer zeroes are not stored. *)
Ltac atl_vec_guard_stored x p q e :=
  atl_vec_leaf_free x e;
  match goal with
  | Hp : vec_stored p |- _ =>
      lazymatch p with (x <? _)%Z =>
        eapply guard_lt_true; exact (proj1 (Z.ltb_lt _ _) Hp) end
  | Hp : vec_stored q |- _ =>
      lazymatch q with (x <? _)%Z =>
        eapply guard_lt_true_in; exact (proj1 (Z.ltb_lt _ _) Hp) end
  end.

(** A guard meeting [smax]: onto both operands ([guard_smax], the class's
    idempotence).  Tried last: where a masked store stands for the bound, or
    the loops imply it, the guard is dropped instead, with no mask left. *)
Ltac atl_vec_push_max e two :=
  lazymatch e with
  | smax _ _ => lazymatch two with true => eapply guard2_smax | false => eapply guard_smax end
  end.

Ltac atl_vec_guard_lane :=
  idtac;
  let x := atl_lane_var in
  lazymatch goal with
  | |- iverson ?p (iverson ?q ?e) = _ =>
      first [ atl_vec_dep x p; atl_vec_dep x q; atl_vec_push x e true
            | atl_vec_guard_stored x p q e
            | atl_vec_guard_pair x p q
            | atl_vec_dep x p; atl_vec_dep x q; atl_vec_push_max e true ]
  | |- iverson (_ <=? x)%Z ?e = _ => first [ atl_vec_push x e false | atl_vec_push_max e false ]
  | |- iverson (x <? ?c)%Z ?e = _ =>
      first
        [ lazymatch goal with Hp : vec_stored (x <? c)%Z |- _ =>
            lazymatch e with
            | smax ?a ?b =>
                atl_vec_sides x a b ltac:(eapply (guard_true_smax_l _ _ _ Hp))
                  ltac:(eapply (guard_true_smax_r _ _ _ Hp))
                  ltac:(eapply (guard_true_smax _ _ _ Hp))
            | sadd ?a ?b =>
                atl_vec_sides x a b ltac:(eapply (guard_true_sadd_l _ _ _ Hp))
                  ltac:(eapply (guard_true_sadd_r _ _ _ Hp)) ltac:(fail)
            | tadd ?a ?b =>
                atl_vec_sides x a b ltac:(eapply (guard_true_tadd_l _ _ _ Hp))
                  ltac:(eapply (guard_true_tadd_r _ _ _ Hp)) ltac:(fail)
            | _ => is_var e; eapply (guard_elim _ _ Hp)
            end
          end
        | atl_vec_push x e false
        (* around smax: a bound the loops imply is dropped (the split's
           guard in the vectors' empty tail, [split i by 64]); any other
           goes onto its operands *)
        | lazymatch e with smax _ _ => idtac end;
          eapply guard_lt_true; atl_vec_lane_lt x
        | atl_vec_push_max e false ]
  end.

(** The guard pass: top-down; at the tail's masked store it goes on inside
    [vec_maskstore_under] with the lanes' fact in context, once (not again
    under a store whose fact is already there). *)
Ltac atl_vec_guard_pass := atl_topdown_prune atl_vec_guard_none atl_vec_guard_root
with atl_vec_guard_root :=
  first [ atl_vec_guard_under | atl_vec_guard_storeu | atl_vec_guard_lane ]
with atl_vec_guard_under :=
  idtac;
  lazymatch goal with
  | |- ?ms ?n (genr 0 _ ?F) = _ =>
      lazymatch goal with _ : vec_stored (_ <? n)%Z |- _ => fail | _ => idtac end;
      let h := atl_head ms in
      first [ constr_eq h @avx2_maskstore; refine (avx2_maskstore_under n F _ _)
            | constr_eq h @avx512_maskstore; refine (avx512_maskstore_under n F _ _)
            | constr_eq h @avx2pd_maskstore; refine (avx2pd_maskstore_under n F _ _)
            | constr_eq h @avx512pd_maskstore; refine (avx512pd_maskstore_under n F _ _) ];
      lazymatch F with fun z => _ =>
        let l := fresh z in let Hl := fresh "Hl" in let Hp := fresh "Hp" in
        intros l Hl Hp; change (vec_stored (l <? n)%Z) in Hp; atl_beta_lhs;
        atl_vec_guard_pass
      end
  end

(** A plain store whose lanes are all under one bound (a split's guarded
    tail inside full vectors) becomes a masked store of that many lanes
    ([vec_storeu_maskstore]), and the pass goes on under it as under the
    tail's; only where the lanes hold an [smax] (the bound would otherwise go
    onto each operand, a masked broadcast for a constant one) or a guarded
    value that reads no memory (a constant under a window).  Elsewhere the plain store stays: a bound that is not
    the destination's end (a window's) would be a masked store in the C. *)
with atl_vec_guard_storeu :=
  idtac;
  lazymatch goal with
  | |- ?st (genr 0 _ ?F) = _ =>
      (* [?c], [?e] closed under the binder: they do not depend on the lane *)
      lazymatch F with (fun z => iverson (z <? ?c)%Z _) =>
        first [ lazymatch F with context [@smax _ _ _ _] => idtac end
              | lazymatch F with context [iverson _ ?e] => idtac end ];
        let h := atl_head st in
        first [ constr_eq h @avx2_storeu; refine (eq_trans (avx2_storeu_maskstore c _) _)
              | constr_eq h @avx512_storeu; refine (eq_trans (avx512_storeu_maskstore c _) _)
              | constr_eq h @avx2pd_storeu; refine (eq_trans (avx2pd_storeu_maskstore c _) _)
              | constr_eq h @avx512pd_storeu;
                refine (eq_trans (avx512pd_storeu_maskstore c _) _) ];
        atl_beta_lhs; atl_vec_guard_under
      end
  end.

(** One top-down pass of lemma [L] (no diagnostics; no change if it
    applies nowhere), and every subterm that is instruction [I]. *)
Ltac atl_vec_rw_all L := atl_step ltac:(atl_topdown_lemma L).
(** The head of [I]'s specification is read once, under [atl_keep]
    ([atl_instr_head_kept]): elaborated in the proof state, [I]'s open
    implicit arguments would stay pending there, and the next step's
    [refine] failed on them (why the [may] test used to elaborate [I] again
    at every node, inside [assert_succeeds]). *)
Ltac atl_vec_instr_all I :=
  atl_instr_head_kept I ltac:(fun hd =>
      atl_step ltac:(atl_everywhere_prune ltac:(atl_none_head hd) ltac:(atl_head_may hd)
                                          ltac:(atl_instr_root_any false I))).

(** A lane loop whose body depends on its lane (a lane-free one is left for
    [broadcast], one instruction where [mul] of broadcasts would be two). *)
Ltac atl_vec_lane_dep :=
  idtac;
  lazymatch goal with
  | |- genr 0 _ (fun _ => ?b) = _ => fail
  | |- genr 0 _ _ = _ => idtac
  end.

(** The lane-wise operations as instructions, in one top-down pass: at a lane
    loop, [<+>] / [+] as [add], [*] as [mul], [smax] as [max] (with [max]
    only where the program has one), and the pass goes on inside what it made,
    so the operations nest in any order: [c * (a + b)] is [mul] of a
    broadcast and an [add] (separate passes, [add] first, left the [+] under a
    [mul] as a lane loop). *)
Ltac atl_vec_arith_root hoist add_tadd add mul max :=
  atl_vec_lane_dep;
  first [ atl_root_l hoist | atl_root_l add_tadd | atl_root_l add | atl_root_l mul | max ].

(** [hoist]: [guard_gen 0 w], a guard that does not depend on the lane (a
    border of an outer loop, [|[ 0 <=? y - 1 ]| A _[ y - 1 ] _[ x ]]) taken
    out of the lane loop: the vector is guarded as a whole (the lowering's
    [if]), its lanes loaded as any others. *)
Ltac atl_vec_arith hoist add_tadd add mul max :=
  atl_side_head add true ltac:(fun h =>
    atl_step ltac:(atl_topdown_prune ltac:(atl_none_head h)
                                     ltac:(atl_vec_arith_root hoist add_tadd add mul max))).

(** [max] at a lane loop, where the program has an [smax] (otherwise never:
    [smax]'s instance need not exist). *)
Ltac atl_vec_max_or_fail max :=
  idtac;
  lazymatch goal with
  | |- ?t = _ => lazymatch t with context [@smax _ _ _ _] => atl_root_l max | _ => fail end
  end.

(** The guard pass, and once more where a guard is left around [smax]: a
    bound above another (a border's above a split's tail) was reached before
    the inner ones went onto [smax]'s operands; or where three are left on one
    value: those [smax] passed to a constant operand together, below the node
    where the tail's store bound them (a window under a split by 9 and a ReLU:
    [|[ l <? 9 - 8 io0 ]|] is dropped there by [atl_vec_guard_stored]). *)
Ltac atl_vec_guards :=
  atl_step ltac:(atl_vec_guard_pass);
  lazymatch goal with
  | |- ?t = _ =>
      lazymatch t with
      | context [iverson _ (@smax _ _ _ _)] => try atl_step ltac:(atl_vec_guard_pass)
      | context [iverson _ (iverson _ (iverson _ _))] => try atl_step ltac:(atl_vec_guard_pass)
      | _ => idtac
      end
  end.

(** [tac] only where the program has three nested guards (the three-bound
    masks' form), or two nested upper bounds ([lanes_const_hi2]'s): most
    programs have neither, and a traversal that finds nothing still costs
    its walk (about 0.1 s over each blur derivation's vectorize steps). *)
Ltac atl_vec_if_guards3 tac :=
  idtac;
  lazymatch goal with
  | |- ?t = _ =>
      lazymatch t with context [iverson _ (iverson _ (iverson _ _))] => tac | _ => idtac end
  end.
Ltac atl_vec_if_uppers2 tac :=
  idtac;
  lazymatch goal with
  | |- ?t = _ =>
      lazymatch t with
      | context [iverson (_ <? _)%Z (iverson (_ <? _)%Z _)] => tac
      | _ => idtac
      end
  end.

(** The lanes as the instructions of one library (its constants passed in). *)
Ltac atl_vec_lanes_of w bcast add_tadd add mul max loadu maskload mrange mmin mrange_min
    mmin3 mrange_min3 mbrange mbrange_min :=
  atl_vec_instr_all bcast;
  atl_vec_arith uconstr:(guard_gen 0 w) add_tadd add mul ltac:(atl_vec_max_or_fail max);
  atl_vec_instr_all loadu;
  atl_vec_instr_all maskload;
  atl_vec_rw_all uconstr:(lanes_border_lo);
  atl_vec_instr_all mrange;
  atl_vec_instr_all mmin;
  atl_vec_instr_all mrange_min;
  atl_vec_if_guards3 ltac:(atl_vec_instr_all mmin3; atl_vec_instr_all mrange_min3);
  atl_vec_rw_all uconstr:(lanes_const_lo);
  atl_vec_rw_all uconstr:(lanes_const_hi);
  atl_vec_if_uppers2 ltac:(atl_vec_rw_all uconstr:(lanes_const_hi2));
  atl_vec_instr_all mbrange;
  atl_vec_if_guards3 ltac:(atl_vec_instr_all mbrange_min);
  atl_vec_instr_all bcast.

Ltac atl_vec_lanes isa :=
  vector_index;
  atl_vec_guards;
  lazymatch isa with
  | VAVX2 =>
      atl_vec_lanes_of constr:(8%Z) uconstr:(avx2_broadcast) uconstr:(avx2_add_gen_tadd)
        uconstr:(avx2_add_gen) uconstr:(avx2_mul_gen) uconstr:(avx2_max_gen)
        uconstr:(avx2_loadu) uconstr:(avx2_maskload) uconstr:(avx2_maskload_range)
        uconstr:(avx2_maskload_min) uconstr:(avx2_maskload_range_min)
        uconstr:(avx2_maskload_min3) uconstr:(avx2_maskload_range_min3)
        uconstr:(avx2_maskbroadcast_range) uconstr:(avx2_maskbroadcast_range_min)
  | VAVX512 =>
      atl_vec_lanes_of constr:(16%Z) uconstr:(avx512_broadcast) uconstr:(avx512_add_gen_tadd)
        uconstr:(avx512_add_gen) uconstr:(avx512_mul_gen) uconstr:(avx512_max_gen)
        uconstr:(avx512_loadu) uconstr:(avx512_maskload) uconstr:(avx512_maskload_range)
        uconstr:(avx512_maskload_min) uconstr:(avx512_maskload_range_min)
        uconstr:(avx512_maskload_min3) uconstr:(avx512_maskload_range_min3)
        uconstr:(avx512_maskbroadcast_range) uconstr:(avx512_maskbroadcast_range_min)
  | VAVX2PD =>
      atl_vec_lanes_of constr:(4%Z) uconstr:(avx2pd_broadcast) uconstr:(avx2pd_add_gen_tadd)
        uconstr:(avx2pd_add_gen) uconstr:(avx2pd_mul_gen) uconstr:(avx2pd_max_gen)
        uconstr:(avx2pd_loadu) uconstr:(avx2pd_maskload) uconstr:(avx2pd_maskload_range)
        uconstr:(avx2pd_maskload_min) uconstr:(avx2pd_maskload_range_min)
        uconstr:(avx2pd_maskload_min3) uconstr:(avx2pd_maskload_range_min3)
        uconstr:(avx2pd_maskbroadcast_range) uconstr:(avx2pd_maskbroadcast_range_min)
  | VAVX512PD =>
      atl_vec_lanes_of constr:(8%Z) uconstr:(avx512pd_broadcast)
        uconstr:(avx512pd_add_gen_tadd) uconstr:(avx512pd_add_gen) uconstr:(avx512pd_mul_gen)
        uconstr:(avx512pd_max_gen) uconstr:(avx512pd_loadu) uconstr:(avx512pd_maskload)
        uconstr:(avx512pd_maskload_range) uconstr:(avx512pd_maskload_min)
        uconstr:(avx512pd_maskload_range_min) uconstr:(avx512pd_maskload_min3)
        uconstr:(avx512pd_maskload_range_min3) uconstr:(avx512pd_maskbroadcast_range)
        uconstr:(avx512pd_maskbroadcast_range_min)
  end.

(** [add (mul a b) c] as [fmadd], after the check below: the traversal
    does not enter the first argument of a three-argument instruction. *)
Ltac atl_vec_fuse isa :=
  lazymatch isa with
  | VAVX2 =>
      atl_vec_rw_all uconstr:(avx2_add_mul_fmadd);
      atl_vec_rw_all uconstr:(avx2_add_mul_fmadd_r)
  | VAVX512 =>
      atl_vec_rw_all uconstr:(avx512_add_mul_fmadd);
      atl_vec_rw_all uconstr:(avx512_add_mul_fmadd_r)
  | VAVX2PD =>
      atl_vec_rw_all uconstr:(avx2pd_add_mul_fmadd);
      atl_vec_rw_all uconstr:(avx2pd_add_mul_fmadd_r)
  | VAVX512PD =>
      atl_vec_rw_all uconstr:(avx512pd_add_mul_fmadd);
      atl_vec_rw_all uconstr:(avx512pd_add_mul_fmadd_r)
  end.

(** Why a lane loop is left, where a guard of the program that depends on
    the lane is the cause and no masked instruction takes it (a guard around
    [smax] is not one: it goes onto the operands, [atl_vec_push_max]). *)
Ltac atl_vec_hint t :=
  match t with
  (* [?e] is closed under the lane's binder: a value that does not depend on it *)
  | context [iverson (_ <? _)%Z (iverson (_ <? _)%Z (iverson (_ <? _)%Z ?e))] =>
      idtac "  (three upper bounds on the lane around a value that reads no memory, such"
            "as a constant under two windows, outside a masked store, such as a split's"
            "guarded tail: a masked broadcast takes two; split with peel, or vectorize"
            "before splitting)"
  | context [iverson (_ <? _)%Z (iverson (_ <? _)%Z (iverson (_ <? _)%Z
               (iverson (_ <? _)%Z _)))] =>
      idtac "  (four upper bounds on the lane, such as two windows' under a split's"
            "guarded tail by a factor no multiple of the width: a masked load takes"
            "three; split with peel, or by a multiple of the width, or vectorize before"
            "splitting)"
  | context [iverson (_ <=? _)%Z (iverson (_ <=? _)%Z _)] =>
      idtac "  (two lower bounds on the lane, neither provably the tighter, or more bounds"
            "than one masked load takes (one lower and three upper): run simpl_guard first"
            "where inline left a bound twice, else peel the loop's borders off first, with"
            "peel, split ... peel or shift, and vectorize the interior)"
  | context [iverson _ _] =>
      idtac "  (a guard on the lane that is not a bound (such as i mod 2 =? 0), one no masked"
            "instruction takes, or a bound left twice by inline (run simpl_guard first):"
            "peel the loop's borders off first, with peel, split ... peel or shift, or"
            "tile ... partition, and vectorize the interior)"
  | _ => idtac
  end.

(** A lane loop left outside every instruction: its body is not lane-wise. *)
Ltac atl_vec_lane_left w :=
  idtac; lazymatch goal with |- genr 0 w _ = _ => idtac end.

(** [into io]: the vector loops (the full vectors' and the masked tail's) get the
    user's name, where the lemma's binders are named [io] (Coq prints [io0] under
    a loop of that name).  A renaming (alpha), at the node [vec_split_stores]
    made: [trunc_r (flatten (concat (GEN ..) (GENR ..)))]. *)
Ltac atl_vec_name_root y :=
  idtac;
  lazymatch goal with
  | |- @trunc_r ?X0 ?E0 ?N (@flatten ?X1 ?E1 ?a ?b (@concat ?X2 ?E2 ?q ?r
         (@genr ?X ?E ?lo1 ?hi1 (fun z1 => @?F1 z1))
         (@genr ?X' ?E' ?lo2 ?hi2 (fun z2 => @?F2 z2)))) = _ =>
      exact (@eq_refl _ (@trunc_r X0 E0 N (@flatten X1 E1 a b (@concat X2 E2 q r
               (@genr X E lo1 hi1 (fun y : Z => F1 y))
               (@genr X' E' lo2 hi2 (fun y : Z => F2 y))))))
  end.

(** After the split: the lanes as instructions, no lane loop left (else the
    first one is printed and the step fails), [fmadd] fused, [name]d. *)
Ltac atl_vec_finish i isa name :=
  idtac;
  let w := atl_vec_width isa in
  atl_step ltac:(atl_everywhere_prune atl_vec_norm_none atl_vec_norm_may atl_vec_norm_root);
  atl_vec_lanes isa;
  tryif assert_succeeds (etransitivity; [ atl_descend_rec ltac:(atl_vec_lane_left w) | ])
  then
    (assert_fails (etransitivity;
       [ atl_descend_rec ltac:(atl_vec_lane_left w;
           lazymatch goal with |- ?t = _ =>
             idtac "vectorize: the body of loop" i "is not lane-wise:" t;
             atl_vec_hint t end) | ]);
     fail)
  else (atl_vec_fuse isa; name; reflexivity).

Ltac atl_vec_root i isa name :=
  idtac;
  let w := atl_vec_width isa in
  lazymatch goal with
  | |- vec_mark (@genr ?X ?E ?lo ?hi ?F) = ?R =>
      change (@genr X E lo hi F = R);
      atl_vec_extent lo hi ltac:(fun N =>
        let HN0 := fresh "HN0" in
        assert (HN0 : (0 <= N)%Z) by atl_side;
        etransitivity;
        [ let cnt := constr:(fun io : Z => (N - w * io)%Z) in
          lazymatch isa with
          | VAVX2 => eapply (avx2_split_stores lo hi N (N / 8)%Z cnt F)
          | VAVX512 => eapply (avx512_split_stores lo hi N (N / 16)%Z cnt F)
          | VAVX2PD => eapply (avx2pd_split_stores lo hi N (N / 4)%Z cnt F)
          | VAVX512PD => eapply (avx512pd_split_stores lo hi N (N / 8)%Z cnt F)
          end;
          [ ring | reflexivity | lia | exact HN0 | intros; reflexivity ]
        | ];
        clear HN0; atl_beta_lhs; atl_vec_finish i isa name)
  end.

(** ** A SUM loop: Halide's vectorized reduction

    [vectorize i] on a SUM (after [rfactor], the sum over the lanes of its
    buffer): [vec_sum_lanes_exact] (a literal extent the width divides) or
    [vec_sum_lanes_tail] (Targets/AVX.v) makes it a sum over vectors of the
    sum of each vector's lanes, [reduce_add]; each vector's lane loop then
    becomes instructions as a generation's does ([atl_vec_lanes]), and none
    may be left.  The loop over the vectors keeps the name [i] (or takes the
    [into] name). *)
Ltac atl_vec_smark_root i :=
  atl_eta_binder;
  lazymatch goal with
  | |- @sumr ?X ?E ?lo ?hi ?F = _ => atl_vec_mark_as i F (@sumr X E lo hi F)
  end.

Ltac atl_vec_sum_split isa lo hi N F :=
  let w := atl_vec_width isa in
  let q := lazymatch N with
           | Zpos _ => eval vm_compute in (N / w)%Z
           | _ => constr:((N / w)%Z)
           end in
  first
    [ lazymatch N with Zpos _ => idtac end;
      lazymatch isa with
      | VAVX2 => eapply (avx2_sum_lanes_exact lo hi q F)
      | VAVX512 => eapply (avx512_sum_lanes_exact lo hi q F)
      | VAVX2PD => eapply (avx2pd_sum_lanes_exact lo hi q F)
      | VAVX512PD => eapply (avx512pd_sum_lanes_exact lo hi q F)
      end; lia
    | lazymatch isa with
      | VAVX2 => eapply (avx2_sum_lanes_tail lo hi N q F)
      | VAVX512 => eapply (avx512_sum_lanes_tail lo hi N q F)
      | VAVX2PD => eapply (avx2pd_sum_lanes_tail lo hi N q F)
      | VAVX512PD => eapply (avx512pd_sum_lanes_tail lo hi N q F)
      end; [ ring | reflexivity | atl_side ] ].

(** The vector loops (one, or the full vectors' and the tail's) named [y]. *)
Ltac atl_vec_sname_root y :=
  idtac;
  lazymatch goal with
  | |- @tadd ?X0 ?E0 (@sumr ?X ?E ?lo1 ?hi1 (fun z1 => @?F1 z1))
         (@sumr ?X' ?E' ?lo2 ?hi2 (fun z2 => @?F2 z2)) = _ =>
      exact (@eq_refl _ (@tadd X0 E0 (@sumr X E lo1 hi1 (fun y : Z => F1 y))
                                     (@sumr X' E' lo2 hi2 (fun y : Z => F2 y))))
  | |- @sumr ?X ?E ?lo ?hi (fun z => @?F z) = _ =>
      exact (@eq_refl _ (@sumr X E lo hi (fun y : Z => F y)))
  end.

Ltac atl_vec_sum_root i isa y :=
  idtac;
  let w := atl_vec_width isa in
  lazymatch goal with
  | |- vec_mark (@sumr ?X ?E ?lo ?hi ?F) = ?R =>
      change (@sumr X E lo hi F = R);
      atl_vec_extent lo hi ltac:(fun N =>
        etransitivity; [ atl_vec_sum_split isa lo hi N F | ];
        (* a literal extent's tail bound as a literal ([cdiv 37 16] is 3) *)
        lazymatch N with
        | Zpos _ => let c := eval vm_compute in (cdiv N w) in change (cdiv N w) with c
        | _ => idtac
        end;
        atl_beta_lhs; atl_vec_finish i isa ltac:(atl_step ltac:(atl_vec_sname_root y)))
  end.

(** The checks at the marked loop, then [root]. *)
Ltac atl_vec_checked i root :=
  tryif atl_has_node ltac:(atl_vec_check_scalar i) then idtac
  else fail 0 "vectorize: the body of loop" i "is not a scalar (vectorize the innermost loop)";
  tryif atl_has_node ltac:(atl_vec_check_extent i) then idtac
  else fail 0 "vectorize: the extent of loop" i "cannot be proved nonnegative (printed above)";
  tryif atl_step root then idtac
  else fail 0 "vectorize: the body of loop" i
         "is not lane-wise (the lane loop left is printed above)".

(** The first GEN named [i] (pre-order) if there is one, else the first SUM. *)
Ltac atl_vectorize i isa name y :=
  atl_check_goal;
  tryif atl_step ltac:(atl_vec_mark_root i) then atl_vec_checked i ltac:(atl_vec_root i isa name)
  else tryif atl_step ltac:(atl_vec_smark_root i)
  then atl_vec_checked i ltac:(atl_vec_sum_root i isa y)
  else
    (idtac "vectorize: the program has no GEN or SUM loop named" i;
     fail 0 "vectorize: the program has no GEN or SUM loop named" i).

Tactic Notation "vectorize" ident(i) "with" "avx2" :=
  atl_vectorize i VAVX2 idtac i.
Tactic Notation "vectorize" ident(i) "with" "avx512" :=
  atl_vectorize i VAVX512 idtac i.
Tactic Notation "vectorize" ident(i) "with" "avx2pd" :=
  atl_vectorize i VAVX2PD idtac i.
Tactic Notation "vectorize" ident(i) "with" "avx512pd" :=
  atl_vectorize i VAVX512PD idtac i.
Tactic Notation "vectorize" ident(i) "with" "avx2" "into" ident(y) :=
  atl_vectorize i VAVX2 ltac:(atl_step ltac:(atl_vec_name_root y)) y.
Tactic Notation "vectorize" ident(i) "with" "avx512" "into" ident(y) :=
  atl_vectorize i VAVX512 ltac:(atl_step ltac:(atl_vec_name_root y)) y.
Tactic Notation "vectorize" ident(i) "with" "avx2pd" "into" ident(y) :=
  atl_vectorize i VAVX2PD ltac:(atl_step ltac:(atl_vec_name_root y)) y.
Tactic Notation "vectorize" ident(i) "with" "avx512pd" "into" ident(y) :=
  atl_vectorize i VAVX512PD ltac:(atl_step ltac:(atl_vec_name_root y)) y.
