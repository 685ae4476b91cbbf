(** * The reshape-operator library (paper Sec. 6), in one import.

    - Reshape/Defs.v: the operators of Fig. 4-5;
    - Reshape/Access.v: accessing through each operator;
    - Reshape/Commute.v: operators and generation, summation, guards, lets;
    - Reshape/Duals.v: Fig. 7's dual-introduction identities, loop
      splitting into a concatenation (Sec. 6.1), tiling (Sec. 6.3);
    - Reshape/Store.v: a generation stored in a buffer and copied out,
      window reads, re-indexing;
    - Reshape/ShapeRules.v: shapes of reshaped terms, and the shape solver
      [atl_side] uses, so that [rw] proves them;
    - Reshape/Bounds.v: extents of reshaped terms for [check_safe];
    - Reshape/Partition.v: loop peeling and partitioning, stages stored
      per row, two-dimensional tiling ([gen_peel], [gen_partition],
      [gen_tile2], ...), written for the blur schedules.

    Partition.v comes first: its [ll_transpose] (binder [buf]) is shadowed
    by Commute.v's (binder [x]), which the derivations importing this file
    have always used; Partition's is [Partition.ll_transpose]. *)

From Verisched Require Export Reshape.Partition.
From Verisched Require Export Reshape.Defs Reshape.Access Reshape.Commute.
From Verisched Require Export Reshape.Duals Reshape.Store Reshape.ShapeRules Reshape.Bounds.
