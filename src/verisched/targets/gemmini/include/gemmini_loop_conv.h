/*
 * gemmini_loop_conv.h -- the weight-stationary convolution loop unroller
 * (gemmini_loop_conv_ws) of the functional simulator.  Included by gemmini.h
 * after gemmini_loop.h; do not include it on its own.
 *
 * Facts used (our own code; sources named in the README, "Loop instructions"):
 *  - [H] the argument list (53 arguments) and its order are those of
 *    gemmini_loop_conv_ws in Gemmini's gemmini.h (gemmini-rocc-tests), which
 *    packs them into seven RoCC commands (LOOP_CONV_WS_CONFIG_1..6 and
 *    LOOP_CONV_WS); the bit fields each argument is packed into bound its
 *    values (checked below).  The caller (sp_tiled_conv there) passes the
 *    tile's DRAM pointers already offset to the tile: input at its first
 *    unpadded pixel, weights at (krow, kcol, kch, och), output at the tile's
 *    first output pixel, bias at its first output channel.
 *  - [LC] what the hardware unroller (LoopConv.scala) issues: four
 *    generators (bias, input, weights, then execute, then store), each
 *    loader preceded by its own config_ld (so the loop overwrites the load
 *    configurations 0, 1 and 2), the scratchpad layouts of the input
 *    (channel block, batch, padded row, padded column) and the weights
 *    (output-channel block, krow, kcol, input channel), the accumulator
 *    layout (output-channel block, batch, row, column), the loop order of
 *    the execute unit (och, krow, kcol, kch outer; batch, orow, ocol inner,
 *    weights preloaded on the first of each inner sweep), every product
 *    accumulating into the accumulator, the store (no pooling) using the
 *    store configuration in force, and the two concurrent loops: loop slot
 *    s has A from s * half of the scratchpad and B ending at (s + 1) * half
 *    (a_spad_id / b_spad_id, when non-zero, pick the half instead), and the
 *    accumulator half alternates after each loop that stores an output.
 *    A NULL input, weights or bias pointer skips that loader (the data is
 *    reused from an earlier loop); no_bias loads zeros (DRAM address 0).
 *
 * The on-chip im2col: every input pixel of the tile is moved once, each row
 * of the scratchpad one pixel's channels; the compute for output pixels
 * (orow, ocol .. ocol + 15) and kernel offset (krow, kcol) reads A's rows
 * strided by the convolution's stride (config_ex's A_stride).
 *
 * As for gemmini_loop_ws, the simulator performs exactly that sequence of
 * single instructions through the same entry points a program's own calls
 * reach.  Not modelled (refused): pooling, dilations, downsampling, 180-degree
 * weight rotation, the transposed layouts, depthwise convs and
 * max_pixels_per_row > 1 (the first-layer optimisation, which needs
 * pixel_repeats).  tests/gemmini_c/loop_conv_ws.c checks it against a
 * hand-written sequence and numpy.
 */
#ifndef VERISCHED_GEMMINI_LOOP_CONV_H
#define VERISCHED_GEMMINI_LOOP_CONV_H

#ifndef VERISCHED_GEMMINI_SIM_H
#error "include gemmini.h, which includes gemmini_loop_conv.h"
#endif

/* The arguments of gemmini_loop_conv_ws, by name (the macro fills it in the original order). */
struct gemmini_sim_conv_args {
  uint64_t batch_size, in_row_dim, in_col_dim, in_channels, out_channels, out_row_dim,
      out_col_dim, pool_out_row_dim, pool_out_col_dim, stride, padding, kernel_dim,
      kernel_dilation, pool_size, pool_stride, pool_padding, batches, porows, pocols, pochs,
      krows, kcols, kchs, lpad, rpad, upad, dpad, plpad, prpad, pupad, pdpad, orows, ocols;
  uint64_t weights, output, bias, input;
  uint64_t no_bias, no_pool, downsample, wrot180, input_dilated, activation, trans_output_1203,
      trans_weight_1203, trans_weight_0132, trans_input_3120, max_pixels_per_row, in_stride,
      weight_stride, out_stride, dw, a_spad_id, b_spad_id;
};

void gemmini_sim_loop_conv_ws(const struct gemmini_sim_conv_args *a, const char *file,
                              int line);

/* Statement-shaped like the original: a braced block. */
#define gemmini_loop_conv_ws(batch_size, in_row_dim, in_col_dim, in_channels, out_channels,      \
                             out_row_dim, out_col_dim, pool_out_row_dim, pool_out_col_dim,      \
                             stride, padding, kernel_dim, kernel_dilation, pool_size,           \
                             pool_stride, pool_padding, batches, porows, pocols, pochs, krows,  \
                             kcols, kchs, lpad, rpad, upad, dpad, plpad, prpad, pupad, pdpad,   \
                             orows, ocols, weights, output, bias, input, no_bias, no_pool,      \
                             downsample, wrot180, input_dilated, activation, trans_output_1203, \
                             trans_weight_1203, trans_weight_0132, trans_input_3120,            \
                             max_pixels_per_row, in_stride, weight_stride, out_stride, dw,      \
                             a_spad_id, b_spad_id)                                              \
  {                                                                                             \
    const struct gemmini_sim_conv_args gemmini_sim_conv_args_ = {                               \
        (uint64_t)(batch_size), (uint64_t)(in_row_dim), (uint64_t)(in_col_dim),                 \
        (uint64_t)(in_channels), (uint64_t)(out_channels), (uint64_t)(out_row_dim),             \
        (uint64_t)(out_col_dim), (uint64_t)(pool_out_row_dim), (uint64_t)(pool_out_col_dim),    \
        (uint64_t)(stride), (uint64_t)(padding), (uint64_t)(kernel_dim),                        \
        (uint64_t)(kernel_dilation), (uint64_t)(pool_size), (uint64_t)(pool_stride),            \
        (uint64_t)(pool_padding), (uint64_t)(batches), (uint64_t)(porows), (uint64_t)(pocols),  \
        (uint64_t)(pochs), (uint64_t)(krows), (uint64_t)(kcols), (uint64_t)(kchs),              \
        (uint64_t)(lpad), (uint64_t)(rpad), (uint64_t)(upad), (uint64_t)(dpad),                 \
        (uint64_t)(plpad), (uint64_t)(prpad), (uint64_t)(pupad), (uint64_t)(pdpad),             \
        (uint64_t)(orows), (uint64_t)(ocols), (uint64_t)(uintptr_t)(weights),                   \
        (uint64_t)(uintptr_t)(output), (uint64_t)(uintptr_t)(bias),                             \
        (uint64_t)(uintptr_t)(input), (uint64_t)(no_bias), (uint64_t)(no_pool),                 \
        (uint64_t)(downsample), (uint64_t)(wrot180), (uint64_t)(input_dilated),                 \
        (uint64_t)(activation), (uint64_t)(trans_output_1203), (uint64_t)(trans_weight_1203),   \
        (uint64_t)(trans_weight_0132), (uint64_t)(trans_input_3120),                            \
        (uint64_t)(max_pixels_per_row), (uint64_t)(in_stride), (uint64_t)(weight_stride),       \
        (uint64_t)(out_stride), (uint64_t)(dw), (uint64_t)(a_spad_id), (uint64_t)(b_spad_id)};  \
    gemmini_sim_loop_conv_ws(&gemmini_sim_conv_args_, __FILE__, __LINE__);                      \
  }

/* One argument and the width of the bit field [H] packs it into. */
struct gemmini_sim_conv_field {
  const char *name;
  uint64_t value;
  unsigned bits;
};

static inline uint64_t gemmini_sim_cdiv_u64(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

GEMMINI_SIM_WEAK void gemmini_sim_loop_conv_ws(const struct gemmini_sim_conv_args *a,
                                               const char *file, int line) {
  struct gemmini_sim_state *s = gemmini_sim_state_get();
  char call[512];
  const uint64_t half_rows = GEMMINI_SIM_SPAD_ROWS / GEMMINI_SIM_LOOP_CONCURRENT;
  const uint64_t half_acc = ACC_ROWS / GEMMINI_SIM_LOOP_CONCURRENT;
  const struct gemmini_sim_conv_field fields[] = {
      {"batch_size", a->batch_size, 16},   {"in_row_dim", a->in_row_dim, 16},
      {"in_col_dim", a->in_col_dim, 16},   {"in_channels", a->in_channels, 16},
      {"out_channels", a->out_channels, 16}, {"out_row_dim", a->out_row_dim, 16},
      {"out_col_dim", a->out_col_dim, 16}, {"pool_out_row_dim", a->pool_out_row_dim, 16},
      {"pool_out_col_dim", a->pool_out_col_dim, 16}, {"stride", a->stride, 8},
      {"padding", a->padding, 8},          {"kernel_dim", a->kernel_dim, 16},
      {"kernel_dilation", a->kernel_dilation, 10}, {"pool_size", a->pool_size, 16},
      {"pool_stride", a->pool_stride, 8},  {"pool_padding", a->pool_padding, 8},
      {"batches", a->batches, 16},         {"porows", a->porows, 16},
      {"pocols", a->pocols, 16},           {"pochs", a->pochs, 16},
      {"krows", a->krows, 16},             {"kcols", a->kcols, 16},
      {"kchs", a->kchs, 16},               {"lpad", a->lpad, 16},
      {"rpad", a->rpad, 16},               {"upad", a->upad, 16},
      {"dpad", a->dpad, 8},                {"plpad", a->plpad, 8},
      {"prpad", a->prpad, 16},             {"pupad", a->pupad, 11},
      {"pdpad", a->pdpad, 11},             {"orows", a->orows, 16},
      {"ocols", a->ocols, 16},             {"in_stride", a->in_stride, 16},
      {"weight_stride", a->weight_stride, 16}, {"out_stride", a->out_stride, 16},
      {"activation", a->activation, 2},    {"max_pixels_per_row", a->max_pixels_per_row, 8},
      {"a_spad_id", a->a_spad_id, 2},      {"b_spad_id", a->b_spad_id, 2},
  };
  const struct gemmini_sim_conv_field flags[] = {
      {"no_bias", a->no_bias, 1},
      {"no_pool", a->no_pool, 1},
  };
  const struct gemmini_sim_conv_field unmodelled[] = {
      {"downsample", a->downsample, 0},
      {"wrot180", a->wrot180, 0},
      {"input_dilated", a->input_dilated, 0},
      {"trans_output_1203", a->trans_output_1203, 0},
      {"trans_weight_1203", a->trans_weight_1203, 0},
      {"trans_weight_0132", a->trans_weight_0132, 0},
      {"trans_input_3120", a->trans_input_3120, 0},
      {"dw", a->dw, 0},
  };
  uint64_t irows, icols, irows_unpadded, icols_unpadded, ochs, ichs, och_banks, ich_banks;
  uint64_t a_rows, b_rows, c_rows, a_start, b_end, b_start, c_start, bias_stride, input_stride,
      weight_stride_spad, insn_before, unrolled_before, slot;
  uint64_t b, orow, ocol, och, krow, kcol, kch;
  int64_t irow, icol;
  size_t f;

  snprintf(call, sizeof call,
           "gemmini_loop_conv_ws(batches=%llu, orows=%llu, ocols=%llu, pochs=%llu, krows=%llu, "
           "kcols=%llu, kchs=%llu, stride=%llu, pads l/r/u/d=%llu/%llu/%llu/%llu, "
           "weights=0x%llx, output=0x%llx, bias=0x%llx, input=0x%llx, ...)",
           (unsigned long long)a->batches, (unsigned long long)a->orows,
           (unsigned long long)a->ocols, (unsigned long long)a->pochs,
           (unsigned long long)a->krows, (unsigned long long)a->kcols,
           (unsigned long long)a->kchs, (unsigned long long)a->stride,
           (unsigned long long)a->lpad, (unsigned long long)a->rpad,
           (unsigned long long)a->upad, (unsigned long long)a->dpad,
           (unsigned long long)a->weights, (unsigned long long)a->output,
           (unsigned long long)a->bias, (unsigned long long)a->input);

  /* Values the macro would truncate into its bit fields [H]. */
  for (f = 0; f < sizeof fields / sizeof fields[0]; f++)
    if (fields[f].value >> fields[f].bits)
      gemmini_sim_fail(file, line, call, "%s = %llu does not fit its %u-bit field", fields[f].name,
                       (unsigned long long)fields[f].value, fields[f].bits);
  for (f = 0; f < sizeof flags / sizeof flags[0]; f++)
    if (flags[f].value > 1)
      gemmini_sim_fail(file, line, call, "%s is a boolean", flags[f].name);
  for (f = 0; f < sizeof unmodelled / sizeof unmodelled[0]; f++)
    if (unmodelled[f].value != 0)
      gemmini_sim_fail(file, line, call, "%s is not modelled by the simulator's loop_conv_ws",
                       unmodelled[f].name);
  if (!a->no_pool)
    gemmini_sim_fail(file, line, call,
                     "pooling (no_pool = 0) is not modelled by the simulator's loop_conv_ws");
  if (a->kernel_dilation != 1)
    gemmini_sim_fail(file, line, call, "kernel_dilation must be 1 (dilation is not modelled)");
  if (a->max_pixels_per_row > 1)
    gemmini_sim_fail(file, line, call,
                     "max_pixels_per_row > 1 (pixel_repeats) is not modelled; pass 0 or 1");
  if (a->activation != NO_ACTIVATION && a->activation != RELU)
    gemmini_sim_fail(file, line, call, "activation %llu is not modelled (NO_ACTIVATION or RELU)",
                     (unsigned long long)a->activation);
  if (a->batches == 0 || a->orows == 0 || a->ocols == 0 || a->pochs == 0 || a->krows == 0 ||
      a->kcols == 0 || a->kchs == 0 || a->stride == 0)
    gemmini_sim_fail(file, line, call,
                     "batches, orows, ocols, pochs, krows, kcols, kchs and stride must be >= 1");
  if (a->a_spad_id > 2 || a->b_spad_id > 2)
    gemmini_sim_fail(file, line, call, "a_spad_id and b_spad_id are 0, 1 or 2");

  /* Derived sizes [LC]: the padded input window of the tile and its unpadded part. */
  ochs = a->pochs;
  ichs = a->kchs;
  irows = a->orows * a->stride + a->krows - 1;
  icols = a->ocols * a->stride + a->kcols - 1;
  if (a->upad + a->dpad > irows || a->lpad + a->rpad > icols)
    gemmini_sim_fail(file, line, call,
                     "the paddings exceed the input window (%llu x %llu pixels)",
                     (unsigned long long)irows, (unsigned long long)icols);
  irows_unpadded = irows - a->upad - a->dpad;
  icols_unpadded = icols - a->lpad - a->rpad;
  och_banks = gemmini_sim_cdiv_u64(ochs, DIM);
  ich_banks = gemmini_sim_cdiv_u64(ichs, DIM);
  bias_stride = a->batches * a->orows * a->ocols;
  input_stride = a->batches * irows * icols;
  weight_stride_spad = a->krows * a->kcols * a->kchs;
  a_rows = ich_banks * input_stride;
  b_rows = och_banks * weight_stride_spad;
  c_rows = och_banks * bias_stride;

  /* The execute unit reads A's rows a conv stride apart and writes C's rows one apart, through
   * config_ex's A_stride and C_stride, which the program sets (sp_tiled_conv's caller does, with
   * the loop's stride); a mismatch would silently read other rows, so it is refused. */
  if (!s->ex_configured || s->dataflow != WEIGHT_STATIONARY)
    gemmini_sim_fail(file, line, call,
                     "loop_conv_ws computes weight-stationary: issue "
                     "gemmini_extended3_config_ex(WS, ...) first");
  if (s->a_transpose || s->b_transpose)
    gemmini_sim_fail(file, line, call,
                     "the transposes of config_ex must match loop_conv_ws's (both 0)");
  if (s->a_stride != a->stride || s->c_stride != 1)
    gemmini_sim_fail(file, line, call,
                     "config_ex must set A_stride = stride (%llu) and C_stride = 1 "
                     "(it has A_stride = %u, C_stride = %u)",
                     (unsigned long long)a->stride, s->a_stride, s->c_stride);
  if (a->output != 0 && (!s->st_configured || s->st_stride_bytes != a->out_stride ||
                         (uint64_t)s->acc_act != a->activation))
    gemmini_sim_fail(file, line, call,
                     "the store configuration must be set with stride out_stride * "
                     "sizeof(elem_t) = %llu and the loop's activation (%llu)",
                     (unsigned long long)a->out_stride, (unsigned long long)a->activation);
  if (c_rows > half_acc)
    gemmini_sim_fail(file, line, call,
                     "the output tile (%llu rows) does not fit half of the accumulator "
                     "(%llu rows)",
                     (unsigned long long)c_rows, (unsigned long long)half_acc);

  slot = s->conv_slot;
  a_start = a->a_spad_id == 0 ? slot * half_rows : (a->a_spad_id - 1) * half_rows;
  b_end = a->b_spad_id == 0 ? (slot + 1) * half_rows : a->b_spad_id * half_rows;
  if (b_rows > b_end || a_start + a_rows > GEMMINI_SIM_SPAD_ROWS ||
      (a_start < b_end && b_end - b_rows < a_start + a_rows))
    gemmini_sim_fail(file, line, call,
                     "the input (%llu rows from row %llu) and the weights (%llu rows ending at "
                     "row %llu) do not fit the scratchpad without overlapping",
                     (unsigned long long)a_rows, (unsigned long long)a_start,
                     (unsigned long long)b_rows, (unsigned long long)b_end);
  b_start = b_end - b_rows;
  c_start = s->conv_acc_half * half_acc;

  /* Six configuration commands and the loop command itself. */
  s->counters.loop_conv_ws_config += 6;
  s->counters.loop_conv_ws += 1;
  insn_before = s->insn_count;
  unrolled_before = s->counters.config_ld + s->counters.mvin[0] + s->counters.mvin[1] +
                    s->counters.mvin[2] + s->counters.mvout + s->counters.preload +
                    s->counters.compute_preloaded + s->counters.compute_accumulated;

  /* Bias -> accumulator (overwrite), one DRAM row broadcast to every output pixel (DRAM stride
   * 0); b, orow, ocol blocks of DIM pixels, och blocks of one accumulator row's width. */
  if (a->bias != 0) {
    const uint64_t max_ochs = gemmini_sim_min_u64(ochs, GEMMINI_SIM_MAX_BLOCK_LEN_ACC * DIM);
    gemmini_sim_config_ld(0, MVIN_SCALE_IDENTITY, 0, bias_stride, 1, 2, file, line);
    for (b = 0; b < a->batches; b++)
      for (orow = 0; orow < a->orows; orow++)
        for (ocol = 0; ocol < a->ocols; ocol += DIM)
          for (och = 0; och < ochs; och += max_ochs) {
            const uint64_t rows = gemmini_sim_min_u64(DIM, a->ocols - ocol);
            const uint64_t cols = gemmini_sim_min_u64(max_ochs, ochs - och);
            const uint64_t row = c_start + (och / DIM) * bias_stride +
                                 b * a->orows * a->ocols + orow * a->ocols + ocol;
            gemmini_sim_mvin(2, a->no_bias ? 0 : a->bias + och * sizeof(acc_t),
                             GEMMINI_SIM_ACC_BIT | row, cols, rows, file, line);
          }
  }
  /* Input -> scratchpad: every pixel of the padded window once (zeros from DRAM address 0 in
   * the padding), up to MAX_BLOCK_LEN channel blocks per move. */
  if (a->input != 0) {
    const uint64_t max_ichs = gemmini_sim_min_u64(ichs, GEMMINI_SIM_MAX_BLOCK_LEN * DIM);
    gemmini_sim_config_ld(a->in_stride * sizeof(elem_t), MVIN_SCALE_IDENTITY, 0, input_stride,
                          1, 0, file, line);
    for (b = 0; b < a->batches; b++)
      for (irow = -(int64_t)a->upad; irow < (int64_t)(irows_unpadded + a->dpad); irow++) {
        for (icol = -(int64_t)a->lpad; icol < (int64_t)(icols_unpadded + a->rpad);) {
          uint64_t pixels;
          uint64_t ich;
          const int zeros = irow < 0 || irow >= (int64_t)irows_unpadded || icol < 0 ||
                            icol >= (int64_t)icols_unpadded;
          if (icol < 0)
            pixels = gemmini_sim_min_u64(DIM, (uint64_t)(-icol));
          else if (icol >= (int64_t)icols_unpadded)
            pixels = gemmini_sim_min_u64(DIM, icols_unpadded + a->rpad - (uint64_t)icol);
          else
            pixels = gemmini_sim_min_u64(DIM, icols_unpadded - (uint64_t)icol);
          for (ich = 0; ich < ichs; ich += max_ichs) {
            const uint64_t cols = gemmini_sim_min_u64(max_ichs, ichs - ich);
            const uint64_t row = a_start + (ich / DIM) * input_stride + b * irows * icols +
                                 (uint64_t)(irow + (int64_t)a->upad) * icols +
                                 (uint64_t)(icol + (int64_t)a->lpad);
            const uint64_t dram =
                zeros ? 0
                      : a->input + ((b * a->in_row_dim * a->in_col_dim +
                                     (uint64_t)irow * a->in_col_dim + (uint64_t)icol) *
                                        a->in_stride +
                                    ich) * sizeof(elem_t);
            gemmini_sim_mvin(0, dram, row, cols, pixels, file, line);
          }
          icol += (int64_t)pixels;
        }
      }
  }
  /* Weights -> scratchpad: for each output-channel group, krow, kcol, and DIM input channels,
   * one move of up to MAX_BLOCK_LEN output-channel blocks. */
  if (a->weights != 0) {
    const uint64_t max_ochs = gemmini_sim_min_u64(ochs, GEMMINI_SIM_MAX_BLOCK_LEN * DIM);
    gemmini_sim_config_ld(a->weight_stride * sizeof(elem_t), MVIN_SCALE_IDENTITY, 0,
                          weight_stride_spad, 1, 1, file, line);
    for (och = 0; och < ochs; och += max_ochs)
      for (krow = 0; krow < a->krows; krow++)
        for (kcol = 0; kcol < a->kcols; kcol++)
          for (kch = 0; kch < a->kchs; kch += DIM) {
            const uint64_t rows = gemmini_sim_min_u64(DIM, a->kchs - kch);
            const uint64_t cols = gemmini_sim_min_u64(max_ochs, ochs - och);
            const uint64_t row = b_start + (och / DIM) * weight_stride_spad +
                                 krow * a->kcols * a->kchs + kcol * a->kchs + kch;
            const uint64_t dram =
                a->weights + ((krow * a->kernel_dim * a->in_channels + kcol * a->in_channels +
                               kch) * a->weight_stride +
                              och) * sizeof(elem_t);
            gemmini_sim_mvin(1, dram, row, cols, rows, file, line);
          }
  }
  /* Execute: och, krow, kcol, kch outer (the weights of one 16 x 16 block stay in the array),
   * b, orow, ocol inner; every product accumulates into the accumulator. */
  for (och = 0; och < ochs; och += DIM)
    for (krow = 0; krow < a->krows; krow++)
      for (kcol = 0; kcol < a->kcols; kcol++)
        for (kch = 0; kch < a->kchs; kch += DIM) {
          int new_weights = 1;
          const uint64_t J = gemmini_sim_min_u64(DIM, ochs - och);
          const uint64_t K = gemmini_sim_min_u64(DIM, a->kchs - kch);
          const uint64_t b_row = b_start + (och / DIM) * weight_stride_spad +
                                 krow * a->kcols * a->kchs + kcol * a->kchs + kch;
          for (b = 0; b < a->batches; b++)
            for (orow = 0; orow < a->orows; orow++)
              for (ocol = 0; ocol < a->ocols; ocol += DIM) {
                const uint64_t I = gemmini_sim_min_u64(DIM, a->ocols - ocol);
                const uint64_t in_row = orow * a->stride + krow;
                const uint64_t in_col = ocol * a->stride + kcol;
                const uint64_t a_row = a_start + (kch / DIM) * input_stride + b * irows * icols +
                                       in_row * icols + in_col;
                const uint64_t c_row = c_start + (och / DIM) * bias_stride +
                                       b * a->orows * a->ocols + orow * a->ocols + ocol;
                gemmini_sim_preload(new_weights ? b_row : GARBAGE_ADDR,
                                    GEMMINI_SIM_ACC_BIT | GEMMINI_SIM_ACCUMULATE_BIT | c_row, J,
                                    K, J, I, file, line);
                gemmini_sim_compute(new_weights, a_row, GARBAGE_ADDR, K, I, J, I, file, line);
                new_weights = 0;
              }
        }
  /* Output -> DRAM (no pooling): one accumulator block per move, through config_st. */
  if (a->output != 0)
    for (b = 0; b < a->batches; b++)
      for (orow = 0; orow < a->orows; orow++)
        for (ocol = 0; ocol < a->ocols; ocol += DIM)
          for (och = 0; och < ochs; och += DIM) {
            const uint64_t rows = gemmini_sim_min_u64(DIM, a->ocols - ocol);
            const uint64_t cols = gemmini_sim_min_u64(DIM, ochs - och);
            const uint64_t row = c_start + (och / DIM) * bias_stride +
                                 b * a->orows * a->ocols + orow * a->ocols + ocol;
            const uint64_t dram =
                a->output + ((b * a->out_row_dim * a->out_col_dim + orow * a->out_col_dim + ocol) *
                                 a->out_stride +
                             och) * sizeof(elem_t);
            gemmini_sim_mvout(dram, GEMMINI_SIM_ACC_BIT | row, cols, rows, file, line);
          }

  s->counters.loop_unrolled += s->counters.config_ld + s->counters.mvin[0] +
                               s->counters.mvin[1] + s->counters.mvin[2] + s->counters.mvout +
                               s->counters.preload + s->counters.compute_preloaded +
                               s->counters.compute_accumulated - unrolled_before;
  /* read_cycles counts what the CPU issued: the seven commands. */
  s->insn_count = insn_before + 7;
  s->conv_slot = (s->conv_slot + 1) % GEMMINI_SIM_LOOP_CONCURRENT;
  if (a->output != 0) s->conv_acc_half = (s->conv_acc_half + 1) % GEMMINI_SIM_LOOP_CONCURRENT;
}

#endif /* VERISCHED_GEMMINI_LOOP_CONV_H */
