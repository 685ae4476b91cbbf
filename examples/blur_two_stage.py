"""Fig. 8's two-stage blur (coq/Examples/Blur.v's `blur_two_stage`, 11 hand-aimed steps):
the horizontal pass computed breadth-first into an (n + 2) x m buffer, the vertical
pass reading it, borders peeled.  Two directives, as in
coq/Examples/Directives/BlurFused2.v: `stage_rows` (Halide's compute_root of the
producer, with the 3-row halo), then `peel`.
Run: python examples/blur_two_stage.py
"""

from __future__ import annotations

import runpy
from pathlib import Path

import numpy as np

from verisched.schedule import Schedule

# The algorithm and its numpy reference are blur_fused.py's (one copy of the blur).
_FUSED = runpy.run_path(str(Path(__file__).with_name("blur_fused.py")))
blur, blur_x, reference = (_FUSED[k] for k in ("blur", "blur_x", "reference"))


def main() -> None:
    with Schedule.of(blur) as s:
        s = (s.stage_rows(lambda r, c: blur_x(c, r), "y", "buf")   # the buffer, rows -1..n
              .peel("y", "x"))                                      # borders apart
        print(len(s.steps) - 1, "directives")
        print(s.text[:300], "...")
        kernel = s.compile("openmp")
    rng = np.random.default_rng(8)
    for rows, cols in ((2, 2), (3, 17), (40, 33)):
        img = rng.standard_normal((rows, cols)).astype(np.float32)
        np.testing.assert_allclose(kernel({"v": img}, n=rows, m=cols), reference(img),
                                   rtol=1e-5, atol=1e-5)
    print("blur two-stage in 2 directives, checked against numpy")


if __name__ == "__main__":
    main()
