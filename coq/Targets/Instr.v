(** * Instructions as specifications, and memories (Exo thesis, Ch. 2-3).

    The Exo thesis (Sec. 2.3, 3.2.2, 3.4) defines a hardware instruction
    as a procedure whose body is its specification in the language itself,
    annotated with the C it stands for; [replace()] swaps a fragment of a
    program for a call after checking, by unification, that the fragment
    IS the body.  Memories (Sec. 2.2, 3.2.1) are annotations on buffers
    that the analyses ignore and only the code generator reads.

    Here, in a shallow embedding, both are plain Coq definitions:

    - an instruction is a [Definition] whose body is an ATL term (see
      Targets/AVX.v); a call [avx2_loadu v o] is convertible to its body,
      so replacing the body by the call is a proof by conversion, and Coq
      itself checks that the fragment is exactly the specification;
    - a memory marker [in_mem M e] is the identity; wrapping a let's value
      places that buffer in memory [M] for the lowering (memories are
      declared by each target, see below).

    Tactics:
    - [use_instr I] / [use_instr I at (pat)]: replace the first subterm
      (pre-order, as [rw]) that is the body of instruction [I], for some
      arguments, by the call.  If no subterm is, a second pass accepts a
      loop of the instruction's range once its indices are in lane form
      ([o + l], [l <? n]; proved by [ring]).  On failure it prints the
      specification and, for the nearest candidate subterms, where they
      differ from it.
    - [use_instr_all I]: every such subterm, bottom-up.
    - [vector_index]: accesses and lane guards in lane form, everywhere.
    - [rw_all L]: one top-down pass of [rw L] at every node.
    - [set_memory x M]: wrap the value of the let whose binder is named [x]
      in [in_mem M]; [set_memory at (pat) M]: of the first let whose value
      matches [pat].

    Registration: a target library declares each instruction constant with
    [#[global] Instance : AtlInstr (@name) := {}.]  [same_program] then
    holds it abstract (an expected program that says [avx2_loadu] accepts
    only a derived program with the call) and [check_safe] unfolds it to
    check the accesses of its specification. *)

From Ltac2 Require Ltac2.
From Coq Require Import ZArith Lia.
From Verisched Require Import Tensor.Core Tensor.Arith Rewrites.Context Rewrites.Tactics.
From Verisched Require Rewrites.Guard.

(** ** Memories

    A memory is a constant of a type with a [Memory] instance.  Each
    target declares its own memories beside its instructions
    (Targets/AVX.v: [AVX2_REG], [AVX512_REG]; Targets/Gemmini.v:
    [GEMMINI_SPAD], [GEMMINI_ACC]), so adding a target does not touch this
    file; here is only the default, [DRAM].  [in_mem] takes the memory's
    type as an implicit argument, so it prints as [in_mem AVX2_REG e]. *)

Class Memory (M : Type) : Prop := {}.
#[global] Hint Mode Memory ! : typeclass_instances.

Inductive memory := DRAM.
#[global] Instance Memory_memory : Memory memory := {}.

Definition in_mem {M : Type} `{Memory M} {X : Type} (m : M) (e : X) : X := e.
Arguments in_mem {M _ X} m e%atl_scope.

(** ** The registry of instruction constants *)

Class AtlInstr {T : Type} (c : T) : Prop := {}.

#[global] Instance AtlInstr_in_mem : AtlInstr (@in_mem) := {}.

(** [atl_unfold_instrs P]: [P] with every registered constant unfolded
    (for [check_safe]: the specification is the term).
    [atl_generalize_instrs]: abstract every registered constant of the
    goal as a variable (for [same_program]).

    Both need the registered constants that occur in a term.  They used to
    find them with Ltac1's [match .. with context [?c]], restarting after
    each constant found and asking [AtlInstr c] in a fresh proof state at
    every subterm: a quarter to a third of the big derivation files' time
    (decision #95).  Here one walk over the term ([Constr.Unsafe.kind], in
    Ltac2) collects its distinct constants, binder types included as
    [context] visits them, and [AtlInstr c] is asked once per distinct
    constant.  Unfolding repeats until no registered constant is left, so
    an instruction whose body uses another is unfolded through, as
    before. *)
Ltac atl_is_instr c := is_const c; let _ := constr:(_ : AtlInstr c) in idtac.

Module AtlInstrScan.
Import Ltac2.Ltac2.

(** Distinct constants of [t], each with its reference, not yet in [acc]. *)
Ltac2 fst (p : 'a * 'b) : 'a := match p with (x, _) => x end.
Ltac2 snd (p : 'a * 'b) : 'b := match p with (_, y) => y end.

Ltac2 rec consts (t : constr) (acc : (constr * constant) list) : (constr * constant) list :=
  match Constr.Unsafe.kind t with
  | Constr.Unsafe.Constant k _ =>
      if List.exist (fun ck => Constr.equal (fst ck) t) acc then acc else (t, k) :: acc
  | Constr.Unsafe.App f args => Array.fold_left (fun a x => consts x a) (consts f acc) args
  | Constr.Unsafe.Lambda b body => consts body (consts (Constr.Binder.type b) acc)
  | Constr.Unsafe.Prod b body => consts body (consts (Constr.Binder.type b) acc)
  | Constr.Unsafe.LetIn b v body => consts body (consts v (consts (Constr.Binder.type b) acc))
  | Constr.Unsafe.Cast c _ ty => consts ty (consts c acc)
  | _ => acc
  end.

Ltac2 is_instr (c : constr) : bool :=
  match Control.case (fun () => constr:(_ : AtlInstr $c)) with
  | Val _ => true
  | Err _ => false
  end.

Ltac2 instrs (t : constr) : (constr * constant) list :=
  List.filter (fun ck => is_instr (fst ck)) (consts t []).

Ltac2 rec unfold_all (t : constr) : constr :=
  let cs := instrs t in
  match Int.equal (List.length cs) 0 with
  | true => t
  | false =>
      let t := Std.eval_unfold (List.map (fun ck => (Std.ConstRef (snd ck), Std.AllOccurrences)) cs) t in
      let t := Std.eval_cbv { Std.rBeta := true; Std.rMatch := false; Std.rFix := false;
                              Std.rCofix := false; Std.rZeta := false; Std.rDelta := false;
                              Std.rConst := [] } t in
      unfold_all t
  end.

Ltac2 unfold_k (p : Ltac1.t) (k : Ltac1.t) : unit :=
  match Ltac1.to_constr p with
  | Some t => Ltac1.apply k [Ltac1.of_constr (unfold_all t)] Ltac1.run
  | None => Control.throw (Tactic_failure None)
  end.

Ltac2 generalize_k (k : Ltac1.t) : unit :=
  List.iter (fun ck => Ltac1.apply k [Ltac1.of_constr (fst ck)] Ltac1.run)
            (instrs (Control.goal ())).
End AtlInstrScan.

Ltac atl_unfold_instrs_k P k :=
  let f := ltac2:(p k |- AtlInstrScan.unfold_k p k) in f P k.
Ltac atl_unfold_instrs P :=
  constr:(ltac:(atl_unfold_instrs_k P ltac:(fun r => exact r))).
Ltac atl_generalize_instrs :=
  let f := ltac2:(k |- AtlInstrScan.generalize_k k) in
  f ltac:(fun c => generalize c; intro).

(** ** [set_memory x M] *)

Lemma let_in_mem {X Y M} `{Memory M} (m : M) (e : X) (f : X -> Y) :
  atl_let e f = atl_let (in_mem m e) f.
Proof. reflexivity. Qed.

(** Moving a buffer, possibly to another target's memory. *)
Lemma let_in_mem_change {X Y M M'} `{Memory M} `{Memory M'} (m : M) (m' : M') (e : X)
    (f : X -> Y) :
  atl_let (in_mem m' e) f = atl_let (in_mem m e) f.
Proof. reflexivity. Qed.

(* [atl_same_name] (is an identifier the name of a binder?) is in
   Rewrites/Tactics.v. *)

Ltac atl_mem_root x M :=
  idtac;
  lazymatch goal with
  | |- atl_let ?e (fun y => _) = _ =>
      atl_same_name x y;
      lazymatch e with
      | in_mem _ ?e0 => exact (let_in_mem_change M _ e0 _)
      | _ => exact (let_in_mem M e _)
      end
  end.

(** [M] must be a memory some target declared (a [Memory] instance for its
    type); said before the search, whose failure would only name the let. *)
Ltac atl_check_memory M :=
  let T := type of M in
  tryif (let _ := constr:(_ : Memory T) in idtac) then idtac
  else fail 0 "set_memory:" M "is not a memory: its type" T
         "has no Memory instance (a target declares its memories, Targets/Instr.v)".

Tactic Notation "set_memory" ident(x) constr(M) :=
  atl_check_goal; atl_check_memory M;
  tryif atl_step ltac:(atl_mem_root x M) then idtac
  else fail 0 "set_memory: the program has no let named" x.

(** [set_memory at (pat) M]: the first let whose value (inside its memory
    marker, if any) matches the pattern [pat], whatever its binder name. *)
Ltac atl_mem_root_pat pat M :=
  idtac;
  lazymatch goal with
  | |- atl_let ?e _ = _ =>
      let p := open_constr:(pat) in
      lazymatch e with
      | in_mem _ ?e0 => atl_skel p e0; unify e0 p; exact (let_in_mem_change M _ e0 _)
      | _ => atl_skel p e; unify e p; exact (let_in_mem M e _)
      end
  end.

Tactic Notation "set_memory" "at" uconstr(pat) constr(M) :=
  atl_check_goal; atl_check_memory M;
  tryif atl_step ltac:(atl_mem_root_pat pat M) then idtac
  else fail 0 "set_memory: no let of the program has a value matching" pat.

(** ** [vector_index]: accesses and guards in lane form

    An instruction's specification reads [v _[ o + l ]] and guards lanes
    with [l <? n], where [l] is its lane variable.  After tiling, indices
    come out as [1 + (xo * 8 + xi) - 1] and guards as [xo * 8 + xi <? N].
    [vector_index] rewrites, under every innermost loop [GEN [ l < w ]]
    with a numeral extent [w] (the lane loop), each access index [i] that
    mentions [l] into [o + l] with [o] the [ring_simplify] normal form of
    [i - l], and each guard [a <? b] with [l] in [a] into [l <? c], with
    [c] the normal form of [b - (a - l)] (proved by [ring]); a guard
    [a <=? b] with [l] in [a] likewise into [l <? c], and [a <=? b] or
    [a <? b] with [l] in [b] (a left border) into [c <=? l].  Indices
    already of that form, and those where [l] does not occur with
    coefficient 1, are left alone. *)

Lemma get_index {X} (v : Z -> X) (i j : Z) : i = j -> get v i = get v j.
Proof. intros ->; reflexivity. Qed.

(** [a >=? b] and [a >? b] on the lane read as [b <=? a] and [b <? a]. *)
Lemma guard_geb_leb {X} `{TensorElem X} (a b : Z) (e : X) :
  iverson (a >=? b)%Z e = iverson (b <=? a)%Z e.
Proof. rewrite Z.geb_leb; reflexivity. Qed.
Lemma guard_gtb_ltb {X} `{TensorElem X} (a b : Z) (e : X) :
  iverson (a >? b)%Z e = iverson (b <? a)%Z e.
Proof. rewrite Z.gtb_ltb; reflexivity. Qed.

(** A point [a =? b] on the lane is the range [b <= a < b + 1]: a masked
    load (or broadcast) of one lane, [maskload_range]. *)
Lemma guard_eqb_range {X} `{TensorElem X} (a b : Z) (e : X) :
  iverson (a =? b)%Z e = iverson ((b <=? a)%Z && (a <? b + 1)%Z)%bool e.
Proof.
  f_equal; destruct (Z.eqb_spec a b), (Z.leb_spec b a), (Z.ltb_spec a (b + 1));
    cbn; auto; lia.
Qed.

Lemma guard_lane_shift {X} `{TensorElem X} (a b x c : Z) (e : X) :
  (a - x = b - c)%Z -> iverson (a <? b)%Z e = iverson (x <? c)%Z e.
Proof.
  intros Hs; f_equal; destruct (Z.ltb_spec a b), (Z.ltb_spec x c); auto; exfalso; lia.
Qed.

(** A border guard in lane form (Halide's boundary conditions, Halide
    formal semantics Sec. 4, cut by a vector): a lower bound [c <=? l] from
    [a <=? b] or [a <? b] with the lane in [b], an upper bound [l <? c] from
    [a <=? b] with the lane in [a]. *)
Lemma guard_lane_shift_le {X} `{TensorElem X} (a b x c : Z) (e : X) :
  (a - c = b - x)%Z -> iverson (a <=? b)%Z e = iverson (c <=? x)%Z e.
Proof.
  intros Hs; f_equal; destruct (Z.leb_spec a b), (Z.leb_spec c x); auto; exfalso; lia.
Qed.

Lemma guard_lane_shift_lt_lo {X} `{TensorElem X} (a b x c : Z) (e : X) :
  (a + 1 - c = b - x)%Z -> iverson (a <? b)%Z e = iverson (c <=? x)%Z e.
Proof.
  intros Hs; f_equal; destruct (Z.ltb_spec a b), (Z.leb_spec c x); auto; exfalso; lia.
Qed.

Lemma guard_lane_shift_le_hi {X} `{TensorElem X} (a b x c : Z) (e : X) :
  (a - x = b + 1 - c)%Z -> iverson (a <=? b)%Z e = iverson (x <? c)%Z e.
Proof.
  intros Hs; f_equal; destruct (Z.leb_spec a b), (Z.ltb_spec x c); auto; exfalso; lia.
Qed.

(** The innermost lane variable: the latest hypothesis [0 <= l < w], [w] a
    positive numeral. *)
Ltac atl_lane_var :=
  match goal with
  | H : (0 <= ?x < ?w)%Z |- _ => lazymatch w with Zpos _ => x end
  end.

Ltac atl_lane_root norm :=
  idtac;
  let x := atl_lane_var in
  lazymatch goal with
  | |- get ?v ?i = _ =>
      lazymatch i with context [x] => idtac | _ => fail end;
      lazymatch i with
      | x => fail
      | (?o + x)%Z => lazymatch o with context [x] => idtac | _ => fail end
      | _ => idtac
      end;
      norm constr:((i - x)%Z) ltac:(fun o =>
        lazymatch o with context [x] => fail | _ => idtac end;
        transitivity (get v (o + x)%Z); [ apply get_index; ring | reflexivity ])
  | |- iverson (?a <? ?b)%Z ?e = _ =>
      lazymatch a with
      | context [x] =>
          lazymatch a with x => fail | _ => idtac end;
          norm constr:((a - x)%Z) ltac:(fun d =>
            lazymatch d with context [x] => fail | _ => idtac end;
            norm constr:((b - d)%Z) ltac:(fun c =>
              transitivity (iverson (x <? c)%Z e); [ apply guard_lane_shift; ring | reflexivity ]))
      | _ =>
          lazymatch b with context [x] => idtac | _ => fail end;
          norm constr:((b - x)%Z) ltac:(fun d =>
            lazymatch d with context [x] => fail | _ => idtac end;
            norm constr:((a + 1 - d)%Z) ltac:(fun c =>
              transitivity (iverson (c <=? x)%Z e);
              [ apply guard_lane_shift_lt_lo; ring | reflexivity ]))
      end
  | |- iverson (?p && ?q)%bool ?e = _ =>
      (* a conjunction on the lane: two nested guards, each normalized *)
      lazymatch constr:((p, q)) with context [x] => idtac | _ => fail end;
      etransitivity; [ eapply Rewrites.Guard.guard_split | ];
      etransitivity; [ first [ atl_lane_root norm | reflexivity ] | ];
      lazymatch goal with
      | |- iverson ?p' _ = _ =>
          refine (f_equal (iverson p') _); first [ atl_lane_root norm | reflexivity ]
      end
  | |- iverson (?a <=? ?b)%Z ?e = _ =>
      lazymatch a with
      | context [x] =>
          norm constr:((a - x)%Z) ltac:(fun d =>
            lazymatch d with context [x] => fail | _ => idtac end;
            lazymatch b with context [x] => fail | _ => idtac end;
            norm constr:((b + 1 - d)%Z) ltac:(fun c =>
              transitivity (iverson (x <? c)%Z e);
              [ apply guard_lane_shift_le_hi; ring | reflexivity ]))
      | _ =>
          lazymatch b with context [x] => idtac | _ => fail end;
          lazymatch b with x => fail | _ => idtac end;
          norm constr:((b - x)%Z) ltac:(fun d =>
            lazymatch d with context [x] => fail | _ => idtac end;
            norm constr:((a - d)%Z) ltac:(fun c =>
              transitivity (iverson (c <=? x)%Z e);
              [ apply guard_lane_shift_le; ring | reflexivity ]))
      end
  | |- iverson ?c ?e = _ =>
      (* [a >=? b] and [a >? b] read swapped ([b <=? a], [b <? a]); a point
         [a =? b] as the one-lane range [b <= a < b + 1], only where it is the
         lane plus a lane-free offset ([i mod 2 =? 0] stays) *)
      lazymatch c with context [x] => idtac | _ => fail end;
      let L := lazymatch c with
               | (_ >=? _)%Z => constr:(@guard_geb_leb)
               | (_ >? _)%Z => constr:(@guard_gtb_ltb)
               | (_ =? _)%Z => constr:(@guard_eqb_range)
               end in
      lazymatch c with
      | (?a =? ?b)%Z =>
          let free d := lazymatch d with context [x] => fail | _ => idtac end in
          first [ norm constr:((a - b - x)%Z) free | norm constr:((b - a - x)%Z) free ]
      | _ => idtac
      end;
      etransitivity; [ apply L | first [ atl_lane_root norm | reflexivity ] ]
  end.

(** Where [atl_lane_root] can fire: an access or a guard. *)
Ltac atl_lane_may t :=
  lazymatch t with
  | get _ _ => idtac
  | iverson _ _ => idtac
  end.

(** Each distinct index normalized once in the pass ([atl_ring_memo]). *)
Tactic Notation "vector_index" :=
  atl_ring_memo ltac:(fun norm =>
    atl_step ltac:(atl_everywhere_may atl_lane_may ltac:(atl_lane_root norm))).

(** ** [use_instr I] *)

(** [atl_instr_inst I k]: the body of instruction [I] and its call, with a
    fresh evar for every parameter, passed to [k body call].  [I] is the
    instruction's name, elaborated with evars for its implicit arguments
    (the scalar type and class), or a partial application fixing some
    leading arguments, e.g. [use_instr (avx2_loadu B)]. *)
Ltac atl_instr_apply b app k :=
  lazymatch b with
  | fun x : ?A => _ =>
      let e := open_constr:(?[?x] : A) in
      let b' := eval cbv beta in (b e) in
      atl_instr_apply b' open_constr:(app e) k
  | _ => k b app
  end.

Ltac atl_instr_inst I k :=
  let h := atl_head I in
  tryif is_const h then idtac
  else fail 100 "use_instr:" I "is not an instruction (a defined constant)";
  let b := eval unfold h in I in
  let b := eval cbv beta in b in
  atl_instr_apply b I k.

(** At the root [t = ?r]: [t] must be the body for some arguments. *)
Ltac atl_instr_root I :=
  idtac;
  lazymatch goal with
  | |- ?t = _ =>
      atl_instr_inst I ltac:(fun body call =>
        atl_skel body t; unify t body; exact (@eq_refl _ call))
  end.

(** ** Diagnostics: why no subterm is the specification

    [atl_idiff pr l t] compares the specification [l] (parameters as
    evars) with a subterm [t] in pre-order, as unification would, and
    returns [(k, stop)]: [k] nodes agree before the first difference, and
    [stop] says whether there is one.  With [pr = true] it prints that
    difference.  Binders of both are instantiated with one variable named
    after the subterm's own binder, so the messages use its names; index
    and predicate positions are compared by unification as a whole (the
    unit a user fixes with an index rewrite). *)

Ltac atl_test tac := let r := constr:(ltac:(tryif tac then exact true else exact false) : bool) in
  eval cbv in r.

Ltac atl_unifiable a b := atl_test ltac:(idtac; assert_succeeds (unify a b)).

Inductive atl_diff_reason := diff_range | diff_index | diff_lane | diff_type | diff_term.

Ltac atl_isay pr why a b :=
  lazymatch pr with
  | false => idtac
  | true =>
      lazymatch why with
      | diff_range =>
          idtac "    its loop range (lo, hi) differs: the instruction needs" a;
          idtac "      found" b
      | diff_index =>
          idtac "    an index or predicate differs: the instruction needs" a;
          idtac "      found" b;
          idtac "      (use_instr also tried every index in the lane form o + l, by ring;";
          idtac "       this one has none, or another part differs; rw (get_index _ _ (i'))";
          idtac "       rewrites an access index to an equal one i')"
      | diff_lane =>
          idtac "    the instruction has a lane-free parameter" a "here, but found" b;
          idtac "      which depends on a lane variable of the instruction's loop"
      | diff_type =>
          idtac "    a subterm's type differs: the instruction needs a" a;
          idtac "      found" b
      | diff_term =>
          idtac "    expected" a;
          idtac "      found" b
      end
  end.

Ltac atl_say pr why a b res :=
  let _ := constr:(ltac:(atl_isay pr why a b; exact I) : True) in res.

Ltac atl_iadd k r :=
  lazymatch r with (?j, ?s) => let n := eval cbv in (k + j)%nat in constr:((n, s)) end.

Ltac atl_iseq pr l1 t1 l2 t2 :=
  let r1 := atl_idiff pr l1 t1 in
  lazymatch r1 with
  | (_, true) => r1
  | (?k, false) => let r2 := atl_idiff pr l2 t2 in atl_iadd k r2
  end

with atl_ibinder pr l t :=
  (* [l], [t]: [fun x => _] / [fun y => _], bodies compared at one [y]. *)
  lazymatch t with
  | fun y : ?A => _ =>
      let r := constr:(fun y : A => ltac:(
                 let lb := eval cbv beta in (l y) in
                 let tb := eval cbv beta in (t y) in
                 let res := atl_idiff pr lb tb in exact res)) in
      lazymatch r with fun _ => ?res => res end
  end

with atl_idiff pr l t :=
  let isev := atl_test ltac:(idtac; is_evar l) in
  let Tl := type of l in
  let Tt := type of t in
  let tyok := atl_unifiable Tl Tt in
  lazymatch tyok with
  | false => atl_say pr diff_type Tl t constr:((0%nat, true))
  | true =>
  lazymatch isev with
  | true =>
      let u := atl_unifiable l t in
      lazymatch u with
      | true => constr:((1%nat, false))
      | false => atl_say pr diff_lane l t constr:((0%nat, true))
      end
  | false =>
      let idx := atl_test ltac:(idtac; atl_is_index l) in
      lazymatch idx with
      | true =>
          let u := atl_unifiable l t in
          lazymatch u with
          | true => constr:((1%nat, false))
          | false => atl_say pr diff_index l t constr:((0%nat, true))
          end
      | false =>
          lazymatch l with
          | genr ?lo ?hi ?f =>
              lazymatch t with
              | genr ?lo' ?hi' ?g =>
                  let u := atl_unifiable (lo, hi) (lo', hi') in
                  lazymatch u with
                  | false => atl_say pr diff_range (lo, hi) (lo', hi') constr:((1%nat, true))
                  | true =>
                      lazymatch g with
                      | fun _ => _ => let r := atl_ibinder pr f g in atl_iadd 2%nat r
                      | _ => atl_say pr diff_term l t constr:((1%nat, true))
                      end
                  end
              | _ => atl_say pr diff_term l t constr:((0%nat, true))
              end
          | sumr ?lo ?hi ?f =>
              lazymatch t with
              | sumr ?lo' ?hi' ?g =>
                  let u := atl_unifiable (lo, hi) (lo', hi') in
                  lazymatch u with
                  | false => atl_say pr diff_range (lo, hi) (lo', hi') constr:((1%nat, true))
                  | true =>
                      lazymatch g with
                      | fun _ => _ => let r := atl_ibinder pr f g in atl_iadd 2%nat r
                      | _ => atl_say pr diff_term l t constr:((1%nat, true))
                      end
                  end
              | _ => atl_say pr diff_term l t constr:((0%nat, true))
              end
          | ?lf ?la =>
              let hl := atl_head l in
              let ht := atl_head t in
              let same := atl_test ltac:(idtac; constr_eq hl ht) in
              lazymatch same with
              | false => atl_say pr diff_term l t constr:((0%nat, true))
              | true =>
                  lazymatch t with
                  | ?tf ?ta => let r := atl_iseq pr lf tf la ta in atl_iadd 1%nat r
                  | _ => atl_say pr diff_term l t constr:((0%nat, true))
                  end
              end
          | _ =>
              let u := atl_unifiable l t in
              lazymatch u with
              | true => constr:((1%nat, false))
              | false => atl_say pr diff_term l t constr:((0%nat, true))
              end
          end
      end
  end
  end.

(** The size of a specification, the largest possible agreement. *)
Ltac atl_isize l :=
  let r := atl_idiff false l l in lazymatch r with (?k, _) => k end.

(** At a node: does it agree with the specification on at least [K]
    nodes (and differ somewhere)?  With [pr], print it and its difference. *)
Ltac atl_idiag_root I K pr :=
  idtac;
  lazymatch goal with
  | |- ?t = _ =>
      atl_instr_inst I ltac:(fun body call =>
        let r := atl_idiff false body t in
        lazymatch r with
        | (?k, _) =>
            let ok := eval cbv in (Nat.leb K k) in
            lazymatch ok with
            | true =>
                lazymatch pr with
                | true =>
                    idtac "  candidate:" t;
                    let _ := atl_idiff true body t in idtac
                | false => idtac
                end
            | false => fail
            end
        end)
  end.

Ltac atl_idiag_at I K sel :=
  idtac;
  lazymatch K with
  | O => idtac "  (no subterm has the instruction's outermost construct)"
  | S ?K' =>
      tryif assert_succeeds (etransitivity; [ atl_descend_rec ltac:(sel; atl_idiag_root I K false) | ])
      then
        (idtac "  closest subterms, in program order, and where each differs:";
         tryif (etransitivity; [ atl_descend_rec ltac:(sel; atl_idiag_root I K true; fail) | ])
         then idtac else idtac)
      else atl_idiag_at I K' sel
  end.

Ltac atl_instr_fail I sel :=
  let h := atl_head I in
  let b := eval unfold h in h in
  idtac "use_instr" h ": no subterm of the program is its specification";
  idtac "  " b;
  idtac "  (in the differences below, ?x stands for the instruction's parameter x)";
  atl_instr_inst I ltac:(fun body call => let k := atl_isize body in atl_idiag_at I k sel);
  fail 0 "use_instr" h ": no subterm of the program is its specification (the closest subterms and how they differ are listed above)".

(** Unification modulo index arithmetic (the Exo thesis, Sec. 3.4, unifies
    "modulo linear equalities"): at a node that is a loop of the
    instruction's range, put the accesses and guards in lane form first
    ([vector_index] on that node only), then match exactly. *)
Ltac atl_instr_root_arith I :=
  idtac;
  lazymatch goal with
  | |- ?t = _ =>
      assert_succeeds (atl_instr_inst I ltac:(fun body call =>
        let r := atl_idiff false body t in
        lazymatch r with (S (S _), _) => idtac | _ => fail end));
      etransitivity;
      [ atl_everywhere_may atl_lane_may ltac:(atl_lane_root atl_ring_norm)
      | atl_beta_lhs; atl_instr_root I ]
  end.

(** The head constant of instruction [I]'s specification (its body under
    its parameters), or [tt] where that head is not a constant (a
    parameter): [use_instr_all]'s traversal tries [I] only at nodes with
    that head ([atl_everywhere_may]), since both an exact match (its
    skeleton) and a match in lane form ([atl_idiff]) need it. *)
Ltac atl_body_head b :=
  lazymatch b with
  | fun x : ?A => _ =>
      let r := constr:(fun x : A => ltac:(let c := eval cbv beta in (b x) in
                                         let hd := atl_body_head c in exact hd)) in
      lazymatch r with
      | fun _ => ?hd => hd
      | _ => constr:(tt)
      end
  | _ =>
      let h := atl_head b in
      let c := atl_test ltac:(is_const h) in
      lazymatch c with true => h | false => constr:(tt) end
  end.

Ltac atl_instr_head I :=
  let h := atl_head I in
  let b := eval unfold h in I in
  let b := eval cbv beta in b in
  atl_body_head b.

(** The searches enter no subtree without a node headed as [I]'s
    specification (both matches need that head, see [atl_instr_head]).
    The head is read under [atl_keep]: [atl_instr_head] elaborates terms
    over [I]'s open implicit arguments and left them instantiated (the
    scalar type of [avx2_broadcast] became [Z -> Z -> S] on the search's
    [vaxpy], tests/test_search_avx2.py), so that [I] matched nothing. *)
Ltac atl_instr_head_kept I k :=
  atl_keep ltac:(fun k' => let Ic := open_constr:(I) in let h := atl_instr_head Ic in k' h) k.

Tactic Notation "use_instr" open_constr(I) :=
  atl_check_goal;
  atl_instr_head_kept I ltac:(fun hd =>
  tryif atl_step_prune ltac:(atl_none_head hd) ltac:(atl_instr_root I) then idtac
  else tryif atl_step_prune ltac:(atl_none_head hd) ltac:(atl_instr_root_arith I) then idtac
  else atl_instr_fail I idtac).

Tactic Notation "use_instr" open_constr(I) "at" uconstr(pat) :=
  atl_check_goal;
  atl_instr_head_kept I ltac:(fun hd =>
  tryif atl_step_prune ltac:(atl_none_head hd) ltac:(atl_match pat; atl_instr_root I) then idtac
  else tryif atl_step_prune ltac:(atl_none_head hd) ltac:(atl_match pat; atl_instr_root_arith I) then idtac
  else atl_instr_fail I ltac:(atl_match pat)).

(** [use_instr_all I]: replace every subterm that is the specification of
    [I] (bottom-up, so nested specifications become nested calls); fails
    if there is none.  If some subterm matches exactly, only exact matches
    are taken; otherwise every loop of the instruction's range that
    matches once its indices are in lane form. *)
Ltac atl_instr_root_any exact_only I :=
  idtac;
  lazymatch goal with
  | |- ?t = _ =>
      let I' := open_constr:(I) in
      first [ atl_instr_inst I' ltac:(fun body call =>
                atl_skel body t; unify t body; exact (@eq_refl _ call))
            | lazymatch exact_only with false => atl_instr_root_arith I' end ]
  end.

Ltac atl_head_may h t :=
  tryif constr_eq h tt then idtac else (let h' := atl_head t in constr_eq h h').

(** The head read under [atl_keep] here too: read from [Ichk] itself, it
    left [Ichk]'s implicit arguments instantiated, and [use_instr_all
    avx2_broadcast] found no site where one exists (tests/coq/Instr.v). *)
Tactic Notation "use_instr_all" uconstr(I) :=
  atl_check_goal;
  atl_instr_head_kept I ltac:(fun hd =>
  let Ichk := open_constr:(I) in
  tryif atl_step ltac:(atl_instr_root Ichk)
  then atl_step ltac:(atl_everywhere_prune ltac:(atl_none_head hd) ltac:(atl_head_may hd)
                                           ltac:(atl_instr_root_any true I))
  else tryif atl_step ltac:(atl_instr_root_arith Ichk)
  then atl_step ltac:(atl_everywhere_prune ltac:(atl_none_head hd) ltac:(atl_head_may hd)
                                           ltac:(atl_instr_root_any false I))
  else atl_instr_fail Ichk idtac).

(** [rw_all L]: one top-down pass rewriting with [L] at every node where it
    applies (side conditions proved by [atl_side]), including inside what
    a rewrite produced: [tadd_guard] pushes a guard through a whole sum,
    [avx2_add_gen_tadd] splits a whole lane-wise sum into a tree of
    [avx2_add].  Fails, with [rw]'s diagnostics, when [L] applies nowhere.
    Only for lemmas whose right side is smaller in the sense that the pass
    ends (not, e.g., [avx2_storeu_gen]).  [atl_topdown_prune] makes the
    transitivity step joining a node's rewrite to its children's only
    where [tac] rewrites the node (as [norm_pass], decision #98). *)
Ltac atl_topdown_prune none tac :=
  idtac;
  lazymatch goal with
  | |- ?t = _ =>
      tryif none t then exact eq_refl else
      tryif (etransitivity; [ tac | ])
      then (atl_beta_lhs; atl_fresh_rhs ltac:(atl_children ltac:(atl_topdown_prune none tac)))
      else atl_fresh_rhs ltac:(atl_children ltac:(atl_topdown_prune none tac))
  end.

(** [L] everywhere, top-down, in no subtree without a node headed as [L]'s
    left side (where [atl_root_l L]'s skeleton check fails at every node). *)
Ltac atl_topdown_lemma L :=
  atl_side_head L true ltac:(fun h => atl_topdown_prune ltac:(atl_none_head h) ltac:(atl_root_l L)).

Tactic Notation "rw_all" uconstr(L) :=
  atl_check_goal;
  tryif atl_step_l L then
    atl_step ltac:(atl_topdown_lemma L)
  else rw L.
