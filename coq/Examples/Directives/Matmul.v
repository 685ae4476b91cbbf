(** * BLIS-style matrix multiply, scheduled with directives.

    Examples/Matmul.v derives [matmul_tiled] (the GotoBLAS/BLIS schedule:
    a blocked [k] reduction outermost, [B]'s [kc x N] panel packed per
    depth block, [A]'s [mc x kc] block packed per row block, register
    blocks [mr x nr]) in 73 tactic lines of aimed rewrites ([gen_tile],
    [transpose_gen], [guard_sum], [ll_guard_dup], [let_gen_lift0], ...).
    Here it is 12 directive lines: the loop structure by [split] and
    [reorder] (Rewrites/Directives.v), the two packs by [stage]
    (Rewrites/Stage.v; Exo's [stage_mem]), and the micro-kernel's five
    edge guards merged into one by [merge_guards].  The result is the
    same program, binder for binder ([matmul_directive_same]): the same
    loops, the same packed layouts [Bp[jo][jm][kk][jr]] and
    [Ap[im][kk][ir]], the same guards on the packs and in the kernel. *)

From Coq Require Import ZArith List.
Import ListNotations.
From Coq Require Import derive.Derive.
From Verisched Require Import ATLGeneric Examples.Matmul.
Open Scope Z_scope. Open Scope atl_scope.

Section MatmulDirectives.
  Context {S : Type} `{ScalarLaws S}.
  Variables (M N K : Z).
  Variables (mc mr nc nr kc : Z).
  Hypotheses (Hmc : 0 < mc) (Hmr : 0 < mr) (Hnc : 0 < nc) (Hnr : 0 < nr) (Hkc : 0 < kc).
  Hypothesis (HK : 0 <= K).
  Variables (A B : Z -> Z -> S).
  Hypotheses (HA : shaped [M; K] A) (HB : shaped [K; N] B).

  Derive matmul_directive SuchThat (matmul M N K A B = matmul_directive)
    As matmul_directive_correct.
  Proof.
    reschedule.
    split k by kc into ko kk.     (* depth blocks of kc, guarded by k < K *)
    reorder ko i j.               (* the depth blocks outermost *)
    split i by mc into io ii.     (* rows: blocks of mc ... *)
    split ii by mr into im ir.    (* ... of register blocks of mr *)
    reorder j ir.                 (* columns above the register rows *)
    split j by nc into jo ji.     (* columns: blocks of nc ... *)
    split ji by nr into jm jr.    (* ... of register blocks of nr *)
    reorder ir jr.                (* the register block: rows, columns *)
    reorder kk ir jr.             (* the depth loop outside it *)
    stage B at ko as Bp.          (* B's kc x N panel, per depth block *)
    stage A at io as Ap.          (* A's mc x kc block, per row block *)
    merge_guards.                 (* one guard in the micro-kernel *)
    check_safe.
    done.
  Qed.

  Lemma matmul_directive_same :
    matmul_directive = matmul_tiled_expected M N K mc mr nc nr kc A B.
  Proof. unfold matmul_tiled_expected; cbv beta; same_program. Qed.

  Lemma matmul_directive_tiled : matmul_directive = matmul_tiled M N K mc mr nc nr kc A B.
  Proof.
    rewrite matmul_directive_same.
    apply eq_sym, matmul_tiled_is_expected; assumption.
  Qed.
End MatmulDirectives.
