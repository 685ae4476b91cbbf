"""The 3x3 box blur of coq/Examples/Blur.v with its boundary guards, fused, with the
border rows and columns peeled so the interior carries no guard: Blur.v's `blur_fused`
(9 hand-aimed steps), here one directive, as in coq/Examples/Directives/BlurFused2.v.

A Python function is a stage written once and inlined where it is called (Halide's
default for a Func): `blur_x` below is Blur.v's `blur_xg`.
Run: python examples/blur_fused.py
"""

from __future__ import annotations

import numpy as np

from verisched.schedule import Schedule, dsl

n, m = dsl.sizes("n m")
v = dsl.tensor("v", n, m)


def blur_x(x: dsl.Ix, y: dsl.Ix) -> dsl.T:
    """The horizontal 3-tap sum at (y, x), zero outside the image."""
    row = (dsl.guard(x - 1 >= 0, v[y, x - 1]) + v[y, x]) + dsl.guard(x + 1 < m, v[y, x + 1])
    return dsl.guard((y >= 0) & (y < n), row)


blur = dsl.program("blur", dsl.gen("y", n, lambda y: dsl.gen("x", m, lambda x:
                   (blur_x(x, y - 1) + blur_x(x, y)) + blur_x(x, y + 1))),
                   assume=[n >= 2, m >= 2])


def reference(img: np.ndarray) -> np.ndarray:
    p = np.pad(img.astype(np.float64), 1)
    h = p[:, :-2] + p[:, 1:-1] + p[:, 2:]
    return h[:-2] + h[1:-1] + h[2:]


def main() -> None:
    with Schedule.of(blur) as s:
        s = s.peel("y", "x")     # first and last rows and columns apart; guards resolved
        print(s.text[:400], "...")
        kernel = s.compile("openmp")
    rng = np.random.default_rng(6)
    for rows, cols in ((2, 2), (3, 17), (40, 33)):
        img = rng.standard_normal((rows, cols)).astype(np.float32)
        np.testing.assert_allclose(kernel({"v": img}, n=rows, m=cols), reference(img),
                                   rtol=1e-5, atol=1e-5)
    print("blur fused and peeled in 1 directive, checked against numpy")


if __name__ == "__main__":
    main()
