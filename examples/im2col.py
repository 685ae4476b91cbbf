"""im2col (the ATL paper's Sec. 8.3, Fig. 12; coq/Examples/Im2col.v), scheduled from Python
as coq/Examples/Directives/Im2col.v does.  A convolution's read-with-offset x[n,c,p+r] is
bound as a buffer and moved to the root by one `compute_root` (Halide's compute_root,
Exo's lift_alloc): the hand derivation's chain of let-lifting rewrites, one per loop, in
one directive.  The hoisted buffer is the im2col matrix, and what remains reads it as a
matrix multiply.
  - 1-D (conv1d_im2col_safe, 8 rewrites -> 4 steps): the read is first guarded by x's
    width, so the buffer is zero-padded and every access is proved in bounds;
  - 2-D (conv2d_gemm, 14 rewrites -> 5 steps): the reduction over (c, s, r) flattened to
    one index j, then the packed weights wm[k, j] and the im2col buffer a[n, q, p, j]
    each computed at the root: out[n,k,q,p] = sum_j wm[k,j] * a[n,q,p,j], a GEMM.
Run: python examples/im2col.py
"""

from __future__ import annotations

import numpy as np

from verisched.schedule import Schedule, dsl

# ---- 1-D: out[n,k,p] = sum_c sum_r w[k,c,r] * x[n,c,p+r], reads past W are zero ----------
B, K, C, W, R = dsl.sizes("B K C W R")
x1, w1 = dsl.tensor("x", B, C, W), dsl.tensor("w", K, C, R)
conv1d = dsl.program(
    "conv1d",
    dsl.gen("n", B, lambda n: dsl.gen("k", K, lambda k: dsl.gen("p", W, lambda p:
        dsl.sum("c", C, lambda c: dsl.sum("r", R, lambda r:
            w1[k, c, r] * x1[n, c, p + r]))))),
    inputs=[x1, w1], sizes=["B", "K", "C", "W", "R"])

# ---- 2-D, "valid" (every read in bounds), stride 1 ------------------------------------------
H, KH, KW = dsl.sizes("H KH KW")
x2, w2 = dsl.tensor("x", B, C, H, W), dsl.tensor("w", K, C, KH, KW)
conv2d = dsl.program(
    "conv2d",
    dsl.gen("n", B, lambda n: dsl.gen("k", K, lambda k:
        dsl.gen("q", H - KH + 1, lambda q: dsl.gen("p", W - KW + 1, lambda p:
            dsl.sum("c", C, lambda c: dsl.sum("s", KH, lambda s: dsl.sum("r", KW, lambda r:
                w2[k, c, s, r] * x2[n, c, q + s, p + r]))))))),
    inputs=[x2, w2], sizes=["B", "K", "C", "H", "W", "KH", "KW"],
    assume=[KH >= 1, KW >= 1])


def reference1d(xa: np.ndarray, wa: np.ndarray) -> np.ndarray:
    """The 1-D convolution by numpy, x zero-padded by R on the right (ATL's zero reads)."""
    r_ext = wa.shape[2]
    xp = np.pad(xa.astype(np.float64), ((0, 0), (0, 0), (0, r_ext)))
    win = np.lib.stride_tricks.sliding_window_view(xp, r_ext, axis=2)[:, :, :xa.shape[2]]
    return np.einsum("ncpr,kcr->nkp", win, wa.astype(np.float64))


def reference2d(xa: np.ndarray, wa: np.ndarray) -> np.ndarray:
    """The valid 2-D convolution by numpy (a sliding window over both image axes)."""
    win = np.lib.stride_tricks.sliding_window_view(xa.astype(np.float64), wa.shape[2:],
                                                   axis=(2, 3))
    return np.einsum("ncqpsr,kcsr->nkqp", win, wa.astype(np.float64))


def main() -> None:
    rng = np.random.default_rng(12)
    with Schedule.of(conv1d) as s:
        s = (s.rw("get_bound_guard W []", at="x _[ _ ] _[ _ ] _[ _ ]")  # guard by x's width
              .rw("guard_and_l")                                       # 0 <= p + r: bounds
              .name_buffer("|[ _ ]| x _[ _ ] _[ _ ] _[ _ ]", "a")
              .compute_root("a"))                                      # Fig. 12's hoists
        print(s.text)
        kernel = s.compile("c")
    for b, k, c, width, r_ext in ((1, 1, 1, 1, 1), (2, 3, 4, 7, 3), (3, 2, 5, 11, 4),
                                  (1, 2, 2, 3, 5)):
        xa = rng.standard_normal((b, c, width)).astype(np.float32)
        wa = rng.standard_normal((k, c, r_ext)).astype(np.float32)
        got = kernel({"x": xa, "w": wa}, B=b, K=k, C=c, W=width, R=r_ext)
        np.testing.assert_allclose(got, reference1d(xa, wa), rtol=1e-4, atol=1e-4)

    with Schedule.of(conv2d) as s:
        s = (s.rw("sum_flatten3")                                      # j for (c, s, r)
              .name_buffer("w _[ _ ] _[ _ ] _[ _ ] _[ _ ]", "wm")
              .compute_root("wm")                                      # packed weights
              .name_buffer("x _[ _ ] _[ _ ] _[ _ ] _[ _ ]", "a")
              .compute_root("a"))                                      # the im2col buffer
        print(s.text)
        kernel = s.compile("c")
    for b, k, c, h, width, kh, kw in ((1, 1, 1, 1, 1, 1, 1), (2, 3, 2, 7, 9, 3, 2),
                                      (1, 4, 3, 10, 6, 5, 3)):
        xa = rng.standard_normal((b, c, h, width)).astype(np.float32)
        wa = rng.standard_normal((k, c, kh, kw)).astype(np.float32)
        got = kernel({"x": xa, "w": wa}, B=b, K=k, C=c, H=h, W=width, KH=kh, KW=kw)
        np.testing.assert_allclose(got, reference2d(xa, wa), rtol=1e-4, atol=1e-4)
    print("im2col 1-D (4 steps) and 2-D to GEMM (5 steps) by compute_root, "
          "checked against numpy")


if __name__ == "__main__":
    main()
