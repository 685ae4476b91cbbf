"""PolyBench kernels in ATL (coq/Examples/PolyBench/), each derived to a better loop
order or with its time loop unrolled and fused, compiled and checked against our own
numpy transcription of the kernel's definition (issue 13), in float32 and float64, at
the MINI and SMALL dataset sizes of PolyBench/C 4.2.

bicg and mvt have two outputs each: one program (a pair), one kernel returning both.
Inputs follow the suite's style of initialisation (values (i * j + c) mod n / n); gemm's
are its own formulas.  Jacobi: one suite time step is two of ours (A to B, B to A).
jacobi-1d-tiled and jacobi-2d-tiled (overlapped time tiling, jacobi1d_tiled and
jacobi2d_tiled) run with tile k = 7, which divides none of the n (partial last tile), and
an odd T (one step before the unrolled pairs)."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import REPO, requires_coq
from test_time_iteration import jacobi_1d as jacobi1d

DIR = REPO / "coq" / "Examples" / "PolyBench"


def grid(rows: int, cols: int, c: int, mod: int) -> np.ndarray:
    i, j = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
    return ((i * (j + c)) % mod) / mod


def vec(n: int, c: int) -> np.ndarray:
    return (np.arange(n) + c) % n / n


def jacobi2d(a: np.ndarray, steps: int) -> np.ndarray:
    a = a.copy()
    for _ in range(steps):
        b = a.copy()
        b[1:-1, 1:-1] = 0.2 * (a[1:-1, 1:-1] + a[1:-1, :-2] + a[1:-1, 2:] + a[2:, 1:-1]
                               + a[:-2, 1:-1])
        a = b
    return a


def case(name: str, size: str):
    """(file, derivation, inputs, sizes, reference output) for one kernel and dataset."""
    if name == "gemm":
        ni, nj, nk = {"MINI": (20, 25, 30), "SMALL": (60, 70, 80)}[size]
        i, j = np.meshgrid(np.arange(ni), np.arange(nj), indexing="ij")
        C = ((i * j + 1) % ni) / ni
        A, B = grid(ni, nk, 1, nk), grid(nk, nj, 2, nj)
        return ("Gemm.v", "gemm_ikj", {"C": C, "A": A, "B": B},
                {"ni": ni, "nj": nj, "nk": nk}, 1.5 * A @ B + 1.2 * C)
    if name == "2mm":
        ni, nj, nk, nl = {"MINI": (16, 18, 22, 24), "SMALL": (40, 50, 70, 80)}[size]
        A, B, C, D = grid(ni, nk, 1, ni), grid(nk, nj, 2, nj), grid(nj, nl, 3, nl), \
            grid(ni, nl, 4, nk)
        return ("TwoMM.v", "two_mm_ikj", {"A": A, "B": B, "C": C, "D": D},
                {"ni": ni, "nj": nj, "nk": nk, "nl": nl}, (1.5 * A @ B) @ C + 1.2 * D)
    if name == "3mm":
        ni, nj, nk, nl, nm = {"MINI": (16, 18, 20, 22, 24), "SMALL": (40, 50, 60, 70, 80)}[size]
        A, B, C, D = grid(ni, nk, 1, ni), grid(nk, nj, 2, nj), grid(nj, nm, 3, nl), \
            grid(nm, nl, 4, nk)
        return ("ThreeMM.v", "three_mm_ikj", {"A": A, "B": B, "C": C, "D": D},
                {"ni": ni, "nj": nj, "nk": nk, "nl": nl, "nm": nm}, (A @ B) @ (C @ D))
    if name == "atax":
        m, n = {"MINI": (38, 42), "SMALL": (116, 124)}[size]
        A, x = grid(m, n, 1, m), vec(n, 1)
        return ("Atax.v", "atax_rows", {"A": A, "x": x}, {"m": m, "n": n}, A.T @ (A @ x))
    if name == "bicg":  # two outputs, one kernel: (s, q)
        m, n = {"MINI": (38, 42), "SMALL": (116, 124)}[size]
        A, r, p = grid(n, m, 1, n), vec(n, 2), vec(m, 3)
        return ("Bicg.v", "bicg_rows", {"A": A, "r": r, "p": p}, {"m": m, "n": n},
                (A.T @ r, A @ p))
    if name == "mvt":  # two outputs, one kernel: (x1, x2)
        n = {"MINI": 40, "SMALL": 120}[size]
        A, x1, x2, y1, y2 = grid(n, n, 1, n), vec(n, 1), vec(n, 2), vec(n, 3), vec(n, 4)
        return ("Mvt.v", "mvt_rows", {"A": A, "x1": x1, "x2": x2, "y1": y1, "y2": y2},
                {"n": n}, (x1 + A @ y1, x2 + A.T @ y2))
    if name == "mvt-sweep":  # the same, both outputs in one sweep over A (fuse_outputs)
        return ("Mvt.v", "mvt_sweep", *case("mvt", size)[2:])
    if name == "doitgen":
        nq, nr, np_ = {"MINI": (8, 10, 12), "SMALL": (20, 25, 30)}[size]
        A = ((np.arange(nr)[:, None, None] * np.arange(nq)[None, :, None]
              + np.arange(np_)[None, None, :]) % np_) / np_
        C4 = grid(np_, np_, 1, np_)
        return ("Doitgen.v", "doitgen_rows", {"A": A, "C4": C4},
                {"nr": nr, "nq": nq, "np": np_}, A @ C4)
    if name == "gesummv":
        n = {"MINI": 30, "SMALL": 90}[size]
        A, B, x = grid(n, n, 1, n), grid(n, n, 2, n), vec(n, 0)
        return ("Gesummv.v", "gesummv_fused", {"A": A, "B": B, "x": x}, {"n": n},
                1.5 * A @ x + 1.2 * B @ x)
    if name == "gemver":
        n = {"MINI": 40, "SMALL": 120}[size]
        A = grid(n, n, 0, n)
        u1, v1, u2, v2, w, x, y, z = (vec(n, c) for c in range(1, 9))
        Ah = A + np.outer(u1, v1) + np.outer(u2, v2)
        xn = x + 1.2 * Ah.T @ y + z
        return ("Gemver.v", "gemver_rows",
                {"A": A, "u1": u1, "v1": v1, "u2": u2, "v2": v2, "w": w, "x": x, "y": y,
                 "z": z}, {"n": n}, w + 1.5 * Ah @ xn)
    if name == "syrk":
        n, m = {"MINI": (30, 20), "SMALL": (80, 60)}[size]
        C, A = grid(n, n, 2, m), grid(n, m, 1, n)
        want = np.where(np.tril(np.ones((n, n), bool)), 1.2 * C + 1.5 * A @ A.T, C)
        return ("Syrk.v", "syrk_ikj", {"C": C, "A": A}, {"n": n, "m": m}, want)
    if name == "jacobi-1d":
        tsteps, n = {"MINI": (20, 30), "SMALL": (40, 120)}[size]
        A = (np.arange(n) + 2) / n
        return ("Jacobi1d.v", "jacobi1d_fused", {"A": A}, {"n": n, "T": 2 * tsteps},
                jacobi1d(A, 2 * tsteps))
    if name == "jacobi-1d-tiled":  # overlapped time tiling; k divides neither n
        tsteps, n = {"MINI": (20, 30), "SMALL": (41, 120)}[size]
        A = (np.arange(n) + 2) / n
        return ("Jacobi1d.v", "jacobi1d_tiled", {"A": A},
                {"n": n, "T": 2 * tsteps + 1, "k": 7}, jacobi1d(A, 2 * tsteps + 1))
    if name == "jacobi-1d-peeled":  # the step's boundary peeled: a guard-free interior
        tsteps, n = {"MINI": (20, 30), "SMALL": (41, 120)}[size]
        A = (np.arange(n) + 2) / n
        return ("Jacobi1d.v", "jacobi1d_peeled", {"A": A}, {"n": n, "T": 2 * tsteps + 1},
                jacobi1d(A, 2 * tsteps + 1))
    if name == "jacobi-2d":
        tsteps, n = {"MINI": (20, 30), "SMALL": (40, 90)}[size]
        A = grid(n, n, 2, n) + 0.5
        return ("Jacobi2d.v", "jacobi2d_fused", {"A": A}, {"n": n, "T": 2 * tsteps},
                jacobi2d(A, 2 * tsteps))
    if name == "jacobi-2d-tiled":  # overlapped time tiling in strips of k = 7 rows
        tsteps, n = {"MINI": (20, 30), "SMALL": (40, 90)}[size]
        A = grid(n, n, 2, n) + 0.5
        return ("Jacobi2d.v", "jacobi2d_tiled", {"A": A},
                {"n": n, "T": 2 * tsteps + 1, "k": 7}, jacobi2d(A, 2 * tsteps + 1))
    if name == "jacobi-2d-peeled":  # the step's border peeled: a guard-free interior
        tsteps, n = {"MINI": (20, 30), "SMALL": (41, 90)}[size]
        A = grid(n, n, 2, n) + 0.5
        return ("Jacobi2d.v", "jacobi2d_peeled", {"A": A}, {"n": n, "T": 2 * tsteps + 1},
                jacobi2d(A, 2 * tsteps + 1))
    raise AssertionError(name)


KERNELS = ["gemm", "2mm", "3mm", "atax", "bicg", "mvt", "mvt-sweep", "doitgen", "gesummv",
           "gemver", "syrk", "jacobi-1d", "jacobi-1d-tiled", "jacobi-1d-peeled", "jacobi-2d",
           "jacobi-2d-tiled", "jacobi-2d-peeled"]


@requires_coq
@pytest.mark.parametrize("name", KERNELS)
def test_polybench_kernel_matches_our_transcription(name: str) -> None:
    from verisched import pipeline

    file, derivation = case(name, "MINI")[:2]
    derived = pipeline.load(DIR / file, derivation)
    assert derived.safety_gap is None
    for dtype, tol in (("float64", 1e-10), ("float32", 1e-4)):
        checked = pipeline.check(derived, dtype=dtype)
        kernel = pipeline.build(pipeline.render(pipeline.lower(checked, "c")))[derivation]
        for size in ("MINI", "SMALL"):
            _, _, inputs, sizes, want = case(name, size)
            got = kernel({k: v.astype(dtype) for k, v in inputs.items()}, **sizes)
            if isinstance(want, tuple):  # several outputs: one array each, in order
                assert isinstance(got, tuple) and len(got) == len(want)
            else:
                got, want = (got,), (want,)
            for g, w in zip(got, want, strict=True):
                np.testing.assert_allclose(g, w, rtol=tol, atol=tol,
                                           err_msg=f"{name} {size} {dtype}")


@requires_coq
def test_gemm_updates_c_in_place_as_the_suite_does() -> None:
    # beta * C <+> alpha A B: C may be the output (codegen/inplace.py, general form).
    from verisched import pipeline

    file, derivation, inputs, sizes, want = case("gemm", "SMALL")
    checked = pipeline.check(pipeline.load(DIR / file, derivation), dtype="float64")
    kernel = pipeline.build(pipeline.render(pipeline.lower(checked, "c")))[derivation]
    assert kernel.lowered.inplace == ("C",)
    c = inputs["C"].copy()
    got = kernel.call({**inputs, "C": c}, sizes, out=c)
    assert got is c
    np.testing.assert_allclose(c, want, rtol=1e-12, atol=1e-12)
