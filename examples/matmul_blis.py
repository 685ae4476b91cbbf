"""The BLIS-style matrix multiply of coq/Examples/Matmul.v, scheduled from Python with the
same 12 directives as coq/Examples/Directives/Matmul.v: depth blocks of kc outermost,
row blocks of mc in register blocks of mr, column blocks of nc in register blocks of nr,
B's kc x N panel and A's mc x kc block packed (Exo's stage_mem).  Block sizes stay
symbolic (hypotheses 0 < mc, ...), so the kernel takes them per call.
Run: python examples/matmul_blis.py
"""

from __future__ import annotations

import numpy as np

from verisched.schedule import Schedule, dsl

M, N, K, mc, mr, nc, nr, kc = dsl.sizes("M N K mc mr nc nr kc")
A, B = dsl.tensor("A", M, K), dsl.tensor("B", K, N)
matmul = dsl.program(
    "matmul", dsl.gen("i", M, lambda i: dsl.gen("j", N, lambda j:
                                                dsl.sum("k", K, lambda k: A[i, k] * B[k, j]))),
    inputs=[A, B], sizes=["M", "N", "K", "mc", "mr", "nc", "nr", "kc"],
    assume=[mc >= 1, mr >= 1, nc >= 1, nr >= 1, kc >= 1])


def main() -> None:
    with Schedule.of(matmul) as s:
        s = (s.split("k", kc, "ko", "kk")      # depth blocks of kc
              .reorder("ko", "i", "j")          # outermost
              .split("i", mc, "io", "ii")       # rows: blocks of mc ...
              .split("ii", mr, "im", "ir")      # ... of register blocks of mr
              .reorder("j", "ir")
              .split("j", nc, "jo", "ji")       # columns: blocks of nc ...
              .split("ji", nr, "jm", "jr")      # ... of register blocks of nr
              .reorder("ir", "jr")
              .reorder("kk", "ir", "jr")        # the depth loop outside the register block
              .stage("B", "ko", "Bp")           # B's kc x N panel per depth block
              .stage("A", "io", "Ap")           # A's mc x kc block per row block
              .merge_guards())
        print(len(s.steps) - 1, "directives")
        kernel = s.compile("c")
    rng = np.random.default_rng(4)
    blocks = {"mc": 8, "mr": 3, "nc": 16, "nr": 4, "kc": 5}
    for m, n, k in ((1, 1, 1), (13, 21, 11), (30, 17, 9)):
        a = rng.standard_normal((m, k)).astype(np.float32)
        b = rng.standard_normal((k, n)).astype(np.float32)
        got = kernel({"A": a, "B": b}, M=m, N=n, K=k, **blocks)
        np.testing.assert_allclose(got, a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)
    print("BLIS matmul in 12 directives, checked against numpy")


if __name__ == "__main__":
    main()
