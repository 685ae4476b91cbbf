(** * SGEMM for AVX2 and AVX-512: BLIS/Exo-style blocking, packing, a
    register-blocked micro-kernel in instruction form, masked edges, and a
    parallel loop over row blocks.

    The algorithm is [C + A B] (BLAS SGEMM with alpha = beta = 1):
    [sgemm[i][j] = C[i][j] + SUM k A[i][k] * B[k][j]], [A : M x K],
    [B : K x N], [C : M x N], row-major, over any scalar class (over [R]
    it is single-precision SGEMM up to rounding).  [M], [N], [K] are
    arbitrary.

    The schedule is the Exo thesis's x86 SGEMM (Sec. 7.2: "a
    register-blocked micro-kernel accumulates the inner dimension into a
    6x64 panel of C ... the variable tail on the right edge is handled by
    masked loads ... one level above this handles staging memory and
    blocking"), which is BLIS's (Van Zee and van de Geijn) at AVX2 width
    6x16, with one change so that it can run on several cores without
    barriers (below).  Derived program, outside in
    ([sgemm_avx2_expected]):
    - [tlet Bp]: all of [B] packed once, as [Bp[ko][jm][kk][jv][l]]: for
      each depth block [ko] (of [kc]) and 16-column strip [jm], a
      contiguous [kc x 16] micro-panel (two 8-lane vectors per row),
      zero-padded past [K] and [N] by the guards it carries.
    - [GEN io]: row blocks of [mc = 6 mcr] rows.  A generation, so the
      OpenMP target runs it in parallel: each [io] writes its own rows of
      the result.  (Matmul.v's [SUM ko] outermost accumulates into all of
      [C] and cannot be parallelised.)  Because [B] is packed once, up
      front, nothing is packed twice, whatever [mc].
    - Per row block: [C]'s rows copied [<+>] the sum over depth blocks
      [SUM ko]; per [(io, ko)], [tlet Ap]: the [mc x kc] block of [A]
      packed as [Ap[im][kk][ir]], 6-row micro-panels, zero-padded.
    - [GEN jm] (16-column strips) outside [GEN im] (6-row micro-panels):
      BLIS's order, the [kc x 16] B micro-panel stays in L1 across the
      [mcr] micro-kernel calls while the A block streams from L2.  The
      two [transpose]s and [flatten]s only say where each tile goes in
      the row-major result (index functions, no data movement).
    - [|[ io mc + 6 im <? M ]|]: micro-tiles wholly below the last row are
      skipped (the last row block may hold fewer than [mcr] of them).
    - The micro-kernel: [tlet t := in_mem AVX2_REG (SUM kk GEN ir < 6
      GEN jv < 2 avx2_mul (avx2_broadcast Ap[im][kk][ir]) (avx2_loadu
      Bp[ko][jm][kk][jv] 0))]: 12 accumulators ([6 x 2] vectors of 8)
      held in registers, the depth sum outside the register tile, no
      guard (the packs are zero-padded), 6 broadcasts + 2 loads + 12
      multiply-adds per [kk].
    - The store: [GEN ir |[ row <? M ]| flatten 2 8 (GEN jv avx2_maskstore
      (N - (16 jm + 8 jv)) t[ir][jv])]: rows past [M] are skipped, and
      each 8-lane vector is stored with a lane count, so the partial last
      strip writes only columns [< N] (a full store when the count is at
      least 8).  Under [SUM ko] the store adds into the result ([+=]).

    [sgemm_avx512] is the same derivation at width 16: a 6 x 64 register
    block of 24 accumulators, the Exo thesis's own AVX-512 kernel shape.
    The two share every structural step (the Ltac phases below); only the
    register-tile width and the instruction names differ.  To keep the
    build cheap, the phases shared by a width's two derivations and the
    steps inside the micro-panel loop are each derived once, as a lemma on
    the program they act on, and a derivation uses such a lemma as one
    step ([rw sgemm_avx2_tile_ok], [rw sgemm_avx2_micro_ok at ...]).

    Tile sizes: [mr = 6], [nr = 16] (resp. 64) and the vector width are
    concrete, because the kernel's register tile must be unrolled into
    named vector registers; [mcr] (micro-panels per row block, [mc = 6
    mcr]) and [kc] are section parameters.  Fix [mcr] at lowering
    ([--fix mcr=24], BLIS's Zen 2 [mc = 144]); leave [kc] a run-time
    argument and pass [kc = cdiv K (cdiv K 256)]: blocks of at most 256
    of nearly equal size, so the zero-padded last block wastes at most
    [cdiv K 256 - 1] steps per tile (with [kc] fixed to 256, [K = 300]
    runs 512 steps; measured: 78 instead of 48 GFLOP/s at n = 300).
    There is no [nc] (column block) level: in BLIS it bounds the [kc x nc]
    B panel kept in L3 across row blocks; here the whole of [B] is packed
    once and each row block streams its [kc x N] panel, which fits L3 for
    [N] up to several thousand (an [nc] level would re-pack [A] per
    column block for no gain at these sizes).

    What the lowering must do (codegen/vector.py): [in_mem AVX2_REG] makes
    [t] 12 [__m256] variables (loops over [ir], [jv] unrolled); the
    [avx2_mul] accumulated under [SUM kk] becomes [_mm256_fmadd_ps];
    [avx2_broadcast] [_mm256_broadcast_ss]/[set1]; [avx2_loadu] a
    [_mm256_loadu_ps]; [avx2_maskstore n v] accumulated into the result
    a (masked) load-add-store, unmasked when [n >= 8]; the [<+>] of [C]'s
    rows and [SUM ko] is "store the left operand, then accumulate the
    right one"; [GEN io] is the parallel loop.

    Measured (one core, square n, [--fix mcr=24], [kc = 256], gcc -O3
    -march=native, a shared machine, best of 7, OpenBLAS through numpy
    timed alternately): 72 / 78-82 / 80 GFLOP/s at n = 512 / 1024 / 2048,
    0.82-0.93x OpenBLAS's 88 / 89 / 91.

    The steps that build their result from the node's own binder names
    ([hoist], [swap_sum], [swap_gen], [guard_in], [guard_out],
    [split_tadd], [merge_tadd]) are in Rewrites/Steps.v; the tiling
    lemmas under the derived program's binder names in Reshape/Duals.v,
    Commute.v and Rewrites/Gen.v, the guard lemmas in Rewrites/Guard.v; the
    lane lemmas in Targets/AVX.v. *)

From Coq Require Import ZArith List Lia Bool.
Import ListNotations.
From Coq Require Import derive.Derive.
From Verisched Require Import ATLGeneric Rewrites.Safety.
From Verisched Require Import Reshape.Defs Reshape.Access Reshape.Commute Reshape.Duals Reshape.Store.
Open Scope Z_scope.

Open Scope atl_scope.

(** ** The shared schedule, in phases ([nr] columns per register tile,
    [nv] vectors of [w] lanes each, [nr = nv w]).  Phases 1-3 and 5 (and
    the AVX2 instruction steps) are defined here, outside the section, with
    the section's names as arguments, for the derivations of the shared
    register-tiled programs and of the micro-panel loops below (build time);
    phases 4 and 6, which act on the whole program, are in the section. *)

(** Phase 1: [C]'s copy split off; rows in blocks of [mc = 6 mcr]; the
    depth in blocks of [kc]; the depth blocks [SUM ko] just inside the
    row blocks [GEN io], with the row guard carried inside. *)
Ltac sgemm_blocks M N K mcr kc :=
  rw sadd_tadd;
  split_tadd at (genr 0 N _);
  split_tadd at (genr 0 M _);
  rw (gen_tile (mcr * 6)%Z M) at (genr 0 M (fun i => genr 0 N (fun j => sumr _ _ _)));
  rw (sum_tile_k K kc);
  guard_in at (iverson (_ <? M) _);
  guard_in at (iverson (_ <? M) _);
  swap_sum at (genr 0 N _);
  swap_sum at (genr 0 (mcr * 6) _).

(** Phase 2: in a row block, columns outside rows (a transpose), then
    columns in strips of [nr] and rows in micro-panels of 6 (exact,
    since [mc = 6 mcr]), strips outside micro-panels (a transpose). *)
Ltac sgemm_tiles N mcr nr :=
  swap_gen at (genr 0 (mcr * 6) _);
  rw (gen_tile_cols nr N) at (genr 0 N (fun _ => genr 0 _ _));
  guard_in at (iverson (_ <? N) _);
  swap_gen at (genr 0 nr _);
  rw (gen_tile_exact mcr 6) at (genr 0 (mcr * 6) _).

(** Phase 3: the register tile.  The row and column guards are copied
    onto the operands (so the packs below are zero-padded and the
    product needs none) and kept outside for the store; the [nr]
    columns become [nv] vectors of [w] lanes; the tile's value is bound
    as [t], lifted out of the tile loops, and its depth sum moved
    outermost (the sum outside the register tile). *)
Ltac sgemm_register_tile N kc nr nv w :=
  rw guard2_sum_prod;
  rw guard_comm at (iverson (_ <? N) (iverson _ _));
  guard_out at (genr 0 nr _);
  rw (gen_split_lanes nr nv w) at (genr 0 nr _);
  name_buffer (sumr 0 kc _) as t;
  hoist t past (genr 0 6 _);
  lift_sum 3 at (genr 0 6 _).

(** The AVX2 derivations' shared steps: phases 1-3 at width 16 (2 vectors
    of 8), and the register tile in instruction form (broadcast times
    load, accumulated in [AVX2_REG]) once its [B] lanes are loads. *)
Ltac sgemm_avx2_tile M N K mcr kc :=
  sgemm_blocks M N K mcr kc;
  sgemm_tiles N mcr 16;
  sgemm_register_tile N kc 16 2 8.

(** Build time (issue 16): the phases 1-3 are the same for the two
    derivations at a width ([sgemm_avx512] and [sgemm_avx512_strip] at 64
    columns, [sgemm_avx2] and [sgemm_avx2_strip] at 16), so each width's
    register-tiled program is derived once, here, and its derivations start
    from it ([rw sgemm_avx512_tile_ok], [rw sgemm_avx2_tile_ok] in the
    section): the tactics and the kernel check of the shared phases are paid
    once.  The program is taken from the derivation itself, binder names
    included.  Top-level definitions (the section's variables as arguments,
    the hypotheses the derivations use) so that closing the section does not
    re-check their proofs. *)
Definition sgemm_avx512_tile_sig {S : Type} `{ScalarLaws S} (M N K mcr kc : Z)
    (Hmcr : 0 < mcr) (Hkc : 0 < kc) (HK : 0 <= K) (A B C : Z -> Z -> S) :
  { p : Z -> Z -> S | (GEN [ i < M ] GEN [ j < N ] C _[ i ] _[ j ] + SUM [ k < K ] A _[ i ] _[ k ] * B _[ k ] _[ j ]) = p }.
Proof.
  eexists.
  sgemm_blocks M N K mcr kc.
  sgemm_tiles N mcr 64.
  sgemm_register_tile N kc 64 4 16.
  done.
Defined.

Definition sgemm_avx2_tile_sig {S : Type} `{ScalarLaws S} (M N K mcr kc : Z)
    (Hmcr : 0 < mcr) (Hkc : 0 < kc) (HK : 0 <= K) (A B C : Z -> Z -> S) :
  { p : Z -> Z -> S | (GEN [ i < M ] GEN [ j < N ] C _[ i ] _[ j ] + SUM [ k < K ] A _[ i ] _[ k ] * B _[ k ] _[ j ]) = p }.
Proof. eexists. sgemm_avx2_tile M N K mcr kc. done. Defined.

(** Phase 5: edges.  A micro-tile whose first row is past [M] is skipped
    whole (the guard moves out of the store and the tile's let); the
    column guard of a lane becomes a lane count, the form of a masked
    store. *)
Ltac sgemm_edges M N :=
  rw guard_tile_skip at (iverson (_ <? M) _);
  guard_out at (genr 0 6 _);
  guard_out at (atl_let _ _);
  rw guard_lanes at (iverson (_ <? N) _).

(** The AVX2 register tile in instruction form (broadcast times load,
    accumulated in [AVX2_REG]) once its [B] lanes are loads. *)
Ltac sgemm_avx2_kernel :=
  rw avx2_broadcast_lane;
  use_instr avx2_mul;
  set_memory t AVX2_REG.

(** Build time (issue 16), continued: phase 5 and the instruction steps act
    inside the micro-panel loop [GEN im] only, so they are run on that loop
    alone ([sgemm_micro_src], with the [B] lanes [bl] as the pack left
    them: [Bp[ko][jm][kk][jv]] packed once, [avx2_loadu Bp[kk][jv] 0] per
    strip), once per derivation ([sgemm_avx2_micro_sig], ...), and each
    derivation rewrites the loop with the result ([rw sgemm_avx2_micro_ok
    at ...]) instead of walking, and carrying in its proof, the whole
    program at each of those steps. *)
Definition sgemm_micro_src {S : Type} `{ScalarLaws S} (M N mcr kc : Z) (nr nv w : Z)
    (io jm : Z) (Ap : Z -> Z -> Z -> S) (bl : Z -> Z -> Z -> S) :=
  GEN [ im < mcr ]
    tlet t := SUM [ kk < kc ] GEN [ ir < 6 ] GEN [ jv < nv ] GEN [ l < w ]
                Ap _[ im ] _[ kk ] _[ ir ] * (bl kk jv) _[ l ] in
    GEN [ ir < 6 ]
      |[ io * (mcr * 6) + (im * 6 + ir) <? M ]|
        flatten nv w (GEN [ jv < nv ] GEN [ l < w ]
          |[ jm * nr + (jv * w + l) <? N ]| t _[ ir ] _[ jv ] _[ l ]).

Definition sgemm_avx512_micro_sig {S : Type} `{ScalarLaws S} (M N mcr kc : Z)
    (io ko jm : Z) (Ap : Z -> Z -> Z -> S) (Bp : Z -> Z -> Z -> Z -> Z -> S) :
  { p | ltac:(let t := eval cbv beta delta [sgemm_micro_src] in
                (sgemm_micro_src M N mcr kc 64 4 16 io jm Ap
                   (fun kk jv => Bp _[ ko ] _[ jm ] _[ kk ] _[ jv ])) in
              exact (t = p)) }.
Proof.
  eexists.
  sgemm_edges M N.
  use_instr avx512_maskstore.
  rw avx512_loadu_lane at (_ _[_] _[_] _[_] _[_] _[_]).
  rw avx512_broadcast_lane.
  use_instr avx512_mul.
  set_memory t AVX512_REG.
  done.
Defined.

Definition sgemm_avx512_strip_micro_sig {S : Type} `{ScalarLaws S} (M N mcr kc : Z)
    (io jm : Z) (Ap : Z -> Z -> Z -> S) (Bp : Z -> Z -> Z -> S) :
  { p | ltac:(let t := eval cbv beta delta [sgemm_micro_src] in
                (sgemm_micro_src M N mcr kc 64 4 16 io jm Ap
                   (fun kk jv => avx512_loadu (Bp _[ kk ] _[ jv ]) 0)) in
              exact (t = p)) }.
Proof.
  eexists.
  sgemm_edges M N.
  use_instr avx512_maskstore.
  rw avx512_broadcast_lane.
  use_instr avx512_mul.
  set_memory t AVX512_REG.
  done.
Defined.

Definition sgemm_avx2_micro_sig {S : Type} `{ScalarLaws S} (M N mcr kc : Z)
    (io ko jm : Z) (Ap : Z -> Z -> Z -> S) (Bp : Z -> Z -> Z -> Z -> Z -> S) :
  { p | ltac:(let t := eval cbv beta delta [sgemm_micro_src] in
                (sgemm_micro_src M N mcr kc 16 2 8 io jm Ap
                   (fun kk jv => Bp _[ ko ] _[ jm ] _[ kk ] _[ jv ])) in
              exact (t = p)) }.
Proof.
  eexists.
  sgemm_edges M N.
  use_instr avx2_maskstore.
  rw avx2_loadu_lane at (_ _[_] _[_] _[_] _[_] _[_]).
  sgemm_avx2_kernel.
  done.
Defined.

Definition sgemm_avx2_strip_micro_sig {S : Type} `{ScalarLaws S} (M N mcr kc : Z)
    (io jm : Z) (Ap : Z -> Z -> Z -> S) (Bp : Z -> Z -> Z -> S) :
  { p | ltac:(let t := eval cbv beta delta [sgemm_micro_src] in
                (sgemm_micro_src M N mcr kc 16 2 8 io jm Ap
                   (fun kk jv => avx2_loadu (Bp _[ kk ] _[ jv ]) 0)) in
              exact (t = p)) }.
Proof.
  eexists.
  sgemm_edges M N.
  use_instr avx2_maskstore.
  sgemm_avx2_kernel.
  done.
Defined.

Section Sgemm.
  Context {S : Type} `{ScalarLaws S}.
  Variables (M N K : Z).
  (** [mcr]: 6-row micro-panels per row block ([mc = 6 mcr] rows);
      [kc]: depth of a block of [k]. *)
  Variables (mcr kc : Z).
  Hypotheses (Hmcr : 0 < mcr) (Hkc : 0 < kc) (HK : 0 <= K).
  Variables (A B C : Z -> Z -> S).
  Hypotheses (HA : shaped [M; K] A) (HB : shaped [K; N] B) (HC : shaped [M; N] C).

  Definition sgemm :=
    GEN [ i < M ] GEN [ j < N ] C _[ i ] _[ j ] + SUM [ k < K ] A _[ i ] _[ k ] * B _[ k ] _[ j ].

  (** The register-tiled programs of the two widths (phases 1-3, derived
      once above) as lemmas on [sgemm]'s body, the derivations' first
      step after [reschedule]. *)
  Lemma sgemm_avx512_tile_ok :
    ltac:(let q := eval cbv delta [sgemm] beta in sgemm in
          let s := eval red in (sgemm_avx512_tile_sig M N K mcr kc Hmcr Hkc HK A B C) in
          lazymatch s with exist _ ?p _ => exact (q = p) end).
  Proof. exact (proj2_sig (sgemm_avx512_tile_sig M N K mcr kc Hmcr Hkc HK A B C)). Qed.

  Lemma sgemm_avx2_tile_ok :
    ltac:(let q := eval cbv delta [sgemm] beta in sgemm in
          let s := eval red in (sgemm_avx2_tile_sig M N K mcr kc Hmcr Hkc HK A B C) in
          lazymatch s with exist _ ?p _ => exact (q = p) end).
  Proof. exact (proj2_sig (sgemm_avx2_tile_sig M N K mcr kc Hmcr Hkc HK A B C)). Qed.

  (** The micro-panel loops in instruction form (derived once each above). *)
  Lemma sgemm_avx512_micro_ok (io ko jm : Z) (Ap : Z -> Z -> Z -> S)
      (Bp : Z -> Z -> Z -> Z -> Z -> S) :
    ltac:(let r := eval red in (sgemm_avx512_micro_sig M N mcr kc io ko jm Ap Bp) in
          lazymatch r with exist (fun p => ?l = p) ?q _ => exact (l = q) end).
  Proof. exact (proj2_sig (sgemm_avx512_micro_sig M N mcr kc io ko jm Ap Bp)). Qed.

  Lemma sgemm_avx512_strip_micro_ok (io jm : Z) (Ap : Z -> Z -> Z -> S) (Bp : Z -> Z -> Z -> S) :
    ltac:(let r := eval red in (sgemm_avx512_strip_micro_sig M N mcr kc io jm Ap Bp) in
          lazymatch r with exist (fun p => ?l = p) ?q _ => exact (l = q) end).
  Proof. exact (proj2_sig (sgemm_avx512_strip_micro_sig M N mcr kc io jm Ap Bp)). Qed.

  Lemma sgemm_avx2_micro_ok (io ko jm : Z) (Ap : Z -> Z -> Z -> S)
      (Bp : Z -> Z -> Z -> Z -> Z -> S) :
    ltac:(let r := eval red in (sgemm_avx2_micro_sig M N mcr kc io ko jm Ap Bp) in
          lazymatch r with exist (fun p => ?l = p) ?q _ => exact (l = q) end).
  Proof. exact (proj2_sig (sgemm_avx2_micro_sig M N mcr kc io ko jm Ap Bp)). Qed.

  Lemma sgemm_avx2_strip_micro_ok (io jm : Z) (Ap : Z -> Z -> Z -> S) (Bp : Z -> Z -> Z -> S) :
    ltac:(let r := eval red in (sgemm_avx2_strip_micro_sig M N mcr kc io jm Ap Bp) in
          lazymatch r with exist (fun p => ?l = p) ?q _ => exact (l = q) end).
  Proof. exact (proj2_sig (sgemm_avx2_strip_micro_sig M N mcr kc io jm Ap Bp)). Qed.

  (** Phase 4: packing.  The guarded read of [B] is bound as [Bp] and
      hoisted out of every loop (each loop it depends on becomes a
      dimension: [Bp[ko][jm][kk][jv][l]]), out of the row blocks too; the
      guarded read of [A] as [Ap], hoisted up to the depth block. *)
  Ltac sgemm_pack :=
    name_buffer (|[ _ ]| B _[ _ ] _[ _ ]) as Bp;
    hoist Bp past (tadd _ _);
    name_buffer (|[ _ ]| A _[ _ ] _[ _ ]) as Ap;
    hoist Ap past (transpose N (mcr * 6) _).

  (** Phase 6 (after the instruction steps): [C]'s copy tiled like the
      result and merged into each row block, so that a row block's thread
      copies its rows of [C] and then accumulates into them. *)
  Ltac sgemm_merge_c :=
    rw (gen_tile (mcr * 6)%Z M) at (genr 0 M _);
    rw <- trunc_r_tadd;
    rw <- flatten_tadd;
    merge_tadd at (tadd _ _).

  (** Phase 4, strip variant: [B]'s guarded read is bound as [Bp] only
      outside the micro-panels of one strip ([GEN im]), so each [(io, ko,
      jm)] packs its [kc x 16] micro-panel right before the [mcr]
      micro-kernel calls that read it from L1; its lanes are brought into
      load form at once, while [Bp] is the only three-index access (the
      packed [A] is another). *)
  Ltac sgemm_pack_strip_with load_lanes :=
    name_buffer (|[ _ ]| B _[ _ ] _[ _ ]) as Bp;
    hoist Bp past (genr 0 mcr _);
    load_lanes ();
    name_buffer (|[ _ ]| A _[ _ ] _[ _ ]) as Ap;
    hoist Ap past (transpose N (mcr * 6) _).

  Ltac sgemm_pack_strip_avx2 :=
    sgemm_pack_strip_with ltac:(fun _ => rw avx2_loadu_lane at (_ _[_] _[_] _[_])).

  (** ** AVX-512: a 6 x 64 register tile of 4 x 16-lane vectors (24
      accumulators), the Exo thesis's kernel shape.  On a CPU without
      AVX-512 the lowering compiles it but the kernel refuses to run.  (The
      AVX-512 derivations come first so that the file's last derivation,
      which [verisched run] takes when none is named, runs on any AVX2 CPU.) *)
  Derive sgemm_avx512 SuchThat (sgemm = sgemm_avx512) As sgemm_avx512_correct.
  Proof.
    reschedule.
    rw sgemm_avx512_tile_ok.
    sgemm_pack.
    rw sgemm_avx512_micro_ok at (genr 0 mcr (fun im => atl_let _ _)).
    sgemm_merge_c.
    check_safe.
    done.
  Qed.

  Definition sgemm_avx512_expected :=
    tlet Bp :=
      GEN [ ko < cdiv K kc ] GEN [ jm < cdiv N 64 ] GEN [ kk < kc ] GEN [ jv < 4 ] GEN [ l < 16 ]
        |[ (jm * 64 + (jv * 16 + l) <? N) && (ko * kc + kk <? K) ]|
          B _[ ko * kc + kk ] _[ jm * 64 + (jv * 16 + l) ] in
    trunc_r M (flatten (cdiv M (mcr * 6)) (mcr * 6) (GEN [ io < cdiv M (mcr * 6) ]
      (GEN [ ii < mcr * 6 ] |[ io * (mcr * 6) + ii <? M ]|
         (GEN [ j < N ] C _[ io * (mcr * 6) + ii ] _[ j ])) <+>
      (SUM [ ko < cdiv K kc ]
        tlet Ap :=
          GEN [ im < mcr ] GEN [ kk < kc ] GEN [ ir < 6 ]
            |[ (io * (mcr * 6) + (im * 6 + ir) <? M) && (ko * kc + kk <? K) ]|
              A _[ io * (mcr * 6) + (im * 6 + ir) ] _[ ko * kc + kk ] in
        transpose N (mcr * 6) (trunc_r N (flatten (cdiv N 64) 64 (GEN [ jm < cdiv N 64 ]
          transpose (mcr * 6) 64 (flatten mcr 6 (GEN [ im < mcr ]
            |[ io * (mcr * 6) + im * 6 <? M ]|
            (tlet t := in_mem AVX512_REG
              (SUM [ kk < kc ] GEN [ ir < 6 ] GEN [ jv < 4 ]
                 avx512_mul (avx512_broadcast (Ap _[ im ] _[ kk ] _[ ir ]))
                          (avx512_loadu (Bp _[ ko ] _[ jm ] _[ kk ] _[ jv ]) 0)) in
            GEN [ ir < 6 ] |[ io * (mcr * 6) + (im * 6 + ir) <? M ]|
              flatten 4 16 (GEN [ jv < 4 ]
                avx512_maskstore (N - (jm * 64 + jv * 16))%Z (t _[ ir ] _[ jv ]))))))))))).

  Lemma sgemm_avx512_is_expected : sgemm_avx512 = sgemm_avx512_expected.
  Proof. same_program. Qed.

  Lemma sgemm_avx512_spec : sgemm = sgemm_avx512_expected.
  Proof. rewrite sgemm_avx512_correct; apply sgemm_avx512_is_expected. Qed.

  (** ** [A] read in place: [sgemm_avx512] without [A]'s pack.  Each packed
      element of [A] is read once per 64-column strip, so where [N] is a
      few strips (tall, narrow problems such as M = 4096, N = 64) the pack
      is a whole pass over [A] from memory that overlaps no arithmetic,
      while the micro-kernel reading [A]'s six rows directly streams them
      as it computes (measured on the Xeon, one thread, the two lowered
      kernels alternated: 1.42x at 4096 x 64 x 512, 1.21x at 2048 x 128 x
      512, 0.98x at 1024^3; decision #124).  Derived from
      [sgemm_avx512]'s program: the let [Ap] inlined and the three reads of
      its generations taken ([get_gen], each index in its loop's range), so
      the broadcast reads [A] under the pack's guard. *)
  Lemma sgemm_avx512_body_ok :
    ltac:(let q := eval cbv delta [sgemm] beta in sgemm in
          let p := eval cbv delta [sgemm_avx512_expected] beta in sgemm_avx512_expected in
          exact (q = p)).
  Proof. exact sgemm_avx512_spec. Qed.

  Ltac sgemm_read_a_in_place :=
    inline Ap;
    rw get_gen at (get (genr 0 mcr _) _);
    rw get_gen at (get (genr 0 kc _) _);
    rw get_gen at (get (genr 0 6 _) _).

  Derive sgemm_avx512_direct SuchThat (sgemm = sgemm_avx512_direct)
    As sgemm_avx512_direct_correct.
  Proof.
    reschedule.
    rw sgemm_avx512_body_ok.
    sgemm_read_a_in_place.
    check_safe.
    done.
  Qed.

  (** ** AVX-512, [B] packed per strip: [sgemm_avx2_strip]'s schedule with
      [sgemm_avx512]'s 6 x 64 register tile, for the same few-row-block
      problems (at M = 64, N = 4096 on 2 threads the pack-once kernel ran at
      0.71x OpenBLAS, decisions #81). *)
  Derive sgemm_avx512_strip SuchThat (sgemm = sgemm_avx512_strip)
    As sgemm_avx512_strip_correct.
  Proof.
    reschedule.
    rw sgemm_avx512_tile_ok.
    sgemm_pack_strip_with ltac:(fun _ => rw avx512_loadu_lane at (_ _[_] _[_] _[_])).
    rw sgemm_avx512_strip_micro_ok at (genr 0 mcr (fun im => atl_let _ _)).
    sgemm_merge_c.
    check_safe.
    done.
  Qed.

  Definition sgemm_avx512_strip_expected :=
    trunc_r M (flatten (cdiv M (mcr * 6)) (mcr * 6) (GEN [ io < cdiv M (mcr * 6) ]
      (GEN [ ii < mcr * 6 ] |[ io * (mcr * 6) + ii <? M ]|
         (GEN [ j < N ] C _[ io * (mcr * 6) + ii ] _[ j ])) <+>
      (SUM [ ko < cdiv K kc ]
        tlet Ap :=
          GEN [ im < mcr ] GEN [ kk < kc ] GEN [ ir < 6 ]
            |[ (io * (mcr * 6) + (im * 6 + ir) <? M) && (ko * kc + kk <? K) ]|
              A _[ io * (mcr * 6) + (im * 6 + ir) ] _[ ko * kc + kk ] in
        transpose N (mcr * 6) (trunc_r N (flatten (cdiv N 64) 64 (GEN [ jm < cdiv N 64 ]
          transpose (mcr * 6) 64 (flatten mcr 6
            (tlet Bp :=
              GEN [ kk < kc ] GEN [ jv < 4 ] GEN [ l < 16 ]
                |[ (jm * 64 + (jv * 16 + l) <? N) && (ko * kc + kk <? K) ]|
                  B _[ ko * kc + kk ] _[ jm * 64 + (jv * 16 + l) ] in
            GEN [ im < mcr ]
            |[ io * (mcr * 6) + im * 6 <? M ]|
            (tlet t := in_mem AVX512_REG
              (SUM [ kk < kc ] GEN [ ir < 6 ] GEN [ jv < 4 ]
                 avx512_mul (avx512_broadcast (Ap _[ im ] _[ kk ] _[ ir ]))
                          (avx512_loadu (Bp _[ kk ] _[ jv ]) 0)) in
            GEN [ ir < 6 ] |[ io * (mcr * 6) + (im * 6 + ir) <? M ]|
              flatten 4 16 (GEN [ jv < 4 ]
                avx512_maskstore (N - (jm * 64 + jv * 16))%Z (t _[ ir ] _[ jv ]))))))))))).

  Lemma sgemm_avx512_strip_is_expected : sgemm_avx512_strip = sgemm_avx512_strip_expected.
  Proof. same_program. Qed.

  (** ** AVX2: a 6 x 16 register tile of 2 x 8-lane vectors *)
  Derive sgemm_avx2 SuchThat (sgemm = sgemm_avx2) As sgemm_avx2_correct.
  Proof.
    reschedule.
    rw sgemm_avx2_tile_ok.
    sgemm_pack.
    rw sgemm_avx2_micro_ok at (genr 0 mcr (fun im => atl_let _ _)).
    sgemm_merge_c.
    check_safe.
    done.
  Qed.

  Definition sgemm_avx2_expected :=
    tlet Bp :=
      GEN [ ko < cdiv K kc ] GEN [ jm < cdiv N 16 ] GEN [ kk < kc ] GEN [ jv < 2 ] GEN [ l < 8 ]
        |[ (jm * 16 + (jv * 8 + l) <? N) && (ko * kc + kk <? K) ]|
          B _[ ko * kc + kk ] _[ jm * 16 + (jv * 8 + l) ] in
    trunc_r M (flatten (cdiv M (mcr * 6)) (mcr * 6) (GEN [ io < cdiv M (mcr * 6) ]
      (GEN [ ii < mcr * 6 ] |[ io * (mcr * 6) + ii <? M ]|
         (GEN [ j < N ] C _[ io * (mcr * 6) + ii ] _[ j ])) <+>
      (SUM [ ko < cdiv K kc ]
        tlet Ap :=
          GEN [ im < mcr ] GEN [ kk < kc ] GEN [ ir < 6 ]
            |[ (io * (mcr * 6) + (im * 6 + ir) <? M) && (ko * kc + kk <? K) ]|
              A _[ io * (mcr * 6) + (im * 6 + ir) ] _[ ko * kc + kk ] in
        transpose N (mcr * 6) (trunc_r N (flatten (cdiv N 16) 16 (GEN [ jm < cdiv N 16 ]
          transpose (mcr * 6) 16 (flatten mcr 6 (GEN [ im < mcr ]
            |[ io * (mcr * 6) + im * 6 <? M ]|
            (tlet t := in_mem AVX2_REG
              (SUM [ kk < kc ] GEN [ ir < 6 ] GEN [ jv < 2 ]
                 avx2_mul (avx2_broadcast (Ap _[ im ] _[ kk ] _[ ir ]))
                          (avx2_loadu (Bp _[ ko ] _[ jm ] _[ kk ] _[ jv ]) 0)) in
            GEN [ ir < 6 ] |[ io * (mcr * 6) + (im * 6 + ir) <? M ]|
              flatten 2 8 (GEN [ jv < 2 ]
                avx2_maskstore (N - (jm * 16 + jv * 8))%Z (t _[ ir ] _[ jv ]))))))))))).

  Lemma sgemm_avx2_is_expected : sgemm_avx2 = sgemm_avx2_expected.
  Proof. same_program. Qed.

  Lemma sgemm_avx2_spec : sgemm = sgemm_avx2_expected.
  Proof. rewrite sgemm_avx2_correct; apply sgemm_avx2_is_expected. Qed.

  (** ** AVX2, [A] read in place: [sgemm_avx512_direct]'s step on
      [sgemm_avx2]'s program. *)
  Lemma sgemm_avx2_body_ok :
    ltac:(let q := eval cbv delta [sgemm] beta in sgemm in
          let p := eval cbv delta [sgemm_avx2_expected] beta in sgemm_avx2_expected in
          exact (q = p)).
  Proof. exact sgemm_avx2_spec. Qed.

  Derive sgemm_avx2_direct SuchThat (sgemm = sgemm_avx2_direct) As sgemm_avx2_direct_correct.
  Proof.
    reschedule.
    rw sgemm_avx2_body_ok.
    sgemm_read_a_in_place.
    check_safe.
    done.
  Qed.

  (** ** AVX2, [B] packed per strip: for few row blocks (wide, short
      problems such as M = 64, N = 4096), where packing all of [B] up front
      writes and re-reads a copy that each row block reads once.  OpenBLAS
      does the same for its first row block (it packs a strip of [B] and
      runs the kernel on it at once).  Each row block repacks [B], so for
      many row blocks [sgemm_avx2] is the one to call. *)
  Derive sgemm_avx2_strip SuchThat (sgemm = sgemm_avx2_strip) As sgemm_avx2_strip_correct.
  Proof.
    reschedule.
    rw sgemm_avx2_tile_ok.
    sgemm_pack_strip_avx2.
    rw sgemm_avx2_strip_micro_ok at (genr 0 mcr (fun im => atl_let _ _)).
    sgemm_merge_c.
    check_safe.
    done.
  Qed.

  Definition sgemm_avx2_strip_expected :=
    trunc_r M (flatten (cdiv M (mcr * 6)) (mcr * 6) (GEN [ io < cdiv M (mcr * 6) ]
      (GEN [ ii < mcr * 6 ] |[ io * (mcr * 6) + ii <? M ]|
         (GEN [ j < N ] C _[ io * (mcr * 6) + ii ] _[ j ])) <+>
      (SUM [ ko < cdiv K kc ]
        tlet Ap :=
          GEN [ im < mcr ] GEN [ kk < kc ] GEN [ ir < 6 ]
            |[ (io * (mcr * 6) + (im * 6 + ir) <? M) && (ko * kc + kk <? K) ]|
              A _[ io * (mcr * 6) + (im * 6 + ir) ] _[ ko * kc + kk ] in
        transpose N (mcr * 6) (trunc_r N (flatten (cdiv N 16) 16 (GEN [ jm < cdiv N 16 ]
          transpose (mcr * 6) 16 (flatten mcr 6
            (tlet Bp :=
              GEN [ kk < kc ] GEN [ jv < 2 ] GEN [ l < 8 ]
                |[ (jm * 16 + (jv * 8 + l) <? N) && (ko * kc + kk <? K) ]|
                  B _[ ko * kc + kk ] _[ jm * 16 + (jv * 8 + l) ] in
            GEN [ im < mcr ]
            |[ io * (mcr * 6) + im * 6 <? M ]|
            (tlet t := in_mem AVX2_REG
              (SUM [ kk < kc ] GEN [ ir < 6 ] GEN [ jv < 2 ]
                 avx2_mul (avx2_broadcast (Ap _[ im ] _[ kk ] _[ ir ]))
                          (avx2_loadu (Bp _[ kk ] _[ jv ]) 0)) in
            GEN [ ir < 6 ] |[ io * (mcr * 6) + (im * 6 + ir) <? M ]|
              flatten 2 8 (GEN [ jv < 2 ]
                avx2_maskstore (N - (jm * 16 + jv * 8))%Z (t _[ ir ] _[ jv ]))))))))))).

  Lemma sgemm_avx2_strip_is_expected : sgemm_avx2_strip = sgemm_avx2_strip_expected.
  Proof. same_program. Qed.

End Sgemm.
