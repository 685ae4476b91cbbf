"""A chained matmul (A·B)·C with the producer A·B computed per row of the result:
Halide's `AB.compute_at(out, i)`, one directive.  Each row of the output needs one
row of A·B, so the buffer shrinks from n x p to 1 x p.  Run: python examples/chained_matmul.py
"""

from __future__ import annotations

import numpy as np

from verisched.schedule import Schedule, dsl

n, m, p, q = dsl.sizes("n m p q")
A, B, C = dsl.tensor("A", n, m), dsl.tensor("B", m, p), dsl.tensor("C", p, q)

chain = dsl.program("chain", dsl.let(
    "AB", dsl.gen("r", n, lambda r: dsl.gen("c", p, lambda c:
                                            dsl.sum("t", m, lambda t: A[r, t] * B[t, c]))),
    lambda AB: dsl.gen("i", n, lambda i: dsl.gen("j", q, lambda j:
                                                 dsl.sum("k", p, lambda k: AB[i, k] * C[k, j])))),
    inputs=[A, B, C], sizes=["n", "m", "p", "q"])


def main() -> None:
    with Schedule.of(chain) as s:
        s = s.compute_at("AB", "i").simpl_guard()   # the schedule: two directives
        print(s.text)
        kernel = s.compile("c")
    rng = np.random.default_rng(0)
    for sizes in ({"n": 7, "m": 5, "p": 3, "q": 11}, {"n": 1, "m": 1, "p": 1, "q": 1}):
        a = rng.standard_normal((sizes["n"], sizes["m"])).astype(np.float32)
        b = rng.standard_normal((sizes["m"], sizes["p"])).astype(np.float32)
        c = rng.standard_normal((sizes["p"], sizes["q"])).astype(np.float32)
        got = kernel({"A": a, "B": b, "C": c}, **sizes)
        np.testing.assert_allclose(got, (a.astype(np.float64) @ b @ c), rtol=1e-4, atol=1e-4)
    print("chained matmul: compute_at AB i, checked against numpy")


if __name__ == "__main__":
    main()
