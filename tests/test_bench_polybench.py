"""bench polybench's helpers (benchmarks/bench_polybench.py): a derivation it cannot build
is a row, not a traceback; the float64 vector rows pick the CPU's derivation or schedule
and block sizes; the gemm rows' peer is one dgemm of numpy's own OpenBLAS."""

from __future__ import annotations

import numpy as np
import pytest
from test_bench_helpers import _load


def test_polybench_names_a_derivation_it_cannot_build_and_goes_on(tmp_path, monkeypatch,
                                                                   capsys) -> None:
    """A derivation that does not load (here: no such name in the file) is a row `not
    built` and a line naming the kernel, file, derivation and cause; no traceback, the
    table still written, exit 1."""
    pb = _load("bench_polybench")
    _file, _d, ref, blas = pb.KERNELS["atax"]
    monkeypatch.setitem(pb.KERNELS, "atax", ("Atax.v", "atax_nope", ref, blas))
    monkeypatch.setattr(pb, "RESULTS_DIR", tmp_path)
    assert pb.main(["--kernels", "atax", "--dataset", "MEDIUM", "--repeat", "1"]) == 1
    err = capsys.readouterr().err
    assert "bench polybench: atax: Atax.v atax_nope not built:" in err, err
    assert "Traceback" not in err
    assert "| atax |" in (tmp_path / "polybench.md").read_text()


def test_polybench_gemm_vec_picks_the_cpus_float64_derivation(monkeypatch) -> None:
    """gemm-vec: the derivation of the CPU's best ISA (gemm_avx512pd, gemm_avx2pd), its
    block sizes from the caches for that tile's width in doubles; doitgen-vec: the
    example's schedule and a depth block; a CPU with neither ISA is refused as a
    CodegenError (the row then reads `not built`)."""
    pb = _load("bench_polybench")
    from verisched.codegen.errors import CodegenError
    from verisched.targets.blocking import gemm_blocks

    sizes = {"ni": 100, "nj": 110, "nk": 120}
    for isa, name, nr in (("avx512", "gemm_avx512pd", 32), ("avx2", "gemm_avx2pd", 8)):
        monkeypatch.setattr(pb, "best_isa", lambda isa=isa: isa)
        target, derivation, got = pb._vector_variant("gemm-vec", sizes)
        assert (target, derivation) == (isa, name)
        assert got == {**sizes, **gemm_blocks(100, 120, 1, nr=nr, elem=8, N=110)}
    # doitgen-vec: no derivation (examples/doitgen_f64.py's schedule), a depth block only
    monkeypatch.setattr(pb, "best_isa", lambda: "avx2")
    dsizes = {"nr": 5, "nq": 7, "np": 300}
    assert pb._vector_variant("doitgen-vec", dsizes) == (
        "avx2", None, {**dsizes, "kc": gemm_blocks(7, 300, 1, nr=16, elem=8, N=300)["kc"]})
    assert all(p.exists() for p in pb.SCHEDULED.values())
    msizes = {"ni": 30, "nj": 40, "nk": 50, "nl": 60}
    assert pb._vector_variant("2mm-vec", msizes) == (
        "avx2", None, {**msizes, **gemm_blocks(30, 40, 1, nr=16, elem=8, N=60)})
    monkeypatch.setattr(pb, "best_isa", lambda: "c")
    with pytest.raises(CodegenError, match="no vector ISA"):
        pb._vector_variant("gemm-vec", sizes)


def test_polybench_gemm_peer_is_one_dgemm_of_numpys_openblas() -> None:
    """The gemm rows' peer: numpy's own OpenBLAS, one cblas_dgemm with alpha and beta,
    the suite's result; C itself untouched."""
    pb = _load("bench_polybench")
    gemm = pb._openblas_gemm()
    if gemm is None:
        pytest.skip("numpy's OpenBLAS exports no scipy_cblas_dgemm64_ here")
    rng = np.random.default_rng(4)
    x = {"A": rng.uniform(-1, 1, (7, 5)), "B": rng.uniform(-1, 1, (5, 9)),
         "C": rng.uniform(-1, 1, (7, 9))}
    c = x["C"].copy()
    np.testing.assert_allclose(gemm(x), 1.5 * x["A"] @ x["B"] + 1.2 * x["C"], rtol=1e-13)
    np.testing.assert_array_equal(x["C"], c)
