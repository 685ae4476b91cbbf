"""Scatter to gather (the ATL paper's Sec. 8.2, Fig. 11; coq/Examples/ScatterGather.v, 13
hand-aimed rewrites), scheduled from Python as coq/Examples/Directives/ScatterGather.v does.
The scatter walks the input positions i outermost and accumulates x[n,c,i] * w[k,c,i-p]
into every output position p it reaches: an outermost reduction that cannot run in
parallel.  One `reorder` moves the generations n, k, p out (the paper's six loop
exchanges); the paper's indicator algebra (introduce the kernel offset r = i - p as a sum
around the product, collapse the sum over i to its one term i = p + r) stays as library
rewrites, one per line of Fig. 11.  The result
is the gather: out[n,k,p] = sum_c sum_r [p + r < W] x[n,c,p+r] * w[k,c,r].
Run: python examples/scatter_gather.py
"""

from __future__ import annotations

import numpy as np

from verisched.schedule import Schedule, dsl

B, K, C, W, R = dsl.sizes("B K C W R")
x, w = dsl.tensor("x", B, C, W), dsl.tensor("w", K, C, R)
scatter = dsl.program(
    "scatter",
    dsl.sum("i", W, lambda i: dsl.gen("n", B, lambda n: dsl.gen("k", K, lambda k:
        dsl.sum("c", C, lambda c: dsl.gen("p", W, lambda p:
            x[n, c, i] * dsl.guard((i - p < R) & (i - p >= 0), w[k, c, i - p])))))),
    inputs=[x, w], sizes=["B", "K", "C", "W", "R"])


def reference(xa: np.ndarray, wa: np.ndarray) -> np.ndarray:
    """The scatter itself, run by numpy: each input column i adds its contribution to the
    output columns p = i - r it reaches (an independent check of the derived gather)."""
    b, _, width = xa.shape
    k, _, r_ext = wa.shape
    out = np.zeros((b, k, width))
    for i in range(width):
        for p in range(max(0, i - r_ext + 1), i + 1):
            out[:, :, p] += xa[:, :, i].astype(np.float64) @ wa[:, :, i - p].T
    return out


def main() -> None:
    with Schedule.of(scatter) as s:
        s = (s.rw("guard_andb_comm")                  # 0 <= i - p < R
              .rw("smul_sum_indicator_get")           # x[i] w[i-p] = SUM r [r = i-p] x[i] w[r]
              .reorder("n", "k", "p", "c", "r", "i")  # Fig. 11's six loop exchanges
              .rw("sum_indicator_sub")                # the sum over i: its term i = p + r
              .simpl_guard())                         # 0 <= p + r from the loop bounds
        print(s.text)
        print(len(s.steps) - 1, "steps (reorder, 3 rewrites, simpl_guard) instead of 13")
        kernel = s.compile("c")
    rng = np.random.default_rng(8)
    for b, k, c, width, r_ext in ((1, 1, 1, 1, 1), (2, 3, 4, 7, 3), (3, 5, 2, 10, 4),
                                  (2, 2, 3, 3, 5)):
        xa = rng.standard_normal((b, c, width)).astype(np.float32)
        wa = rng.standard_normal((k, c, r_ext)).astype(np.float32)
        got = kernel({"x": xa, "w": wa}, B=b, K=k, C=c, W=width, R=r_ext)
        np.testing.assert_allclose(got, reference(xa, wa), rtol=1e-4, atol=1e-4)
    print("scatter to gather (reorder + the paper's indicator algebra), checked against numpy")


if __name__ == "__main__":
    main()
