(** * PolyBench's jacobi-1d, with its time loop in the program (issue 13).

    PolyBench/C's jacobi-1d runs [T] time steps of a 3-point average over the
    interior of a vector, keeping the two boundary elements (it alternates two
    arrays, A to B and B to A; one step here is one of those half steps).  Here
    the time loop is part of the program, [ITER] (Tensor/Iter.v), so the
    schedule may change it:

    - [jacobi1d_fused]: [unroll_time 2] (Rewrites/Time.v, [titer_unroll]) makes
      the step two consecutive steps, the first bound as the let [v]; [inline v]
      fuses them into one pass over the vector that recomputes the three
      neighbours of [v] it reads.  Half the passes over memory, three times the
      arithmetic of a step per element.
    - [jacobi1d_tiled]: the same two steps tiled in space instead: the second
      step's loop is split into tiles of [k] ([split i by k into io ii]) and
      the first step is computed at each tile ([compute_at v io],
      Rewrites/Producers.v, tile form of its bounds inference) over the
      tile's window, one element wider on each side ([k + 2] elements from
      [io * k - 1], guarded where it leaves the vector): overlapped time
      tiling (a trapezoid per tile), so the intermediate state of a tile
      stays in cache and each step's pass over memory is shared.  [k] stays
      symbolic.  The two [rename_loop]s first give the loops of the initial
      steps ([i0]) and of the first step ([j]) their own names, so that
      [split i] finds the second step's loop.

    Every step is a proved rewrite, and [check_safe] proves every access in
    bounds. *)

From Coq Require Import ZArith List derive.Derive.
From Verisched Require Import ATLGeneric.
Import ListNotations.
Open Scope Z_scope. Open Scope atl_scope.

Section Jacobi1d.
  Context {S : Type} `{ScalarLaws S}.
  Variables (n T : Z).
  Hypothesis HT : 0 <= T.
  Variable A : Z -> S.
  Hypothesis HA : shaped [n] A.

  Definition jacobi1d :=
    ITER [ T ] u := A in
      GEN [ i < n ]
        |[ (1 <=? i) && (i <? n - 1) ]| slit 1 3 * (u _[i - 1] + u _[i] + u _[i + 1])
        <+> |[ i <? 1 ]| u _[i] <+> |[ n - 1 <=? i ]| u _[i].

  Derive jacobi1d_fused SuchThat (jacobi1d = jacobi1d_fused) As jacobi1d_fused_correct.
  Proof.
    reschedule.
    unroll_time 2.
    inline v.
    normalize.
    simpl_guard.
    check_safe.
    done.
  Qed.
End Jacobi1d.

(** Overlapped time tiling: [k] is a section variable, any positive tile. *)
Section Jacobi1dTiled.
  Context {S : Type} `{ScalarLaws S}.
  Variables (n T k : Z).
  Hypothesis HT : 0 <= T.
  Hypothesis Hk : 0 < k.
  Variable A : Z -> S.
  Hypothesis HA : shaped [n] A.

  Derive jacobi1d_tiled SuchThat (jacobi1d n T A = jacobi1d_tiled) As jacobi1d_tiled_correct.
  Proof.
    reschedule.
    unroll_time 2.
    rename_loop i into i0.
    rename_loop i into j.
    split i by k into io ii.
    compute_at v io.
    check_safe.
    done.
  Qed.
End Jacobi1dTiled.

(** The step's boundary peeled: [peel i] gives the first and the last element
    their own loops (Halide's loop partitioning), so the interior loop has no
    guard left and reads [u _[i - 1]] to [u _[i + 1]] unconditionally, which the
    C compiler vectorizes.  Needs [2 <= n]: PolyBench's vectors are longer. *)
Section Jacobi1dPeeled.
  Context {S : Type} `{ScalarLaws S}.
  Variables (n T : Z).
  Hypothesis HT : 0 <= T.
  Hypothesis Hn : 2 <= n.
  Variable A : Z -> S.
  Hypothesis HA : shaped [n] A.

  Derive jacobi1d_peeled SuchThat (jacobi1d n T A = jacobi1d_peeled)
    As jacobi1d_peeled_correct.
  Proof.
    reschedule.
    peel i.
    check_safe.
    done.
  Qed.
End Jacobi1dPeeled.
