"""The 3x3 convolution layer of coq/Examples/Conv.v (NHWC input, HWIO weights, stride 1,
no padding), scheduled from Python with the directives of coq/Examples/Directives/Conv.v:
an output row as a matrix product (pixels x output channels), a 6 x 16 register tile of
2 x 8 lanes whose last pixel tile is guarded (`rows="guard"`: the row width need not be
a multiple of 6), the im2col panel of each output row staged pixel-major, the weights
packed once, then AVX2 instructions.  The kernel is checked against a numpy convolution
at sizes that are not multiples of 6 or 16.
Run: python examples/conv3x3.py
"""

from __future__ import annotations

import numpy as np

from verisched.schedule import Schedule, dsl

NB, H, W, CI, KO = dsl.sizes("NB H W CI KO")
img_in = dsl.tensor("I", NB, H + 2, W + 2, CI)  # named I in Coq, as in Conv.v
w = dsl.tensor("w", 3, 3, CI, KO)
conv = dsl.program(
    "conv",
    dsl.gen("n", NB, lambda n: dsl.gen("y", H, lambda y: dsl.gen("x", W, lambda x:
        dsl.gen("k", KO, lambda k: dsl.sum("r", 3, lambda r: dsl.sum("s", 3, lambda s:
            dsl.sum("c", CI, lambda c: img_in[n, y + r, x + s, c] * w[r, s, c, k]))))))),
    inputs=[img_in, w], sizes=["NB", "H", "W", "CI", "KO"], assume=[CI >= 1])


def reference(img: np.ndarray, wts: np.ndarray) -> np.ndarray:
    """out[n,y,x,k] = sum_{r,s,c} img[n,y+r,x+s,c] wts[r,s,c,k], in float64."""
    nb, hp, wp, _ = img.shape
    out = np.zeros((nb, hp - 2, wp - 2, wts.shape[3]))
    for r in range(3):
        for s in range(3):
            window = img[:, r:r + hp - 2, s:s + wp - 2, :].astype(np.float64)
            out += np.einsum("nyxc,ck->nyxk", window, wts[r, s].astype(np.float64))
    return out


def main() -> None:
    with Schedule.of(conv) as s:
        s = (s.register_tile("x", "k", 6, 16, "avx2", into=("xo", "ir", "jm", "jv", "l"),
                             buffer="t", rows="guard")  # 6 pixels x 16 channels, 2 x 8 lanes
              .stage("I", "y", "Ap")                    # the row's im2col panel, pixel-major
              .stage("w", "y", "Wp")                    # the weights' 16-channel panels ...
              .compute_root("Wp")                       # ... packed once
              .select_instr("t", "avx2"))               # AVX2 instructions, t in registers
        kernel = s.compile("avx2")
    rng = np.random.default_rng(3)
    for nb, h, wd, ci, ko in ((1, 1, 1, 1, 1), (2, 3, 7, 5, 17), (1, 4, 13, 3, 35)):
        img = rng.standard_normal((nb, h + 2, wd + 2, ci)).astype(np.float32)
        wts = rng.standard_normal((3, 3, ci, ko)).astype(np.float32)
        got = kernel({"I": img, "w": wts}, NB=nb, H=h, W=wd, CI=ci, KO=ko)
        np.testing.assert_allclose(got, reference(img, wts), rtol=1e-4, atol=1e-4)
    print(f"3x3 convolution (AVX2) in {len(s.steps) - 1} directives, "
          "checked against numpy")


if __name__ == "__main__":
    main()
