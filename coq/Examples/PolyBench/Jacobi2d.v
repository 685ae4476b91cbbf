(** * PolyBench's jacobi-2d, with its time loop in the program (issue 13).

    PolyBench/C's jacobi-2d runs [T] time steps of a 5-point average with
    weight [0.2] over the interior of an [n x n] grid, the boundary kept (two
    arrays alternating; one step here is one half step).  [jacobi2d_fused]:
    [unroll_time 2] then [inline v]: two steps in one pass over the grid, as
    Jacobi1d.v does in 1-D.  [jacobi2d_tiled]: the two steps tiled in rows
    instead, as Jacobi1d.v's [jacobi1d_tiled]: the second step's row loop is
    split into strips of [k] rows and the first step is computed at each
    strip ([compute_at v io], the tile form of its bounds inference) over
    the strip's [k + 2] rows: overlapped time tiling along the rows, [k]
    symbolic. *)

From Coq Require Import ZArith List derive.Derive.
From Verisched Require Import ATLGeneric.
Import ListNotations.
Open Scope Z_scope. Open Scope atl_scope.

Section Jacobi2d.
  Context {S : Type} `{ScalarLaws S}.
  Variables (n T : Z).
  Hypothesis HT : 0 <= T.
  Variable A : Z -> Z -> S.
  Hypothesis HA : shaped [n; n] A.

  Definition jacobi2d :=
    ITER [ T ] u := A in
      GEN [ i < n ] GEN [ j < n ]
        |[ (1 <=? i) && (i <? n - 1) && (1 <=? j) && (j <? n - 1) ]|
          slit 1 5 * (u _[i] _[j] + u _[i] _[j - 1] + u _[i] _[j + 1]
                      + u _[i + 1] _[j] + u _[i - 1] _[j])
        <+> |[ i <? 1 ]| u _[i] _[j] <+> |[ n - 1 <=? i ]| u _[i] _[j]
        <+> |[ (1 <=? i) && (i <? n - 1) && (j <? 1) ]| u _[i] _[j]
        <+> |[ (1 <=? i) && (i <? n - 1) && (n - 1 <=? j) ]| u _[i] _[j].

  Derive jacobi2d_fused SuchThat (jacobi2d = jacobi2d_fused) As jacobi2d_fused_correct.
  Proof.
    reschedule.
    unroll_time 2.
    inline v.
    normalize.
    simpl_guard.
    check_safe.
    done.
  Qed.
End Jacobi2d.

(** Overlapped time tiling in strips of [k] rows, [k] any positive size. *)
Section Jacobi2dTiled.
  Context {S : Type} `{ScalarLaws S}.
  Variables (n T k : Z).
  Hypothesis HT : 0 <= T.
  Hypothesis Hk : 0 < k.
  Variable A : Z -> Z -> S.
  Hypothesis HA : shaped [n; n] A.

  Derive jacobi2d_tiled SuchThat (jacobi2d n T A = jacobi2d_tiled) As jacobi2d_tiled_correct.
  Proof.
    reschedule.
    unroll_time 2.
    rename_loop i into i0.
    rename_loop i into r.
    split i by k into io ii.
    compute_at v io.
    check_safe.
    done.
  Qed.
End Jacobi2dTiled.

(** The step's border peeled ([peel i j], as Blur.v's fused schedule): the first
    and last rows, and in every middle row its first and last column, get loops of
    their own, so the interior has no guard left and the C compiler vectorizes its
    rows.  Needs [2 <= n]. *)
Section Jacobi2dPeeled.
  Context {S : Type} `{ScalarLaws S}.
  Variables (n T : Z).
  Hypothesis HT : 0 <= T.
  Hypothesis Hn : 2 <= n.
  Variable A : Z -> Z -> S.
  Hypothesis HA : shaped [n; n] A.

  Derive jacobi2d_peeled SuchThat (jacobi2d n T A = jacobi2d_peeled)
    As jacobi2d_peeled_correct.
  Proof.
    reschedule.
    peel i j.
    check_safe.
    done.
  Qed.
End Jacobi2dPeeled.
