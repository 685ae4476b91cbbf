(** * Step proofs in lifted form: each node on the path named once (decision #103).

    The descent ([atl_descend], Tactics.v) proves a step [P = P'] by a nest of
    context lemmas along the path to the rewritten node: [genr_ctx lo hi (fun
    i => B) (fun i => B') H], [iverson_ctx p e e' H], [atl_cong_l F a a' b H],
    ...  Each names its node's child on both sides, whole, so the kernel
    types every subtree of the path once per level above it: at [Qed] a step
    costs [depth] copies of the program (decisions #95, #101).

    [lifted probe] runs the descent ([probe]) on a goal of its own, reads
    the proof it built along its spine, and proves the step again with the
    same lemmas, the same site proof and the same new program [P'], but
    with each node of the path bound once, as a function of the binders
    above it:
    [let L2 := fun i j => site in let R2 := fun i j => site' in
     let L1 := fun i => SUM [ j < m ] L2 i j in let R1 := ... in
     genr_ctx 0 n (fun i => L1 i) (fun i => R1 i) (fun i Hi =>
       sumr_ctx 0 m (fun j => L2 i j) (fun j => R2 i j) (fun j Hj => site_proof))].
    The kernel types each node of the path once, and the lemmas' arguments
    are variables applied to variables.  The probe's own proof is never
    part of the derivation's term.  The lemmas read are those of
    [atl_into]: [genr_ctx], [sumr_ctx], [iverson_ctx], [let_ctx] (into the
    bound value or the body), [titer_ctx] (into the initial tensor or the
    step), [titer_ctx_shaped], [atl_cong_l], [atl_cong_r], [f_equal], and
    [atl_fresh_rhs]'s [eq_trans _ _ _ H eq_refl] through an applied evar.

    The probe's successes are the descent's; reading its proof adds no
    backtracking point (a directive that checks its result after the step
    and fails must not get the same step again).

    Nothing here is trusted: the term is checked by the kernel at [Qed] like
    any other ([exact_no_check] skips only the proof engine's own check,
    which would repeat the kernel's).  Where the spine has a shape this
    reader does not know (a lemma other than the descent's, a node whose
    binder is not a [fun]), the proof below that point is kept as the probe
    built it; where the path is empty, the probe's proof is used as is. *)

From Coq Require Import ZArith.
From Verisched Require Import Tensor.Core Tensor.Sum Tensor.Shape Tensor.Iter Rewrites.Context.
From Ltac2 Require Ltac2.

Module AtlLift.
Import Ltac2.Ltac2.

Ltac2 Type lkind := [ KGen | KSum | KIver | KLetE | KLetB | KTitX | KTitStep | KTitShaped
                    | KCongL | KCongR | KFEq ].

Ltac2 Type consts := {
  k_genr_ctx : constr;
  k_sumr_ctx : constr;
  k_iverson_ctx : constr;
  k_cong_l : constr;
  k_cong_r : constr;
  k_f_equal : constr;
  k_let_ctx : constr;
  k_titer_ctx_shaped : constr;
  k_titer_ctx : constr;
  k_genr : constr;
  k_sumr : constr;
  k_iverson : constr;
  k_atl_let : constr;
  k_titer : constr;
  k_eq_trans : constr;
  k_eq_refl : constr }.

(** The constants the reader compares with, elaborated once per step (a
    quotation is elaborated each time it is evaluated). *)
Ltac2 consts () : consts := {
  k_genr_ctx := '@genr_ctx;
  k_sumr_ctx := '@sumr_ctx;
  k_iverson_ctx := '@iverson_ctx;
  k_cong_l := '@atl_cong_l;
  k_cong_r := '@atl_cong_r;
  k_f_equal := '@f_equal;
  k_let_ctx := '@let_ctx;
  k_titer_ctx_shaped := '@titer_ctx_shaped;
  k_titer_ctx := '@titer_ctx;
  k_genr := '@genr;
  k_sumr := '@sumr;
  k_iverson := '@iverson;
  k_atl_let := '@atl_let;
  k_titer := '@titer;
  k_eq_trans := '@eq_trans;
  k_eq_refl := '@eq_refl }.

Ltac2 mk (k : Constr.Unsafe.kind) : constr := Constr.Unsafe.make k.
Ltac2 rel (i : int) : constr := mk (Constr.Unsafe.Rel i).
Ltac2 app (f : constr) (args : constr array) : constr :=
  if Int.equal (Array.length args) 0 then f else mk (Constr.Unsafe.App f args).

Ltac2 app_of (t : constr) : (constr * constr array) option :=
  match Constr.Unsafe.kind t with
  | Constr.Unsafe.App h args => Some (h, args)
  | _ => None
  end.

Ltac2 is_head (t : constr) (c : constr) (n : int) : bool :=
  match app_of t with
  | Some p => let (h, args) := p in
              if Int.equal (Array.length args) n then Constr.equal h c else false
  | None => false
  end.

Ltac2 is_refl (c : consts) (t : constr) : bool := is_head t (c.(k_eq_refl)) 2.

(** [fun x => eq_refl _] *)
Ltac2 is_fun_refl (c : consts) (t : constr) : bool :=
  match Constr.Unsafe.kind t with
  | Constr.Unsafe.Lambda _ b => is_refl c b
  | _ => false
  end.
Ltac2 is_fun2_refl (c : consts) (t : constr) : bool :=
  match Constr.Unsafe.kind t with
  | Constr.Unsafe.Lambda _ b => is_fun_refl c b
  | _ => false
  end.

(** Does a de Bruijn index occur in [t] (a type we bind a [let] at)? *)
Ltac2 rec has_rel (t : constr) : bool :=
  match Constr.Unsafe.kind t with
  | Constr.Unsafe.Rel _ => true
  | Constr.Unsafe.App f args => if has_rel f then true else Array.exist has_rel args
  | Constr.Unsafe.Prod b body => if has_rel (Constr.Binder.type b) then true else has_rel body
  | Constr.Unsafe.Lambda b body => if has_rel (Constr.Binder.type b) then true else has_rel body
  | Constr.Unsafe.Var _ => false
  | Constr.Unsafe.Constant _ _ => false
  | Constr.Unsafe.Ind _ _ => false
  | Constr.Unsafe.Constructor _ _ => false
  | Constr.Unsafe.Sort _ => false
  | _ => true
  end.

(** The descent's lemma at the head of [s], if it is one of its own. *)
Ltac2 kind_of (c : consts) (sa : (constr * constr array) option) : (lkind * constr array) option :=
  match sa with
  | None => None
  | Some p =>
      let (h, a) := p in
      let n := Array.length a in
      if Constr.equal h (c.(k_genr_ctx)) then (if Int.equal n 7 then Some (KGen, a) else None)
      else if Constr.equal h (c.(k_sumr_ctx)) then (if Int.equal n 7 then Some (KSum, a) else None)
      else if Constr.equal h (c.(k_iverson_ctx)) then (if Int.equal n 6 then Some (KIver, a) else None)
      else if Constr.equal h (c.(k_cong_l)) then (if Int.equal n 8 then Some (KCongL, a) else None)
      else if Constr.equal h (c.(k_cong_r)) then (if Int.equal n 8 then Some (KCongR, a) else None)
      else if Constr.equal h (c.(k_f_equal)) then (if Int.equal n 6 then Some (KFEq, a) else None)
      else if Constr.equal h (c.(k_let_ctx)) then
        (if Int.equal n 8 then
           (if is_fun2_refl c (Array.get a 7) then Some (KLetE, a)
            else if is_refl c (Array.get a 6) then Some (KLetB, a) else None)
         else None)
      else if Constr.equal h (c.(k_titer_ctx)) then
        (if Int.equal n 8 then
           (if is_fun_refl c (Array.get a 7) then Some (KTitX, a)
            else if is_refl c (Array.get a 6) then Some (KTitStep, a) else None)
         else None)
      else if Constr.equal h (c.(k_titer_ctx_shaped)) then
        (if Int.equal n 11 then Some (KTitShaped, a) else None)
      else None
  end.

(** The node's child on the path: [Some (child, binder)], the binder of the
    [fun] it sits under, if any; [None] if the node does not have the
    expected head (the descent saw it otherwise, e.g. eta-expanded). *)
Ltac2 fun_body (f : constr) : (constr * binder) option :=
  match Constr.Unsafe.kind f with
  | Constr.Unsafe.Lambda b body => Some (body, b)
  | _ => None
  end.

Ltac2 child_of (c : consts) (k : lkind) (ta : (constr * constr array) option)
  : (constr * binder option * int) option :=
  match ta with
  | None => None
  | Some p =>
      let (th, a) := p in
      let n := Array.length a in
      let under (h : constr) (m : int) (i : int) :=
        if Int.equal n m then
          if Constr.equal th h then
            match fun_body (Array.get a i) with
            | Some q => let (body, b) := q in Some (body, Some b, i)
            | None => None
            end
          else None
        else None in
      let direct (h : constr) (m : int) (i : int) :=
        if Int.equal n m then (if Constr.equal th h then Some (Array.get a i, None, i) else None)
        else None in
      let last (off : int) :=
        if Int.lt n off then None
        else let i := Int.sub n off in Some (Array.get a i, None, i) in
      match k with
      | KGen => under (c.(k_genr)) 5 4
      | KSum => under (c.(k_sumr)) 5 4
      | KIver => direct (c.(k_iverson)) 4 3
      | KLetE => direct (c.(k_atl_let)) 4 2
      | KLetB => under (c.(k_atl_let)) 4 3
      | KTitX => direct (c.(k_titer)) 4 2
      | KTitStep => under (c.(k_titer)) 4 3
      | KTitShaped => under (c.(k_titer)) 4 3
      | KCongL => last 2
      | KCongR => last 1
      | KFEq => last 1
      end
  end.

(** The node [ta] with its argument [i] (the child [child_of] found there)
    replaced by [c], under the argument's [fun] when the child is its body. *)
Ltac2 replace_child (ta : (constr * constr array) option) (i : int) (under : bool) (c : constr)
  : constr :=
  match ta with
  | Some p =>
      let (h, a) := p in
      let a := Array.copy a in
      (if under then
         match Constr.Unsafe.kind (Array.get a i) with
         | Constr.Unsafe.Lambda b _ => Array.set a i (mk (Constr.Unsafe.Lambda b c))
         | _ => Control.zero (Tactic_failure None)
         end
       else Array.set a i c);
      mk (Constr.Unsafe.App h a)
  | None => Control.zero (Tactic_failure None)
  end.

(** The type of the path's child at this level (a type of the lemma). *)
Ltac2 child_type (k : lkind) (a : constr array) : constr :=
  match k with
  | KLetB => Array.get a 1
  | KCongR => Array.get a 1
  | _ => Array.get a 0
  end.

(** The term binders above a level: their depth in the proof (counting
    every binder of the spine, from the root) and their binder in [P]. *)
Ltac2 Type tbind := { tdepth : int; tbinder : binder }.

(** The term binders as arguments, at proof depth [n] ([Rel] of each). *)
Ltac2 vs_args (n : int) (tb : tbind list) : constr array :=
  Array.of_list (List.map (fun b => rel (Int.add (Int.sub n (b.(tdepth))) 1)) tb).

(** [L_k vs] ([idx] = 2k) or [R_k vs] ([idx] = 2k - 1) at proof depth [n]:
    the lets are outside every binder of the proof, the innermost is [R_1]. *)
Ltac2 stub (idx : int) (n : int) (tb : tbind list) : constr :=
  app (rel (Int.add n idx)) (vs_args n tb).

(** Each level's let: its type, [L_k]'s body, [R_k]'s body. *)
Ltac2 Type lets := { mutable defs : (constr * constr * constr) list }.

(** Walk the spine [s] at proof depth [n], [P]'s node [pn] and [P']'s node
    [yn] at level [k], [tb] the term binders above (outermost first).
    Returns the lifted proof; records the let bodies of levels [>= 1]. *)
Ltac2 rec walk (c : consts) (acc : lets) (s : constr) (n : int) (k : int) (tb : tbind list)
               (pn : constr) (yn : constr) (ty : constr) : constr :=
  let t := List.length tb in
  let lams (body : constr) :=
    List.fold_right (fun b acc => mk (Constr.Unsafe.Lambda (b.(tbinder)) acc)) body tb in
  let prods (body : constr) :=
    List.fold_right (fun b acc => mk (Constr.Unsafe.Prod (b.(tbinder)) acc)) body tb in
  let record (lb : constr) (rb : constr) :=
    if Int.gt k 0 then acc.(defs) := (prods ty, lams lb, lams rb) :: acc.(defs) else () in
  let site () := record pn yn; s in
  let sa := app_of s in
  (* [atl_fresh_rhs]'s step through an applied evar: [eq_trans x y z H1
     eq_refl], at the same node; [x], [y], [z] named by the level's lets *)
  let trans :=
    if Int.gt k 0 then
      match sa with
      | Some p =>
          let (h, a) := p in
          if Int.equal (Array.length a) 6 then
            if Constr.equal h (c.(k_eq_trans)) then
              (if is_refl c (Array.get a 5) then Some (h, a) else None)
            else None
          else None
      | None => None
      end
    else None in
  match trans with
  | Some ha =>
      let (h, a) := ha in
      let a := Array.copy a in
      let lk := stub (Int.mul 2 k) n tb in
      let rk := stub (Int.sub (Int.mul 2 k) 1) n tb in
      Array.set a 1 lk; Array.set a 2 rk; Array.set a 3 rk;
      Array.set a 5 (app (c.(k_eq_refl)) (Array.of_list [Array.get a 0; rk]));
      Array.set a 4 (walk c acc (Array.get a 4) n k tb pn yn ty);
      mk (Constr.Unsafe.App h a)
  | None =>
  match kind_of c sa with
  | None => site ()
  | Some ka =>
      let (kd, a) := ka in
      let cty := child_type kd a in
      let pa := app_of pn in
      let ya := app_of yn in
      match child_of c kd pa with
      | None => site ()
      | Some pc =>
          match child_of c kd ya with
          | None => site ()
          | Some yc =>
              if has_rel cty then site () else
              let (pchild, pb, pi) := pc in
              let (ychild, _, yi) := yc in
              let under := match pb with Some _ => true | None => false end in
              let a := Array.copy a in
              let k1 := Int.add k 1 in
              (* L_(k+1) is Rel (depth + 2(k+1)), R_(k+1) one below it *)
              let li := Int.mul 2 k1 in
              let ri := Int.sub li 1 in
              (* the let bodies of this level: the child replaced by L_(k+1) vs
                 (R_(k+1) vs), at depth j = t (+1 under the node's binder);
                 L_(k+1) is Rel (j + 2) in both bodies *)
              let j := match pb with Some _ => Int.add t 1 | None => t end in
              let inner := app (rel (Int.add j 2))
                             (Array.init j (fun x => rel (Int.sub j x))) in
              record (replace_child pa pi under inner) (replace_child ya yi under inner);
              let tb1 := match pb with
                         | Some b => List.append tb [{ tdepth := Int.add n 1; tbinder := b }]
                         | None => tb
                         end in
              (* f := fun i => L vs i, at proof depth n *)
              let fun_stub (idx : int) (b : binder) :=
                let tbi := List.append tb [{ tdepth := Int.add n 1; tbinder := b }] in
                mk (Constr.Unsafe.Lambda b (stub idx (Int.add n 1) tbi)) in
              let lam (t : constr) (d : int) (f : constr -> constr) :=
                (* [t] is [fun b1 .. bd => body]: rebuild with [f body] *)
                let rec go t d :=
                  if Int.equal d 0 then f t else
                  match Constr.Unsafe.kind t with
                  | Constr.Unsafe.Lambda b body => mk (Constr.Unsafe.Lambda b (go body (Int.sub d 1)))
                  | _ => Control.zero (Tactic_failure None)
                  end in
                go t d in
              let sub (s' : constr) (d : int) := walk c acc s' (Int.add n d) k1 tb1 pchild ychild cty in
              (match pb with
               | Some b =>
                   (* the lemma's two functions and its hypothesis under the binder *)
                   let (fi, gi, hi, hb) :=
                     match kd with
                     | KGen => (4, 5, 6, 2) | KSum => (4, 5, 6, 2)
                     | KLetB => (4, 5, 7, 2)
                     | KTitStep => (4, 5, 7, 1)
                     | KTitShaped => (6, 7, 10, 2)
                     | _ => Control.zero (Tactic_failure None)
                     end in
                   Array.set a fi (fun_stub li b);
                   Array.set a gi (fun_stub ri b);
                   Array.set a hi (lam (Array.get a hi) hb (fun s' => sub s' hb))
               | None =>
                   let (xi, yi, hi, hb) :=
                     match kd with
                     | KIver => (3, 4, 5, 1)
                     | KLetE => (2, 3, 6, 0)
                     | KTitX => (2, 3, 6, 0)
                     | KCongL => (4, 5, 7, 0)
                     | KCongR => (5, 6, 7, 0)
                     | KFEq => (3, 4, 5, 0)
                     | _ => Control.zero (Tactic_failure None)
                     end in
                   Array.set a xi (stub li n tb1);
                   Array.set a yi (stub ri n tb1);
                   Array.set a hi (lam (Array.get a hi) hb (fun s' => sub s' hb))
               end);
              match sa with
              | Some p => let (h, _) := p in mk (Constr.Unsafe.App h a)
              | None => Control.zero (Tactic_failure None)
              end
          end
      end
  end
  end.

(** The lifted proof of [P = P'] from the probe's proof [s], or [None]
    when the path is empty (the probe's proof is then used). *)
Ltac2 lift (s : constr) (p : constr) (y : constr) (ty : constr) : constr option :=
  let acc := { defs := [] } in
  let c := consts () in
  let proof := walk c acc s 0 0 [] p y ty in
  match acc.(defs) with
  | [] => None
  | _ =>
      (* acc.(defs) lists the deepest level first: wrap from level 1 outwards *)
      let defs := List.rev (acc.(defs)) in
      let l := @atl_L in
      let r := @atl_R in
      Some (List.fold_left
              (fun t d =>
                 let (lty, lb, rb) := d in
                 mk (Constr.Unsafe.LetIn (Constr.Binder.make (Some l) lty) lb
                       (mk (Constr.Unsafe.LetIn (Constr.Binder.make (Some r) lty) rb t))))
              defs proof)
  end.

(** [Ltac2 Set AtlLift.debug := fun () => true.] has the proof engine type
    each lifted proof and report one it rejects (tests/coq/Lift.v). *)
Ltac2 mutable debug () : bool := false.
Ltac2 Type counter := { mutable count : int }.

(** Run [probe] (the descent) on a goal of its own with the same statement,
    then prove the goal by the lifted form of what it built. *)
Ltac2 lifted (probe : unit -> unit) : unit :=
  Control.enter (fun () =>
    let g := Control.goal () in
    let pv := open_constr:(_ : $g) in
    let pe := match Constr.Unsafe.kind pv with
              | Constr.Unsafe.Cast c _ _ => c
              | _ => pv
              end in
    let ev := match Constr.Unsafe.kind pe with
              | Constr.Unsafe.Evar e _ => e
              | _ => Control.zero (Tactic_failure None)
              end in
    Control.new_goal ev;
    Control.focus 2 2 probe;
    let cnt := { count := 0 } in
    Control.enter (fun () => cnt.(count) := Int.add (cnt.(count)) 1);
    if Int.equal (cnt.(count)) 1 then
      let g := Control.goal () in
      match app_of g with
      | Some q =>
          let (_, ga) := q in
          (* g = @eq T P P' *)
          let tyT := Array.get ga 0 in
          (* [Control.case], not [Control.plus]: no backtracking point, so a
             failure after the step (a directive's check of its result) does
             not come back here for a second success (the fallback) *)
          let lifted_term :=
            match Control.case (fun () => lift pe (Array.get ga 1) (Array.get ga 2) tyT) with
            | Val r => let (x, _) := r in x
            | Err _ => None
            end in
          match lifted_term with
          | Some t =>
              if debug () then
                match Constr.Unsafe.check t with
                | Val _ => ()
                | Err e => Message.print (Message.concat (Message.of_string "atl_lift: ill-typed: ")
                                            (Message.of_exn e))
                end
              else ();
              Std.exact_no_check t
          | None => Std.exact_no_check pe
          end
      | None => Std.exact_no_check pe
      end
    else Control.focus 1 1 (fun () => Std.exact_no_check pe)).
End AtlLift.
