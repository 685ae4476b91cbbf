"""A transposed matmul, C = Aᵀ·B, reordered so the innermost loop runs along rows of B
and C, then vectorized with AVX2 where the CPU has it.

    C(i, j) = Σ_k A(k, i) · B(k, j)

Halide: `C.update().reorder(j, i, k).vectorize(j, 8)`.  Two directives: `reorder i k j`
makes j innermost (a generation under the sum over k), `vectorize j with avx2` turns
its lanes into AVX2 instructions with a masked tail.  Run: python examples/matmul_transposed.py
"""

from __future__ import annotations

import numpy as np

from verisched.pipeline import TargetUnavailable, get_target
from verisched.schedule import Schedule, dsl

n, m, K = dsl.sizes("n m K")
A, B = dsl.tensor("A", K, n), dsl.tensor("B", K, m)
atb = dsl.program("atb", dsl.gen("i", n, lambda i: dsl.gen("j", m, lambda j:
                  dsl.sum("k", K, lambda k: A[k, i] * B[k, j]))), inputs=[A, B])


def main() -> None:
    try:
        get_target("avx2").check_runtime()
        target = "avx2"
    except TargetUnavailable:
        target = "c"  # no AVX2 here: the reordered schedule, scalar
    with Schedule.of(atb) as s:
        s = s.reorder("i", "k", "j")
        if target == "avx2":
            s = s.vectorize("j", "avx2")
        print(s.text)
        kernel = s.compile(target)
    rng = np.random.default_rng(2)
    for k, rows, cols in ((1, 1, 1), (5, 13, 21), (33, 7, 64)):
        a = rng.standard_normal((k, rows)).astype(np.float32)
        b = rng.standard_normal((k, cols)).astype(np.float32)
        np.testing.assert_allclose(kernel({"A": a, "B": b}, n=rows, m=cols, K=k),
                                   a.T.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)
    print(f"transposed matmul reordered and vectorized ({target}), checked against numpy")


if __name__ == "__main__":
    main()
