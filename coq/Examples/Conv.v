(** * A 3x3 convolution layer for AVX2: the SGEMM micro-kernel over an
    im2col panel of each output row.

    The layer of the Exo thesis's x86 CONV benchmark (Sec. 7.2, Fig. 7-3,
    the shape of Halide's hand-scheduled convolution: batch 5, 128 input
    and 128 output channels, 3x3 kernel, 80 x 100 output, stride 1, no
    padding), with every size a section variable:
    [out[n][y][x][k] = SUM r < 3 SUM s < 3 SUM c < CI
                         I[n][y + r][x + s][c] * w[r][s][c][k]].

    Layout: NHWC ([I : NB x (H+2) x (W+2) x CI], [out : NB x H x W x
    KO]) and HWIO weights ([w : 3 x 3 x CI x KO]), so that output channels
    are contiguous: they are the vector dimension, 16 at a time (two
    8-lane vectors), and 6 neighbouring output pixels of a row are the
    register rows, as in the SGEMM micro-kernel (Sgemm.v) with
    [M = W], [N = KO], [K = 9 CI].

    Why this and not im2col + the whole SGEMM schedule (Im2col.v): the
    full im2col buffer has [NB H W 9 CI] elements (184 MB at the
    benchmark's size, as much memory traffic as the arithmetic can hide);
    here the im2col panel [Ap] is built per output row [(n, y)], zero
    padded to a multiple of 6 pixels ([Ap[xo][ir][r][s][c]], [cdiv W 6 x
    6 x 9 CI], 470 KB), used at once while it is in L2, and thrown away.
    It is packed before the reductions are moved outside the pixel loop
    [ir], so that its innermost dimension is the input channel: each run
    of [CI] is a contiguous copy of the input (packing [c]-outer, [ir]
    innermost, read the input at a stride of [CI] and cost 11% of the
    layer; now about 6%).  The reductions stay
    nested ([SUM r SUM s SUM c], the inner one [CI] long): flattened into
    one ([sum_flatten3], as Im2col.v does) the kernel would be literally
    the SGEMM one, but the bounds of the packed reads ([y + j / (3 CI) <
    H + 2]) are then nonlinear and [check_safe] cannot prove them
    quickly; nested, every index is linear.  The weights are packed once
    ([Wp[jm][r][s][c][jv][l]], contiguous [9 CI x 16] panels); the strips
    of 16 channels [jm] are outside the pixel tiles [xo], so a weight
    panel (72 KB) stays in L2 while the row's tiles use it.

    Derived program ([conv_avx2_expected]), outside in: [tlet Wp]; [GEN n
    GEN y] (the parallel loops: each writes one output row); [tlet Ap];
    [GEN jm]; [GEN xo]; the register tile [tlet t := in_mem AVX2_REG (SUM
    r SUM s SUM c GEN ir < 6 GEN jv < 2 avx2_mul (avx2_broadcast
    Ap[xo][ir][r][s][c]) (avx2_loadu Wp[jm][r][s][c][jv] 0))]; the store [GEN ir |[ 6 xo + ir <? W
    ]| flatten 2 8 (GEN jv avx2_maskstore (KO - (16 jm + 8 jv))
    t[ir][jv])]: pixels past the row's end are not stored and channel
    vectors past [KO] are masked (neither happens in the interior).

    Measured (one core, the benchmark layer, [--fix] all sizes, gcc -O3
    -march=native, a shared machine): 133 ms, 89 GFLOP/s.

    Depth blocking ([conv_avx512_kc], at the end): the taps as depth
    blocks, each tile reducing over [CI] products with a 16 KiB weight
    panel in L1, accumulated into the output row, the input read in place
    (no im2col panel); [conv_avx2] and [conv_avx512] reduce over [9 CI =
    1152] products per tile with the weight panels in L2.
    [conv_avx512_kc64]: the same with a 6 x 64 tile, for cores with two
    512-bit FMA pipes and a 48 KiB L1 (docs/decisions.md #108).

    Not done: the ReLU of Exo's benchmark (it would be one more
    instruction on the stored vector, [avx2_max] with zero). *)

From Coq Require Import ZArith List Lia Bool.
Import ListNotations.
From Coq Require Import derive.Derive.
From Verisched Require Import ATLGeneric Rewrites.Safety.
From Verisched Require Import Reshape.Defs Reshape.Access Reshape.Commute Reshape.Duals Reshape.Store.
Open Scope Z_scope. Open Scope atl_scope.

Section Conv.
  (* Instances named so that [H] is free for the image height. *)
  Context {S : Type} {Sc : Scalar S} {ScL : ScalarLaws S}.
  (** [NB] images, [H x W] output pixels, [CI] input and [KO] output
      channels. *)
  Variables (NB H W CI KO : Z).
  Hypothesis (HCI : 0 < CI).
  Variables (I w : Z -> Z -> Z -> Z -> S).
  (* [%Z] is not needed (Tensor/Arith.v lets [lia] read the scalar sum of
     the [Z] instance, which [+] in a shape list is); it only makes the
     statement print as indices. *)
  Hypotheses (HI : shaped [NB; (H + 2)%Z; (W + 2)%Z; CI] I) (Hw : shaped [3; 3; CI; KO] w).

  Definition conv :=
    GEN [ n < NB ] GEN [ y < H ] GEN [ x < W ] GEN [ k < KO ]
      SUM [ r < 3 ] SUM [ s < 3 ] SUM [ c < CI ]
        I _[ n ] _[ y + r ] _[ x + s ] _[ c ] * w _[ r ] _[ s ] _[ c ] _[ k ].

  (** The schedule both ISAs share, up to the instruction form: output
      channels in strips of [tile] = 2 vectors of [lanes]. *)
  Ltac conv_schedule tile lanes :=
    (* An output row [x, k] as a matrix product: channel strips [jm] of
       [tile] outside pixel tiles [xo] of 6, a 6 x [tile] tile inside. *)
    swap_gen at (genr 0 W _);
    rw (gen_tile_cols tile KO) at (genr 0 KO _);
    guard_in at (iverson (_ <? KO) _);
    swap_gen at (genr 0 tile _);
    rw (gen_tile_rows 6 W) at (genr 0 W _);
    guard_in at (iverson (_ <? W) _);
    (* The register tile, as in Sgemm.v: guards copied onto the operands,
       [tile] channels as 2 vectors, the tile's value bound as [t] with its
       depth sum outermost. *)
    rw guard2_sum3_prod_l;
    guard_out at (genr 0 tile _);
    rw (gen_split_lanes tile 2 lanes) at (genr 0 tile _);
    (* The store's channel guard as a lane count (before the weights' read
       is packed, whose guard has the same form). *)
    rw guard_lanes at (iverson (_ <? KO) _);
    name_buffer (sumr 0 3 (fun _ => sumr 0 3 _)) as t;
    hoist t past (genr 0 6 _);
    (* The im2col panel of the output row, packed while the pixel loop
       [ir] is still outside the reductions, so that its innermost
       dimension is the input channel [c]: [Ap[xo][ir][r][s][c]], each
       [c] run a contiguous copy of the input. *)
    name_buffer (|[ _ ]| I _[ _ ] _[ _ ] _[ _ ] _[ _ ]) as Ap;
    hoist Ap past (transpose KO W _);
    (* The depth sums outermost in the tile. *)
    swap_sum 3 at (genr 0 lanes _);
    swap_sum 3 at (genr 0 2 _);
    swap_sum 3 at (genr 0 6 _);
    (* The weights, once: [Wp[jm][r][s][c][jv][l]], [tile] channels contiguous. *)
    name_buffer (|[ _ ]| w _[ _ ] _[ _ ] _[ _ ] _[ _ ]) as Wp;
    hoist Wp past (genr 0 NB _).

  Derive conv_avx2 SuchThat (conv = conv_avx2) As conv_avx2_correct.
  Proof.
    reschedule.
    conv_schedule 16 8.
    (* Instruction form. *)
    use_instr avx2_maskstore.
    rw avx2_loadu_lane at (_ _[_] _[_] _[_] _[_] _[_] _[_]).
    rw avx2_broadcast_lane.
    use_instr avx2_mul.
    set_memory t AVX2_REG.
    check_safe.
    done.
  Qed.

  Definition conv_avx2_expected :=
    tlet Wp :=
      GEN [ jm < cdiv KO 16 ] GEN [ r < 3 ] GEN [ s < 3 ] GEN [ c < CI ] GEN [ jv < 2 ] GEN [ l < 8 ]
        |[ jm * 16 + (jv * 8 + l) <? KO ]| w _[ r ] _[ s ] _[ c ] _[ jm * 16 + (jv * 8 + l) ] in
    GEN [ n < NB ] GEN [ y < H ]
      tlet Ap :=
        GEN [ xo < cdiv W 6 ] GEN [ ir < 6 ] GEN [ r < 3 ] GEN [ s < 3 ] GEN [ c < CI ]
          |[ xo * 6 + ir <? W ]| I _[ n ] _[ y + r ] _[ xo * 6 + ir + s ] _[ c ] in
      transpose KO W (trunc_r KO (flatten (cdiv KO 16) 16 (GEN [ jm < cdiv KO 16 ]
        transpose W 16 (trunc_r W (flatten (cdiv W 6) 6 (GEN [ xo < cdiv W 6 ]
          tlet t := in_mem AVX2_REG
            (SUM [ r < 3 ] SUM [ s < 3 ] SUM [ c < CI ] GEN [ ir < 6 ] GEN [ jv < 2 ]
               avx2_mul (avx2_broadcast (Ap _[ xo ] _[ ir ] _[ r ] _[ s ] _[ c ]))
                        (avx2_loadu (Wp _[ jm ] _[ r ] _[ s ] _[ c ] _[ jv ]) 0)) in
          GEN [ ir < 6 ] |[ xo * 6 + ir <? W ]|
            flatten 2 8 (GEN [ jv < 2 ]
              avx2_maskstore (KO - (jm * 16 + jv * 8))%Z (t _[ ir ] _[ jv ])))))))).

  Lemma conv_avx2_is_expected : conv_avx2 = conv_avx2_expected.
  Proof. same_program. Qed.

  Lemma conv_avx2_spec : conv = conv_avx2_expected.
  Proof. rewrite conv_avx2_correct; apply conv_avx2_is_expected. Qed.
  (** ** AVX-512: the same schedule with 16-lane vectors, a 6 x 32 tile. *)
  Derive conv_avx512 SuchThat (conv = conv_avx512) As conv_avx512_correct.
  Proof.
    reschedule.
    conv_schedule 32 16.
    (* Instruction form. *)
    use_instr avx512_maskstore.
    rw avx512_loadu_lane at (_ _[_] _[_] _[_] _[_] _[_] _[_]).
    rw avx512_broadcast_lane.
    use_instr avx512_mul.
    set_memory t AVX512_REG.
    check_safe.
    done.
  Qed.
  (** ** AVX-512 with depth blocking: the taps [(r, s)] as depth blocks.

      BLIS's [kc] level (Van Zee and van de Geijn, "BLIS: A Framework for
      Rapidly Instantiating BLAS Functionality"; the Exo thesis's SGEMM,
      Sec. 7.2, as in Sgemm.v), with the depth blocks the 9 taps and [kc =
      CI]: the two tap sums are moved out of the register tile to just
      inside the output row ([GEN n GEN y SUM r SUM s]), so that each 6 x
      32 tile reduces over one tap's [CI] channels and is accumulated into
      the output row across the taps (zeroed once per row, then a masked
      load-add-store per tap: Sgemm.v's [SUM ko] form).  The weight panel
      of a strip and tap, [Wp[r][s][jm]], is [CI x 32] (16 KiB at [CI =
      128], in L1, against 144 KiB in L2 for [conv_avx512]).

      No im2col panel: for one tap the tile's pixels [6 xo + ir + s] of
      input row [y + r] are contiguous runs of [CI] channels of the NHWC
      input, so the tile broadcasts straight from [I] (the panel only
      zero-padded the last, partial tile; its pixel guard stays on the
      read and the lowering peels that tile).

      Measured (interleaved with [conv_avx512] in one process, the
      benchmark layer, a shared 2-core machine): about 3% faster on 1 and
      2 threads.  That gain is the packing it no longer does: the same
      depth blocking with the per-tap panel packed was about 1% slower
      than [conv_avx512], and [conv_avx512]'s schedule reading [I] in
      place (no depth blocking) about as fast as this one: the FMA loops
      already ran at 98% of peak with the panel in L2 (docs/decisions.md). *)
  Lemma guard2_sum_prod_l q p n (a b : Z -> S) :
    iverson q (iverson p (sumr 0 n (fun c => smul (a c) (b c)))) =
    iverson q (iverson p (sumr 0 n (fun c => smul (iverson q (a c)) (iverson p (b c))))).
  Proof. destruct q, p; cbn [iverson]; reflexivity. Qed.

  (** The depth-blocked schedule for a [tile] of [nv] vectors of 16 lanes
      ([tile = 16 nv]): [conv_schedule tile 16] with one reduction (one
      tap's [CI] channels) in the register tile. *)
  Ltac conv_kc_schedule tile nv :=
    (* The taps outside the output row: [GEN n GEN y SUM r SUM s GEN x GEN k SUM c]. *)
    swap_sum 2 at (genr 0 KO _);
    swap_sum 2 at (genr 0 W _);
    swap_gen at (genr 0 W _);
    rw (gen_tile_cols tile KO) at (genr 0 KO _);
    guard_in at (iverson (_ <? KO) _);
    swap_gen at (genr 0 tile _);
    rw (gen_tile_rows 6 W) at (genr 0 W _);
    guard_in at (iverson (_ <? W) _);
    rw guard2_sum_prod_l;
    guard_out at (genr 0 tile _);
    rw (gen_split_lanes tile nv 16) at (genr 0 tile _);
    rw guard_lanes at (iverson (_ <? KO) _);
    name_buffer (sumr 0 CI _) as t;
    hoist t past (genr 0 6 _);
    lift_sum 3 at (genr 0 6 _);
    name_buffer (|[ _ ]| w _[ _ ] _[ _ ] _[ _ ] _[ _ ]) as Wp;
    hoist Wp past (genr 0 NB _);
    (* Instruction form. *)
    use_instr avx512_maskstore;
    rw avx512_loadu_lane at (_ _[_] _[_] _[_] _[_] _[_] _[_]);
    rw avx512_broadcast_lane;
    use_instr avx512_mul;
    set_memory t AVX512_REG.

  Derive conv_avx512_kc SuchThat (conv = conv_avx512_kc) As conv_avx512_kc_correct.
  Proof.
    reschedule.
    conv_kc_schedule 32 2.
    check_safe.
    done.
  Qed.

  (** The same schedule with a 6 x 64 register tile (4 vectors: 24
      accumulators, 4 weight vectors and a broadcast, 29 of the 32 vector
      registers, as Sgemm.v's AVX-512 tile): 24 FMAs per 10 loads where the
      6 x 32 tile does 12 per 8.  A core with two 512-bit FMA pipes (Intel
      Xeon) needs that ratio; one that splits a 512-bit FMA in two (AMD Zen
      4) ran the 6 x 32 tile's loops at 98% of peak already.  Its weight
      panel per tap is [CI x 64] (32 KiB at [CI = 128]), so it wants a 48 KiB
      L1: [bench conv] picks it by the L1 size (docs/decisions.md #108). *)
  Derive conv_avx512_kc64 SuchThat (conv = conv_avx512_kc64) As conv_avx512_kc64_correct.
  Proof.
    reschedule.
    conv_kc_schedule 64 4.
    check_safe.
    done.
  Qed.
End Conv.
