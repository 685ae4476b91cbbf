(** * Micro-kernel directives: [fission], [register_tile], [select_instr].

    Three directives that, with [split], [reorder] and [stage], derive a
    BLIS/Exo matrix-multiply kernel (Examples/Directives/Sgemm.v: the
    SGEMM AVX2 and AVX-512 schedules of Examples/Sgemm.v in 10 lines).  Each is a
    sequence of proved steps run inside one node of the program (the node
    found by the user's names), so that no step touches another part of
    the program, and each refuses with a message that names the directive
    and the failed condition.

    - [fission x] (Exo thesis Table 3.1 [fission_after], legal by Sec.
      5.6.2's loop-fission condition, which holds here since a generation's
      iterations and the two operands of [<+>] commute; the ATL paper's
      [tadd_gen] read right to left): the body of the first loop named
      [x] is, under guards, generations and sums, a [<+>] of two tensors;
      every node between [x] and the [<+>], then [x] itself, is
      distributed over it ([tadd_gen], [tadd_guard], [sum_tadd]), so
      [GEN x (... (a <+> b))] becomes [GEN x (... a) <+> GEN x (... b)],
      each copy keeping the loop names.
    - [register_tile i j by mr nr lanes w into im ir jm jv l as t] (Exo
      thesis Sec. 7.2's SGEMM: a register-blocked micro-kernel accumulating
      the inner dimension into a panel of C, obtained with Table 3.1's
      [split]/[reorder] and [stage_mem] of the accumulator; Halide-semantics
      Sec. 8 split and swap): on the first nest [GEN i GEN j (guards (SUM k ...))]
      (a generation directly over a generation whose body is, under
      guards, a reduction): the nest is transposed (columns outside), [j]
      split by [nr] into strips [jm] of [jr] (guard tail), the rows [i]
      (extent [q * mr]) split exactly into [im] of [ir], the strip placed
      outside the micro-panels; the tile's guards copied onto the product's
      operands ([guard2_sum_prod], so a later pack is zero-padded) and
      kept outside for the store; the [nr] columns as [nr / w] vectors
      [jv] of [w] lanes [l]; the tile's value bound as [t], hoisted out of
      the tile loops, its depth sum moved outermost (the register tile:
      accumulators for [mr x nr] outputs).  With [guard] the rows are split
      with a guarded tail (Halide-semantics Sec. 8 split, GuardWithIf), for
      a row count [mr] need not divide; the reduction may also be a nest of
      three without a depth guard (a convolution's, Examples/Directives/
      Conv.v), moved only outside the vector loops so that a [stage] that
      follows packs the operands in the kernel's read order (Exo thesis
      Sec. 7.2's CONV: the im2col panel pixel-major); [select_instr] then
      moves it outside the rows.
    - [select_instr t with avx2] (or [avx512], [avx2pd], [avx512pd]) (Exo thesis Sec. 3.4
      [replace] by each instruction of Targets/AVX.v, and Table 3.1
      [set_memory]; Sec. 7.2's right-edge tail by masked stores): the register tile
      [t] in instruction form.  A micro-tile whose first row is out of
      bounds is skipped whole ([guard_tile_skip], the guard moved out of
      the store and out of [t]'s let); the column guard of a lane becomes
      a lane count and the store a [maskstore]; the outer product
      [a * v _[ l ]] a [mul] of a [broadcast] and a [loadu]; [t] placed
      in vector registers ([set_memory t AVX2_REG]).

    Legality: every step is a proved equation; the conditions each
    directive checks (a loop of that name and form, an exact row split,
    a lane count dividing [nr], a tile of the outer-product form) are
    refusals, never silent no-ops. *)

From Coq Require Import ZArith Lia.
From Verisched Require Import Tensor.Scalar Tensor.Core Tensor.Sum Tensor.Arith.
From Verisched Require Import Rewrites.Context Rewrites.Gen Rewrites.Guard Rewrites.Tactics.
From Verisched Require Import Rewrites.Steps Rewrites.Directives.
From Verisched Require Import Reshape.Defs Reshape.Access Reshape.Commute Reshape.Duals.
From Verisched Require Import Targets.Instr Targets.AVX.
Open Scope Z_scope.

(** ** Lemmas *)

(** One lane of an outer product [x * v _[ l ]]: a lane of a [broadcast]
    times a lane of a [loadu] (Exo thesis Sec. 3.4: the operands are
    rewritten to the instructions' bodies before [replace]). *)
Section OuterLane.
  Context {S : Type} `{ScalarLaws S} {w : Z}
    {loadu : (Z -> S) -> Z -> Z -> S} {maskload : (Z -> S) -> Z -> Z -> Z -> S}
    {broadcast : S -> Z -> S} {mul add : (Z -> S) -> (Z -> S) -> Z -> S}
    {fmadd : (Z -> S) -> (Z -> S) -> (Z -> S) -> Z -> S}
    {storeu : (Z -> S) -> Z -> S} {maskstore : Z -> (Z -> S) -> Z -> S}
    {LI : LaneISA w loadu maskload broadcast mul add fmadd storeu maskstore}.

  Lemma vec_outer_lane (x : S) (v : Z -> S) l :
    0 <= l < w -> smul x (get v l) = smul (get (broadcast x) l) (get (loadu v 0) l).
  Proof.
    intros Hl; rewrite <- (vec_loadu_lane (LI := LI) v l Hl).
    apply (vec_broadcast_lane (LI := LI)); exact Hl.
  Qed.
End OuterLane.

Section OuterLaneWidths.
  Context {S : Type} `{ScalarLaws S}.
  Definition avx2_outer_lane := vec_outer_lane (S := S) (w := 8).
  Definition avx512_outer_lane := vec_outer_lane (S := S) (w := 16).
  Definition avx2pd_outer_lane := vec_outer_lane (S := S) (LI := LaneISA_avx2pd).
  Definition avx512pd_outer_lane := vec_outer_lane (S := S) (LI := LaneISA_avx512pd).
End OuterLaneWidths.

(** Guards copied onto the operands of a nest of three reductions
    without a depth guard (a convolution's [SUM r SUM s SUM c], Examples/
    Directives/Conv.v): the inner guard [p] (the tile's rows) to the left
    operand, the outer one [q] (its columns) to the right, as
    [guard2_sum_prod] does for one guarded reduction (Exo thesis Sec. 7.2:
    the packed operands are zero-padded at the tile's edges, so the
    micro-kernel's product needs no guard). *)
Section NestGuards.
  Context {S : Type} `{ScalarLaws S}.
  Lemma guard2_sum3_prod q p n1 n2 n3 (a b : Z -> Z -> Z -> S) :
    iverson q (iverson p (sumr 0 n1 (fun r => sumr 0 n2 (fun s => sumr 0 n3 (fun c =>
      smul (a r s c) (b r s c)))))) =
    iverson q (iverson p (sumr 0 n1 (fun r => sumr 0 n2 (fun s => sumr 0 n3 (fun c =>
      smul (iverson p (a r s c)) (iverson q (b r s c))))))).
  Proof. destruct q, p; cbn [iverson]; reflexivity. Qed.
End NestGuards.

(** ** Helpers *)

(** The node is a loop (generation or sum) or a let named [x]. *)
Ltac mk_named x :=
  atl_eta_binder;
  lazymatch goal with
  | |- @genr _ _ _ _ (fun z => _) = _ => atl_same_name x z
  | |- @sumr _ _ _ _ (fun z => _) = _ => atl_same_name x z
  | |- atl_let _ (fun z => _) = _ => atl_same_name x z
  end.

(** Run a sub-step [tac] of a directive inside the node being rewritten;
    on failure record code [c] in [s] and close the node unchanged (the
    directive then fails as a whole, so nothing is left half done). *)
Ltac mk_try s c tac k :=
  tryif tac then k else (unify s c; reflexivity).

(** [use_instr I] without its diagnostics (a refusal of the directive
    says what failed). *)
Ltac mk_instr I :=
  first [ atl_step ltac:(atl_instr_root I) | atl_step ltac:(atl_instr_root_arith I) ].

(** ** fission *)

(** One distribution step at the lowest node of the spine: a generation,
    a guard or a sum whose body is a [<+>]. *)
Ltac mk_fis_inner :=
  idtac;
  lazymatch goal with
  | |- genr _ _ (fun _ => tadd _ _) = _ => step_split_tadd_node
  | |- iverson ?p (tadd ?a ?b) = _ => exact (tadd_guard p a b)
  | |- sumr ?lo ?hi (fun i => tadd (@?f i) (@?g i)) = _ =>
      let t := eval cbv beta in (tadd (sumr lo hi (fun i => f i)) (sumr lo hi (fun i => g i))) in
      (atl_rhs_is t; exact (sum_tadd lo hi f g))
  end.

(** Is the body [B] (a function of the loop index) a [<+>] under guards,
    generations and sums?  Each binder is instantiated with [0] to look
    inside it. *)
Ltac mk_spine_tadd B :=
  let b := eval cbv beta in (B 0%Z) in
  lazymatch b with
  | tadd _ _ => idtac
  | iverson _ ?b2 => mk_spine_tadd (fun _ : Z => b2)
  | genr _ _ ?F => mk_spine_tadd F
  | sumr _ _ ?F => mk_spine_tadd F
  end.

Ltac mk_fis_loop :=
  idtac;
  lazymatch goal with
  | |- tadd _ _ = _ => reflexivity
  | _ => atl_step mk_fis_inner; mk_fis_loop
  end.

Ltac mk_fission_node s x :=
  mk_named x;
  lazymatch goal with
  | |- genr _ _ ?B = _ =>
      tryif mk_spine_tadd B then (unify s 0%nat; mk_fis_loop)
      else (unify s 1%nat; reflexivity)
  | |- sumr _ _ ?B = _ =>
      tryif mk_spine_tadd B then (unify s 0%nat; mk_fis_loop)
      else (unify s 1%nat; reflexivity)
  end.

Ltac mk_fission x :=
  atl_check_goal;
  let s := open_constr:(_ : nat) in
  tryif atl_step ltac:(mk_fission_node s x) then
    (let v := eval hnf in s in
     lazymatch v with
     | 0%nat => idtac
     | _ =>
         idtac "fission: the body of loop" x "is not a sum of two tensors (<+>) under guards, generations and sums";
         fail 0 "fission: the body of loop" x "is not a sum of two tensors (<+>) under guards, generations and sums"
     end)
  else (idtac "fission: the program has no loop named" x;
        fail 0 "fission: the program has no loop named" x).

Tactic Notation "fission" ident(x) := mk_fission x.

(** ** register_tile *)

(** [GEN i < q * mr] split exactly into [im < q], [ir < mr]. *)
Ltac mk_exact_node i mr im ir :=
  atl_eta_binder;
  lazymatch goal with
  | |- genr 0 (?q * mr) (fun z => @?F z) = _ =>
      atl_same_name i z;
      let Hk := fresh "Hk" in let Hq := fresh "Hq" in
      assert (Hk : 0 < mr) by atl_side; assert (Hq : 0 <= q) by atl_side;
      let t := eval cbv beta in
        (flatten q mr (genr 0 q (fun im : Z => genr 0 mr (fun ir : Z => F (im * mr + ir))))) in
      (atl_rhs_is t; exact (gen_tile_exact q mr F Hk Hq))
  end.

(** [GEN jr < nv * w] as [nv] vectors [jv] of [w] lanes [l]. *)
Ltac mk_lanes_node jr nr nv w jv l :=
  atl_eta_binder;
  lazymatch goal with
  | |- genr 0 nr (fun z => @?F z) = _ =>
      atl_same_name jr z;
      let He := fresh "He" in let Hw := fresh "Hw" in let Hv := fresh "Hv" in
      assert (He : nr = nv * w) by atl_side; assert (Hw : 0 < w) by atl_side;
      assert (Hv : 0 <= nv) by atl_side;
      let t := eval cbv beta in
        (flatten nv w (genr 0 nv (fun jv : Z => genr 0 w (fun l : Z => F (jv * w + l))))) in
      (atl_rhs_is t; exact (gen_split_lanes nr nv w F He Hw Hv))
  end.

Ltac mk_guard_body_sum B :=
  lazymatch B with
  | fun z => iverson _ (@?B2 z) => mk_guard_body_sum B2
  | fun z => sumr _ _ _ => idtac
  end.

(** The body [B] of loop [i] is, under guards, a generation [j] from 0
    whose body is, under guards, a sum. *)
Ltac mk_nest_ok B j :=
  let b := eval cbv beta in (B 0%Z) in
  lazymatch b with
  | iverson _ ?b2 => mk_nest_ok (fun _ : Z => b2) j
  | genr 0 _ (fun y => @?G y) => atl_same_name j y; mk_guard_body_sum G
  end.

(** The rows [i]: split exactly into [im] of [mr] ([rows = false]), or
    with a guarded tail ([rows = true]: a row count that [mr] need not
    divide, Halide's GuardWithIf; the row guard is moved into [jr] and
    under the column guard, where the exact split leaves the block's). *)
Ltac mk_rows_split s rows i jr mr im ir k :=
  idtac;
  lazymatch rows with
  | false => mk_try s 2%nat ltac:(atl_step ltac:(mk_exact_node i mr im ir)) k
  | true =>
      mk_try s 2%nat ltac:(dir_split i mr im ir dir_guard) ltac:(
      mk_try s 2%nat ltac:(atl_step ltac:(dir_guard_in_node jr)) ltac:(
      mk_try s 2%nat ltac:(atl_step_at uconstr:(iverson _ (iverson _ _)) ltac:(atl_root_l (@guard_comm))) k))
  end.

(** The tile's guards onto the operands: one reduction with a depth guard
    ([guard2_sum_prod]) or a nest of three ([guard2_sum3_prod], [nest :=
    true]). *)
Ltac mk_copy_guards nest :=
  first [ atl_step_l (@guard2_sum_prod); unify nest false
        | atl_step_l (@guard2_sum3_prod); unify nest true ].

(** The depth outside the tile loops: one reduction outside [ir], [jv],
    [l]; a nest of reductions only outside the vector loops [jv], [l]
    ([t := GEN ir SUM r SUM s SUM c GEN jv GEN l]), so that the packs
    staged next follow the kernel's reads: the input panel pixel-major
    ([Ap[xo][ir][r][s][c]], each [c] run a contiguous copy, Conv.v), the
    weights channel-vector-minor ([Wp[jm][r][s][c][jv][l]]); [select_instr]
    moves the nest outside [ir].  Each move is one step, not one per swap
    ([step_sum_out_node], [step_swap_sums_all_node], Rewrites/Steps.v). *)
Ltac mk_depth_out nest jv l :=
  idtac; let v := eval hnf in nest in
  lazymatch v with
  | false => atl_step ltac:(idtac; step_sum_out_node 3%nat)
  | true =>
      try atl_step ltac:(mk_named l; step_swap_sums_all_node);
      try atl_step ltac:(mk_named jv; step_swap_sums_all_node)
  end.

Ltac mk_rtile_node s rows i j mr nr w im ir jm jr jv l t :=
  atl_eta_binder;
  lazymatch goal with
  | |- genr 0 _ (fun z => @?B z) = _ => atl_same_name i z; mk_nest_ok B j
  end;
  (* guards between the two loops move inside [j] (one path per
     traversal, [hoist_up_all], Rewrites/Tactics.v) *)
  hoist_up_all ltac:(dir_guard_in_node j);
  let nv := eval vm_compute in (nr / w) in
  mk_try s 1%nat ltac:(atl_step step_swap_gen_node) ltac:(
  mk_try s 1%nat ltac:(dir_split j nr jm jr dir_guard) ltac:(
  mk_try s 1%nat ltac:(dir_reorder2 i jr false) ltac:(
  mk_rows_split s rows i jr mr im ir ltac:(
  idtac; let nest := open_constr:(_ : bool) in
  mk_try s 3%nat ltac:(mk_copy_guards nest) ltac:(
  mk_try s 3%nat ltac:(atl_step_at uconstr:(iverson _ (iverson _ _)) ltac:(atl_root_l (@guard_comm))) ltac:(
  mk_try s 3%nat ltac:(atl_step ltac:(mk_named jr; step_guard_out_node)) ltac:(
  mk_try s 4%nat ltac:(atl_step ltac:(mk_lanes_node jr nr nv w jv l)) ltac:(
  mk_try s 5%nat ltac:(name_buffer (sumr _ _ _) as t) ltac:(
  mk_try s 5%nat ltac:(hoist t past (genr 0 mr _)) ltac:(
  mk_try s 5%nat ltac:(mk_depth_out nest jv l) ltac:(
    unify s 0%nat; reflexivity))))))))))).

Ltac mk_register_tile rows i j mr nr w im ir jm jv l t :=
  atl_check_goal;
  let s := open_constr:(_ : nat) in
  tryif atl_step ltac:(let jr := fresh "jr" in mk_rtile_node s rows i j mr nr w im ir jm jr jv l t) then
    (let v := eval hnf in s in
     lazymatch v with
     | 0%nat => idtac
     | 1%nat =>
         idtac "register_tile: the nest" i j "could not be tiled (split of" j "by" nr "or the reorder failed)";
         fail 0 "register_tile: the nest" i j "could not be tiled (split of" j "by" nr "or the reorder failed)"
     | 2%nat =>
         idtac "register_tile: the extent of loop" i "is not of the form q *" mr "with 0 <= q provable (an exact row split is needed)";
         fail 0 "register_tile: the extent of loop" i "is not of the form q *" mr "with 0 <= q provable (an exact row split is needed)"
     | 3%nat =>
         idtac "register_tile: the tile's guards cannot be copied onto the operands: the body of" j
               "must be |[ p ]| SUM k |[ r k ]| a * b: split the depth into blocks and move the"
               "block loop outside the nest first, as Examples/Directives/Sgemm.v does"
               "(split k by kc into ko kk, then reorder ko" i j "with ko first)";
         fail 0 "register_tile: the tile's guards cannot be copied onto the operands: the body of" j
               "must be |[ p ]| SUM k |[ r k ]| a * b: split the depth into blocks and move the"
               "block loop outside the nest first, as Examples/Directives/Sgemm.v does"
               "(split k by kc into ko kk, then reorder ko" i j "with ko first)"
     | 4%nat =>
         idtac "register_tile: the lane count" w "does not provably divide the column tile" nr;
         fail 0 "register_tile: the lane count" w "does not provably divide the column tile" nr
     | _ =>
         idtac "register_tile: the tile's value could not be bound as" t "and hoisted out of the tile loops";
         fail 0 "register_tile: the tile's value could not be bound as" t "and hoisted out of the tile loops"
     end)
  else (idtac "register_tile: the program has no generation" i "directly over a generation" j "whose body is, under guards, a reduction (SUM)";
        fail 0 "register_tile: the program has no generation" i "directly over a generation" j "whose body is, under guards, a reduction (SUM)").

Tactic Notation "register_tile" ident(i) ident(j) "by" constr(mr) constr(nr) "lanes" constr(w) "into" ident(im) ident(ir) ident(jm) ident(jv) ident(l) "as" ident(t) :=
  mk_register_tile constr:(false) i j mr nr w im ir jm jv l t.
Tactic Notation "register_tile" ident(i) ident(j) "by" constr(mr) constr(nr) "lanes" constr(w) "into" ident(im) ident(ir) ident(jm) ident(jv) ident(l) "as" ident(t) "guard" :=
  mk_register_tile constr:(true) i j mr nr w im ir jm jv l t.

(** ** select_instr *)

(** A micro-tile whose row guard is [a + (b * k + ir) < n] (a row block's
    tile) is skipped whole when its first row is past [n]; a tile of a
    guarded row split ([b * k + ir < n], [k < cdiv n b]) always has its
    first row in bounds and is left as it is. *)
Ltac mk_tile_skip s k :=
  idtac;
  lazymatch goal with
  | |- atl_let _ (fun _ => genr _ _ (fun z => iverson (_ + (_ * _ + z) <? _) _)) = _ =>
      mk_try s 1%nat ltac:(atl_step_l (@guard_tile_skip)) ltac:(
      mk_try s 1%nat ltac:(atl_step step_guard_out_node) ltac:(
      mk_try s 1%nat ltac:(atl_step step_guard_out_node) k))
  | |- atl_let _ (fun _ => genr _ _ (fun z => iverson (_ * _ + z <? _) _)) = _ => k
  | _ => unify s 1%nat; reflexivity
  end.

Ltac mk_select_node s t mstore outer mul mem :=
  atl_eta_binder;
  lazymatch goal with
  | |- atl_let _ (fun z => _) = _ => atl_same_name t z
  end;
  (* a nest of depth sums (register_tile of a nest) outside the tile, each
     generation's sums in one step *)
  repeat atl_step step_swap_sums_all_node;
  mk_tile_skip s ltac:(
  mk_try s 2%nat ltac:(atl_step_at uconstr:(iverson _ (get _ _)) ltac:(atl_root_l (@guard_lanes))) ltac:(
  mk_try s 2%nat ltac:(mk_instr mstore) ltac:(
  mk_try s 3%nat ltac:(atl_step_l outer) ltac:(
  mk_try s 3%nat ltac:(mk_instr mul) ltac:(
  mk_try s 4%nat ltac:(set_memory t mem) ltac:(
    unify s 0%nat; reflexivity)))))).

Ltac mk_select_instr t mstore outer mul mem :=
  atl_check_goal;
  let s := open_constr:(_ : nat) in
  tryif atl_step ltac:(mk_select_node s t mstore outer mul mem) then
    (let v := eval hnf in s in
     lazymatch v with
     | 0%nat => idtac
     | 1%nat =>
         idtac "select_instr: the store of" t "is not a register tile's (GEN ir |[ a + (b * k + ir) <? n ]| ..., from register_tile)";
         fail 0 "select_instr: the store of" t "is not a register tile's (GEN ir |[ a + (b * k + ir) <? n ]| ..., from register_tile)"
     | 2%nat =>
         idtac "select_instr: the lanes of" t "are not stored as one masked vector (GEN l |[ a + (b * k + l) <? n ]| t _[..] _[l])";
         fail 0 "select_instr: the lanes of" t "are not stored as one masked vector (GEN l |[ a + (b * k + l) <? n ]| t _[..] _[l])"
     | 3%nat =>
         idtac "select_instr: the value of" t "is not an outer product of lane-free scalars and contiguous lanes (a * v _[ l ], v and a not depending on the lane l)";
         fail 0 "select_instr: the value of" t "is not an outer product of lane-free scalars and contiguous lanes (a * v _[ l ], v and a not depending on the lane l)"
     | _ =>
         idtac "select_instr:" t "cannot be placed in vector registers";
         fail 0 "select_instr:" t "cannot be placed in vector registers"
     end)
  else (idtac "select_instr: the program has no let named" t;
        fail 0 "select_instr: the program has no let named" t).

Tactic Notation "select_instr" ident(t) "with" "avx2" :=
  mk_select_instr t (@avx2_maskstore) (@avx2_outer_lane) (@avx2_mul) AVX2_REG.
Tactic Notation "select_instr" ident(t) "with" "avx512" :=
  mk_select_instr t (@avx512_maskstore) (@avx512_outer_lane) (@avx512_mul) AVX512_REG.
Tactic Notation "select_instr" ident(t) "with" "avx2pd" :=
  mk_select_instr t (@avx2pd_maskstore) (@avx2pd_outer_lane) (@avx2pd_mul) AVX2_REG.
Tactic Notation "select_instr" ident(t) "with" "avx512pd" :=
  mk_select_instr t (@avx512pd_maskstore) (@avx512pd_outer_lane) (@avx512pd_mul) AVX512_REG.
