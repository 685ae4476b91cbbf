"""PolyBench's 2mm, `D := alpha A B C + beta D` (alpha 1.5, beta 1.2), as the suite
computes it (`tmp = alpha A B`, then `beta D + tmp C`), with both products in float64
vector instructions (decision #154): each the SGEMM schedule of
coq/Examples/Directives/Sgemm.v (row blocks of 6 mcr rows, depth blocks of kc, a
6 x (4 vectors) register tile of doubles, packed operands), `alpha * A` computed once
as a buffer, and the intermediate `tmp` packed for the second product's micro-kernel
(`stage` of a let buffer, Coq's `stage_let`, decision #155).  Proved in Coq as it runs
(not in `make proofs`); checked against numpy at sizes no multiple of the tile or the
blocks; `verisched bench polybench` times it against OpenBLAS (its 2mm-vec row).
Run: python examples/two_mm_f64.py
"""

from __future__ import annotations

import numpy as np

from verisched.schedule import Schedule, dsl
from verisched.schedule.directives import ISAS
from verisched.targets.auto import best_vector_isa
from verisched.targets.base import Kernel

ni, nj, nk, nl, mcr, kc = dsl.sizes("ni nj nk nl mcr kc")
A, B = dsl.tensor("A", ni, nk), dsl.tensor("B", nk, nj)
C, D = dsl.tensor("C", nj, nl), dsl.tensor("D", ni, nl)
two_mm = dsl.program("two_mm", dsl.let(
    "tmp", dsl.gen("i1", ni, lambda i: dsl.gen("j1", nj, lambda j: dsl.sum(
        "k1", nk, lambda k: 1.5 * A[i, k] * B[k, j]))),
    lambda tmp: dsl.gen("i2", ni, lambda i: dsl.gen("j2", nl, lambda j: 1.2 * D[i, j] + dsl.sum(
        "k2", nj, lambda k: tmp[i, k] * C[k, j])))),
    inputs=[A, B, C, D], sizes=["ni", "nj", "nk", "nl", "mcr", "kc"],
    assume=[mcr >= 1, kc >= 1, nk >= 0, nj >= 0])


def scheduled(isa: str) -> Kernel:
    """2mm's kernel in `isa`'s float64 instructions (avx512pd or avx2pd)."""
    w = ISAS[isa]
    with Schedule.of(two_mm) as s:
        s = (s.name_buffer("slit 3 2 * A _[ _ ] _[ _ ]", "As")  # alpha A, once
              .compute_root("As")
              .rename_loop("i1", "ia").rename_loop("k1", "ka")  # As's loops (the first)
              # the consumer, D's scaled copy fissioned off its row blocks
              .split("i2", mcr * 6, "io", "ii").fission("ii")
              .split("k2", kc, "ko", "kk").reorder("ko", "ii", "j2")
              .register_tile("ii", "j2", 6, 4 * w, isa, into=("im", "ir", "jm", "jv", "l"),
                             buffer="t")
              .stage("C", "io", "Cp").compute_root("Cp")
              .stage("tmp", "ko", "Tp")                 # the intermediate, packed
              .select_instr("t", isa)
              # the producer tmp = (alpha A) B
              .split("i1", mcr * 6, "io1", "ii1")
              .split("k1", kc, "ko1", "kk1").reorder("ko1", "ii1", "j1")
              .register_tile("ii1", "j1", 6, 4 * w, isa,
                             into=("im1", "ir1", "jm1", "jv1", "l1"), buffer="t1")
              .stage("B", "io1", "Bp").compute_root("Bp")
              .stage("As", "ko1", "Ap")
              .select_instr("t1", isa))
        return s.compile()


def main() -> None:
    isa = best_vector_isa(dtype="float64")           # avx512pd where the CPU has AVX-512
    kernel = scheduled(isa)
    rng = np.random.default_rng(6)
    for (i, j, k, m), (rows, depth) in (((1, 1, 1, 1), (1, 1)), ((13, 17, 19, 37), (1, 5)),
                                        ((25, 40, 9, 70), (2, 16))):
        x = {"A": rng.standard_normal((i, k)), "B": rng.standard_normal((k, j)),
             "C": rng.standard_normal((j, m)), "D": rng.standard_normal((i, m))}
        got = kernel(x, ni=i, nj=j, nk=k, nl=m, mcr=rows, kc=depth)
        want = (1.5 * x["A"] @ x["B"]) @ x["C"] + 1.2 * x["D"]
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    print(f"2mm in {isa}, both products register-tiled, float64, checked against numpy")


if __name__ == "__main__":
    main()
