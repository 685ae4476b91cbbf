"""PolyBench's 3mm, `G := (A B) (C D)`, as the suite computes it (`E = A B`, `F = C D`,
`G = E F`), with the three products in float64 vector instructions (decision #154):
each the SGEMM schedule of coq/Examples/Directives/Sgemm.v (row blocks of 6 mcr rows,
depth blocks of kc, a 6 x (4 vectors) register tile of doubles, packed operands), the
intermediates `E` and `F` packed for the last product as inputs are (`stage` of a let
buffer, Coq's `stage_let`, decision #155; `F`'s pack made per row block, since it
cannot move above `F`'s own let).  Proved in Coq as it runs (not in `make proofs`);
checked against numpy at sizes no multiple of the tile or the blocks; `verisched bench
polybench` times it against OpenBLAS (its 3mm-vec row).
Run: python examples/three_mm_f64.py
"""

from __future__ import annotations

import numpy as np

from verisched.schedule import Schedule, dsl
from verisched.schedule.directives import ISAS
from verisched.targets.auto import best_vector_isa
from verisched.targets.base import Kernel

ni, nj, nk, nl, nm, mcr, kc = dsl.sizes("ni nj nk nl nm mcr kc")
A, B = dsl.tensor("A", ni, nk), dsl.tensor("B", nk, nj)
C, D = dsl.tensor("C", nj, nm), dsl.tensor("D", nm, nl)


def _mm(i: str, j: str, k: str, rows: dsl.Ix, cols: dsl.Ix, depth: dsl.Ix, x, y) -> dsl.T:
    return dsl.gen(i, rows, lambda a: dsl.gen(j, cols, lambda b: dsl.sum(
        k, depth, lambda c: x[a, c] * y[c, b])))


three_mm = dsl.program("three_mm", dsl.let(
    "E", _mm("i1", "j1", "k1", ni, nj, nk, A, B),
    lambda E: dsl.let("F", _mm("i2", "j2", "k2", nj, nl, nm, C, D),
                      lambda F: _mm("i3", "j3", "k3", ni, nl, nj, E, F))),
    inputs=[A, B, C, D], sizes=["ni", "nj", "nk", "nl", "nm", "mcr", "kc"],
    assume=[mcr >= 1, kc >= 1, nk >= 0, nm >= 0, nj >= 0])


def _tiled(s: Schedule, n: str, x: str, y: str, y_once: bool, isa: str) -> Schedule:
    """Product `n` (loops i<n>, j<n>, k<n>) as Sgemm.v's schedule: `x` packed per depth
    block, `y` per row block (once for the program where `y_once`)."""
    w = ISAS[isa]
    s = (s.split(f"i{n}", mcr * 6, f"io{n}", f"ii{n}")
          .split(f"k{n}", kc, f"ko{n}", f"kk{n}").reorder(f"ko{n}", f"ii{n}", f"j{n}")
          .register_tile(f"ii{n}", f"j{n}", 6, 4 * w, isa, buffer=f"t{n}",
                         into=(f"im{n}", f"ir{n}", f"jm{n}", f"jv{n}", f"l{n}"))
          .stage(y, f"io{n}", f"{y}p"))
    if y_once:
        s = s.compute_root(f"{y}p")
    return s.stage(x, f"ko{n}", f"{x}p").select_instr(f"t{n}", isa)


def scheduled(isa: str) -> Kernel:
    """3mm's kernel in `isa`'s float64 instructions (avx512pd or avx2pd)."""
    with Schedule.of(three_mm) as s:
        s = _tiled(s, "3", "E", "F", False, isa)   # G = E F, E and F let buffers
        s = _tiled(s, "2", "C", "D", True, isa)    # F = C D
        s = _tiled(s, "1", "A", "B", True, isa)    # E = A B
        return s.compile()


def main() -> None:
    isa = best_vector_isa(dtype="float64")           # avx512pd where the CPU has AVX-512
    kernel = scheduled(isa)
    rng = np.random.default_rng(9)
    for (i, j, k, m, o), (rows, depth) in (((1, 1, 1, 1, 1), (1, 1)),
                                           ((13, 17, 19, 37, 11), (1, 5)),
                                           ((25, 40, 9, 70, 33), (2, 16))):
        x = {"A": rng.standard_normal((i, k)), "B": rng.standard_normal((k, j)),
             "C": rng.standard_normal((j, o)), "D": rng.standard_normal((o, m))}
        got = kernel(x, ni=i, nj=j, nk=k, nl=m, nm=o, mcr=rows, kc=depth)
        want = (x["A"] @ x["B"]) @ (x["C"] @ x["D"])
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    print(f"3mm in {isa}, its three products register-tiled, float64, checked against numpy")


if __name__ == "__main__":
    main()
