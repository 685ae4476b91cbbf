(** * Loop directives: Halide/Exo-style scheduling commands as tactics.

    Each directive acts on the derivation goal [prog = ?derived], finds the
    loop(s) by the user's binder names (first in pre-order, at any depth;
    [atl_same_name]), proves its side conditions with [atl_side] in the
    context of the enclosing loops, and builds the result with the names
    the user gave: a directive never introduces a lemma-chosen binder name.
    Every refusal names the directive, the loop(s) and the failed condition.

    - [split i by k into io ii]: Halide's [split] with tail strategy
      GuardWithIf (Halide formal semantics, Sec. 8.2; Exo's
      [divide_loop]/[split], Table 3.1).  A generation over [0, n) becomes
      [trunc_r n (flatten (cdiv n k) k (GEN io GEN ii |[io*k+ii <? n]| f))]
      ([gen_tile]); a sum becomes [SUM io SUM ii |[..]| f] ([sum_tile]).
      A loop over [lo, hi) is tiled over its [hi - lo] iterations, with
      body at [lo + (io * k + ii)].
    - [split i by k into io ii peel]: a guard-free main part over
      [n / k] full tiles and an epilogue loop (named [ii]) over the
      [n - n/k*k] remaining iterations: [concat] for a generation, [tadd]
      for a sum (Halide's tail strategies, Sec. 8.2; Exo's
      [partition_loop]).  Loops must start at 0, and [0 <= n] must be
      provable (else the epilogue of a sum adds, and that of a generation
      reads, iterations below 0).
    - [split i by k into io ii shift]: Halide's ShiftInward recomputes the
      last tile over [n - k, n): overlapping writes.  A generation writes
      each element once, so this is only admitted where [k] provably
      divides [n] (then there is no tail and the split is exact,
      [flatten (n/k) k (GEN io GEN ii f)]); a sum would add the
      overlapping iterations twice, so it is always refused.
    - [fuse i j into ij]: Sec. 8.2's fuse, allowed when both loops are
      pure (generations) or both reductions (sums).  A generation nest
      becomes [split m (n*m) (GEN ij f (ij/m) (ij mod m))] (the reshape
      operator [split] gives back the two dimensions); a sum nest becomes
      one sum ([sum_flatten]).
    - [reorder x1 x2 ..] (2 to 6 names): Sec. 8.2's swap / Exo's
      [reorder]; adjacent swaps until the nest is in the given order,
      outermost first.  GEN/SUM, SUM/GEN and SUM/SUM swaps are
      [gen_sum_swap], [sum_gen_swap], [sum_swap] (Halide restricts
      reduction/reduction swaps to commutative updates; ATL's [tadd] is
      commutative and associative, so they are always legal here).  A
      GEN/GEN swap leaves a [transpose] (ATL's meaning of reordering
      generations, [transpose_gen]); a loop cannot later move across that
      transpose, which is then refused ("not inside loop .. with only
      guards or reshapes between").  Loops already in order may keep a
      reshape between them: [reorder io jo ii k ji] after a [tile] moves
      [k] only.  Guards between the loops move into the inner loop
      ([guard_gen], [guard_sum]); lets between them are refused.
    - [tile i j by ki kj into io jo ii ji]: split both, reorder to
      [io jo ii ji].  Two generations use [gen_tile2] (Fig. 9's form:
      the two GEN/GEN exchanges appear as transposes); sums and a
      generation over a sum use [split] twice and [reorder].  A sum over a
      generation is refused (reorder the loops first), and so are two
      generations not both starting at 0.  The [partition] variant
      (guard-free full tiles, any lower bounds) is below, with [peel] and
      [stage_rows].

    Loops are found by name as Ltac sees it (a binder shadowing an
    enclosing one of the same name prints as [i0]; rename one first), a
    loop whose index is unused too (Coq prints it [_]; the bridge shows its
    name); a binder written [_] has no name to find. *)

From Coq Require Import ZArith Bool Lia FunctionalExtensionality.
From Verisched Require Import Tensor.Core Tensor.Arith Tensor.Sum.
From Verisched Require Import Rewrites.Context Rewrites.Gen Rewrites.Guard Rewrites.Tactics.
From Verisched Require Import Reshape.Defs Reshape.Access Reshape.Commute Reshape.Duals Reshape.Partition.
Open Scope Z_scope.

(** ** Lemmas *)

Section DirLemmas.
  Context {X : Type} `{TensorLaws X}.

  Lemma dir_genr_nonpos lo hi (f : Z -> X) : hi <= lo -> genr lo hi f = tzero.
  Proof.
    intros; apply functional_extensionality; intros x; unfold genr.
    destruct (Z.leb_spec 0 x), (Z.ltb_spec x (hi - lo)); try lia; reflexivity.
  Qed.

  (** [split] (guard tail) of a generation over [lo, hi). *)
  Lemma dir_gen_tile_lo lo hi k (f : Z -> X) :
    0 < k ->
    genr lo hi f =
    trunc_r (hi - lo) (flatten (cdiv (hi - lo) k) k
      (genr 0 (cdiv (hi - lo) k) (fun io => genr 0 k (fun ii =>
         iverson (io * k + ii <? hi - lo) (f (lo + (io * k + ii))))))).
  Proof. intros; rewrite genr_shift; apply gen_tile; auto. Qed.

  (** [sum_tile] without [0 <= n]: a negative extent gives two empty sums. *)
  Lemma dir_sum_tile n k (f : Z -> X) :
    0 < k ->
    sumr 0 n f =
    sumr 0 (cdiv n k) (fun io => sumr 0 k (fun ii =>
      iverson (io * k + ii <? n) (f (io * k + ii)))).
  Proof.
    intros Hk; destruct (Z.le_gt_cases 0 n).
    - apply sum_tile; auto.
    - rewrite (sumr_empty 0 n) by lia; rewrite sumr_empty; [reflexivity|].
      unfold cdiv; Z.div_mod_to_equations; nia.
  Qed.

  Lemma dir_sum_shift0 lo hi (f : Z -> X) :
    sumr lo hi f = sumr 0 (hi - lo) (fun i => f (lo + i)).
  Proof.
    rewrite sum_shift; apply sumr_ext_ctx; intros; f_equal; lia.
  Qed.

  Lemma dir_sum_tile_lo lo hi k (f : Z -> X) :
    0 < k ->
    sumr lo hi f =
    sumr 0 (cdiv (hi - lo) k) (fun io => sumr 0 k (fun ii =>
      iverson (io * k + ii <? hi - lo) (f (lo + (io * k + ii))))).
  Proof. intros; rewrite dir_sum_shift0; apply dir_sum_tile; auto. Qed.

  (** [split .. peel]: full tiles without guards, then the epilogue. *)
  Lemma dir_tile_floor n k : 0 < k -> 0 <= n -> 0 <= n / k * k <= n.
  Proof.
    intros; split.
    - apply Z.mul_nonneg_nonneg; [apply Z.div_pos|]; lia.
    - rewrite Z.mul_comm; apply Z.mul_div_le; lia.
  Qed.

  Lemma dir_gen_peel n k (f : Z -> X) :
    0 < k ->
    genr 0 n f =
    concat (n / k * k) (n - n / k * k)
      (flatten (n / k) k (genr 0 (n / k) (fun io => genr 0 k (fun ii => f (io * k + ii)))))
      (genr 0 (n - n / k * k) (fun ii => f (n / k * k + ii))).
  Proof.
    intros Hk; destruct (Z.le_gt_cases 0 n) as [Hn|Hn].
    - rewrite (gen_concat (n / k * k) n) by (apply dir_tile_floor; lia).
      rewrite gen_tile_exact by (try apply Z.div_pos; lia).
      f_equal; apply genr_shift.
    - rewrite dir_genr_nonpos by lia; unfold concat.
      symmetry; apply dir_genr_nonpos; lia.
  Qed.

  Lemma dir_sum_peel n k (f : Z -> X) :
    0 < k -> 0 <= n ->
    sumr 0 n f =
    tadd (sumr 0 (n / k) (fun io => sumr 0 k (fun ii => f (io * k + ii))))
         (sumr 0 (n - n / k * k) (fun ii => f (n / k * k + ii))).
  Proof.
    intros Hk Hn.
    rewrite (sumr_split 0 (n / k * k) n) by (apply dir_tile_floor; lia).
    rewrite sumr_blocks by (try apply Z.div_pos; lia).
    f_equal; apply dir_sum_shift0.
  Qed.

  (** [split .. shift] where [k] divides [n]: no tail at all. *)
  Lemma dir_gen_exact n k (f : Z -> X) :
    0 < k -> n mod k = 0 ->
    genr 0 n f = flatten (n / k) k (genr 0 (n / k) (fun io => genr 0 k (fun ii => f (io * k + ii)))).
  Proof.
    intros Hk Hm.
    assert (E : n = n / k * k) by (Z.div_mod_to_equations; nia).
    destruct (Z.le_gt_cases 0 n) as [Hn|Hn].
    - rewrite E at 1; apply gen_tile_exact; [lia | apply Z.div_pos; lia].
    - rewrite dir_genr_nonpos by lia; unfold flatten.
      symmetry; apply dir_genr_nonpos; lia.
  Qed.

  (** Exchanging a generation with the outer loop of a split below it
      (Halide's [split y; split x; reorder yo xo yi xi], which [tile] does
      in one step, Partition.v's [gen_tile2]): the split's [flatten] and
      [trunc_r] move out with the exchanged loop, and the rows of [i] go
      under a [transpose] at both levels, as [gen_swap_transpose] puts them
      for two plain generations (Halide formal semantics Sec. 8.2's swap,
      across the reshape a split leaves).  A guard on [i] (a split's tail
      guard on [i]'s own loop) goes with [i]. *)
  Lemma dir_gen_swap_split_g a W c b (p : Z -> bool) (F : Z -> Z -> Z -> X) :
    0 < b ->
    genr 0 a (fun i => iverson (p i) (trunc_r W (flatten c b (genr 0 c (fun j => F i j))))) =
    transpose W a (trunc_r W (flatten c b (genr 0 c (fun j =>
      transpose a b (genr 0 a (fun i => iverson (p i) (F i j))))))).
  Proof.
    intros Hb.
    transitivity (genr 0 a (fun i => genr 0 W (fun x =>
                    iverson (p i) (get (flatten c b (genr 0 c (fun j => F i j))) x)))).
    { apply genr_ext_ctx; intros i Hi; unfold trunc_r.
      destruct (p i); cbn [iverson]; [reflexivity|].
      apply functional_extensionality; intros x; unfold genr.
      destruct (_ && _); reflexivity. }
    rewrite (gen_swap_transpose 0 a 0 W); rewrite !Z.sub_0_r; f_equal.
    unfold trunc_r; apply genr_ext_ctx; intros x Hx.
    assert (H0x : (0 <=? x) = true) by (apply Z.leb_le; lia).
    rewrite get_flatten_some, H0x, andb_true_l by lia.
    destruct (Z.ltb_spec x (c * b)); cbn [iverson].
    - assert (0 <= x / b < c) by (Z.div_mod_to_equations; nia).
      assert (0 <= x mod b < b) by (apply Z.mod_pos_bound; lia).
      rewrite get_gen by lia; rewrite get_transpose by lia.
      apply genr_ext_ctx; intros i Hi.
      rewrite get_flatten_some, H0x, andb_true_l by lia.
      destruct (Z.ltb_spec x (c * b)); [|lia]; cbn [iverson].
      rewrite (get_gen c) by lia; rewrite (get_gen a) by lia.
      destruct (p i); cbn [iverson]; reflexivity.
    - apply functional_extensionality; intros i; unfold genr.
      destruct (_ && _); [|reflexivity].
      rewrite get_flatten_some, H0x, andb_true_l by lia.
      destruct (Z.ltb_spec x (c * b)); [lia|].
      destruct (p _); reflexivity.
  Qed.

  Lemma dir_gen_swap_split a W c b (F : Z -> Z -> Z -> X) :
    0 < b ->
    genr 0 a (fun i => trunc_r W (flatten c b (genr 0 c (fun j => F i j)))) =
    transpose W a (trunc_r W (flatten c b (genr 0 c (fun j =>
      transpose a b (genr 0 a (fun i => F i j)))))).
  Proof. intros Hb; exact (dir_gen_swap_split_g a W c b (fun _ => true) F Hb). Qed.

  (** The same for a loop [lo <= i < hi] (an interior left by [peel]). *)
  Lemma dir_genr_swap_split_g lo hi W c b (p : Z -> bool) (F : Z -> Z -> Z -> X) :
    0 < b ->
    genr lo hi (fun i => iverson (p i) (trunc_r W (flatten c b (genr 0 c (fun j => F i j))))) =
    transpose W (hi - lo) (trunc_r W (flatten c b (genr 0 c (fun j =>
      transpose (hi - lo) b (genr lo hi (fun i => iverson (p i) (F i j))))))).
  Proof.
    intros Hb; rewrite genr_shift.
    rewrite (dir_gen_swap_split_g (hi - lo) W c b (fun i => p (lo + i))
               (fun i j => F (lo + i) j) Hb).
    do 3 f_equal; apply genr_ext_ctx; intros j Hj; f_equal; symmetry; apply genr_shift.
  Qed.

  Lemma dir_genr_swap_split lo hi W c b (F : Z -> Z -> Z -> X) :
    0 < b ->
    genr lo hi (fun i => trunc_r W (flatten c b (genr 0 c (fun j => F i j)))) =
    transpose W (hi - lo) (trunc_r W (flatten c b (genr 0 c (fun j =>
      transpose (hi - lo) b (genr lo hi (fun i => F i j)))))).
  Proof. intros Hb; exact (dir_genr_swap_split_g lo hi W c b (fun _ => true) F Hb). Qed.

  (** [fuse] of two generations: one loop of [n * m], reshaped back. *)
  Lemma dir_gen_fuse n m (f : Z -> Z -> X) :
    0 < m ->
    genr 0 n (fun i => genr 0 m (fun j => f i j)) =
    split m (n * m) (genr 0 (n * m) (fun ij => f (ij / m) (ij mod m))).
  Proof.
    intros Hm; unfold split; rewrite cdiv_mul by lia.
    apply genr_ext_ctx; intros i Hi; apply genr_ext_ctx; intros j Hj.
    destruct (Z.ltb_spec (i * m + j) (n * m)); [|nia]; cbn [iverson].
    rewrite get_gen by nia; rewrite tile_div, tile_mod by lia; reflexivity.
  Qed.

  (** Two-dimensional tiling of a nest over [0, N) x [0, M). *)
  Lemma dir_gen_tile2 N M kn km (f : Z -> Z -> X) :
    0 < kn -> 0 < km ->
    genr 0 N (fun y => genr 0 M (fun x => f y x)) =
    trunc_r N (flatten (cdiv N kn) kn (genr 0 (cdiv N kn) (fun yo =>
      transpose M kn (trunc_r M (flatten (cdiv M km) km (genr 0 (cdiv M km) (fun xo =>
        transpose kn km (genr 0 kn (fun yi => genr 0 km (fun xi =>
          iverson ((yo * kn + yi <? N) && (xo * km + xi <? M))
            (f (yo * kn + yi) (xo * km + xi)))))))))))).
  Proof.
    intros Hkn Hkm.
    change (genr 0 N (fun y => genr 0 M (fun x => f y x)))
      with (genr 0 N (fun y => genr 0 M (f y))).
    rewrite (gen_tile2 0 N 0 M N M kn km f) by lia.
    replace (N - 0) with N by lia; replace (M - 0) with M by lia; reflexivity.
  Qed.

End DirLemmas.

(** ** Tactics *)

(** What a directive found at its node: the node tactic reports through
    an evar of this type (set before the node is rewritten, or instead of
    rewriting it, closing the node by reflexivity), so that a refusal can
    say which condition failed; the whole directive then fails, undoing
    the step. *)
Inductive dir_code :=
  | dir_ok | dir_nonpos | dir_neg | dir_nondiv | dir_lo | dir_tri
  | dir_mixed_gs | dir_mixed_sg | dir_notin | dir_sum_shift
  | dir_nonpos2 | dir_use_split | dir_short | dir_short2 | dir_neg2.

Inductive dir_mode := dir_guard | dir_peel | dir_shift.

(** Variants of [peel]: one loop; a 2-D border in place; a 2-D border
    with the interior as one block. *)
Inductive dir_peel_mode := dir_peel_1 | dir_peel_2 | dir_peel_block.


(** A refusal prints its message (so that [Fail] shows it in a compiled
    file, as [rw]'s candidates are), then fails with the same message. *)

(** The directive [split] below extends Coq's [split] tactic, which
    remains available as plain [split]. *)
Ltac dir_orig_split := split.

(** Ltac's matching may instantiate a pattern variable with a term that
    mentions a bound variable (a [?lo2] in [fun z => genr ?lo2 ..] can
    become [z]), so inner bounds are matched as functions of the outer
    index and checked to be constant: [dir_indep L] succeeds when [L]
    does not depend on its argument; [dir_at0 L] is then its value. *)
Ltac dir_indep L :=
  let a := eval cbv beta in (L 0%Z) in
  let b := eval cbv beta in (L 1%Z) in
  constr_eq a b.
Ltac dir_at0 L := eval cbv beta in (L 0%Z).

(** Is [lo] the numeral [0]? *)
Ltac dir_is_zero lo := constr_eq lo 0%Z.

(** *** split (Halide formal semantics Sec. 8.2 "split" with its tail
    strategies; Exo thesis Table 3.1 [split] / [divide_loop]) *)
Ltac dir_split_node s mode i k io ii :=
  atl_eta_binder;
  lazymatch goal with
  | |- @genr ?X ?E ?lo ?hi (fun z => @?F z) = _ =>
      atl_named_binder; atl_same_name i z;
      let Hk := fresh "Hk" in
      tryif assert (Hk : 0 < k) by atl_side then
        lazymatch mode with
        | dir_guard =>
            unify s dir_ok;
            tryif dir_is_zero lo then
              (let t := eval cbv beta in
                 (trunc_r hi (flatten (cdiv hi k) k (genr 0 (cdiv hi k) (fun io : Z =>
                    genr 0 k (fun ii : Z => iverson (io * k + ii <? hi) (F (io * k + ii))))))) in
               (atl_rhs_is t; exact (gen_tile k hi F Hk)))
            else
              (let t := eval cbv beta in
                 (trunc_r (hi - lo) (flatten (cdiv (hi - lo) k) k (genr 0 (cdiv (hi - lo) k) (fun io : Z =>
                    genr 0 k (fun ii : Z =>
                      iverson (io * k + ii <? hi - lo) (F (lo + (io * k + ii)))))))) in
               (atl_rhs_is t; exact (dir_gen_tile_lo lo hi k F Hk)))
        | dir_peel =>
            (* [0 <= n]: with [n < 0] the epilogue [n mod k] would read
               below 0 (the equation holds, but accesses leave bounds) *)
            tryif dir_is_zero lo then
              (let Hn := fresh "Hn" in
               tryif assert (Hn : 0 <= hi) by atl_side then
                 (unify s dir_ok;
                  let t := eval cbv beta in
                    (concat (hi / k * k) (hi - hi / k * k)
                       (flatten (hi / k) k (genr 0 (hi / k) (fun io : Z =>
                          genr 0 k (fun ii : Z => F (io * k + ii)))))
                       (genr 0 (hi - hi / k * k) (fun ii : Z => F (hi / k * k + ii)))) in
                  (atl_rhs_is t; exact (dir_gen_peel hi k F Hk)))
               else (unify s dir_neg; reflexivity))
            else (unify s dir_lo; reflexivity)
        | dir_shift =>
            tryif dir_is_zero lo then
              (let Hd := fresh "Hd" in
               tryif assert (Hd : hi mod k = 0) by atl_side then
                 (unify s dir_ok;
                  let t := eval cbv beta in
                    (flatten (hi / k) k (genr 0 (hi / k) (fun io : Z =>
                       genr 0 k (fun ii : Z => F (io * k + ii))))) in
                  (atl_rhs_is t; exact (dir_gen_exact hi k F Hk Hd)))
               else (unify s dir_nondiv; reflexivity))
            else (unify s dir_lo; reflexivity)
        end
      else (unify s dir_nonpos; reflexivity)
  | |- @sumr ?X ?E ?lo ?hi (fun z => @?F z) = _ =>
      atl_named_binder; atl_same_name i z;
      let Hk := fresh "Hk" in
      tryif assert (Hk : 0 < k) by atl_side then
        lazymatch mode with
        | dir_guard =>
            unify s dir_ok;
            tryif dir_is_zero lo then
              (let t := eval cbv beta in
                 (sumr 0 (cdiv hi k) (fun io : Z => sumr 0 k (fun ii : Z =>
                    iverson (io * k + ii <? hi) (F (io * k + ii))))) in
               (atl_rhs_is t; exact (dir_sum_tile hi k F Hk)))
            else
              (let t := eval cbv beta in
                 (sumr 0 (cdiv (hi - lo) k) (fun io : Z => sumr 0 k (fun ii : Z =>
                    iverson (io * k + ii <? hi - lo) (F (lo + (io * k + ii)))))) in
               (atl_rhs_is t; exact (dir_sum_tile_lo lo hi k F Hk)))
        | dir_peel =>
            tryif dir_is_zero lo then
              (let Hn := fresh "Hn" in
               tryif assert (Hn : 0 <= hi) by atl_side then
                 (unify s dir_ok;
                  let t := eval cbv beta in
                    (tadd (sumr 0 (hi / k) (fun io : Z => sumr 0 k (fun ii : Z => F (io * k + ii))))
                          (sumr 0 (hi - hi / k * k) (fun ii : Z => F (hi / k * k + ii)))) in
                  (atl_rhs_is t; exact (dir_sum_peel hi k F Hk Hn)))
               else (unify s dir_neg; reflexivity))
            else (unify s dir_lo; reflexivity)
        | dir_shift => unify s dir_sum_shift; reflexivity
        end
      else (unify s dir_nonpos; reflexivity)
  end.

Ltac dir_split i k io ii mode :=
  atl_check_goal;
  let s := open_constr:(_ : dir_code) in
  tryif atl_step ltac:(dir_split_node s mode i k io ii) then
    (let v := eval hnf in s in
     lazymatch v with
     | dir_ok => idtac
     | dir_nonpos =>
         idtac "split: factor" k "is not provably positive for loop" i;
         fail 0 "split: factor" k "is not provably positive for loop" i
     | dir_neg =>
         idtac "split: the extent of loop" i "is not provably nonnegative (needed to peel)";
         fail 0 "split: the extent of loop" i "is not provably nonnegative (needed to peel)"
     | dir_nondiv =>
         idtac "split: shift refused for loop" i ": the factor" k "does not provably divide its extent,"
               "and shifting the last tile inward would write its overlapping elements twice, which a"
               "generation (one write per element) cannot express; use the guard tail or peel";
         fail 0 "split: shift refused for loop" i ": the factor" k "does not provably divide its extent,"
               "and shifting the last tile inward would write its overlapping elements twice, which a"
               "generation (one write per element) cannot express; use the guard tail or peel"
     | dir_sum_shift =>
         idtac "split: shift refused for loop" i ": it is a reduction, and shifting the last tile inward"
               "would add the overlapping iterations twice (double count); use the guard tail or peel";
         fail 0 "split: shift refused for loop" i ": it is a reduction, and shifting the last tile inward"
               "would add the overlapping iterations twice (double count); use the guard tail or peel"
     | dir_lo =>
         idtac "split: loop" i "must start at 0 for this tail strategy (rewrite it with gen_shift / sum_shift first)";
         fail 0 "split: loop" i "must start at 0 for this tail strategy (rewrite it with gen_shift / sum_shift first)"
     | _ => fail 0 "split: internal error at loop" i
     end)
  else (idtac "split: the program has no loop named" i;
        fail 0 "split: the program has no loop named" i).

Tactic Notation "split" ident(i) "by" constr(k) "into" ident(io) ident(ii) :=
  dir_split i k io ii dir_guard.
Tactic Notation "split" ident(i) "by" constr(k) "into" ident(io) ident(ii) "peel" :=
  dir_split i k io ii dir_peel.
Tactic Notation "split" ident(i) "by" constr(k) "into" ident(io) ident(ii) "shift" :=
  dir_split i k io ii dir_shift.
Tactic Notation "split" := dir_orig_split.

(** *** Nest queries (no rewriting) *)

(** The body [B] of a loop is, under guards, a loop named [b]. *)
Ltac dir_inner_is B b :=
  lazymatch B with
  | fun z => iverson _ (@?B2 z) => dir_inner_is B2 b
  | fun z => @genr _ _ _ _ (fun w => _) => atl_same_name b w
  | fun z => @sumr _ _ _ _ (fun w => _) => atl_same_name b w
  end.

(** [dir_inner_is], also through the single-operand reshapes: after
    [reorder] has made every exchange it can, the order it was asked for
    holds where each named loop is inside the one before it with only guards
    or reshapes between (a [tile]'s outer loops, which its [transpose] and
    [flatten] separate, are in order though no exchange may cross them: the
    Halide semantics paper, Sec. 8.2, orders a nest by adjacent swaps, and the
    swaps [reorder] made were each proved). *)
Ltac dir_inner_thru B b :=
  lazymatch B with
  | fun z => iverson _ (@?B2 z) => dir_inner_thru B2 b
  | fun z => transpose _ _ (@?B2 z) => dir_inner_thru B2 b
  | fun z => flatten _ _ (@?B2 z) => dir_inner_thru B2 b
  | fun z => split _ _ (@?B2 z) => dir_inner_thru B2 b
  | fun z => trunc_r _ (@?B2 z) => dir_inner_thru B2 b
  | fun z => trunc_l _ _ (@?B2 z) => dir_inner_thru B2 b
  | fun z => pad_r _ _ (@?B2 z) => dir_inner_thru B2 b
  | fun z => pad_l _ _ (@?B2 z) => dir_inner_thru B2 b
  | fun z => @genr _ _ _ _ (fun w => _) => atl_same_name b w
  | fun z => @sumr _ _ _ _ (fun w => _) => atl_same_name b w
  end.

Ltac dir_has_node x :=
  atl_eta_binder;
  lazymatch goal with
  | |- @genr _ _ _ _ (fun z => @?B z) = _ => atl_named_binder; atl_same_name x z; reflexivity
  | |- @sumr _ _ _ _ (fun z => @?B z) = _ => atl_named_binder; atl_same_name x z; reflexivity
  end.

(** A loop named [a] whose body passes [inner] ([dir_inner_is] or
    [dir_inner_thru]) for [b]. *)
Ltac dir_encl_node inner a b :=
  atl_eta_binder;
  lazymatch goal with
  | |- @genr _ _ _ _ (fun z => @?B z) = _ => atl_same_name a z; inner B b; reflexivity
  | |- @sumr _ _ _ _ (fun z => @?B z) = _ => atl_same_name a z; inner B b; reflexivity
  end.

(* Searches whose proof is discarded: [atl_has_node] (Tactics.v), no
   lifted proof built for nothing. *)
Ltac dir_has_loop x := atl_has_node ltac:(dir_has_node x).
Ltac dir_encloses a b := atl_has_node ltac:(dir_encl_node dir_inner_is a b).
Ltac dir_encloses_thru a b := atl_has_node ltac:(dir_encl_node dir_inner_thru a b).

(** *** fuse (Halide formal semantics Sec. 8.2 "fuse": both loops pure or
    both reduction loops; the inverse of split) *)
Ltac dir_fuse_node s i j ij :=
  atl_eta_binder;
  lazymatch goal with
  | |- @genr _ _ _ _ (fun z => @?B z) = _ => atl_named_binder; atl_same_name i z
  | |- @sumr _ _ _ _ (fun z => @?B z) = _ => atl_named_binder; atl_same_name i z
  end;
  lazymatch goal with
  | |- genr ?lo ?n (fun z => genr (@?L2 z) (@?M z) (fun w => @?F z w)) = _ =>
      tryif atl_same_name j w then
        tryif (dir_indep L2; dir_indep M) then
        let lo2 := dir_at0 L2 in let m := dir_at0 M in
        tryif (dir_is_zero lo; dir_is_zero lo2) then
          (let Hm := fresh "Hm" in
           tryif assert (Hm : 0 < m) by atl_side then
             (unify s dir_ok;
              let t := eval cbv beta in
                (split m (n * m) (genr 0 (n * m) (fun ij : Z => F (ij / m) (ij mod m)))) in
              (atl_rhs_is t; exact (dir_gen_fuse n m F Hm)))
           else (unify s dir_nonpos; reflexivity))
        else (unify s dir_lo; reflexivity)
        else (unify s dir_tri; reflexivity)
      else (unify s dir_notin; reflexivity)
  | |- sumr ?lo ?n (fun z => sumr (@?L2 z) (@?M z) (fun w => @?F z w)) = _ =>
      tryif atl_same_name j w then
        tryif (dir_indep L2; dir_indep M) then
        let lo2 := dir_at0 L2 in let m := dir_at0 M in
        tryif (dir_is_zero lo; dir_is_zero lo2) then
          (let Hm := fresh "Hm" in
           tryif assert (Hm : 0 < m) by atl_side then
             (unify s dir_ok;
              let t := eval cbv beta in
                (sumr 0 (n * m) (fun ij : Z => F (ij / m) (ij mod m))) in
              (atl_rhs_is t; exact (sum_flatten n m F Hm)))
           else (unify s dir_nonpos; reflexivity))
        else (unify s dir_lo; reflexivity)
        else (unify s dir_tri; reflexivity)
      else (unify s dir_notin; reflexivity)
  | |- genr _ _ (fun z => sumr _ _ (fun w => _)) = _ =>
      tryif atl_same_name j w then (unify s dir_mixed_gs; reflexivity)
      else (unify s dir_notin; reflexivity)
  | |- sumr _ _ (fun z => genr _ _ (fun w => _)) = _ =>
      tryif atl_same_name j w then (unify s dir_mixed_sg; reflexivity)
      else (unify s dir_notin; reflexivity)
  | |- _ _ _ (fun z => genr _ _ (fun w => _)) = _ =>
      tryif atl_same_name j w then (unify s dir_tri; reflexivity)
      else (unify s dir_notin; reflexivity)
  | |- _ _ _ (fun z => sumr _ _ (fun w => _)) = _ =>
      tryif atl_same_name j w then (unify s dir_tri; reflexivity)
      else (unify s dir_notin; reflexivity)
  | _ => unify s dir_notin; reflexivity
  end.

Ltac dir_fuse i j ij :=
  atl_check_goal;
  let s := open_constr:(_ : dir_code) in
  tryif atl_step ltac:(dir_fuse_node s i j ij) then
    (let v := eval hnf in s in
     lazymatch v with
     | dir_ok => idtac
     | dir_notin =>
         tryif dir_encloses_thru i j then
           (* Halide's tile(..).fuse(xo, yo, t).parallel(t): in ATL the tiles'
              order is the output's layout, which one loop over tiles lacks *)
           (idtac "fuse: loop" j "is inside loop" i "with a reshape between them, such as a tile's transpose and flatten (fuse needs a perfect nest: one loop over tiles has no layout of the output); make loop" i "parallel instead";
            fail 0 "fuse: loop" j "is inside loop" i "with a reshape between them (fuse needs a perfect nest)")
         else
           (idtac "fuse: loop" j "is not directly inside loop" i "(fuse needs a perfect nest)";
            fail 0 "fuse: loop" j "is not directly inside loop" i "(fuse needs a perfect nest)")
     | dir_nonpos =>
         idtac "fuse: the extent of loop" j "is not provably positive";
         fail 0 "fuse: the extent of loop" j "is not provably positive"
     | dir_lo =>
         idtac "fuse: loops" i "and" j "must both start at 0 (rewrite with gen_shift / sum_shift first)";
         fail 0 "fuse: loops" i "and" j "must both start at 0 (rewrite with gen_shift / sum_shift first)"
     | dir_mixed_gs =>
         idtac "fuse: loop" i "is a generation and loop" j "a reduction; fuse needs both pure (GEN) or both reductions (SUM)";
         fail 0 "fuse: loop" i "is a generation and loop" j "a reduction; fuse needs both pure (GEN) or both reductions (SUM)"
     | dir_mixed_sg =>
         idtac "fuse: loop" i "is a reduction and loop" j "a generation; fuse needs both pure (GEN) or both reductions (SUM)";
         fail 0 "fuse: loop" i "is a reduction and loop" j "a generation; fuse needs both pure (GEN) or both reductions (SUM)"
     | dir_tri =>
         idtac "fuse: the bounds of loop" j "depend on loop" i "(triangular nest)";
         fail 0 "fuse: the bounds of loop" j "depend on loop" i "(triangular nest)"
     | _ => fail 0 "fuse: internal error at loop" i
     end)
  else (idtac "fuse: the program has no loop named" i;
        fail 0 "fuse: the program has no loop named" i).

Tactic Notation "fuse" ident(i) ident(j) "into" ident(ij) := dir_fuse i j ij.

(** *** reorder (Halide formal semantics Sec. 8.2 "swap"; Exo thesis
    Table 3.1 [reorder] and Sec. 5.6.2 "Loop reordering") *)

(** A guard directly around the loop named [b] moves into it. *)
Ltac dir_guard_in_node b :=
  idtac;
  lazymatch goal with
  | |- iverson ?p (@genr ?X ?E ?lo ?hi (fun w => @?G w)) = _ =>
      atl_same_name b w;
      let t := eval cbv beta in (genr lo hi (fun b : Z => iverson p (G b))) in
      (atl_rhs_is t; exact (eq_sym (guard_gen lo hi p G)))
  | |- iverson ?p (@sumr ?X ?E ?lo ?hi (fun w => @?G w)) = _ =>
      atl_same_name b w;
      let t := eval cbv beta in (sumr lo hi (fun b : Z => iverson p (G b))) in
      (atl_rhs_is t; exact (eq_sym (guard_sum lo hi p G)))
  end.

(** A generation [a] over the outer loop [b] of a split below it, the body
    [G a b] of [b]'s rows: [L0] (a loop from 0) or [Lr] (from [lo]), each
    awaiting the proof of [0 < k], make the exchange ([dir_gen_swap_split]). *)
Ltac dir_swap_split s a b lo hi W c k G L0 Lr :=
  let Hk := fresh "Hk" in assert (Hk : 0 < k) by atl_side;
  unify s dir_ok;
  tryif dir_is_zero lo then
    (let t := eval cbv beta in
       (transpose W hi (trunc_r W (flatten c k (genr 0 c (fun b : Z =>
          transpose hi k (genr 0 hi (fun a : Z => G a b))))))) in
     (atl_rhs_is t; exact (L0 Hk)))
  else
    (let t := eval cbv beta in
       (transpose W (hi - lo) (trunc_r W (flatten c k (genr 0 c (fun b : Z =>
          transpose (hi - lo) k (genr lo hi (fun a : Z => G a b))))))) in
     (atl_rhs_is t; exact (Lr Hk))).

(** Exchange loop [a] and the loop [b] directly inside it. *)
Ltac dir_swap_node s a b :=
  atl_eta_binder;
  lazymatch goal with
  | |- genr ?lo ?hi (fun z => genr (@?L2 z) (@?H2 z) (fun w => @?F z w)) = _ =>
      atl_same_name a z; atl_same_name b w;
      tryif (dir_indep L2; dir_indep H2) then idtac else (unify s dir_tri; reflexivity);
      let lo2 := dir_at0 L2 in let hi2 := dir_at0 H2 in
      unify s dir_ok;
      tryif (dir_is_zero lo; dir_is_zero lo2) then
        (let t := eval cbv beta in
           (transpose hi2 hi (genr 0 hi2 (fun b : Z => genr 0 hi (fun a : Z => F a b)))) in
         (atl_rhs_is t; exact (eq_sym (transpose_gen hi2 hi (fun w z => F z w)))))
      else
        (let t := eval cbv beta in
           (transpose (hi2 - lo2) (hi - lo) (genr lo2 hi2 (fun b : Z => genr lo hi (fun a : Z => F a b)))) in
         (atl_rhs_is t; exact (gen_swap_transpose lo hi lo2 hi2 F)))
  | |- genr ?lo ?hi (fun z => sumr (@?L2 z) (@?H2 z) (fun w => @?F z w)) = _ =>
      atl_same_name a z; atl_same_name b w;
      tryif (dir_indep L2; dir_indep H2) then idtac else (unify s dir_tri; reflexivity);
      let lo2 := dir_at0 L2 in let hi2 := dir_at0 H2 in
      unify s dir_ok;
      let t := eval cbv beta in (sumr lo2 hi2 (fun b : Z => genr lo hi (fun a : Z => F a b))) in
      (atl_rhs_is t; exact (gen_sum_swap lo2 hi2 lo hi F))
  | |- sumr ?lo ?hi (fun z => genr (@?L2 z) (@?H2 z) (fun w => @?F z w)) = _ =>
      atl_same_name a z; atl_same_name b w;
      tryif (dir_indep L2; dir_indep H2) then idtac else (unify s dir_tri; reflexivity);
      let lo2 := dir_at0 L2 in let hi2 := dir_at0 H2 in
      unify s dir_ok;
      let t := eval cbv beta in (genr lo2 hi2 (fun b : Z => sumr lo hi (fun a : Z => F a b))) in
      (atl_rhs_is t; exact (sum_gen_swap lo hi lo2 hi2 (fun w z => F z w)))
  | |- sumr ?lo ?hi (fun z => sumr (@?L2 z) (@?H2 z) (fun w => @?F z w)) = _ =>
      atl_same_name a z; atl_same_name b w;
      tryif (dir_indep L2; dir_indep H2) then idtac else (unify s dir_tri; reflexivity);
      let lo2 := dir_at0 L2 in let hi2 := dir_at0 H2 in
      unify s dir_ok;
      let t := eval cbv beta in (sumr lo2 hi2 (fun b : Z => sumr lo hi (fun a : Z => F a b))) in
      (atl_rhs_is t; exact (sum_swap lo hi lo2 hi2 F))
  | |- genr ?lo ?hi (fun z => iverson (@?P z)
           (trunc_r ?W (flatten ?c ?k (genr ?lo2 ?c2 (fun w => @?F z w))))) = _ =>
      atl_same_name a z; atl_same_name b w; dir_is_zero lo2; constr_eq c c2;
      dir_swap_split s a b lo hi W c k constr:(fun x y : Z => iverson (P x) (F x y))
        constr:(dir_gen_swap_split_g hi W c k P F) constr:(dir_genr_swap_split_g lo hi W c k P F)
  | |- genr ?lo ?hi (fun z =>
           trunc_r ?W (flatten ?c ?k (genr ?lo2 ?c2 (fun w => @?F z w)))) = _ =>
      atl_same_name a z; atl_same_name b w; dir_is_zero lo2; constr_eq c c2;
      dir_swap_split s a b lo hi W c k F
        constr:(dir_gen_swap_split hi W c k F) constr:(dir_genr_swap_split lo hi W c k F)
  | |- _ _ _ (fun z => genr _ _ (fun w => _)) = _ =>
      atl_same_name a z; atl_same_name b w; unify s dir_tri; reflexivity
  | |- _ _ _ (fun z => sumr _ _ (fun w => _)) = _ =>
      atl_same_name a z; atl_same_name b w; unify s dir_tri; reflexivity
  end.

(** Is there a node where [dir_swap_node _ a b] could apply, once the
    guards above loops named [b] are moved into them: a construct whose last
    argument is a function with a binder named [a], whose body is, under
    guards ([iverson]), a [genr] or [sumr] over a function with a binder
    named [b]?  A cheap first test for [dir_try_swap] (build time: [reorder]
    tries every pair of its loops after each exchange, and most tries find
    nothing, each after two traversals of the program that build proof
    steps; Directives/ScatterGather.v's six exchanges made 74 such tries,
    1.05 s of its 1.22 s).  Over-approximates, so it never skips a swap the
    traversal would make: a loop's function that is not a [fun] (which the
    traversal eta-expands, naming its binder [i]) counts as any name, and a
    term this walk does not look into (a [match], a [fix], an unresolved
    evar) counts as a site. *)
Module DirSwapScan.
Import Ltac2.Ltac2.

Ltac2 named (bd : binder) (x : ident) : bool :=
  match Constr.Binder.name bd with
  | Some y => Ident.equal x y
  | None => false
  end.

Ltac2 last_arg (args : constr array) : constr := Array.get args (Int.sub (Array.length args) 1).

Ltac2 rec strip_guards (t : constr) : constr :=
  match Constr.Unsafe.kind t with
  | Constr.Unsafe.App h args =>
      (* a split's [trunc_r] and [flatten] too: [dir_gen_swap_split] *)
      if Bool.or (Constr.equal h '@iverson)
           (Bool.or (Constr.equal h '@trunc_r) (Constr.equal h '@flatten))
      then strip_guards (last_arg args) else t
  | _ => t
  end.

Ltac2 loop_named (t : constr) (b : ident) : bool :=
  match Constr.Unsafe.kind t with
  | Constr.Unsafe.App h args =>
      if Bool.or (Constr.equal h '@genr) (Constr.equal h '@sumr) then
        match Constr.Unsafe.kind (last_arg args) with
        | Constr.Unsafe.Lambda bd _ => named bd b
        | _ => true
        end
      else false
  | _ => false
  end.

Ltac2 site (t : constr) (a : ident) (b : ident) : bool :=
  match Constr.Unsafe.kind t with
  | Constr.Unsafe.App _ args =>
      match Constr.Unsafe.kind (last_arg args) with
      | Constr.Unsafe.Lambda bd body =>
          if named bd a then loop_named (strip_guards body) b else false
      | Constr.Unsafe.Cast _ _ _ => true
      | _ => false
      end
  | _ => false
  end.

Ltac2 rec scan (a : ident) (b : ident) (t : constr) : bool :=
  if site t a b then true else
  match Constr.Unsafe.kind t with
  | Constr.Unsafe.App f args => if scan a b f then true else Array.exist (scan a b) args
  | Constr.Unsafe.Lambda bd body =>
      if scan a b (Constr.Binder.type bd) then true else scan a b body
  | Constr.Unsafe.Prod bd body =>
      if scan a b (Constr.Binder.type bd) then true else scan a b body
  | Constr.Unsafe.LetIn bd v body =>
      if scan a b (Constr.Binder.type bd) then true
      else if scan a b v then true else scan a b body
  | Constr.Unsafe.Cast c _ ty => if scan a b c then true else scan a b ty
  | Constr.Unsafe.Rel _ => false
  | Constr.Unsafe.Var _ => false
  | Constr.Unsafe.Sort _ => false
  | Constr.Unsafe.Constant _ _ => false
  | Constr.Unsafe.Ind _ _ => false
  | Constr.Unsafe.Constructor _ _ => false
  | Constr.Unsafe.Uint63 _ => false
  | Constr.Unsafe.Float _ => false
  | _ => true
  end.

Ltac2 may_swap_tac (a : Ltac1.t) (b : Ltac1.t) (t : Ltac1.t) : unit :=
  match Ltac1.to_ident a with
  | Some ia =>
      match Ltac1.to_ident b with
      | Some ib =>
          match Ltac1.to_constr t with
          | Some ct => if scan ia ib ct then () else Control.zero (Tactic_failure None)
          | None => ()
          end
      | None => ()
      end
  | None => ()
  end.
End DirSwapScan.

Ltac dir_may_swap a b :=
  idtac;
  lazymatch goal with
  | |- ?t = _ => let f := ltac2:(a b t |- DirSwapScan.may_swap_tac a b t) in f a b t
  end.

Ltac dir_try_swap_full a b k_ok k_no :=
  let s := open_constr:(_ : dir_code) in
  (* The guards between [a] and [b] into [b], one path at a time
     ([hoist_up_all], Rewrites/Tactics.v: the moves of [repeat atl_step],
     in one traversal per path). *)
  tryif (hoist_up_all ltac:(dir_guard_in_node b); atl_step ltac:(dir_swap_node s a b)) then
    (let v := eval hnf in s in
     lazymatch v with
     | dir_ok => k_ok
     | dir_tri =>
         idtac "reorder: the bounds of loop" b "depend on loop" a "(triangular nest)";
         fail 0 "reorder: the bounds of loop" b "depend on loop" a "(triangular nest)"
     | _ => fail 0 "reorder: internal error at loop" a
     end)
  else (unify s dir_notin; k_no).

(** Try to move loop [b] out of loop [a] (guards between them move into
    [b] first); [k_ok] continues after a swap, [k_no] where there is none. *)
Ltac dir_try_swap a b k_ok k_no :=
  tryif dir_may_swap a b then dir_try_swap_full a b k_ok k_no else k_no.

Ltac dir_need_loop_r x :=
  tryif dir_has_loop x then idtac
  else (idtac "reorder: the program has no loop named" x; fail 0 "reorder: the program has no loop named" x).

Ltac dir_need_encl_r a b :=
  tryif dir_encloses_thru a b then idtac
  else (idtac "reorder: loop" b "is not inside loop" a
          "with only guards or reshapes between (two loops are exchanged where only guards lie between them: here a let, another loop, or a reshape such as the transpose left by a GEN/GEN swap stopped it)";
        fail 0 "reorder: loop" b "is not inside loop" a
          "with only guards or reshapes between (two loops are exchanged where only guards lie between them: here a let, another loop, or a reshape such as the transpose left by a GEN/GEN swap stopped it)").

Ltac dir_need_loop_t x :=
  tryif dir_has_loop x then idtac
  else (idtac "tile: the program has no loop named" x; fail 0 "tile: the program has no loop named" x).

Ltac dir_need_encl_t a b :=
  tryif dir_encloses a b then idtac
  else (idtac "tile: loop" b "is not directly inside loop" a
          "(only guards may lie between the named loops; here a let, a reshape such as the transpose left by a GEN/GEN swap, or another loop does)";
        fail 0 "tile: loop" b "is not directly inside loop" a
          "(only guards may lie between the named loops; here a let, a reshape such as the transpose left by a GEN/GEN swap, or another loop does)").

Ltac dir_reorder2 a b moved :=
  dir_try_swap b a ltac:(idtac; dir_reorder2 a b true)
    ltac:(idtac; dir_need_encl_r a b;
          lazymatch moved with
          | true => idtac
          | false => idtac "reorder: loops" a b "are already in this order";
                     fail 0 "reorder: loops" a b "are already in this order"
          end).

Ltac dir_reorder3 a b c moved :=
  dir_try_swap b a ltac:(idtac; dir_reorder3 a b c true) ltac:(idtac;
  dir_try_swap c a ltac:(idtac; dir_reorder3 a b c true) ltac:(idtac;
  dir_try_swap c b ltac:(idtac; dir_reorder3 a b c true) ltac:(idtac;
    dir_need_encl_r a b; dir_need_encl_r b c;
    lazymatch moved with
    | true => idtac
    | false => idtac "reorder: loops" a b c "are already in this order";
               fail 0 "reorder: loops" a b c "are already in this order"
    end))).

Ltac dir_reorder4 a b c d moved :=
  dir_try_swap b a ltac:(idtac; dir_reorder4 a b c d true) ltac:(idtac;
  dir_try_swap c a ltac:(idtac; dir_reorder4 a b c d true) ltac:(idtac;
  dir_try_swap d a ltac:(idtac; dir_reorder4 a b c d true) ltac:(idtac;
  dir_try_swap c b ltac:(idtac; dir_reorder4 a b c d true) ltac:(idtac;
  dir_try_swap d b ltac:(idtac; dir_reorder4 a b c d true) ltac:(idtac;
  dir_try_swap d c ltac:(idtac; dir_reorder4 a b c d true) ltac:(idtac;
    dir_need_encl_r a b; dir_need_encl_r b c; dir_need_encl_r c d;
    lazymatch moved with
    | true => idtac
    | false => idtac "reorder: loops" a b c d "are already in this order";
               fail 0 "reorder: loops" a b c d "are already in this order"
    end)))))).

Ltac dir_reorder5 a b c d e moved :=
  dir_try_swap b a ltac:(idtac; dir_reorder5 a b c d e true) ltac:(idtac;
  dir_try_swap c a ltac:(idtac; dir_reorder5 a b c d e true) ltac:(idtac;
  dir_try_swap d a ltac:(idtac; dir_reorder5 a b c d e true) ltac:(idtac;
  dir_try_swap e a ltac:(idtac; dir_reorder5 a b c d e true) ltac:(idtac;
  dir_try_swap c b ltac:(idtac; dir_reorder5 a b c d e true) ltac:(idtac;
  dir_try_swap d b ltac:(idtac; dir_reorder5 a b c d e true) ltac:(idtac;
  dir_try_swap e b ltac:(idtac; dir_reorder5 a b c d e true) ltac:(idtac;
  dir_try_swap d c ltac:(idtac; dir_reorder5 a b c d e true) ltac:(idtac;
  dir_try_swap e c ltac:(idtac; dir_reorder5 a b c d e true) ltac:(idtac;
  dir_try_swap e d ltac:(idtac; dir_reorder5 a b c d e true) ltac:(idtac;
    dir_need_encl_r a b; dir_need_encl_r b c; dir_need_encl_r c d; dir_need_encl_r d e;
    lazymatch moved with
    | true => idtac
    | false => idtac "reorder: loops" a b c d e "are already in this order";
               fail 0 "reorder: loops" a b c d e "are already in this order"
    end)))))))))).

Ltac dir_reorder6 a b c d e f moved :=
  dir_try_swap b a ltac:(idtac; dir_reorder6 a b c d e f true) ltac:(idtac;
  dir_try_swap c a ltac:(idtac; dir_reorder6 a b c d e f true) ltac:(idtac;
  dir_try_swap d a ltac:(idtac; dir_reorder6 a b c d e f true) ltac:(idtac;
  dir_try_swap e a ltac:(idtac; dir_reorder6 a b c d e f true) ltac:(idtac;
  dir_try_swap f a ltac:(idtac; dir_reorder6 a b c d e f true) ltac:(idtac;
  dir_try_swap c b ltac:(idtac; dir_reorder6 a b c d e f true) ltac:(idtac;
  dir_try_swap d b ltac:(idtac; dir_reorder6 a b c d e f true) ltac:(idtac;
  dir_try_swap e b ltac:(idtac; dir_reorder6 a b c d e f true) ltac:(idtac;
  dir_try_swap f b ltac:(idtac; dir_reorder6 a b c d e f true) ltac:(idtac;
  dir_try_swap d c ltac:(idtac; dir_reorder6 a b c d e f true) ltac:(idtac;
  dir_try_swap e c ltac:(idtac; dir_reorder6 a b c d e f true) ltac:(idtac;
  dir_try_swap f c ltac:(idtac; dir_reorder6 a b c d e f true) ltac:(idtac;
  dir_try_swap e d ltac:(idtac; dir_reorder6 a b c d e f true) ltac:(idtac;
  dir_try_swap f d ltac:(idtac; dir_reorder6 a b c d e f true) ltac:(idtac;
  dir_try_swap f e ltac:(idtac; dir_reorder6 a b c d e f true) ltac:(idtac;
    dir_need_encl_r a b; dir_need_encl_r b c; dir_need_encl_r c d; dir_need_encl_r d e; dir_need_encl_r e f;
    lazymatch moved with
    | true => idtac
    | false => idtac "reorder: loops" a b c d e f "are already in this order";
               fail 0 "reorder: loops" a b c d e f "are already in this order"
    end))))))))))))))).

Tactic Notation "reorder" ident(a) ident(b) :=
  atl_check_goal; dir_need_loop_r a; dir_need_loop_r b;
  dir_reorder2 a b false.
Tactic Notation "reorder" ident(a) ident(b) ident(c) :=
  atl_check_goal; dir_need_loop_r a; dir_need_loop_r b; dir_need_loop_r c;
  dir_reorder3 a b c false.
Tactic Notation "reorder" ident(a) ident(b) ident(c) ident(d) :=
  atl_check_goal; dir_need_loop_r a; dir_need_loop_r b; dir_need_loop_r c;
  dir_need_loop_r d;
  dir_reorder4 a b c d false.
Tactic Notation "reorder" ident(a) ident(b) ident(c) ident(d) ident(e) :=
  atl_check_goal; dir_need_loop_r a; dir_need_loop_r b; dir_need_loop_r c;
  dir_need_loop_r d; dir_need_loop_r e;
  dir_reorder5 a b c d e false.
Tactic Notation "reorder" ident(a) ident(b) ident(c) ident(d) ident(e) ident(f) :=
  atl_check_goal; dir_need_loop_r a; dir_need_loop_r b; dir_need_loop_r c;
  dir_need_loop_r d; dir_need_loop_r e; dir_need_loop_r f;
  dir_reorder6 a b c d e f false.

(** *** tile (Halide's [tile] = split, split, reorder, Sec. 8.2; Exo's
    split/reorder sequence for Gemmini, thesis Sec. 2) *)
Ltac dir_tile_node s i j ki kj io jo ii ji :=
  atl_eta_binder;
  lazymatch goal with
  | |- @genr _ _ _ _ (fun z => @?B z) = _ => atl_named_binder; atl_same_name i z
  | |- @sumr _ _ _ _ (fun z => @?B z) = _ => atl_named_binder; atl_same_name i z
  end;
  let H1 := fresh "Hki" in
  let H2 := fresh "Hkj" in
  tryif assert (H1 : 0 < ki) by atl_side then
    (tryif assert (H2 : 0 < kj) by atl_side then
      lazymatch goal with
      | |- genr ?lo ?N (fun z => genr (@?L2 z) (@?M2 z) (fun w => @?F z w)) = _ =>
          tryif atl_same_name j w then
            tryif (dir_indep L2; dir_indep M2) then
              (let lo2 := dir_at0 L2 in let M := dir_at0 M2 in
               tryif (dir_is_zero lo; dir_is_zero lo2) then
                 (unify s dir_ok;
                  let t := eval cbv beta in
                    (trunc_r N (flatten (cdiv N ki) ki (genr 0 (cdiv N ki) (fun io : Z =>
                       transpose M ki (trunc_r M (flatten (cdiv M kj) kj (genr 0 (cdiv M kj) (fun jo : Z =>
                         transpose ki kj (genr 0 ki (fun ii : Z => genr 0 kj (fun ji : Z =>
                           iverson ((io * ki + ii <? N) && (jo * kj + ji <? M))
                             (F (io * ki + ii) (jo * kj + ji))))))))))))) in
                  (atl_rhs_is t; exact (dir_gen_tile2 N M ki kj F H1 H2)))
               else (unify s dir_lo; reflexivity))
            else (unify s dir_tri; reflexivity)
          else (unify s dir_notin; reflexivity)
      | |- sumr _ _ (fun z => genr _ _ (fun w => _)) = _ =>
          tryif atl_same_name j w then (unify s dir_mixed_sg; reflexivity)
          else (unify s dir_notin; reflexivity)
      | |- _ => unify s dir_use_split; reflexivity
      end
    else (unify s dir_nonpos2; reflexivity))
  else (unify s dir_nonpos; reflexivity).

Ltac dir_tile i j ki kj io jo ii ji :=
  atl_check_goal;
  dir_need_loop_t i; dir_need_loop_t j; dir_need_encl_t i j;
  let s := open_constr:(_ : dir_code) in
  tryif atl_step ltac:(dir_tile_node s i j ki kj io jo ii ji) then
    (let v := eval hnf in s in
     lazymatch v with
     | dir_ok => idtac
     | dir_use_split =>
         (* sums, or a generation over a sum: split both, then reorder *)
         dir_split i ki io ii dir_guard; dir_split j kj jo ji dir_guard;
         dir_reorder4 io jo ii ji false
     | dir_notin =>
         idtac "tile: loop" j "is not directly inside loop" i;
         fail 0 "tile: loop" j "is not directly inside loop" i
     | dir_nonpos =>
         idtac "tile: factor" ki "is not provably positive for loop" i;
         fail 0 "tile: factor" ki "is not provably positive for loop" i
     | dir_nonpos2 =>
         idtac "tile: factor" kj "is not provably positive for loop" j;
         fail 0 "tile: factor" kj "is not provably positive for loop" j
     | dir_lo =>
         idtac "tile: loops" i "and" j "must both start at 0 (rewrite with gen_shift first)";
         fail 0 "tile: loops" i "and" j "must both start at 0 (rewrite with gen_shift first)"
     | dir_tri =>
         idtac "tile: the bounds of loop" j "depend on loop" i "(triangular nest)";
         fail 0 "tile: the bounds of loop" j "depend on loop" i "(triangular nest)"
     | dir_mixed_sg =>
         idtac "tile: loop" i "is a reduction enclosing the generation" j
               "(a sum over a generation); reorder them first (reorder" j i "), then tile";
         fail 0 "tile: loop" i "is a reduction enclosing the generation" j
               "(a sum over a generation); reorder them first (reorder" j i "), then tile"
     | _ => fail 0 "tile: internal error at loop" i
     end)
  else (idtac "tile: the program has no loop named" i;
        fail 0 "tile: the program has no loop named" i).

Tactic Notation "tile" ident(i) ident(j) "by" constr(ki) constr(kj) "into" ident(io) ident(jo) ident(ii) ident(ji) :=
  dir_tile i j ki kj io jo ii ji.

(** ** Border peeling, partitioned tiling, row staging (the blur of
    Examples/Blur.v, Sec. 3 / Fig. 9 of the ATL paper)

    - [peel i]: peel the first and the last iteration off the generation
      named [i] over [0, N) ([2 <= N] provable): Halide's loop
      partitioning into prologue, steady state and epilogue (Halide formal
      semantics Sec. 8.6 "practical directives": the practical system
      partitions loops to drop boundary conditions from the steady state;
      Exo thesis Table 3.1 [cut_loop] / [partition_loop]), then the
      guards that the new bounds decide are dropped or zeroed inside the
      peeled node ([simpl_guard] restricted to it).
    - [peel i j]: the border of a 2-D nest [i] over [j] (both from 0):
      [peel i], then in the middle rows [peel j] in place (each middle row
      is its first column, interior and last column: Blur.v's fused
      schedule, [gen_peel] + [gen_peel_inner]).
    - [peel i j into ic jc]: the same border, with the middle rows' columns
      split outside the row loop (Fig. 9's transposes, [gen_peel_cols]),
      so that the interior is one block; its two loops are named [ic] and
      [jc] (the border pieces keep [i] and [j]), so that a later [tile]
      finds the interior by name.
    - [tile i j by ki kj into io jo ii ji partition]: [tile] (any lower
      bounds) whose full tiles carry no guard: the rows of tiles are the
      [N / ki] full ones, then the rest; within the full rows the columns
      of tiles likewise; the full tiles are guard-free, the last column of
      tiles of a full row keeps only its column guard, and the last row of
      tiles keeps both (Halide's [tile] with the tail partitioned off,
      Sec. 8.2 split + swap and Sec. 8.6's loop partitioning; Exo's
      [divide_loop] with [tail="cut"]).  Needs [0 <= N], [0 <= M].
    - [stage_rows g at i into buf]: the loop [i] (a tile's rows) whose body
      is [g] read at rows [r0 + i - 1], [r0 + i], [r0 + i + 1] and summed
      computes [g] once per row, for its [A + 2] rows, into a buffer
      [buf] placed at the loop (around the tile's transpose if there is
      one), and reads the buffer instead ([stage_rows3],
      [stage_rows3_root]).  This is Halide's [compute_at] of the producer
      [g] at the tile with bounds inference giving the 3-row halo (Halide
      formal semantics Sec. 8.3), or Exo's [stage_mem] of the window
      (thesis Table 3.1); [g] is given because ATL has no named funcs
      once a producer is inlined. *)

Section DirPeelLemmas.
  Context {X : Type} `{TensorLaws X}.

  Lemma dir_peel2 N N1 N2 M M1 M2 (f : Z -> Z -> X) :
    N1 = N - 1 -> N2 = N - 2 -> 2 <= N -> M1 = M - 1 -> M2 = M - 2 -> 2 <= M ->
    genr 0 N (fun y => genr 0 M (f y)) =
    concat 1 N1 (genr 0 1 (fun y => genr 0 M (f y)))
      (concat N2 1
         (genr 1 N1 (fun y => concat 1 M1 (genr 0 1 (f y))
                                (concat M2 1 (genr 1 M1 (f y)) (genr M1 M (f y)))))
         (genr N1 N (fun y => genr 0 M (f y)))).
  Proof.
    intros; rewrite (gen_peel N N1 N2 (fun y => genr 0 M (f y))) by auto.
    rewrite (gen_peel_inner 1 N1 M M1 M2 f) by auto; reflexivity.
  Qed.

  Lemma dir_peel2_block N N1 N2 M M1 M2 (f : Z -> Z -> X) :
    N1 = N - 1 -> N2 = N - 2 -> 2 <= N -> M1 = M - 1 -> M2 = M - 2 -> 2 <= M ->
    genr 0 N (fun y => genr 0 M (f y)) =
    concat 1 N1 (genr 0 1 (fun y => genr 0 M (f y)))
      (concat N2 1
         (transpose M N2
            (concat 1 M1
               (transpose N2 1 (genr 1 N1 (fun y => genr 0 1 (f y))))
               (concat M2 1
                  (transpose N2 M2 (genr 1 N1 (fun y => genr 1 M1 (f y))))
                  (transpose N2 1 (genr 1 N1 (fun y => genr M1 M (f y)))))))
         (genr N1 N (fun y => genr 0 M (f y)))).
  Proof.
    intros; rewrite (gen_peel N N1 N2 (fun y => genr 0 M (f y))) by auto.
    rewrite (gen_peel_cols 1 N1 N2 M M1 M2 f) by (auto; lia); reflexivity.
  Qed.

  Lemma dir_tile_full q k t : 0 < k -> 0 <= q < t / k -> 0 <= t -> q * k + k <= t.
  Proof.
    intros Hk Hq Ht.
    assert (k * (t / k) <= t) by (apply Z.mul_div_le; lia).
    nia.
  Qed.

  Lemma dir_gen_tile2_part a b c d N M kn km (f : Z -> Z -> X) :
    N = b - a -> M = d - c -> 0 < kn -> 0 < km -> 0 <= N -> 0 <= M ->
    genr a b (fun y => genr c d (f y)) =
    trunc_r N (flatten (cdiv N kn) kn
      (concat (N / kn) (cdiv N kn - N / kn)
        (genr 0 (N / kn) (fun yo =>
           transpose M kn (trunc_r M (flatten (cdiv M km) km
             (concat (M / km) (cdiv M km - M / km)
                (genr 0 (M / km) (fun xo => transpose kn km (genr 0 kn (fun yi => genr 0 km (fun xi =>
                   f (a + yo * kn + yi) (c + xo * km + xi))))))
                (genr (M / km) (cdiv M km) (fun xo => transpose kn km (genr 0 kn (fun yi => genr 0 km (fun xi =>
                   iverson (xo * km + xi <? M) (f (a + yo * kn + yi) (c + xo * km + xi))))))))))))
        (genr (N / kn) (cdiv N kn) (fun yo =>
           transpose M kn (trunc_r M (flatten (cdiv M km) km
             (genr 0 (cdiv M km) (fun xo => transpose kn km (genr 0 kn (fun yi => genr 0 km (fun xi =>
                iverson ((yo * kn + yi <? N) && (xo * km + xi <? M))
                  (f (a + yo * kn + yi) (c + xo * km + xi))))))))))))).
  Proof.
    intros HN HM Hkn Hkm HN0 HM0.
    rewrite (gen_tile2 a b c d N M kn km f HN HM Hkn Hkm).
    assert (Hd : forall t k, 0 < k -> 0 <= t -> 0 <= t / k <= cdiv t k).
    { intros t k Hk Ht; split; [apply Z.div_pos; lia|].
      unfold cdiv; apply Z.div_le_mono; lia. }
    do 2 apply f_equal.
    rewrite (gen_concat (N / kn) (cdiv N kn)) by (apply Hd; lia).
    apply f_equal2.
    - apply genr_ext_ctx; intros yo Hyo.
      do 3 apply f_equal.
      rewrite (gen_concat (M / km) (cdiv M km)) by (apply Hd; lia).
      apply f_equal2.
      + apply genr_ext_ctx; intros xo Hxo; apply f_equal.
        apply genr_ext_ctx; intros yi Hyi; apply genr_ext_ctx; intros xi Hxi.
        pose proof (dir_tile_full yo kn N Hkn ltac:(lia) HN0).
        pose proof (dir_tile_full xo km M Hkm ltac:(lia) HM0).
        destruct (Z.ltb_spec (yo * kn + yi) N), (Z.ltb_spec (xo * km + xi) M); try lia.
        reflexivity.
      + apply genr_ext_ctx; intros xo Hxo; apply f_equal.
        apply genr_ext_ctx; intros yi Hyi; apply genr_ext_ctx; intros xi Hxi.
        pose proof (dir_tile_full yo kn N Hkn ltac:(lia) HN0).
        destruct (Z.ltb_spec (yo * kn + yi) N); try lia; reflexivity.
    - reflexivity.
  Qed.
End DirPeelLemmas.

(** ** Tactics: peel, tile .. partition, stage_rows *)

(* Peeled bounds are passed on in their [ring_simplify] normal form
   ([atl_ring_norm], Tensor/Arith.v: [n + 2 - 1] is shown as [n + 1],
   [n - 1 - 1] as [n - 2]), so that they read as a user would write them. *)

(** The guards decided by the new bounds, dropped or zeroed inside the
    rewritten node only ([simpl_guard]'s rules and their [may] test,
    Tactics.v: no proof step at a node no rule can rewrite). *)
Ltac dir_guards_here := atl_everywhere_prune atl_guard_none atl_guard_may atl_guard_root.

(** *** peel (Halide formal semantics Sec. 8.6: the practical system's
    loop partitioning into prologue / steady state / epilogue; Exo thesis
    Table 3.1 [cut_loop], [partition_loop]) *)
Ltac dir_peel_node s mode i j ic jc :=
  atl_eta_binder;
  lazymatch goal with
  | |- @genr _ _ _ _ (fun z => @?B z) = _ => atl_named_binder; atl_same_name i z
  end;
  lazymatch mode with
  | dir_peel_1 =>
      lazymatch goal with
      | |- genr ?lo ?N (fun z => @?F z) = _ =>
          tryif dir_is_zero lo then
            (let HN := fresh "HN" in
             tryif assert (HN : 2 <= N) by atl_side then
               (unify s dir_ok;
                atl_ring_norm (N - 1) ltac:(fun N1 => atl_ring_norm (N - 2) ltac:(fun N2 =>
                  let t := eval cbv beta in
                    (concat 1 N1 (genr 0 1 (fun i : Z => F i))
                       (concat N2 1 (genr 1 N1 (fun i : Z => F i)) (genr N1 N (fun i : Z => F i)))) in
                  etransitivity;
                  [ (atl_rhs_is t; exact (gen_peel N N1 N2 F ltac:(ring) ltac:(ring) HN))
                  | dir_guards_here ])))
             else (unify s dir_short; reflexivity))
          else (unify s dir_lo; reflexivity)
      end
  | _ =>
      lazymatch goal with
      | |- genr ?lo ?N (fun z => genr (@?L2 z) (@?M2 z) (fun w => @?F z w)) = _ =>
          tryif atl_same_name j w then
            tryif (dir_indep L2; dir_indep M2) then
              (let lo2 := dir_at0 L2 in let M := dir_at0 M2 in
               tryif (dir_is_zero lo; dir_is_zero lo2) then
                 (let HN := fresh "HN" in let HM := fresh "HM" in
                  tryif assert (HN : 2 <= N) by atl_side then
                    (tryif assert (HM : 2 <= M) by atl_side then
                       (unify s dir_ok;
                        atl_ring_norm (N - 1) ltac:(fun N1 => atl_ring_norm (N - 2) ltac:(fun N2 =>
                        atl_ring_norm (M - 1) ltac:(fun M1 => atl_ring_norm (M - 2) ltac:(fun M2 =>
                          lazymatch mode with
                          | dir_peel_2 =>
                              let t := eval cbv beta in
                                (concat 1 N1 (genr 0 1 (fun i : Z => genr 0 M (fun j : Z => F i j)))
                                   (concat N2 1
                                      (genr 1 N1 (fun i : Z =>
                                         concat 1 M1 (genr 0 1 (fun j : Z => F i j))
                                           (concat M2 1 (genr 1 M1 (fun j : Z => F i j))
                                              (genr M1 M (fun j : Z => F i j)))))
                                      (genr N1 N (fun i : Z => genr 0 M (fun j : Z => F i j))))) in
                              etransitivity;
                              [ (atl_rhs_is t; exact (dir_peel2 N N1 N2 M M1 M2 F ltac:(ring) ltac:(ring) HN
                                         ltac:(ring) ltac:(ring) HM))
                              | dir_guards_here ]
                          | dir_peel_block =>
                              let t := eval cbv beta in
                                (concat 1 N1 (genr 0 1 (fun i : Z => genr 0 M (fun j : Z => F i j)))
                                   (concat N2 1
                                      (transpose M N2
                                         (concat 1 M1
                                            (transpose N2 1 (genr 1 N1 (fun i : Z => genr 0 1 (fun j : Z => F i j))))
                                            (concat M2 1
                                               (transpose N2 M2 (genr 1 N1 (fun ic : Z => genr 1 M1 (fun jc : Z => F ic jc))))
                                               (transpose N2 1 (genr 1 N1 (fun i : Z => genr M1 M (fun j : Z => F i j)))))))
                                      (genr N1 N (fun i : Z => genr 0 M (fun j : Z => F i j))))) in
                              etransitivity;
                              [ (atl_rhs_is t; exact (dir_peel2_block N N1 N2 M M1 M2 F ltac:(ring) ltac:(ring) HN
                                         ltac:(ring) ltac:(ring) HM))
                              | dir_guards_here ]
                          end)))))
                     else (unify s dir_short2; reflexivity))
                  else (unify s dir_short; reflexivity))
               else (unify s dir_lo; reflexivity))
            else (unify s dir_tri; reflexivity)
          else (unify s dir_notin; reflexivity)
      | |- _ => unify s dir_notin; reflexivity
      end
  end.

Ltac dir_peel mode i j ic jc :=
  atl_check_goal;
  let s := open_constr:(_ : dir_code) in
  tryif atl_step ltac:(dir_peel_node s mode i j ic jc) then
    (let v := eval hnf in s in
     lazymatch v with
     | dir_ok => idtac
     | dir_short =>
         idtac "peel: the extent of loop" i "is not provably at least 2 (a first and a last iteration to peel)";
         fail 0 "peel: the extent of loop" i "is not provably at least 2 (a first and a last iteration to peel)"
     | dir_short2 =>
         idtac "peel: the extent of loop" j "is not provably at least 2 (a first and a last iteration to peel)";
         fail 0 "peel: the extent of loop" j "is not provably at least 2 (a first and a last iteration to peel)"
     | dir_lo =>
         tryif atl_same_name i j then
           (idtac "peel: loop" i "must start at 0 (peel a loop before splitting or peeling it)";
            fail 0 "peel: loop" i "must start at 0 (peel a loop before splitting or peeling it)")
         else
           (idtac "peel: loops" i "and" j "must both start at 0 (peel a loop before splitting or peeling it)";
            fail 0 "peel: loops" i "and" j "must both start at 0 (peel a loop before splitting or peeling it)")
     | dir_tri =>
         idtac "peel: the bounds of loop" j "depend on loop" i "(triangular nest)";
         fail 0 "peel: the bounds of loop" j "depend on loop" i "(triangular nest)"
     | dir_notin =>
         idtac "peel: loop" j "is not directly inside loop" i "(a 2-D border needs a perfect nest of two generations)";
         fail 0 "peel: loop" j "is not directly inside loop" i "(a 2-D border needs a perfect nest of two generations)"
     | _ => fail 0 "peel: internal error at loop" i
     end)
  else (idtac "peel: the program has no generation named" i;
        fail 0 "peel: the program has no generation named" i).

Tactic Notation "peel" ident(i) := dir_peel dir_peel_1 i i i i.
Tactic Notation "peel" ident(i) ident(j) := dir_peel dir_peel_2 i j i j.
Tactic Notation "peel" ident(i) ident(j) "into" ident(ic) ident(jc) :=
  dir_peel dir_peel_block i j ic jc.

(** *** tile .. partition (Halide Sec. 8.2 split + swap with the tail
    partitioned off as in Sec. 8.6's loop partitioning; Exo thesis
    Table 3.1 [divide_loop] with a cut tail) *)
Ltac dir_tile_part_node s i j ki kj io jo ii ji :=
  atl_eta_binder;
  lazymatch goal with
  | |- @genr _ _ _ _ (fun z => @?B z) = _ => atl_named_binder; atl_same_name i z
  end;
  lazymatch goal with
  | |- genr ?a ?b (fun z => genr (@?C2 z) (@?D2 z) (fun w => @?F z w)) = _ =>
      tryif atl_same_name j w then
        tryif (dir_indep C2; dir_indep D2) then
          (let c := dir_at0 C2 in let d := dir_at0 D2 in
           let H1 := fresh "Hki" in let H2 := fresh "Hkj" in
           let H3 := fresh "HN" in let H4 := fresh "HM" in
           tryif assert (H1 : 0 < ki) by atl_side then
             (tryif assert (H2 : 0 < kj) by atl_side then
               (tryif assert (H3 : 0 <= b - a) by atl_side then
                 (tryif assert (H4 : 0 <= d - c) by atl_side then
                   (unify s dir_ok;
                    atl_ring_norm (b - a) ltac:(fun N => atl_ring_norm (d - c) ltac:(fun M =>
                      let G := lazymatch a with
                               | 0 => lazymatch c with
                                      | 0 => constr:(fun io jo ii ji : Z => F (io * ki + ii) (jo * kj + ji))
                                      | _ => constr:(fun io jo ii ji : Z => F (io * ki + ii) (c + jo * kj + ji))
                                      end
                               | _ => lazymatch c with
                                      | 0 => constr:(fun io jo ii ji : Z => F (a + io * ki + ii) (jo * kj + ji))
                                      | _ => constr:(fun io jo ii ji : Z => F (a + io * ki + ii) (c + jo * kj + ji))
                                      end
                               end in
                      let t := eval cbv beta in
                        (trunc_r N (flatten (cdiv N ki) ki
                          (concat (N / ki) (cdiv N ki - N / ki)
                            (genr 0 (N / ki) (fun io : Z =>
                               transpose M ki (trunc_r M (flatten (cdiv M kj) kj
                                 (concat (M / kj) (cdiv M kj - M / kj)
                                    (genr 0 (M / kj) (fun jo : Z => transpose ki kj (genr 0 ki (fun ii : Z =>
                                       genr 0 kj (fun ji : Z => G io jo ii ji)))))
                                    (genr (M / kj) (cdiv M kj) (fun jo : Z => transpose ki kj (genr 0 ki (fun ii : Z =>
                                       genr 0 kj (fun ji : Z => iverson (jo * kj + ji <? M) (G io jo ii ji)))))))))))
                            (genr (N / ki) (cdiv N ki) (fun io : Z =>
                               transpose M ki (trunc_r M (flatten (cdiv M kj) kj
                                 (genr 0 (cdiv M kj) (fun jo : Z => transpose ki kj (genr 0 ki (fun ii : Z =>
                                    genr 0 kj (fun ji : Z =>
                                      iverson ((io * ki + ii <? N) && (jo * kj + ji <? M)) (G io jo ii ji))))))))))))) in
                      (atl_rhs_is t; exact (dir_gen_tile2_part a b c d N M ki kj F ltac:(ring) ltac:(ring) H1 H2
                               ltac:(lia) ltac:(lia))))))
                  else (unify s dir_neg2; reflexivity))
                else (unify s dir_neg; reflexivity))
              else (unify s dir_nonpos2; reflexivity))
            else (unify s dir_nonpos; reflexivity))
        else (unify s dir_tri; reflexivity)
      else (unify s dir_notin; reflexivity)
  | |- _ => unify s dir_notin; reflexivity
  end.

Ltac dir_tile_part i j ki kj io jo ii ji :=
  atl_check_goal;
  dir_need_loop_t i; dir_need_loop_t j;
  let s := open_constr:(_ : dir_code) in
  tryif atl_step ltac:(dir_tile_part_node s i j ki kj io jo ii ji) then
    (let v := eval hnf in s in
     lazymatch v with
     | dir_ok => idtac
     | dir_notin =>
         idtac "tile partition: loop" j "is not directly inside loop" i "(a perfect nest of two generations)";
         fail 0 "tile partition: loop" j "is not directly inside loop" i "(a perfect nest of two generations)"
     | dir_nonpos =>
         idtac "tile partition: factor" ki "is not provably positive for loop" i;
         fail 0 "tile partition: factor" ki "is not provably positive for loop" i
     | dir_nonpos2 =>
         idtac "tile partition: factor" kj "is not provably positive for loop" j;
         fail 0 "tile partition: factor" kj "is not provably positive for loop" j
     | dir_neg =>
         idtac "tile partition: the extent of loop" i "is not provably nonnegative (its full tiles would be miscounted)";
         fail 0 "tile partition: the extent of loop" i "is not provably nonnegative (its full tiles would be miscounted)"
     | dir_neg2 =>
         idtac "tile partition: the extent of loop" j "is not provably nonnegative (its full tiles would be miscounted)";
         fail 0 "tile partition: the extent of loop" j "is not provably nonnegative (its full tiles would be miscounted)"
     | dir_tri =>
         idtac "tile partition: the bounds of loop" j "depend on loop" i "(triangular nest)";
         fail 0 "tile partition: the bounds of loop" j "depend on loop" i "(triangular nest)"
     | _ => fail 0 "tile partition: internal error at loop" i
     end)
  else (idtac "tile partition: the program has no generation named" i;
        fail 0 "tile partition: the program has no generation named" i).

Tactic Notation "tile" ident(i) ident(j) "by" constr(ki) constr(kj) "into" ident(io) ident(jo) ident(ii) ident(ji) "partition" :=
  dir_tile_part i j ki kj io jo ii ji.

(** *** stage_rows (Halide formal semantics Sec. 8.3 compute_at with
    bounds inference of the 3-row halo; Exo thesis Table 3.1 [stage_mem]) *)
Ltac dir_stage_core g i buf X A B body k :=
  let F := constr:(fun a b c : X => tadd (tadd a b) c) in
  first
    [ (* the loop nest from row 0: Fig. 8's buffer over the whole image *)
      let L := constr:(stage_rows3_root A B g F) in
      (* no evar here: a syntactic comparison, which fails at once where
         [unify] would unfold index arithmetic for minutes *)
      lazymatch type of L with
      | ?l = _ => let l' := eval cbv beta in l in
                  let b' := eval cbv beta in body in constr_eq l' b'
      end;
      let t := eval cbv beta in
        (atl_let (genr 0 (A + 2) (fun i : Z => genr 0 B (fun x : Z => g (i - 1) x)))
           (fun buf => genr 0 A (fun i : Z => genr 0 B (fun x : Z =>
              F (get (get buf i) x) (get (get buf (i + 1)) x) (get (get buf (i + 2)) x))))) in
      k L t
    | (* a tile whose rows start at image row r0, columns at c0 *)
      let r0 := open_constr:(_ : Z) in let c0 := open_constr:(_ : Z) in
      let L := constr:(stage_rows3 A B r0 c0 g F) in
      lazymatch type of L with
      | ?l = _ => let l' := eval cbv beta in l in
                  let b' := eval cbv beta in body in unify l' b'
      end;
      let t := eval cbv beta in
        (atl_let (genr 0 (A + 2) (fun i : Z => genr 0 B (fun x : Z => g (r0 + i - 1) (c0 + x))))
           (fun buf => genr 0 A (fun i : Z => genr 0 B (fun x : Z =>
              F (get (get buf i) x) (get (get buf (i + 1)) x) (get (get buf (i + 2)) x))))) in
      k L t ].

Ltac dir_stage_node g i buf :=
  atl_eta_binder;
  lazymatch goal with
  | |- transpose ?P ?Q (@genr _ _ 0 ?A (fun z => @genr ?X _ 0 ?B (fun w => @?Bd z w))) = _ =>
      atl_same_name i z;
      let body := constr:(genr 0 A (fun z => genr 0 B (fun w => Bd z w))) in
      dir_stage_core g i buf X A B body ltac:(fun L t =>
        lazymatch t with
        | atl_let ?e ?f =>
            let t' := eval cbv beta in (atl_let e (fun buf => transpose P Q (f buf))) in
            (* the cast stays: without it [f_equal] here would read as a
               descent node to Rewrites/Lift.v's reader *)
            exact (f_equal (transpose P Q) L : _ = t')
        end)
  | |- @genr _ _ 0 ?A (fun z => @genr ?X _ 0 ?B (fun w => @?Bd z w)) = _ =>
      atl_same_name i z;
      let body := constr:(genr 0 A (fun z => genr 0 B (fun w => Bd z w))) in
      dir_stage_core g i buf X A B body ltac:(fun L t => (atl_rhs_is t; exact (L)))
  end.

Ltac dir_stage g i buf :=
  atl_check_goal;
  tryif atl_step ltac:(dir_stage_node g i buf) then idtac
  else tryif dir_has_loop i then
    (idtac "stage_rows: loop" i "(a generation from 0 over one from 0) does not read the stage" g
           "at three consecutive rows (" i "- 1," i "," i "+ 1, shifted by a tile origin) summed left to right";
     fail 0 "stage_rows: loop" i "does not read the given stage at three consecutive rows summed left to right")
  else (idtac "stage_rows: the program has no loop named" i;
        fail 0 "stage_rows: the program has no loop named" i).

Tactic Notation "stage_rows" constr(g) "at" ident(i) "into" ident(buf) := dir_stage g i buf.
