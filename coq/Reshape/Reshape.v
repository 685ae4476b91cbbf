(** * The reshape-operator library (paper Sec. 6), in one import.

    - Reshape/Defs.v: the operators of Fig. 4-5;
    - Reshape/Access.v: accessing through each operator;
    - Reshape/Commute.v: operators and generation, summation, guards, lets;
    - Reshape/Duals.v: Fig. 7's dual-introduction identities, loop
      splitting into a concatenation (Sec. 6.1), tiling (Sec. 6.3);
    - Reshape/Store.v: a generation stored in a buffer and copied out,
      window reads, re-indexing;
    - Reshape/ShapeRules.v: shapes of reshaped terms, and [atl_side]
      extended so that [rw] proves them;
    - Reshape/Bounds.v: extents of reshaped terms for [check_safe]. *)

From Verisched Require Export Reshape.Defs Reshape.Access Reshape.Commute.
From Verisched Require Export Reshape.Duals Reshape.Store Reshape.ShapeRules Reshape.Bounds.
