(* Importing a module a second time changes no tactic's behaviour: the
   reshape extents that check_safe reads are hints (Rewrites/Safety.v), which
   a re-import does not undo (an Ltac redefinition would be, coq/coq#10556),
   and rw and the producer directives are unchanged.  The same programs are
   checked before and after re-importing. *)
From Coq Require Import ZArith List derive.Derive.
From Verisched Require Import ATL.
Import ListNotations.
Open Scope Z_scope. Open Scope atl_scope.

Section Before.
  Context {S : Type} `{ScalarLaws S}.
  Variables (n : Z) (f : Z -> S).
  Hypothesis Hf : shaped [n] f.
  Hypothesis Hn : 0 < n.

  (* trunc_r / flatten: check_safe needs their extents (Reshape/Bounds.v). *)
  Definition r1 := trunc_r n (flatten (cdiv n 4) 4 (GEN [ io < cdiv n 4 ] GEN [ ii < 4 ]
                     |[ io * 4 + ii <? n ]| f _[ io * 4 + ii ])).
  Derive r1_d SuchThat (r1 = r1_d) As r1_ok.
  Proof. reschedule. check_safe. done. Qed.

  Definition r2 := GEN [ i < n ] f _[ i ] <+> f _[ i ].
  Derive r2_d SuchThat (r2 = r2_d) As r2_ok.
  Proof. reschedule. rw tadd_comm' at (f _[ _ ] <+> _). Fail rw sum_zero. done. Qed.
  Print r2_d.
End Before.

From Verisched Require Import Rewrites.Safety Rewrites.Tactics Reshape.Reshape.
From Verisched Require Import ATL Rewrites.Safety.

Section After.
  Context {S : Type} `{ScalarLaws S}.
  Variables (n : Z) (f : Z -> S).
  Hypothesis Hf : shaped [n] f.
  Hypothesis Hn : 0 < n.

  Derive r1_d' SuchThat (r1 n f = r1_d') As r1_ok'.
  Proof. reschedule. check_safe. done. Qed.

  Derive r2_d' SuchThat (r2 n f = r2_d') As r2_ok'.
  Proof. reschedule. rw tadd_comm' at (f _[ _ ] <+> _). Fail rw sum_zero. done. Qed.
  Print r2_d'.

  Derive r3_d' SuchThat (r1 n f = r3_d') As r3_ok'.
  Proof. reschedule. Fail compute_root nop. done. Qed.
End After.
