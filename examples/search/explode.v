(* A kernel of ours, not in LIAR's table, whose e-graph explodes (issue 14): a
   matrix-vector product plus a sum of ten vectors.  With associativity and
   commutativity of + (rules.py: assoc_l, assoc_r, comm), a sum of k terms has an
   e-class for each subset of its terms and an e-node for each split of each subset
   (about 3^k; 13275 e-nodes after 4 steps, 97243 after 5); the search stops at its
   default node budget (50000), undoes the step that passed it, and keeps the best program so
   far (the gemv found in the first steps), which Coq certifies like any other.
   coqc checks that the definition is well typed. *)
From Coq Require Import ZArith List.
From Verisched Require Import ATL.
Import ListNotations.
Open Scope Z_scope. Open Scope atl_scope.

Section Explode.
  Context {S : Type} `{ScalarLaws S}.
  Variables (n m : Z).
  Variables (A : Z -> Z -> S).
  Variables (x v1 v2 v3 v4 v5 v6 v7 v8 v9 v10 : Z -> S).
  Definition gemv_plus_many :=
    GEN [ i < n ] (SUM [ j < m ] A _[ i ] _[ j ] * x _[ j ])
      + (v1 _[ i ] + v2 _[ i ] + v3 _[ i ] + v4 _[ i ] + v5 _[ i ] + v6 _[ i ]
         + v7 _[ i ] + v8 _[ i ] + v9 _[ i ] + v10 _[ i ]).

End Explode.
