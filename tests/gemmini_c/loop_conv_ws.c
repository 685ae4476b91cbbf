/*
 * gemmini_loop_conv_ws against the single instructions it stands for.  Runs the
 * same quantized NHWC convolution out = act(scale * (bias + conv(x, w))) with
 * stride and zero padding twice on a fresh accelerator each time:
 *  - as gemmini_loop_conv_ws calls over tiles of (image, output rows, output
 *    channels), the tile arithmetic of Gemmini's tiled_conv (DRAM pointers
 *    offset to the tile, paddings where the window leaves the image); with
 *    SPLIT the input channels are split over two calls, the first loading the
 *    bias and storing nothing, the second adding to it and storing;
 *  - as a hand-written sequence: for every output pixel row, 16 pixels and 16
 *    output channels, the bias (or zeros) into the accumulator, then for every
 *    kernel offset and 16 input channels one mvin per pixel (zeros from DRAM
 *    address 0 in the padding), an mvin2 of the weights, preload and compute
 *    with A_stride 1, then one mvout.  A different order, layout and A stride.
 * Writes both outputs; the Python test compares them bit for bit and with numpy.
 *
 * Usage: loop_conv_ws NB H W C KO KH KW STRIDE PAD ACT SCALE BIAS SPLIT IN OUT
 *   BIAS: 0 no_bias (zeros), 1 int32 bias per output channel
 *   IN : x (NB*H*W*C int8), w (KH*KW*C*KO int8), bias (KO int32)
 *   OUT: out_loop, out_seq (NB*OH*OW*KO int8 each)
 * Mode "err" ARG: a misuse that the simulator must refuse (ARG names it).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "include/gemmini.h"
#include "include/gemmini_testutils.h"

#define ACC_BIT (1u << 31)
#define ACCUM_BIT (1u << 30)

static int NB, H, W, C, KO, KH, KW, S, P, OH, OW, act, bias_on;
static float scale;
static int8_t *x, *w;
static int32_t *bias;

static int imin(int a, int b) { return a < b ? a : b; }
static int cdiv(int a, int b) { return (a + b - 1) / b; }

/* One loop call for output rows [orow0, orow0 + orows) of image b, channels [och0, och0 + ochs),
 * input channels [kch0, kch0 + kchs); with_bias / with_out say whether it loads the bias and
 * stores the output (tiled_conv's K split). */
static void conv_call(int8_t *out, int b, int orow0, int orows, int och0, int ochs, int kch0,
                      int kchs, int with_bias, int with_out) {
  const int irow = orow0 * S - P, icol = -P;
  const int irows = orows * S + KH - 1, icols = OW * S + KW - 1;
  const int upad = irow < 0 ? -irow : 0, lpad = icol < 0 ? -icol : 0;
  const int dpad = irow + irows > H ? irow + irows - H : 0;
  const int rpad = icol + icols > W ? icol + icols - W : 0;
  const int8_t *in = x + ((size_t)(b * H + irow + upad) * W + (icol + lpad)) * C + kch0;
  const int8_t *wt = w + (size_t)kch0 * KO + och0;
  int8_t *o = with_out ? out + ((size_t)(b * OH + orow0) * OW) * KO + och0 : NULL;
  const int32_t *bs = with_bias ? bias + och0 : NULL;
  /* kernel_dim: the hardware reads it only as the weights' DRAM row length in kernel columns
   * (tiled_conv's kernels are square), so a KH x KW kernel passes KW. */
  gemmini_loop_conv_ws(NB, H, W, C, KO, OH, OW, OH, OW, S, P, KW, 1, 1, 1, 0, 1, orows, OW, ochs,
                       KH, KW, kchs, lpad, rpad, upad, dpad, 0, 0, 0, 0, orows, OW, wt, o, bs,
                       in, !bias_on, true, false, false, false, act, false, false, false, false,
                       0, C, KO, KO, false, 0, 0);
}

static void configure(int a_stride) {
  gemmini_extended3_config_ex(WS, NO_ACTIVATION, 0, ACC_SCALE_IDENTITY, 1, a_stride, 0, 0, 0);
  gemmini_extended_config_st(KO, act, scale);
}

static void run_loop(int8_t *out, int split) {
  /* Tile sizes that fit half of the scratchpad and of the accumulator. */
  const int ochs = imin(KO, 64), och_banks = cdiv(ochs, DIM), ich_banks = cdiv(C, DIM);
  const int b_rows = och_banks * KH * KW * C;
  int porows = OH, calls = 0, b, orow, och;
  uint64_t insns;
  gemmini_sim_counters_t cnt;
  while (porows > 0 && (och_banks * porows * OW > ACC_ROWS / 2 ||
                        ich_banks * (porows * S + KH - 1) * (OW * S + KW - 1) + b_rows >
                            BANK_NUM * BANK_ROWS / 2))
    porows--;
  if (porows == 0) {
    fprintf(stderr, "sizes too large for one output row per tile\n");
    exit(2);
  }
  configure(S);
  insns = read_cycles();
  for (b = 0; b < NB; b++)
    for (orow = 0; orow < OH; orow += porows)
      for (och = 0; och < KO; och += ochs) {
        const int rows = imin(porows, OH - orow), chs = imin(ochs, KO - och);
        if (!split || C < 2) {
          conv_call(out, b, orow, rows, och, chs, 0, C, 1, 1);
          calls++;
        } else {
          const int c1 = C / 2;
          conv_call(out, b, orow, rows, och, chs, 0, c1, 1, 0);
          conv_call(out, b, orow, rows, och, chs, c1, C - c1, 0, 1);
          calls += 2;
        }
      }
  cnt = gemmini_sim_get_counters();
  printf("loop_conv_ws calls %d issued %llu\n", calls,
         (unsigned long long)(read_cycles() - insns));
  printf("loop_conv_ws %llu loop_conv_ws_config %llu loop_unrolled %llu\n",
         (unsigned long long)cnt.loop_conv_ws, (unsigned long long)cnt.loop_conv_ws_config,
         (unsigned long long)cnt.loop_unrolled);
}

/* The same convolution as single instructions, one output block at a time. */
static void run_sequence(int8_t *out) {
  const uint32_t a_tile = 0, b_tile = DIM, acc = 0;
  int b, orow, ocol, och, kr, kc, kch, i;
  configure(1);
  gemmini_extended4_config_ld(0, MVIN_SCALE_IDENTITY, false, DIM, 2); /* bias row, stride 0 */
  gemmini_extended3_config_ld(C, MVIN_SCALE_IDENTITY, false, 0);      /* pixels */
  gemmini_extended3_config_ld(KO, MVIN_SCALE_IDENTITY, false, 1);     /* weights */
  for (b = 0; b < NB; b++)
    for (orow = 0; orow < OH; orow++)
      for (ocol = 0; ocol < OW; ocol += DIM)
        for (och = 0; och < KO; och += DIM) {
          const int I = imin(DIM, OW - ocol), J = imin(DIM, KO - och);
          gemmini_extended_mvin3(bias_on ? (const void *)(bias + och) : NULL, ACC_BIT | acc, J, I);
          for (kr = 0; kr < KH; kr++)
            for (kc = 0; kc < KW; kc++)
              for (kch = 0; kch < C; kch += DIM) {
                const int K = imin(DIM, C - kch);
                const int r = orow * S + kr - P;
                for (i = 0; i < I; i++) {
                  const int c = (ocol + i) * S + kc - P;
                  const int inside = r >= 0 && r < H && c >= 0 && c < W;
                  gemmini_extended_mvin(
                      inside ? (const void *)(x + ((size_t)(b * H + r) * W + c) * C + kch) : NULL,
                      a_tile + i, K, 1);
                }
                gemmini_extended_mvin2(w + ((size_t)(kr * KW + kc) * C + kch) * KO + och, b_tile,
                                       J, K);
                gemmini_extended_preload(b_tile, ACC_BIT | ACCUM_BIT | acc, J, K, J, I);
                gemmini_extended_compute_preloaded(a_tile, GARBAGE_ADDR, K, I, J, I);
              }
          gemmini_extended_mvout(out + ((size_t)(b * OH + orow) * OW + ocol) * KO + och,
                                 ACC_BIT | acc, J, I);
        }
}

/* Misuse the simulator must refuse, each with a valid 1x1 setup otherwise. */
static int run_error(const char *what) {
  static int8_t xin[16 * 16], win[16 * 16], o[16 * 16];
  static int32_t bi[16];
  int pool = 1, dil = 1, a_stride = 1, orows = 1, ocols = 1, ochs = 16, stride = 1;
  if (strcmp(what, "pool") == 0) pool = 0;
  if (strcmp(what, "dilation") == 0) dil = 2;
  if (strcmp(what, "config_ex") == 0) stride = 2; /* config_ex keeps A_stride 1 */
  if (strcmp(what, "fit") == 0) ocols = 600;
  if (strcmp(what, "field") == 0) stride = 300;
  gemmini_extended3_config_ex(WS, NO_ACTIVATION, 0, ACC_SCALE_IDENTITY, 1, a_stride, 0, 0, 0);
  gemmini_extended_config_st(16, NO_ACTIVATION, 1.0f);
  gemmini_loop_conv_ws(1, 16, 16, 16, 16, 16, 16, 16, 16, stride, 0, 1, dil, 1, 1, 0, 1, orows,
                       ocols, ochs, 1, 1, 16, 0, 0, 0, 0, 0, 0, 0, 0, orows, ocols, win, o, bi,
                       xin, false, pool, false, false, false, NO_ACTIVATION, false, false, false,
                       false, 0, 16, 16, 16, false, 0, 0);
  return 0;
}

static void *read_exact(FILE *f, size_t n) {
  void *p = calloc(n ? n : 1, 1);
  if (p == NULL || fread(p, 1, n, f) != n) {
    fprintf(stderr, "short input\n");
    exit(2);
  }
  return p;
}

int main(int argc, char **argv) {
  FILE *f;
  int8_t *out_loop, *out_seq;
  size_t out_n;
  int split;
  if (argc == 3 && strcmp(argv[1], "err") == 0) return run_error(argv[2]);
  if (argc != 16) {
    fprintf(stderr, "usage: loop_conv_ws NB H W C KO KH KW S P ACT SCALE BIAS SPLIT IN OUT\n");
    return 2;
  }
  NB = atoi(argv[1]), H = atoi(argv[2]), W = atoi(argv[3]), C = atoi(argv[4]);
  KO = atoi(argv[5]), KH = atoi(argv[6]), KW = atoi(argv[7]), S = atoi(argv[8]);
  P = atoi(argv[9]), act = atoi(argv[10]), scale = strtof(argv[11], NULL);
  bias_on = atoi(argv[12]), split = atoi(argv[13]);
  OH = (H + 2 * P - KH) / S + 1;
  OW = (W + 2 * P - KW) / S + 1;
  f = fopen(argv[14], "rb");
  if (f == NULL) return 2;
  x = read_exact(f, (size_t)NB * H * W * C);
  w = read_exact(f, (size_t)KH * KW * C * KO);
  bias = read_exact(f, (size_t)KO * sizeof(int32_t));
  fclose(f);
  out_n = (size_t)NB * OH * OW * KO;
  out_loop = calloc(out_n, 1);
  out_seq = calloc(out_n, 1);
  gemmini_sim_reset();
  run_loop(out_loop, split);
  gemmini_sim_reset();
  run_sequence(out_seq);
  f = fopen(argv[15], "wb");
  if (f == NULL || fwrite(out_loop, 1, out_n, f) != out_n || fwrite(out_seq, 1, out_n, f) != out_n)
    return 2;
  fclose(f);
  free(x), free(w), free(bias), free(out_loop), free(out_seq);
  return 0;
}
