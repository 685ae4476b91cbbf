"""PolyBench's doitgen, `out[r][q][p] = SUM s A[r][q][s] * C4[s][p]` (a batch of nr
matrix products by one nq x np by np x np product each), in float64 vector instructions
(decision #154): depth blocks of kc moved outside the (q, p) nest, a 6 x (4 vectors)
register tile of doubles with a guarded last row panel (any nq), C4 packed once for
every r, then the CPU's float64 instructions (avx512pd: 8 lanes, avx2pd: 4), A's
elements broadcast from A itself.  Six directives, each proved in Coq; the kernel is
checked against numpy at sizes no multiple of the tile; `verisched bench polybench`
times it against OpenBLAS (its doitgen-vec row).  Not a derivation of
coq/Examples/PolyBench/Doitgen.v: proved as it runs, so `make proofs` does not pay for it.
Run: python examples/doitgen_f64.py
"""

from __future__ import annotations

import numpy as np

from verisched.schedule import Schedule, dsl
from verisched.schedule.directives import ISAS
from verisched.targets.auto import best_vector_isa
from verisched.targets.base import Kernel

nr, nq, np_, kc = dsl.sizes("nr nq np kc")
A, C4 = dsl.tensor("A", nr, nq, np_), dsl.tensor("C4", np_, np_)
doitgen = dsl.program(
    "doitgen", dsl.gen("r", nr, lambda r: dsl.gen("q", nq, lambda q: dsl.gen(
        "p", np_, lambda p: dsl.sum("s", np_, lambda s: A[r, q, s] * C4[s, p])))),
    inputs=[A, C4], sizes=["nr", "nq", "np", "kc"], assume=[kc >= 1])


def scheduled(isa: str) -> Kernel:
    """doitgen's kernel in `isa`'s float64 instructions (avx512pd or avx2pd), six
    directives; `bench polybench` times this too (its doitgen-vec row)."""
    w = ISAS[isa]
    with Schedule.of(doitgen) as s:
        s = (s.split("s", kc, "so", "sk")           # depth blocks of kc ...
              .reorder("so", "q", "p")              # ... outside the (q, p) nest
              .register_tile("q", "p", 6, 4 * w, isa, into=("qm", "qr", "pm", "pv", "l"),
                             buffer="t", rows="guard")   # 6 x 4 vectors, any nq
              .stage("C4", "r", "Cp")               # C4's micro-panels ...
              .compute_root("Cp")                   # ... packed once, for every r
              .select_instr("t", isa))              # float64 instructions, t in registers
        return s.compile()                          # float64: its instructions say so


def main() -> None:
    isa = best_vector_isa(dtype="float64")          # avx512pd where the CPU has AVX-512
    kernel = scheduled(isa)
    rng = np.random.default_rng(3)
    w = ISAS[isa]
    for r, q, p, k in ((1, 1, 1, 1), (2, 7, 37, 5), (3, 13, 9 * w + 3, 16)):
        a, c4 = rng.standard_normal((r, q, p)), rng.standard_normal((p, p))
        got = kernel({"A": a, "C4": c4}, nr=r, nq=q, np=p, kc=k)
        np.testing.assert_allclose(got, a @ c4, rtol=1e-12, atol=1e-12)
    print(f"doitgen in {isa} (six directives), float64, checked against numpy")


if __name__ == "__main__":
    main()
