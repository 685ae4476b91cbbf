(** * Partitioning generations, storing stages, tiling in two dimensions.

    Lemmas the blur schedules of the ATL paper's Sec. 8.1 (Figs. 8-9,
    coq/Examples/Blur.v) need beyond the reshape operators' own laws
    (Reshape/Access.v, Commute.v, Duals.v):

    - [gen_partition], [gen_peel], [gen_peel_inner]: loop splitting into
      a concatenation (Sec. 6, Fig. 6), in particular peeling the first
      and last iteration off -- the "prologue and epilogue loops" around
      the "constant-state region" of Sec. 8.1, third paragraph.  Every
      piece keeps the original body over a shifted range ([GENR]), so the
      loop bounds in context decide its guards ([simpl_guard]); the sizes
      are arguments so the derived program shows them simplified;
    - [gen_swap_transpose], [gen_partition_cols], [gen_peel_cols]: the
      same for the inner loop, lifted out of the outer one with
      transposes, as Fig. 9 writes the middle rows of the image;
    - [stage_rows3_root], [stage_rows3]: a body reading a stage at three
      consecutive rows computes the stage once per row into a buffer
      (Fig. 8's breadth-first buffer; Fig. 9's per-tile buffer);
    - [gen_tile2]: two-dimensional tiling in Fig. 9's form;
    - [ll_transpose]: a let leaves a transposition;
    - [simpl_index]: a derivation step normalizing every access index
      with [ring_simplify] ([1 + yo * kn + y - 1] becomes [yo * kn + y]),
      which [rw] cannot do since it never enters index terms.

    All hold without shape hypotheses, because every generation is zero
    outside its range (Tensor/Core.v).  Lemma sides are first-order or
    have the bodies as [f y] (not [fun x => f y x]) so that [rw]'s
    syntactic pre-check accepts them; index arguments are declared [%Z]
    at the end, because derivation scripts open [atl_scope], where [+] is
    scalar addition. *)

From Coq Require Import ZArith Bool Lia FunctionalExtensionality.
From Verisched Require Import Tensor.Core Tensor.Arith Tensor.Sum Reshape.Defs Reshape.Duals.
From Verisched Require Import Rewrites.Tactics.
Open Scope Z_scope.

(** Case analysis on every comparison in the goal, then arithmetic. *)
Ltac part_cases :=
  cbn [andb iverson];
  repeat (match goal with
          | |- context [(?a <=? ?b)] => destruct (Z.leb_spec a b)
          | |- context [(?a <? ?b)] => destruct (Z.ltb_spec a b)
          end; cbn [andb iverson]).

Section Partition.
  Context {X : Type} `{TensorLaws X}.

  (** Loop splitting (Sec. 6, concatenation; Fig. 6): the generation over
      [lo, hi) is its part over [lo, mid) followed by its part over
      [mid, hi). *)
  Lemma gen_partition lo hi mid (f : Z -> X) :
    lo <= mid <= hi ->
    genr lo hi f = concat (mid - lo) (hi - mid) (genr lo mid f) (genr mid hi f).
  Proof.
    intros Hm; apply functional_extensionality; intros k.
    unfold concat, genr, get, iverson.
    part_cases; rewrite ?tadd_0_l, ?tadd_0_r; try reflexivity; try lia;
      f_equal; lia.
  Qed.

  (** Peeling the first and the last iteration off a loop (the prologue
      and epilogue of Sec. 8.1): the sizes are arguments, so that the
      derived program shows them simplified ([n + 1], not [n + 2 - 1]);
      the side conditions check them. *)
  Lemma gen_peel N N1 N2 (f : Z -> X) :
    N1 = N - 1 -> N2 = N - 2 -> 2 <= N ->
    genr 0 N f = concat 1 N1 (genr 0 1 f) (concat N2 1 (genr 1 N1 f) (genr N1 N f)).
  Proof.
    intros -> -> HN.
    rewrite (gen_partition 0 N 1), (gen_partition 1 N (N - 1)) by lia.
    replace (1 - 0) with 1 by lia; replace (N - 1 - 1) with (N - 2) by lia.
    replace (N - (N - 1)) with 1 by lia; reflexivity.
  Qed.

  (** The same for the inner loop of every row of [a <= y < b]. *)
  Lemma gen_peel_inner a b M M1 M2 (f : Z -> Z -> X) :
    M1 = M - 1 -> M2 = M - 2 -> 2 <= M ->
    genr a b (fun y => genr 0 M (f y)) =
    genr a b (fun y => concat 1 M1 (genr 0 1 (f y)) (concat M2 1 (genr 1 M1 (f y)) (genr M1 M (f y)))).
  Proof. intros; apply genr_ext_ctx; intros; apply gen_peel; auto. Qed.

  (** The stage lemma behind Fig. 8: a generation whose body reads a stage
      [g] at the rows above, at and below [y] computes [g] once for each
      of [A + 2] rows into a buffer, and reads the buffer instead.  [g]
      and the combination [F] are given at the use (no loop variable
      occurs in them), so the left side unifies first-order. *)
  Lemma stage_rows3_root A B (g : Z -> Z -> X) (F : X -> X -> X -> X) :
    genr 0 A (fun y => genr 0 B (fun x => F (g (y - 1) x) (g y x) (g (y + 1) x))) =
    atl_let (genr 0 (A + 2) (fun y => genr 0 B (fun x => g (y - 1) x)))
      (fun buf => genr 0 A (fun y => genr 0 B (fun x =>
         F (get (get buf y) x) (get (get buf (y + 1)) x) (get (get buf (y + 2)) x)))).
  Proof.
    unfold atl_let; apply genr_ext_ctx; intros y Hy; apply genr_ext_ctx; intros x Hx.
    cbv beta; rewrite !get_genr by lia; cbv beta; rewrite ?get_genr by lia.
    f_equal; f_equal; lia.
  Qed.

  (** The same inside a tile (Fig. 9): the tile's rows start at image row
      [r0] and its columns at [c0], so the buffer holds rows
      [r0 - 1 .. r0 + A] of the stage over the tile's [B] columns. *)
  Lemma stage_rows3 A B r0 c0 (g : Z -> Z -> X) (F : X -> X -> X -> X) :
    genr 0 A (fun y => genr 0 B (fun x =>
      F (g (r0 + y - 1) (c0 + x)) (g (r0 + y) (c0 + x)) (g (r0 + y + 1) (c0 + x)))) =
    atl_let (genr 0 (A + 2) (fun y => genr 0 B (fun x => g (r0 + y - 1) (c0 + x))))
      (fun buf => genr 0 A (fun y => genr 0 B (fun x =>
         F (get (get buf y) x) (get (get buf (y + 1)) x) (get (get buf (y + 2)) x)))).
  Proof.
    unfold atl_let; apply genr_ext_ctx; intros y Hy; apply genr_ext_ctx; intros x Hx.
    cbv beta; rewrite !get_genr by lia; cbv beta; rewrite ?get_genr by lia.
    f_equal; f_equal; lia.
  Qed.
End Partition.

Section Transpose.
  Context {X : Type} `{TensorLaws X}.

  (** A let moves out of a transposition (its value does not depend on
      the transposed indices), as in Fig. 9's [let buf := .. in (..)^T]. *)
  Lemma ll_transpose {Y} N M (e1 : Y) (f : Y -> Z -> Z -> X) :
    transpose N M (atl_let e1 f) = atl_let e1 (fun buf => transpose N M (f buf)).
  Proof. reflexivity. Qed.

  (** Exchanging two generations is a transposition. *)
  Lemma gen_swap_transpose a b c d (g : Z -> Z -> X) :
    genr a b (fun i => genr c d (fun j => g i j)) =
    transpose (d - c) (b - a) (genr c d (fun j => genr a b (fun i => g i j))).
  Proof.
    unfold transpose; apply functional_extensionality; intros i.
    apply functional_extensionality; intros j; unfold genr, get.
    part_cases; try reflexivity; try lia; f_equal; f_equal; lia.
  Qed.

  (** Column partitioning of a row-major block, in Fig. 9's form: the
      block is the transpose of the concatenation of its three column
      ranges, each transposed.  (The row body is [f y], not
      [fun x => f y x], so that [rw]'s syntactic pre-check accepts it.) *)
  Lemma gen_partition_cols a b lo c1 c2 hi (f : Z -> Z -> X) :
    lo <= c1 <= c2 -> c2 <= hi ->
    genr a b (fun y => genr lo hi (f y)) =
    transpose (hi - lo) (b - a)
      (concat (c1 - lo) (hi - c1)
         (transpose (b - a) (c1 - lo) (genr a b (fun y => genr lo c1 (f y))))
         (concat (c2 - c1) (hi - c2)
            (transpose (b - a) (c2 - c1) (genr a b (fun y => genr c1 c2 (f y))))
            (transpose (b - a) (hi - c2) (genr a b (fun y => genr c2 hi (f y)))))).
  Proof.
    intros H1 H2.
    change (genr a b (fun y => genr lo hi (fun x => f y x)) =
            transpose (hi - lo) (b - a)
              (concat (c1 - lo) (hi - c1)
                 (transpose (b - a) (c1 - lo) (genr a b (fun y => genr lo c1 (fun x => f y x))))
                 (concat (c2 - c1) (hi - c2)
                    (transpose (b - a) (c2 - c1) (genr a b (fun y => genr c1 c2 (fun x => f y x))))
                    (transpose (b - a) (hi - c2) (genr a b (fun y => genr c2 hi (fun x => f y x))))))).
    rewrite (gen_swap_transpose a b lo hi f).
    rewrite (gen_partition lo hi c1), (gen_partition c1 hi c2) by lia.
    rewrite <- (gen_swap_transpose lo c1 a b (fun x y => f y x)),
            <- (gen_swap_transpose c1 c2 a b (fun x y => f y x)),
            <- (gen_swap_transpose c2 hi a b (fun x y => f y x)).
    reflexivity.
  Qed.

  (** Column peeling in Fig. 9's form. *)
  Lemma gen_peel_cols a b N M M1 M2 (f : Z -> Z -> X) :
    N = b - a -> M1 = M - 1 -> M2 = M - 2 -> 2 <= M ->
    genr a b (fun y => genr 0 M (f y)) =
    transpose M N
      (concat 1 M1
         (transpose N 1 (genr a b (fun y => genr 0 1 (f y))))
         (concat M2 1
            (transpose N M2 (genr a b (fun y => genr 1 M1 (f y))))
            (transpose N 1 (genr a b (fun y => genr M1 M (f y)))))).
  Proof.
    intros -> -> -> HM; rewrite (gen_partition_cols a b 0 1 (M - 1) M f) by lia.
    repeat (f_equal; try lia).
  Qed.

  (** Two-dimensional tiling in Fig. 9's form: the [N x M] block
      [a <= y < b], [c <= x < d] as [ceil(N/kn)] row strips, each the
      transpose of [ceil(M/km)] tiles of [km x kn] stacked along the
      columns, each tile the transpose of a [kn x km] row-major tile;
      flattening and truncation reassemble the block.  Points of the last
      (partial) tiles that fall outside the block are guarded off.  The
      image row of tile row [yi] is written [a + yo * kn + yi], so that
      the stage lemma [stage_rows3] finds the tile's origin [a + yo * kn]
      by first-order unification. *)
  Lemma gen_tile2 a b c d N M kn km (f : Z -> Z -> X) :
    N = b - a -> M = d - c -> 0 < kn -> 0 < km ->
    genr a b (fun y => genr c d (f y)) =
    trunc_r N (flatten (cdiv N kn) kn (genr 0 (cdiv N kn) (fun yo =>
      transpose M kn (trunc_r M (flatten (cdiv M km) km (genr 0 (cdiv M km) (fun xo =>
        transpose kn km (genr 0 kn (fun yi => genr 0 km (fun xi =>
          iverson ((yo * kn + yi <? N) && (xo * km + xi <? M))
            (f (a + yo * kn + yi) (c + xo * km + xi)))))))))))).
  Proof.
    intros -> -> Hkn Hkm.
    rewrite (genr_shift a b), (gen_tile kn (b - a)) by lia.
    f_equal; f_equal; apply genr_ext_ctx; intros yo Hyo; cbv beta.
    transitivity (genr 0 kn (fun yi => genr c d (fun x =>
                    iverson (yo * kn + yi <? b - a) (f (a + (yo * kn + yi)) x)))).
    { apply genr_ext_ctx; intros; symmetry; apply genr_iverson. }
    rewrite (gen_swap_transpose 0 kn c d); replace (kn - 0) with kn by lia; f_equal.
    rewrite (genr_shift c d), (gen_tile km (d - c)) by lia.
    f_equal; f_equal; apply genr_ext_ctx; intros xo Hxo; cbv beta.
    transitivity (genr 0 km (fun xi => genr 0 kn (fun yi =>
                    iverson ((yo * kn + yi <? b - a) && (xo * km + xi <? d - c))
                      (f (a + yo * kn + yi) (c + xo * km + xi))))).
    { apply genr_ext_ctx; intros xi Hxi; rewrite <- genr_iverson.
      apply genr_ext_ctx; intros yi Hyi.
      destruct (yo * kn + yi <? b - a), (xo * km + xi <? d - c); cbn [andb iverson];
        try reflexivity.
      f_equal; lia. }
    rewrite (gen_swap_transpose 0 km 0 kn); f_equal; lia.
  Qed.
End Transpose.


(** Index arguments are [Z] whatever scopes the derivation script opens
    ([atl_scope] rebinds [+] to scalar addition, so [n + 2] given as a
    lemma argument would otherwise be read as a scalar sum). *)
Arguments gen_partition {X _ _} (lo hi mid)%Z f%atl_scope.
Arguments stage_rows3_root {X _} (A B)%Z (g F)%atl_scope.
Arguments stage_rows3 {X _} (A B r0 c0)%Z (g F)%atl_scope.
Arguments gen_swap_transpose {X _} (a b c d)%Z g%atl_scope.
Arguments gen_peel {X _ _} (N N1 N2)%Z f%atl_scope.
Arguments gen_peel_inner {X _ _} (a b M M1 M2)%Z f%atl_scope.
Arguments gen_peel_cols {X _ _} (a b N M M1 M2)%Z f%atl_scope.
Arguments gen_tile2 {X _ _} (a b c d N M kn km)%Z f%atl_scope.
Arguments gen_partition_cols {X _ _} (a b lo c1 c2 hi)%Z f%atl_scope.
Arguments ll_transpose {X _ Y} (N M)%Z (e1 f)%atl_scope.


(** ** [simpl_index]: normal forms of access indices.

    Tiling and peeling leave indices such as [1 + yo * kn + yi - 1]
    (the paper notes its generated index expressions are long; Sec. 8.1's
    Fig. 9 prints them simplified).  At every access [v _[ i ]], bottom-up,
    [i] is replaced by its [ring_simplify] normal form, proved equal by
    [lia] (or, should it fail, [ring]) under the loop variables the
    traversal has introduced.  ([lia] first for build time: it proves
    these equations in about half the time of [ring]; the normal form is
    still [ring_simplify]'s.) *)
(** Indices that are their own normal form, recognised by syntax so that
    [ring_simplify] is not run on them (build time: they were about two
    thirds of the indices of Blur.v's tiled schedule, and [ring_simplify]
    most of [simpl_index]): a variable, [0] or a positive literal, and a
    variable plus or minus a positive literal.  ([ring_simplify] returns
    each of these unchanged, so the step fails there as before; a negative
    literal is not among them: [-1] becomes [- (1)].) *)
Ltac part_pos_lit p :=
  lazymatch p with
  | xH => idtac
  | xO ?q => part_pos_lit q
  | xI ?q => part_pos_lit q
  end.
Ltac part_idx_normal i :=
  lazymatch i with
  | Z0 => idtac
  | Zpos ?p => part_pos_lit p
  | Z.add ?x (Zpos ?p) => is_var x; part_pos_lit p
  | Z.sub ?x (Zpos ?p) => is_var x; part_pos_lit p
  | _ => is_var i
  end.

Ltac part_idx_root norm :=
  idtac;
  lazymatch goal with
  | |- get ?v ?i = _ =>
      tryif part_idx_normal i then fail else idtac;
      norm i ltac:(fun j =>
          tryif constr_eq i j then fail
          else (transitivity (get v j); [ apply f_equal; first [ lia | ring ] | reflexivity ]))
  end.

Ltac part_idx_may t := lazymatch t with get _ _ => idtac end.
(** Each distinct index normalized once in the pass ([atl_ring_memo]). *)
Tactic Notation "simpl_index" :=
  atl_ring_memo ltac:(fun norm =>
    atl_step ltac:(atl_everywhere_may part_idx_may ltac:(part_idx_root norm))).
