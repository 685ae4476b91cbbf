(** * Side-condition automation for index arithmetic.

    Rewrites leave goals about loop bounds, guards and tile indices
    (Sec. 4.3): affine facts, plus tiling facts with [/], [mod] and
    [cdiv].  [solve_idx] turns boolean guard facts into propositions,
    tries [lia], and falls back to [nia] after replacing every division and
    modulo by its Euclidean equations, which is enough for the
    "Euclidean factorisation" forms that tiling produces. *)

From Coq Require Import ZArith Bool Lia ZifyClasses.
From Verisched Require Import Tensor.Scalar Tensor.Core.

(** ** [lia] reads the scalar operations of the [Z] instance

    In [atl_scope], [+], [*] and [/] are the scalar operations [sadd],
    [smul], [sdiv] of the [Scalar] class, and [Z] has an instance.  So
    where the expected type does not force [Z_scope] (an equation [x + 1 =
    y] between [Z]s, the elements of a shape list [shaped [H + 2; W] v]),
    [H + 2] elaborates to [@sadd Z Scalar_Z H 2]: the same number
    ([Scalar_Z] is [Z.add], [Z.mul], [Z.div]), but a term [lia] would take
    as an opaque atom, so a true side condition failed.  Index positions of
    the language (accesses, loop bounds, guards, reshape extents,
    instruction offsets) are already read in [Z_scope] by their
    [Arguments] declarations, and a shape list cannot be (a list notation
    interprets its elements in the surrounding scopes).  Instead of asking
    every statement to say [%Z], we declare the instance's operations to
    [zify], [lia]'s preprocessing, as [Z.add] and [Z.mul]: then [lia] and
    [nia] read them wherever they occur.  ([sdiv] stays an atom: the
    division facts come from [Z.div_mod_to_equations], which looks for
    [Z.div] itself; write [/] in an index position or with [%Z].) *)
#[global] Instance Op_sadd_Z : BinOp (@sadd Z Scalar_Z) :=
  { TBOp := Z.add; TBOpInj := fun _ _ => eq_refl }.
Add Zify BinOp Op_sadd_Z.
#[global] Instance Op_smul_Z : BinOp (@smul Z Scalar_Z) :=
  { TBOp := Z.mul; TBOpInj := fun _ _ => eq_refl }.
Add Zify BinOp Op_smul_Z.

(** Turn boolean comparisons in hypotheses into propositions. *)
Ltac bool_hyps :=
  repeat match goal with
  | H : (_ && _)%bool = true |- _ => apply andb_prop in H; destruct H
  | H : (_ <? _)%Z = true |- _ => apply Z.ltb_lt in H
  | H : (_ <=? _)%Z = true |- _ => apply Z.leb_le in H
  | H : (_ =? _)%Z = true |- _ => apply Z.eqb_eq in H
  | H : (_ >=? _)%Z = _ |- _ => rewrite Z.geb_leb in H
  | H : (_ >? _)%Z = _ |- _ => rewrite Z.gtb_ltb in H
  | H : (_ <? _)%Z = false |- _ => apply Z.ltb_ge in H
  | H : (_ <=? _)%Z = false |- _ => apply Z.leb_gt in H
  | H : (_ =? _)%Z = false |- _ => apply Z.eqb_neq in H
  | H : negb _ = true |- _ => apply negb_true_iff in H
  | H : negb _ = false |- _ => apply negb_false_iff in H
  | H : true = false |- _ => discriminate H
  end.

(** Split a boolean goal into propositional goals. *)
Ltac bool_goal :=
  repeat match goal with
  | |- (_ && _)%bool = true => apply andb_true_intro; split
  | |- (_ <? _)%Z = true => apply Z.ltb_lt
  | |- (_ <=? _)%Z = true => apply Z.leb_le
  | |- (_ =? _)%Z = true => apply Z.eqb_eq
  | |- (_ >=? _)%Z = _ => rewrite Z.geb_leb
  | |- (_ >? _)%Z = _ => rewrite Z.gtb_ltb
  | |- (_ <? _)%Z = false => apply Z.ltb_ge
  | |- (_ <=? _)%Z = false => apply Z.leb_gt
  | |- (_ =? _)%Z = false => apply Z.eqb_neq
  | |- negb _ = true => apply negb_true_iff
  | |- true = true => reflexivity
  | |- (_ && _)%bool = false => apply andb_false_iff
  | |- _ /\ _ => split
  end.

(** Case-split a false conjunction in a hypothesis; each branch is then
    handled by [lia]. *)
Ltac bool_hyp_cases :=
  repeat match goal with
  | H : (_ && _)%bool = false |- _ => apply andb_false_iff in H; destruct H as [H|H]
  end.

(** [0 <= a / b] for each division in the goal and context whose operands
    [lia] shows nonnegative and positive.  [Z.div_mod_to_equations] names
    each quotient but forgets its sign, which [nia] then cannot recover
    through a product: a partial tile's lower bound [0 <= q * k + i] with
    [q = (n - 2) / k] (the tiled blur's check_safe needed these facts
    asserted by hand). *)
Ltac div_nonneg_fact a b :=
  lazymatch goal with
  | _ : (0 <= a / b)%Z |- _ => fail
  | _ => assert ((0 <= a / b)%Z) by (apply Z.div_pos; lia)
  end.
Ltac div_nonneg_facts :=
  repeat match goal with
  | |- context [(?a / ?b)%Z] => div_nonneg_fact a b
  | _ : context [(?a / ?b)%Z] |- _ => div_nonneg_fact a b
  end.

(** Does the goal or a hypothesis mention a division or a modulo?  Does a
    hypothesis have the form [A -> B] (every rule of
    [Z.euclidean_division_equations_cleanup] needs one; a function such
    as a tensor [A : Z -> S] is specialised by it too, which [nia] does not
    see, so only implications between propositions count)? *)
Ltac has_div_mod :=
  match goal with
  | |- context [(_ / _)%Z] => idtac
  | |- context [(_ mod _)%Z] => idtac
  | _ : context [(_ / _)%Z] |- _ => idtac
  | _ : context [(_ mod _)%Z] |- _ => idtac
  end.
Ltac has_impl_hyp :=
  match goal with _ : _ -> ?B |- _ => lazymatch type of B with Prop => idtac end end.

(** [Z.div_mod_to_equations], cheaper (build time).  The library tactic is
    [Z.div_mod_to_equations'] (five facts per quotient and remainder, all
    but one implications from the divisor's sign: [0 < y -> 0 <= r < y],
    [y = 0 -> q = 0], ...) followed by [Z.euclidean_division_equations_cleanup],
    a [repeat match goal] over 36 rules, each tried against every pair of
    hypotheses at every iteration; in a derivation's context (loop bounds,
    tensors, the derived program) that cleanup was most of [check_safe] in
    the tiled examples (Blur.v's tiled schedule: 1.5 of its 2.7 s), largely
    spent trying to [specialize] the tensors ([v : Z -> Z -> S]) with every
    loop variable.

    [atl_ede_cleanup] makes the same changes to the same hypotheses, visiting
    only the implications between propositions.  Why it is the same: when no
    hypothesis is such an implication before the equations are added
    (otherwise the library cleanup runs, as before), the cleanup's rules act
    only on the five facts, each with a single premise about the divisor
    ([y <> 0], [0 < y], [y < 0], [y = 0]), whose conclusion is no
    implication; what a rule does to one fact depends on that fact and on
    the hypotheses matching its premise, never on the other facts (nor on
    the order in which facts are visited); so each fact ends as the library
    leaves it when it is given, in the library's order, the rules that can
    match a single premise: [atl_ede_one] below lists them with the
    library's numbers (its rules on two premises never match).  Rules on a
    hypothesis that is not a proposition ([specialize] of a function, which
    fails whenever a proposition mentions it) change no fact [nia] reads.
    The rules are copied with the library's patterns and tactics
    (PreOmega.v, Coq 8.16). *)
Ltac atl_ede_clear_if H pat := match goal with _ : pat |- _ => clear H end.
Ltac atl_ede_one H :=
  let T := type of H in
  lazymatch type of T with Prop => idtac end;
  lazymatch T with
  | ?p -> _ =>
      first
        [ lazymatch p with ?x = ?x => specialize (H eq_refl) end            (* 1 *)
        | lazymatch p with ?x <> ?x => clear H end                          (* 2 *)
        | lazymatch p with (?x < ?x)%Z => clear H end                       (* 3 *)
        | match goal with H' : p |- _ => specialize (H H') end              (* 4 *)
        | atl_ede_clear_if H (~ p)                                          (* 5 *)
        | lazymatch p with ~ ?q => atl_ede_clear_if H q end                 (* 6 *)
        | lazymatch p with (0 < ?x)%Z => atl_ede_clear_if H (x < 0)%Z end   (* 13 *)
        | lazymatch p with (?x < 0)%Z => atl_ede_clear_if H (0 < x)%Z end   (* 14 *)
        | lazymatch p with (0 <= ?x)%Z => atl_ede_clear_if H (x < 0)%Z end  (* 17 *)
        | lazymatch p with (?x <= 0)%Z => atl_ede_clear_if H (0 < x)%Z end  (* 18 *)
        | lazymatch p with (0 < ?x)%Z => atl_ede_clear_if H (x <= 0)%Z end  (* 21 *)
        | lazymatch p with (?x < 0)%Z => atl_ede_clear_if H (0 <= x)%Z end  (* 22 *)
        | lazymatch p with (0 <= ?x)%Z =>                                   (* 25 *)
            match goal with _ : (x <= 0)%Z |- _ =>
              specialize (fun pf => H (@Z.eq_le_incl 0 x (eq_sym pf))) end end
        | lazymatch p with (?x <= 0)%Z =>                                   (* 27 *)
            match goal with _ : (0 <= x)%Z |- _ =>
              specialize (fun pf => H (@Z.eq_le_incl 0 x pf)) end end
        | lazymatch p with (?x < ?y)%Z => atl_ede_clear_if H (x = y) end    (* 29 *)
        | lazymatch p with (?x < ?y)%Z => atl_ede_clear_if H (y = x) end    (* 30 *)
        | lazymatch p with @eq Z ?x ?y => atl_ede_clear_if H (x < y)%Z end  (* 33 *)
        | lazymatch p with @eq Z ?x ?y => atl_ede_clear_if H (y < x)%Z end  (* 34 *) ]
  end.
Ltac atl_ede_cleanup := repeat match goal with H : _ -> _ |- _ => atl_ede_one H end.
Ltac atl_div_mod_to_equations :=
  tryif has_impl_hyp then Z.div_mod_to_equations
  else (Z.div_mod_to_equations'; atl_ede_cleanup).

(** ** [lia] on linear facts from divisions (build time)

    Tiling bounds a tile index by a quotient ([io < cdiv n 8], [yo < (n - 2)
    / kn], [(m - 2) / 8 <= io]), and an access inside the tile is then
    [8 io + l] or [yo kn + yi].  [nia] proves those bounds from the
    Euclidean equations of every quotient; here each bound on a quotient is
    restated once as a bound on a product ([a < x / c] as [a c + c <= x],
    for [0 < c]), and a product of two variables gets its sign when both
    factors have one.  [lia] reads a product as an atom, so the goal is then
    linear in the same atoms ([yo * kn] in the fact and in the access).  On
    the derivations' side conditions this succeeded on two thirds of the
    goals [lia] alone failed on and [nia] proved, at about 7 ms each
    against about 24 ms for [nia] (decision #99).  Only a first try: [zarith]
    falls back to [nia] where it fails, so it proves at least the goals it
    proved before. *)
Lemma idx_div_lt_lin a x c : (0 < c)%Z -> (a < x / c)%Z -> (a * c + c <= x)%Z.
Proof. intros Hc H; pose proof (Z.mul_div_le x c Hc); nia. Qed.
Lemma idx_div_le_lin a x c : (0 < c)%Z -> (a <= x / c)%Z -> (a * c <= x)%Z.
Proof. intros Hc H; pose proof (Z.mul_div_le x c Hc); nia. Qed.
Lemma idx_div_ge_lin a x c : (0 < c)%Z -> (x / c <= a)%Z -> (x < a * c + c)%Z.
Proof. intros Hc H; pose proof (Z.mul_succ_div_gt x c Hc); nia. Qed.
Lemma idx_div_gt_lin a x c : (0 < c)%Z -> (x / c < a)%Z -> (x < a * c)%Z.
Proof. intros Hc H; pose proof (Z.mul_succ_div_gt x c Hc); nia. Qed.

(** Assert [F] unless a hypothesis already states it (which also ends the
    [repeat] below: each fact is added once). *)
Ltac idx_add_fact F pf :=
  lazymatch goal with
  | _ : F |- _ => fail
  | _ => let H := fresh "Hlin" in assert (H : F) by pf
  end.

(** The conjuncts of each hypothesis that mention a quotient (bounds come
    as [lo <= i < hi]), then a linear fact for each bound on a quotient
    with a positive divisor.  A conjunct without a quotient is not split
    out: [lia] reads a conjunction in a hypothesis as it reads its parts,
    and every split fact was one more [assert] and one more hypothesis for
    the [repeat] to scan again (in [check_safe]'s lane bounds, about 16
    facts per goal, most of [solve_idx]'s time; decision #102). *)
Ltac idx_has_div t := lazymatch t with context [(_ / _)%Z] => idtac end.
Ltac idx_div_facts :=
  repeat match goal with
  | H : (?A /\ _) |- _ => idx_has_div A; idx_add_fact A ltac:(exact (proj1 H))
  | H : (_ /\ ?B) |- _ => idx_has_div B; idx_add_fact B ltac:(exact (proj2 H))
  | H : (?a < ?x / ?c)%Z |- _ =>
      idx_add_fact (a * c + c <= x)%Z ltac:(apply (idx_div_lt_lin a x c); [ lia | exact H ])
  | H : (?a <= ?x / ?c)%Z |- _ =>
      idx_add_fact (a * c <= x)%Z ltac:(apply (idx_div_le_lin a x c); [ lia | exact H ])
  | H : (?x / ?c <= ?a)%Z |- _ =>
      idx_add_fact (x < a * c + c)%Z ltac:(apply (idx_div_ge_lin a x c); [ lia | exact H ])
  | H : (?x / ?c < ?a)%Z |- _ =>
      idx_add_fact (x < a * c)%Z ltac:(apply (idx_div_gt_lin a x c); [ lia | exact H ])
  end.

(** [k x y] on a product [x * y] of two variables in the goal (the next
    one where [k] fails). *)
Ltac on_var_prod k :=
  match goal with |- context [(?x * ?y)%Z] => is_var x; is_var y; k x y end.

(** Is there a product of two variables in the goal? *)
Ltac has_var_prod := on_var_prod ltac:(fun _ _ => idtac).

(** [0 <= x * y] for each product of two variables in the goal whose
    factors [lia] shows nonnegative. *)
Ltac idx_prod_facts :=
  repeat on_var_prod ltac:(fun x y =>
    idx_add_fact (0 <= x * y)%Z ltac:(apply Z.mul_nonneg_nonneg; lia)).

(** Is there a product of two terms neither of which is a numeral, in the
    goal or in a hypothesis (or a product of naturals, a power, [Z.quot] or
    [Z.rem], all read as nonlinear here)?  Where there is none (and no division or
    modulo, and no implication to clean up), the problem [lia] failed on is
    linear, and [lia] is a decision procedure for linear integer arithmetic
    (Coq reference manual, Micromega): [nia], which adds products of
    hypotheses to the same procedure, cannot prove it either.  Its failure
    cost 5-15 ms a goal, most of [simpl_guard]'s time on guards that stay
    (decision #103).  A product in a hypothesis [lia] does not read (a shape,
    a program) only makes this answer yes, and [nia] runs as before. *)
Ltac idx_not_numeral x :=
  lazymatch x with
  | Z0 => fail
  | Zpos _ => fail
  | Zneg _ => fail
  | _ => idtac
  end.
Ltac has_nonlin_prod :=
  match goal with
  | |- context [(?x * ?y)%Z] => idx_not_numeral x; idx_not_numeral y
  | _ : context [(?x * ?y)%Z] |- _ => idx_not_numeral x; idx_not_numeral y
  | |- context [(_ * _)%nat] => idtac
  | _ : context [(_ * _)%nat] |- _ => idtac
  | |- context [Z.pow _ _] => idtac
  | _ : context [Z.pow _ _] |- _ => idtac
  | |- context [Z.quot _ _] => idtac
  | _ : context [Z.quot _ _] |- _ => idtac
  | |- context [Z.rem _ _] => idtac
  | _ : context [Z.rem _ _] |- _ => idtac
  end.

(** [k] applied to the [ring_simplify] normal form of [t : Z].  [t] occurs
    once in the hypothesis it is normalized in: in [t = t], as the callers
    used to write it, [ring_simplify] normalized both sides, the same
    normal form at twice the cost (build time, issue 16). *)
Ltac atl_ring_norm t k :=
  let E := fresh "E" in
  assert (E : forall x : Z, x = t -> True) by (intros; exact I);
  ring_simplify t in E;
  lazymatch type of E with forall _, _ = ?u -> _ => clear E; k u end.

(** [lia] is [Zify.zify; xlia zchecker] (Coq's micromega/Lia.v).  On the
    index problems of the rewrites' side conditions and of [check_safe]
    (bounds over [Z] with [+], [-] and products by numerals), [zify] finds
    nothing to translate but still scans every hypothesis: about 0.6 ms of
    a 1.1 ms [lia].  [atl_lia] tries the decision procedure alone first,
    then [lia]; [xlia] on a goal [zify] has not touched sees a subset of
    the facts [lia] sees, so [atl_lia] proves exactly the goals [lia]
    proves (and the derived programs, which branch on side conditions,
    do not change). *)
Ltac atl_xlia := xlia zchecker.
Ltac atl_lia := first [ atl_xlia | lia ].

(** [lia]; then [lia] on the linear facts above, where a division or a
    product of variables gives it something to add (a second time with the
    quotients' signs, [div_nonneg_facts], which a tile's tail bound needs:
    [0 <= xo * km + xi] from [(m - 2) / km <= xo]); then [nia] on the
    Euclidean equations, then [nia] with the quotients' signs as well.
    Without a division or modulo anywhere, [Z.div_mod_to_equations] only
    runs its clean-up (which rewrites nothing unless a hypothesis is an
    implication) and [div_nonneg_facts] adds nothing, so the third try
    would repeat the second: the cheap path runs [nia] once, on the same
    goal, and so succeeds on exactly the same goals. *)
Ltac zarith :=
  first [ atl_lia
        | tryif first [ has_div_mod | has_var_prod ] then
            solve [ idx_div_facts;
                    first [ idx_prod_facts; atl_lia
                          | has_div_mod; div_nonneg_facts; idx_prod_facts; atl_lia ] ]
          else fail
        | tryif has_div_mod then
            first [ (atl_div_mod_to_equations; nia)
                  | (div_nonneg_facts; atl_div_mod_to_equations; nia) ]
          else tryif has_impl_hyp then (Z.euclidean_division_equations_cleanup; nia)
          else tryif has_nonlin_prod then nia
          else fail ].

(** Goals of the form [p = q] between two guard predicates, decided by
    case analysis on the atoms of [p] and [q]. *)
Ltac bool_eq :=
  repeat match goal with
  | |- context [(?a <? ?b)%Z] => destruct (Z.ltb_spec a b)
  | |- context [(?a <=? ?b)%Z] => destruct (Z.leb_spec a b)
  | |- context [(?a =? ?b)%Z] => destruct (Z.eqb_spec a b)
  end; cbn [andb orb negb]; first [reflexivity | exfalso; zarith].

(** [bool_eq], except on a predicate against a literal ([p = true],
    [false = p], ...).  There [bool_goal; zarith] has already run on the
    same goal (lia reads the Boolean comparisons through zify), and the case
    split could only add what case analysis gives [nia] (decision #100:
    over a whole build it proved none of the 264 such goals it was tried
    on, and its failures, each a failing [nia] per case, cost 1.2 s; the
    70 goals it proved were all of other shapes). *)
Ltac bool_eq_unless_literal :=
  lazymatch goal with
  | |- @eq bool true _ => fail
  | |- @eq bool false _ => fail
  | |- @eq bool _ true => fail
  | |- @eq bool _ false => fail
  | |- _ => bool_eq
  end.

(** The side-condition solver used by every rewrite tactic. *)
Ltac solve_idx :=
  unfold cdiv in *; bool_hyps; bool_hyp_cases; bool_hyps;
  first
    [ solve [ bool_goal; zarith ]
    | solve [ exfalso; zarith ]
    | solve [ bool_eq_unless_literal ] ].

(** ** Facts about ceiling division used by tiling *)

Lemma cdiv_mul_ge n k : (0 < k)%Z -> (n <= cdiv n k * k)%Z.
Proof. intros; unfold cdiv; Z.div_mod_to_equations; nia. Qed.

Lemma cdiv_nonneg n k : (0 < k)%Z -> (0 <= n)%Z -> (0 <= cdiv n k)%Z.
Proof. intros; unfold cdiv; apply Z.div_pos; lia. Qed.

Lemma cdiv_lt_iff n k io : (0 < k)%Z -> (io < cdiv n k)%Z <-> (io * k < n)%Z.
Proof. intros; unfold cdiv; Z.div_mod_to_equations; nia. Qed.
