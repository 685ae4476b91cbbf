"""A matrix-vector product whose rows are summed by vector accumulators: Halide's
rfactor idiom.

Halide: `y.update().split(r, ro, ri, 16)`, `intm = y.update().rfactor(ri, u)`,
`intm.vectorize(u)` (and its update's), `y.update().atomic().vectorize(ri)`.  Here four
directives: `split` the depth, `rfactor` its lanes into a buffer `t` whose generation
`u` sits inside the depth loop (`tlet t := SUM [jo] GEN [u < 16] .. in SUM [ji < 16]
t[ji]`), `vectorize u`: 16 (or 8 with AVX2) partial sums per row kept in one vector,
and `vectorize ji`: their final sum one horizontal add (`reduce_add`, decision #151).
Each step is proved in Coq (coq/Rewrites/Rfactor.v, coq/Targets/Vectorize.v); the
split's guard tail gives the last vector its mask, so any m works.
Run: python examples/matvec_rfactor.py
"""

from __future__ import annotations

import numpy as np

from verisched.schedule import Schedule, dsl
from verisched.targets.auto import best_vector_isa

n, m = dsl.sizes("n m")
A, x = dsl.tensor("A", n, m), dsl.tensor("x", m)
matvec = dsl.program("matvec", dsl.gen("i", n, lambda i:
                                       dsl.sum("j", m, lambda j: A[i, j] * x[j])))


def main() -> None:
    isa = best_vector_isa()          # avx512 where the CPU has it, else avx2
    lanes = {"avx2": 8, "avx512": 16}[isa]
    with Schedule.of(matvec) as s:
        s = s.split("j", lanes, "jo", "ji").rfactor("ji", "u", "t")
        print(s.text)
        s = s.vectorize("u", isa).vectorize("ji", isa)
        kernel = s.compile(isa)
    rng = np.random.default_rng(2)
    for rows, cols in ((1, 1), (9, 37), (40, 1001)):
        a = rng.standard_normal((rows, cols)).astype(np.float32)
        v = rng.standard_normal(cols).astype(np.float32)
        np.testing.assert_allclose(kernel({"A": a, "x": v}, n=rows, m=cols),
                                   a.astype(np.float64) @ v, rtol=1e-4, atol=1e-4)
    print(f"matvec rows as {isa} accumulators in 4 directives (split, rfactor, vectorize "
          "the lanes and their sum), checked against numpy")


if __name__ == "__main__":
    main()
