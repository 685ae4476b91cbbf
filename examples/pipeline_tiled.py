"""The tiled two-stage pipeline of coq/Examples/PipelineTiled.v (the ATL paper's Sec. 2),
scheduled from Python as coq/Examples/Directives/PipelineTiled.v does: fuse the stages,
split the loop by 8, and give each tile its own buffer.  Halide:
`output.split(x, xo, xi, 8); buf.compute_at(output, xo)`.
Run: python examples/pipeline_tiled.py
"""

from __future__ import annotations

import numpy as np

from verisched.schedule import Schedule, dsl

(n,) = dsl.sizes("n")
f = dsl.tensor("f", n)
pipeline = dsl.program("pipeline", dsl.let(
    "buf", dsl.gen("j", n, lambda j: f[j]),
    lambda buf: dsl.gen("i", n, lambda i: dsl.guard(i - 1 >= 0, buf[i - 1]) + buf[i])))


def main() -> None:
    with Schedule.of(pipeline) as s:
        s = (s.inline("buf")                        # fuse: buf into its two uses
              .rw("get_gen").rw("get_gen")          # ... and read f directly
              .split("i", 8, "io", "ii")            # 8-wide tiles, the last one guarded
              .rw("gen_store_guard", at="GEN [ ii < 8 ] _"))  # each tile into its buffer
        print(s.text)
        kernel = s.compile("c")
    rng = np.random.default_rng(5)
    for size in (1, 8, 13, 50):
        x = rng.standard_normal(size).astype(np.float32)
        want = x + np.concatenate([[0.0], x[:-1]])
        np.testing.assert_allclose(kernel({"f": x}, n=size), want, rtol=1e-5, atol=1e-5)
    print("pipeline tiled by 8, checked against numpy")


if __name__ == "__main__":
    main()
