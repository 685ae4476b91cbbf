"""The SGEMM AVX2 kernel of coq/Examples/Sgemm.v (C + A B, BLIS-style), scheduled from
Python with the directives of coq/Examples/Directives/Sgemm.v: row blocks of 6 mcr rows
with C's copy split off them (fission), depth blocks of kc, a 6 x 16 register tile of
2 x 8 lanes, B packed once and A per depth block (Exo's stage_mem), then AVX2
instructions (broadcast x load multiplies, masked stores, the tile in registers).  The
kernel is checked against numpy at sizes that are not multiples of 6, 16 or kc.
Run: python examples/sgemm_avx2.py
"""

from __future__ import annotations

import numpy as np

from verisched.schedule import Schedule, dsl

M, N, K, mcr, kc = dsl.sizes("M N K mcr kc")
A, B, C = dsl.tensor("A", M, K), dsl.tensor("B", K, N), dsl.tensor("C", M, N)
sgemm = dsl.program(
    "sgemm", dsl.gen("i", M, lambda i: dsl.gen("j", N, lambda j: C[i, j] + dsl.sum(
        "k", K, lambda k: A[i, k] * B[k, j]))),
    inputs=[A, B, C], sizes=["M", "N", "K", "mcr", "kc"], assume=[mcr >= 1, kc >= 1])


def main() -> None:
    with Schedule.of(sgemm) as s:
        s = (s.split("i", mcr * 6, "io", "ii")    # row blocks of mc = 6 mcr, C's rows too
              .fission("ii")                      # C's copy <+> the product, per row block
              .split("k", kc, "ko", "kk")         # depth blocks of kc ...
              .reorder("ko", "ii", "j")           # ... just inside the row blocks
              .register_tile("ii", "j", 6, 16, "avx2", into=("im", "ir", "jm", "jv", "l"),
                             buffer="t")          # 6 x 16 accumulators, 2 x 8 lanes
              .stage("B", "io", "Bp")             # B's panel per row block ...
              .compute_root("Bp")                 # ... packed once, for all of them
              .stage("A", "ko", "Ap")             # A's mc x kc block per depth block
              .select_instr("t", "avx2"))         # AVX2 instructions, t in registers
        print(len(s.steps) - 1, "directives")
        kernel = s.compile("avx2")             # refuses to run on a CPU without AVX2
    rng = np.random.default_rng(12)
    for m, n, k, blocks in ((1, 1, 1, (1, 1)), (13, 21, 11, (1, 4)), (31, 37, 29, (2, 8))):
        a = rng.standard_normal((m, k)).astype(np.float32)
        b = rng.standard_normal((k, n)).astype(np.float32)
        c = rng.standard_normal((m, n)).astype(np.float32)
        got = kernel({"A": a, "B": b, "C": c}, M=m, N=n, K=k, mcr=blocks[0], kc=blocks[1])
        want = c.astype(np.float64) + a.astype(np.float64) @ b
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    print(f"SGEMM (AVX2) in {len(s.steps) - 1} directives, checked against numpy")


if __name__ == "__main__":
    main()
