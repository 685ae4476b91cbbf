(** * Gemmini instructions as specifications (issue 6).

    The Exo thesis's scheme (Sec. 2.3-2.4, Sec. 3.2, App. D): each
    instruction of the accelerator is a definition whose body is its
    meaning as an ATL term, so a derivation replaces a subterm by an
    instruction with [use_instr] (Targets/Instr.v: a rewrite with the
    definition right to left, i.e. Coq checks that the subterm IS the
    specification) and the lowering emits the instruction's C.

    The specifications describe what our simulator
    ([src/verisched/targets/gemmini/include/gemmini.h], "the simulator"
    below) does, in the default configuration DIM = 16, int8 scratchpad,
    int32 accumulator.

    ** Data

    Gemmini data are integers: int8 in DRAM operands and the scratchpad,
    int32 in the accumulator and the bias.  They are modelled by [Z] under
    the name [gint] (a transparent alias with the [Z] scalar instance).
    The alias was introduced when the derivation tactics treated every
    term of type [Z] as an index and never entered it; they now enter any
    [Z] term that mentions an access or an ATL operation
    (Rewrites/Tactics.v, [atl_is_index]), so plain [Z] scalars would work
    as well.  [gint] stays because the examples, the pinned tests and the
    Python side (which states Gemmini operands as [Z -> Z -> gint]) use
    it; it also documents which [Z]s are data.  Indices stay [Z].

    Ranges: the specifications are exact for the values the lowering can
    feed them: DRAM operands of the scratchpad moves are int8 (the C
    kernel's arguments are [int8_t] arrays), the bias is int32, and every
    accumulator value stays in the int32 range (the simulator wraps
    around; ATL's [Z] does not): with int8 operands this holds when
    [K * 2^14 + |bias| < 2^31], e.g. [K <= 65536] with int16-range biases.

    ** Instructions (all tiles are DIM x DIM = 16 x 16; [r], [c] the origin
    of the tile in the DRAM matrix, [R], [C] the extents of the matrix):

    - [gemmini_mvin v r c R C]: DRAM [v] -> scratchpad, the window
      [v[r .. r+16)[c .. c+16)] clipped at [R x C].  C: [mvin] of
      [min(16, C - c)] columns and [min(16, R - r)] rows from [&v[r][c]].
    - [gemmini_mvin_acc v r c R C]: the same window of int32 data into the
      accumulator (overwrite), e.g. the bias.  C: [mvin] with a load
      configuration with [shrunk = 0] to an accumulator address.
    - [gemmini_matmul a b]: the 16 x 16 x 16 product of two scratchpad
      tiles, [GEN i GEN j SUM k a[i][k] * b[k][j]]; accumulated into an
      accumulator tile by the enclosing [<+>]/[SUM] (store mode [+=]).
      C: [preload] + [compute_preloaded] (weight-stationary).
    - [gemmini_mvin_im2col x NB H W C OH OW s r m c]: DRAM -> scratchpad,
      the on-chip im2col of a stride-1 convolution: one A tile read
      straight from the NHWC input [x : NB x H x W x C], row [i] the pixel
      that output pixel [m + i] (flattened [(n, oh, ow)] over
      [NB x OH x OW]) reads at kernel offset [(s, r)], columns the
      channels [c .. c+16), zero past the last output pixel or channel.
      C: one [mvin] per run of consecutive pixels ("row piece", broken
      where the 16 rows cross the end of an output row), DRAM stride [C].
    - [gemmini_mvin_im2col_strided x NB H W C OH OW st pd s r m c]: the
      same for a convolution with stride [st] and zero padding [pd]: output
      pixel [(n, oh, ow)] reads [(n, oh st + s - pd, ow st + r - pd)], zero
      in the padding.  C: per row piece, one [mvin] of the pixels inside
      the image (DRAM stride [st C]) and one from address 0 (zeros) per
      run in the padding.
    - [gemmini_mvout sm se act c r cc R C]: accumulator tile [c] -> DRAM
      through the output path [gemmini_acc_out sm se act] (scale by the
      float [sm * 2^se], round half to even, saturate to int8, optional
      ReLU), clipped at [R x C].  C: [config_st] + [mvout].

    ** Overwrite or accumulate (bit 30 of an accumulator address).  An
    instruction's value is either stored into its destination buffer or
    added to it, which the program says by its structure (the store modes
    of the paper's Fig. 3): the left operand of [<+>] in an accumulator
    buffer's value, or the first contribution, overwrites (no accumulate
    bit; e.g. [gemmini_mvin_acc] of the bias); a right operand of [<+>] or
    the body of a [SUM] stored into the buffer is added (accumulate bit on
    the [preload]'s C address, so the simulator adds with int32
    wrap-around, exact under the range condition above).  A [SUM] with no
    left operand starts from zero: the lowering zero-fills the tile (an
    [mvin] from DRAM address 0 loads zeros in the simulator) or lets the
    first product overwrite.

    ** Partial blocks (the simulator's semantics, and the contract with
    the lowering).  A move carries only the [rows x cols] of its window;
    the rest of the 16 x 16 local tile keeps whatever it held before.
    The specifications say "zero" there instead, and this is exact because
    no instruction ever observes it: [compute] reads its operands with the
    rows and columns of the moves that filled them (the simulator pads
    every operand with zeros outside [A_rows x A_cols] and
    [BD_rows x BD_cols]), writes only [a_rows x b_cols] of the accumulator,
    and [mvout] reads only its own window.  So the lowering MUST pass to
    [preload]/[compute] the rows/columns of the [gemmini_mvin] that filled
    each operand ([min(16, R - r)] x [min(16, C - c)]), and to [mvout]
    those of its own window.

    ** Configuration state (Exo thesis Sec. 2.4, 3.2.3).  Every piece of
    configuration an instruction's VALUE depends on is an argument of its
    definition (the output scale [sm], [se] and the ReLU flag [act] of
    [gemmini_mvout]); every other piece is determined by the operands and
    fixed by the lowering: load/store strides are the row strides of the
    DRAM tensors, the mvin scale is the identity ([MVIN_SCALE_IDENTITY],
    exact on int8 data), the dataflow is weight-stationary with
    [sys_shift = 0], no transposes, [A_stride = 1] (the result goes to the
    accumulator, where the simulator neither shifts nor activates).  So
    the lowering knows, at each call, the full configuration the call
    needs, and emits a [config_*] only where it differs from the one in
    force, hoisting invariant ones out of loops (see [docs/decisions.md]).
    Table: [gemmini_mvin] needs [config_ld(stride(v), 1.0, shrunk=0, id)],
    one [id] per DRAM source so they can all stay configured;
    [gemmini_mvin_acc] needs [config_ld(4 * row extent of v, 1.0,
    shrunk=0, id)]; [gemmini_matmul] needs [config_ex(WS, NO_ACTIVATION,
    0, A_stride=1, 0, 0)]; [gemmini_mvout] needs [config_st(stride(out),
    act ? RELU : NO_ACTIVATION, sm * 2^se)]. *)

From Coq Require Import ZArith Bool List Lia.
Import ListNotations.
From Verisched Require Import Tensor.Scalar Tensor.Core Tensor.Arith Tensor.Sum Tensor.Shape.
From Verisched Require Import Rewrites.Gen Rewrites.Guard Rewrites.Tactics Rewrites.Safety.
From Verisched Require Import Reshape.Reshape Targets.Instr.
Open Scope Z_scope.

(** ** Data *)

(** Gemmini data values (int8 and int32), as integers. *)
Definition gint := Z.

#[global] Instance Scalar_gint : Scalar gint := Scalar_Z.
#[global] Instance ScalarLaws_gint : ScalarLaws gint := ScalarLaws_Z.
(** Instance search keeps [gint] and [Z] apart, so a [Z] program in a file
    that imports this one still elaborates with [Scalar_Z]. *)
#[global] Typeclasses Opaque gint.

(** ** The output path, over [Z]

    The simulator converts an accumulator value [x] (int32) to int8 by
    [sat8(round_half_even(double((float)x * scale)))] with [scale] a
    float, then applies ReLU if configured ([gemmini_sim_scale_to_elem]
    and [gemmini_sim_mvout]).  We model the float exactly: a finite
    single-precision [scale] is [sm * 2^se] with [|sm| < 2^24], and the
    two roundings of single-precision arithmetic ([(float)x] and the
    product) are round-to-nearest-even to 24 significant bits of an
    integer, [gemmini_round24] (scaling by a power of two commutes with
    it).  The model agrees with the simulator bit for bit for every int32
    [x] and every float32 [sm * 2^se]: products below the normal range
    (where floats round to a fixed grid instead) have magnitude below
    2^-126 and round to the integer 0 either way, and products beyond the
    float range (infinity in C) saturate to 127 or -128 either way. *)

(** [x / 2^s] rounded half to even ([s > 0]), [x * 2^-s] for [s <= 0]:
    the simulator's [gemmini_sim_rounding_shift] (for [0 <= s < 63]). *)
Definition gemmini_rshift_rne (x s : Z) : Z :=
  if s <=? 0 then x * 2 ^ (- s)
  else
    let q := x / 2 ^ s in
    let r := x mod 2 ^ s in
    let half := 2 ^ (s - 1) in
    if (half <? r) || ((r =? half) && Z.odd q) then q + 1 else q.

(** An integer rounded to the nearest float32 significand (24 bits),
    ties to even: [(float)n] for the integers a float can reach. *)
Definition gemmini_round24 (n : Z) : Z :=
  let b := Z.log2 (Z.abs n) + 1 in
  if b <=? 24 then n else gemmini_rshift_rne n (b - 24) * 2 ^ (b - 24).

(** [round_half_even((float)x * (sm * 2^se))] as single-precision C
    computes it. *)
Definition gemmini_scale (sm se x : Z) : Z :=
  gemmini_rshift_rne (gemmini_round24 (gemmini_round24 x * sm)) (- se).

(** Saturation to int8 ([elem_t_min], [elem_t_max]). *)
Definition gemmini_sat8 (x : Z) : Z := Z.max (-128) (Z.min 127 x).

(** The optional activation: [act = true] is [RELU], [false] is
    [NO_ACTIVATION] (the only two the simulator accepts). *)
Definition gemmini_act (act : bool) (x : Z) : Z := if act then Z.max 0 x else x.

(** The output path of [mvout] from the accumulator: scale, round,
    saturate, activation, in the simulator's order.  A scalar primitive of
    the ATL programs (like Exo's [acc_scale], [clamp] and [relu]): the
    algorithm of a quantized layer applies it to each output element. *)
Definition gemmini_acc_out (sm se : Z) (act : bool) (x : gint) : gint :=
  gemmini_act act (gemmini_sat8 (gemmini_scale sm se x)).

(** The output is an int8 value, non-negative under ReLU. *)
Lemma gemmini_acc_out_range sm se act x : -128 <= gemmini_acc_out sm se act x <= 127.
Proof. unfold gemmini_acc_out, gemmini_act, gemmini_sat8; destruct act; lia. Qed.

Lemma gemmini_acc_out_relu sm se x : 0 <= gemmini_acc_out sm se true x.
Proof. unfold gemmini_acc_out, gemmini_act; lia. Qed.

(** The identity scale is [sm = 1], [se = 0]. *)
Definition gemmini_scale_identity : Z * Z := (1, 0).

(** [sm * 2^se] is a finite float32 (the lowering emits it as
    [ldexpf(sm, se)], exact under this condition). *)
Definition gemmini_scale_ok (sm se : Z) : Prop :=
  Z.abs sm < 2 ^ 24 /\ -149 <= se /\ se + Z.log2 (Z.abs sm) <= 127.

(** Sanity checks of the model against hand-computed float results. *)
Example gemmini_scale_ex1 : gemmini_acc_out 1 (-1) false 3 = 2.       (* 1.5 -> 2 *)
Proof. vm_compute; reflexivity. Qed.
Example gemmini_scale_ex2 : gemmini_acc_out 1 (-1) false 5 = 2.       (* 2.5 -> 2 *)
Proof. vm_compute; reflexivity. Qed.
Example gemmini_scale_ex3 : gemmini_acc_out 1 (-1) false (-5) = -2.   (* -2.5 -> -2 *)
Proof. vm_compute; reflexivity. Qed.
Example gemmini_scale_ex4 : gemmini_acc_out 1 (-1) false (-7) = -4.   (* -3.5 -> -4 *)
Proof. vm_compute; reflexivity. Qed.
Example gemmini_scale_ex5 : gemmini_acc_out 1 0 true (-7) = 0.        (* ReLU *)
Proof. vm_compute; reflexivity. Qed.
Example gemmini_scale_ex6 : gemmini_acc_out 1 0 false 1000 = 127.     (* saturation *)
Proof. vm_compute; reflexivity. Qed.
(** (float)(2^25 + 3) = 2^25 + 4 (24-bit significand, tie to even), then
    times 2^-18 = 128.0000153 -> 128 -> saturates; with 2^-19: 64.0000076
    -> 64. *)
Example gemmini_scale_ex7 : gemmini_scale 1 (-19) (2 ^ 25 + 3) = 64.
Proof. vm_compute; reflexivity. Qed.
(** 0.1f = 13421773 * 2^-27; the exact product 25 * 0.1f = 2.5000000372...
    rounds to the float 2.5, which rounds (half to even) to 2, not 3. *)
Example gemmini_scale_ex8 : gemmini_scale 13421773 (-27) 25 = 2.
Proof. vm_compute; reflexivity. Qed.

Open Scope atl_scope.

(** ** Instructions *)

(** DRAM -> scratchpad: the 16 x 16 window of [v] at [(r, c)], clipped at
    [R x C] (zero beyond, see "Partial blocks" above).  C:
    [gemmini_extended_mvin(&v[r][c], spad_addr, min(16, C - c),
    min(16, R - r))] under [config_ld(row stride of v, 1.0, 0, id)]. *)
Definition gemmini_mvin (v : Z -> Z -> gint) (r c R C : Z) : Z -> Z -> gint :=
  GEN [ i < 16 ] GEN [ j < 16 ]
    |[ (r + i <? R) && (c + j <? C) ]| v _[ r + i ] _[ c + j ].

(** DRAM -> accumulator, int32 (a bias), overwriting the tile.  The same
    value as [gemmini_mvin]; the lowering emits an [mvin] with an
    accumulator destination and a load configuration with [shrunk = 0]. *)
Definition gemmini_mvin_acc (v : Z -> Z -> gint) (r c R C : Z) : Z -> Z -> gint :=
  GEN [ i < 16 ] GEN [ j < 16 ]
    |[ (r + i <? R) && (c + j <? C) ]| v _[ r + i ] _[ c + j ].

(** The DIM x DIM x DIM multiply of two scratchpad tiles (Exo's
    [matmul_acc_i8]).  Where its value is added to an accumulator tile
    ([acc <+> ...], or a term of a [SUM] stored into one), the lowering
    emits [preload(b, acc | ACCUMULATE, b_cols, b_rows, b_cols, a_rows)]
    and [compute_preloaded(a, GARBAGE_ADDR, a_cols, a_rows, 16, 16)]. *)
Definition gemmini_matmul (a b : Z -> Z -> gint) : Z -> Z -> gint :=
  GEN [ i < 16 ] GEN [ j < 16 ] SUM [ k < 16 ] a _[ i ] _[ k ] * b _[ k ] _[ j ].

(** Accumulator -> DRAM through the output path, the window of the
    output at [(r, cc)] clipped at [R x C]:
    [config_st(row stride of the output, act ? RELU : NO_ACTIVATION,
    ldexpf(sm, se))] and [gemmini_extended_mvout(&out[r][cc], acc_addr,
    min(16, C - cc), min(16, R - r))]. *)
Definition gemmini_mvout (sm se : Z) (act : bool) (c : Z -> Z -> gint) (r cc R C : Z)
  : Z -> Z -> gint :=
  GEN [ i < 16 ] GEN [ j < 16 ]
    |[ (r + i <? R) && (cc + j <? C) ]| gemmini_acc_out sm se act (c _[ i ] _[ j ]).

(** DRAM -> scratchpad, the on-chip im2col (issue 16): the [A] tile of a
    stride-1 convolution for 16 consecutive output pixels, read from the
    NHWC input [x : NB x H x W x C] itself, so no im2col matrix is built in
    DRAM.  Output pixel [t] (over the [NB x OH x OW] output grid, flattened
    in [(n, oh, ow)] order) reads, at kernel offset [(s, r)], the input
    pixel [(t / OW / OH, t / OW mod OH + s, t mod OW + r)]; row [i] of the
    tile is that pixel of [t = m + i], column [j] its channel [c + j].  As
    for [gemmini_mvin], rows past the last output pixel ([m + i >= NB OH
    OW]) and columns past [C] are zero.  The second half of the guard is
    the read's bounds (true on every row the first half keeps, when
    [OH = H - KH + 1], [OW = W - KW + 1], [s < KH], [r < KW]; out-of-bounds
    reads are zero in ATL anyway): stated, it lets [check_safe] prove the
    read in bounds by [lia], instead of nonlinear reasoning on the nested
    division (which took seconds or failed).
    C: the 16 rows are consecutive pixels of [x] except where the output
    pixels cross the end of an output row, so the lowering issues one
    [mvin] per such run ("row piece"), DRAM row stride [C] elements, up to
    64 channels (four tiles, [MAX_BYTES]) per move.  Sources: a load
    instruction as the specification of what it copies, as Exo's [ld_i8]
    (thesis App. D.3, Sec. 7.1); the move's semantics (rows [stride] bytes
    apart in DRAM, columns past 16 into the next block) from Gemmini's
    README ("mvin"), as src/verisched/targets/gemmini/README.md records it
    and the simulator implements it. *)
Definition gemmini_mvin_im2col (x : Z -> Z -> Z -> Z -> gint) (NB H W C OH OW s r m c : Z)
  : Z -> Z -> gint :=
  GEN [ i < 16 ] GEN [ j < 16 ]
    |[ ((m + i <? NB * OH * OW) && (c + j <? C)) &&
       (((0 <=? (m + i) / OW / OH) && ((m + i) / OW / OH <? NB)) &&
        ((0 <=? (m + i) / OW mod OH + s) && ((m + i) / OW mod OH + s <? H)) &&
        ((0 <=? (m + i) mod OW + r) && ((m + i) mod OW + r <? W))) ]|
      x _[ (m + i) / OW / OH ] _[ (m + i) / OW mod OH + s ] _[ (m + i) mod OW + r ]
        _[ c + j ].

(** The same move for a convolution with a stride [st] and a zero padding
    [pd] (issue 16: ResNet-50's downsampling 3x3 layers, stride 2, padding
    1).  Output pixel [t] reads, at kernel offset [(s, r)], the input pixel
    [(t / OW / OH, t / OW mod OH * st + s - pd, t mod OW * st + r - pd)],
    zero where that pixel lies in the padding.  Unlike
    [gemmini_mvin_im2col]'s, the second half of the guard is not always
    true: its height and width conjuncts are the padding (the user's
    guarded read in [qconv_strided], Examples/GemminiConv.v); the batch
    conjunct is always true on the rows the first half keeps and is there
    for [check_safe], as in [gemmini_mvin_im2col].
    C: a run of consecutive output pixels of one output row reads input
    pixels [st] apart, so the lowering issues one [mvin] per run inside
    the image (DRAM row stride [st C]) and one [mvin] from DRAM address 0
    (zeros, Gemmini's README; src/verisched/targets/gemmini/README.md) per
    run in the padding; targets/gemmini/im2col.py. *)
Definition gemmini_mvin_im2col_strided (x : Z -> Z -> Z -> Z -> gint)
  (NB H W C OH OW st pd s r m c : Z) : Z -> Z -> gint :=
  GEN [ i < 16 ] GEN [ j < 16 ]
    |[ ((m + i <? NB * OH * OW) && (c + j <? C)) &&
       (((0 <=? (m + i) / OW / OH) && ((m + i) / OW / OH <? NB)) &&
        ((0 <=? (m + i) / OW mod OH * st + s - pd) && ((m + i) / OW mod OH * st + s - pd <? H)) &&
        ((0 <=? (m + i) mod OW * st + r - pd) && ((m + i) mod OW * st + r - pd <? W))) ]|
      x _[ (m + i) / OW / OH ] _[ (m + i) / OW mod OH * st + s - pd ]
        _[ (m + i) mod OW * st + r - pd ] _[ c + j ].

(** ** Rewrites used by the Gemmini derivations *)

Section GuardMul.
  Context {S : Type} `{ScalarLaws S}.

  (** A guard on a product, split between the operands: the row and
      column guards [p], [q] go to the operand they concern, the reduction
      guard [r] to both.  Used to give each staged tile its own edge guard
      (the clipping of its [mvin]), leaving the product unguarded as the
      specification of [gemmini_matmul] has it. *)
  Lemma guard_mul_split p q r (a b : S) :
    iverson ((p && q) && r) (a * b) = (iverson (p && r) a) * (iverson (r && q) b).
  Proof.
    destruct p, q, r; cbn [iverson andb tzero TensorElem_scalar];
      rewrite ?smul_0_l, ?smul_0_r; reflexivity.
  Qed.
End GuardMul.

(* [rename_buffer] and [rename_loop], which the Gemmini derivations use to
   keep buffer and loop names, are general tactics: Rewrites/Tactics.v. *)

(** ** Registration (Targets/Instr.v): [same_program] holds the
    instructions abstract and [check_safe] checks the accesses of their
    specifications.  The scalar primitive [gemmini_acc_out] is not an
    instruction (it is part of the algorithm, and unfolding it would hide
    its argument from [check_safe] behind functions of type [Z -> Z]). *)
#[global] Instance AtlInstr_gemmini_mvin : AtlInstr (@gemmini_mvin) := {}.
#[global] Instance AtlInstr_gemmini_mvin_acc : AtlInstr (@gemmini_mvin_acc) := {}.
#[global] Instance AtlInstr_gemmini_matmul : AtlInstr (@gemmini_matmul) := {}.
#[global] Instance AtlInstr_gemmini_mvout : AtlInstr (@gemmini_mvout) := {}.
#[global] Instance AtlInstr_gemmini_mvin_im2col : AtlInstr (@gemmini_mvin_im2col) := {}.
#[global] Instance AtlInstr_gemmini_mvin_im2col_strided :
  AtlInstr (@gemmini_mvin_im2col_strided) := {}.

(** ** Memories and their capacities

    A buffer placed in [GEMMINI_SPAD] or [GEMMINI_ACC] ([in_mem],
    Targets/Instr.v) is stored as rows of [gemmini_dim] elements: its
    innermost extent must be exactly 16 (as Exo's [GEMM_SCRATCH] and
    [GEMM_ACCUM] require, thesis App. D.1-D.2), and it occupies the
    product of its other extents in rows. *)
Inductive gemmini_memory := GEMMINI_SPAD | GEMMINI_ACC.
#[global] Instance Memory_gemmini_memory : Memory gemmini_memory := {}.

Definition gemmini_dim : Z := 16.
Definition gemmini_spad_banks : Z := 4.
Definition gemmini_spad_bank_rows : Z := 4096.
(** 4 banks x 4096 rows of 16 int8 = 256 KiB. *)
Definition gemmini_spad_rows : Z := gemmini_spad_banks * gemmini_spad_bank_rows.
(** 1024 rows of 16 int32 = 64 KiB. *)
Definition gemmini_acc_rows : Z := 1024.

(** Rows taken by a buffer of extents [dims] (outermost first). *)
Definition gemmini_buffer_rows (dims : list Z) : Z := fold_right Z.mul 1 (removelast dims).

(** [gemmini_check_fit]: every buffer the current program places in the
    scratchpad or the accumulator has rows of 16 elements, and together
    they fit: the sum of their rows (as if all were live at once, which
    over-approximates a lowering that allocates each let once) is proved
    at most [gemmini_spad_rows] resp. [gemmini_acc_rows], from the
    hypotheses in context (so a buffer whose size depends on a parameter
    needs a hypothesis bounding it).  A buffer whose size depends on an
    enclosing loop variable is rejected.  Like [check_safe], it does not
    change the program. *)
Ltac gemmini_buf_rows v :=
  let v' := atl_unfold_instrs v in
  let d := atl_dims v' in
  let last := eval cbv [last] in (last d 0%Z) in
  let ok := match constr:(tt) with
            | _ => let _ := constr:(ltac:(unfold gemmini_dim; lia) : last = gemmini_dim) in
                   constr:(true)
            | _ => constr:(false)
            end in
  lazymatch ok with
  | true => constr:(gemmini_buffer_rows d)
  | false => fail 100 "gemmini_check_fit: the buffer" v "has extents" d
               "; a Gemmini buffer's innermost extent must be 16"
  end.

Ltac gemmini_zadd a b :=
  lazymatch a with
  | 0%Z => b
  | _ => lazymatch b with 0%Z => a | _ => constr:((a + b)%Z) end
  end.

(** [x - 0], [x * 1], [1 * x] dropped from a size, for display. *)
Ltac gemmini_zclean t :=
  lazymatch t with
  | (?a - 0)%Z => gemmini_zclean a
  | (?a * 1)%Z => gemmini_zclean a
  | (1 * ?a)%Z => gemmini_zclean a
  | (?a + ?b)%Z =>
      let a' := gemmini_zclean a in let b' := gemmini_zclean b in constr:((a' + b')%Z)
  | (?a * ?b)%Z =>
      let a' := gemmini_zclean a in let b' := gemmini_zclean b in
      lazymatch b' with
      | 1%Z => a'
      | _ => lazymatch a' with 1%Z => b' | _ => constr:((a' * b')%Z) end
      end
  | _ => t
  end.

(** A closed size evaluates to a numeral; a symbolic one is kept.  A size
    that mentions a variable of the context (a section's [K], [N]) is not
    given to [vm_compute]: the machine would unfold [Z.mul] and [cdiv]
    around the stuck variable into a large match, 0.2-0.4 s for each of
    the derivations' symbolic sizes, only for the result to be thrown away
    as no numeral (build time, issue 16). *)
Ltac gemmini_ground t :=
  constr:(ltac:(first [ (match t with context [?x] => is_var x end; exact false)
                      | exact true ]) : bool).
Ltac gemmini_zsimpl t :=
  let t' := eval cbv [gemmini_buffer_rows fold_right removelast] in t in
  match constr:(tt) with
  | _ => let g := gemmini_ground t' in
         lazymatch g with
         | true =>
             let v := eval vm_compute in t' in
             lazymatch v with
             | Zpos _ => v
             | Z0 => v
             end
         end
  | _ => gemmini_zclean t'
  end.

(** The capacity goals: linear, or with [cdiv] of the sizes; each
    [cdiv a b] becomes a variable [c] with [a <= b c < a + b]. *)
Ltac gemmini_cdiv_vars :=
  repeat match goal with
    | |- context [cdiv ?a ?b] =>
        let c := fresh "cd" in
        let Hc := fresh "Hcd" in
        assert (Hc : a <= b * cdiv a b < a + b)
          by (unfold cdiv; Z.div_mod_to_equations; lia);
        set (c := cdiv a b) in *; clearbody c;
        try (assert (0 <= c) by lia)
    end.

Ltac gemmini_fit_arith :=
  first [ lia | (gemmini_cdiv_vars; nia) ].

Ltac gemmini_rows_under mem f :=
  lazymatch type of f with
  | ?T -> _ =>
      let x := fresh "x" in
      let g := constr:(fun x : T => ltac:(
                 let b := eval cbv beta in (f x) in
                 let r := gemmini_rows_in mem b in exact r)) in
      lazymatch g with
      | fun _ => ?r => r
      | _ => fail 100 "gemmini_check_fit: a buffer's size depends on a loop variable:" g
      end
  end
with gemmini_rows_arg mem a :=
  lazymatch type of a with
  | Z => constr:(0%Z)
  | bool => constr:(0%Z)
  | nat => constr:(0%Z)
  | _ => gemmini_rows_in mem a
  end
with gemmini_rows_in mem t :=
  lazymatch t with
  | atl_let ?e ?f =>
      let here :=
        match constr:((e, mem)) with
        | (in_mem ?m ?v, ?m) => gemmini_buf_rows v
        | _ => constr:(0%Z)
        end in
      let re := gemmini_rows_in mem e in
      let rf := gemmini_rows_under mem f in
      let s1 := gemmini_zadd here re in gemmini_zadd s1 rf
  | genr _ _ ?f => gemmini_rows_under mem f
  | sumr _ _ ?f => gemmini_rows_under mem f
  | iverson _ ?e => gemmini_rows_in mem e
  | ?F ?a ?b =>
      let ra := gemmini_rows_arg mem a in
      let rb := gemmini_rows_arg mem b in
      gemmini_zadd ra rb
  | ?F ?a => gemmini_rows_arg mem a
  | _ => constr:(0%Z)
  end.

Ltac gemmini_check_fit :=
  idtac;
  lazymatch goal with
  | |- ?P = _ =>
      let s := gemmini_rows_in GEMMINI_SPAD P in
      let a := gemmini_rows_in GEMMINI_ACC P in
      let s' := gemmini_zsimpl s in
      let a' := gemmini_zsimpl a in
      tryif assert_succeeds (assert (s' <= gemmini_spad_rows)%Z
                               by (unfold gemmini_spad_rows, gemmini_spad_banks,
                                   gemmini_spad_bank_rows; gemmini_fit_arith))
      then idtac "gemmini_check_fit: scratchpad rows" s' "<= 16384"
      else fail 0 "gemmini_check_fit: the scratchpad buffers need" s'
             "rows, not proved <= 16384 (4 banks x 4096)";
      tryif assert_succeeds (assert (a' <= gemmini_acc_rows)%Z
                               by (unfold gemmini_acc_rows; gemmini_fit_arith))
      then idtac "gemmini_check_fit: accumulator rows" a' "<= 1024"
      else fail 0 "gemmini_check_fit: the accumulator buffers need" a'
             "rows, not proved <= 1024"
  | _ => fail 0 "gemmini_check_fit: expected a goal  program = ?derived"
  end.
