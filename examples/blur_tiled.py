"""Fig. 9's tiled blur (coq/Examples/Blur.v's `blur_tiled`, 16 hand-aimed steps), scheduled
from Python with the directives of coq/Examples/Directives/BlurTiled.v: the border peeled,
the interior tiled kn x km with guard-free full tiles, each full tile computing its own
(kn + 2) x km buffer of the horizontal pass.  The blur is written with its boundary guards
(examples/blur_fused.py's program), so Coq's `inline blur_xg` has no Python counterpart.
Tile sizes stay symbolic: the kernel takes them per call.
Run: python examples/blur_tiled.py
"""

from __future__ import annotations

import runpy
from pathlib import Path

import numpy as np

from verisched.schedule import Schedule, dsl

# The algorithm and its numpy reference are blur_fused.py's (one copy of the blur).
_FUSED = runpy.run_path(str(Path(__file__).with_name("blur_fused.py")))
n, m, v, blur_x, reference = (_FUSED[k] for k in ("n", "m", "v", "blur_x", "reference"))
kn, km = dsl.sizes("kn km")

blur = dsl.program("blur", dsl.gen("y", n, lambda y: dsl.gen("x", m, lambda x:
                   (blur_x(x, y - 1) + blur_x(x, y)) + blur_x(x, y + 1))),
                   inputs=[v], sizes=["n", "m", "kn", "km"],
                   assume=[n >= 2, m >= 2, kn >= 1, km >= 1])



def row(r: dsl.Ix, c: dsl.Ix) -> dsl.T:
    """The horizontal pass over one buffer row r, column c, as it reads in the peeled
    interior (Directives/BlurTiled.v's `stage_rows` argument)."""
    return (v[r, c - 1] + v[r, c]) + v[r, c + 1]


def main() -> None:
    with Schedule.of(blur) as s:
        s = (s.peel("y", "x", into=("yc", "xc"))                       # border apart
              .tile("yc", "xc", kn, km, "yo", "xo", "yi", "xi", partition=True)
              .stage_rows(row, "yi", "buf")                             # (kn+2) x km buffer
              .apply("simpl_index."))                                   # Fig. 9's indices
        print(len(s.steps) - 1, "directives")
        kernel = s.compile("c")
    rng = np.random.default_rng(9)
    for rows, cols, tn, tm in ((2, 2, 1, 1), (11, 17, 4, 5), (40, 33, 8, 7)):
        img = rng.standard_normal((rows, cols)).astype(np.float32)
        got = kernel({"v": img}, n=rows, m=cols, kn=tn, km=tm)
        np.testing.assert_allclose(got, reference(img), rtol=1e-5, atol=1e-5)
    print("blur tiled in 4 directives, checked against numpy")


if __name__ == "__main__":
    main()
