"""A 1-D two-stage stencil, fused and tiled by 8 with guard-free interior tiles.

    buf(j) = f(j) + f(j);   out(i) = [i >= 1] buf(i - 1) + buf(i)

Halide: `buf.compute_inline(); out.split(i, io, ii, 8, TailStrategy::...)`.  Here: inline
the producer, split with a peeled tail (a guard-free epilogue), split off the first tile
(the only one where `i >= 1` can fail) and drop the guards the bounds prove.  Five steps.
Run: python examples/stencil_fuse_tile.py
"""

from __future__ import annotations

import numpy as np

from verisched.schedule import Schedule, dsl

(n,) = dsl.sizes("n")
f = dsl.tensor("f", n)
stencil = dsl.program("stencil", dsl.let(
    "buf", dsl.gen("j", n, lambda j: f[j] + f[j]),
    lambda buf: dsl.gen("i", n, lambda i: dsl.guard(i >= 1, buf[i - 1]) + buf[i])))


def main() -> None:
    with Schedule.of(stencil) as s:
        s = (s.bound(n >= 8)                                  # at least one full tile
              .inline("buf")                                  # fuse the two stages
              .split("i", 8, "io", "ii", tail="peel")         # 8-wide tiles, peeled tail
              .rw("gen_partition 0 (n / 8) 1")                # the first tile apart
              .simpl_guard())                                 # interior: no guard left
        print(s.text)
        kernel = s.compile("c")
    rng = np.random.default_rng(0)
    for size in (8, 9, 37, 64):
        x = rng.standard_normal(size).astype(np.float32)
        want = 2 * x + np.concatenate([[0.0], 2 * x[:-1]])
        np.testing.assert_allclose(kernel({"f": x}, n=size), want, rtol=1e-5, atol=1e-5)
    print("stencil fused and tiled in 5 steps, checked against numpy")


if __name__ == "__main__":
    main()
