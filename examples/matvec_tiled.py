"""A matrix-vector product tiled on two levels: 64 x 64 blocks of 8 x 8 tiles.

Halide: `y.tile(i, j, io, jo, ii, ji, 64, 64).tile(ii, ji, iio, jjo, iii, jji, 8, 8)`
(with j a reduction variable).  Two directives; each tile is guarded where it may be
partial, so any n and m work.  Run: python examples/matvec_tiled.py
"""

from __future__ import annotations

import numpy as np

from verisched.schedule import Schedule, dsl

n, m = dsl.sizes("n m")
A, x = dsl.tensor("A", n, m), dsl.tensor("x", m)
matvec = dsl.program("matvec", dsl.gen("i", n, lambda i:
                                       dsl.sum("j", m, lambda j: A[i, j] * x[j])))


def main() -> None:
    with Schedule.of(matvec) as s:
        s = (s.tile("i", "j", 64, 64, "io", "jo", "ii", "ji")
              .tile("ii", "ji", 8, 8, "iio", "jjo", "iii", "jji"))
        print(s.text)
        kernel = s.compile("c")
    rng = np.random.default_rng(1)
    for rows, cols in ((1, 1), (70, 9), (131, 200)):
        a = rng.standard_normal((rows, cols)).astype(np.float32)
        v = rng.standard_normal(cols).astype(np.float32)
        np.testing.assert_allclose(kernel({"A": a, "x": v}, n=rows, m=cols),
                                   a.astype(np.float64) @ v, rtol=1e-4, atol=1e-4)
    print("matvec tiled on two levels in 2 directives, checked against numpy")


if __name__ == "__main__":
    main()
