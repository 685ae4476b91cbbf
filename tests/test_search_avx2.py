"""`verisched search --idioms avx2` (issue 14): our AVX2 instruction specifications as
idioms.  Each kernel of examples/search/vector.v is found with the expected calls,
its certificate is replayed by Coq (broadcast introduced by lanes_bcast_mul /
lanes_bcast_fmadd, then `use_instr`), and the found program, compiled for the avx2
target, computes what the reference interpreter computes for the original one.  The
BLAS family's e-graph does not get the broadcast rule (it would only grow it)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from conftest import requires_coq

from verisched.pybridge.interp import evaluate
from verisched.search import IDIOM_FAMILIES, load_program, saturate, search

REPO = Path(__file__).resolve().parents[1]
VECTOR = REPO / "examples" / "search" / "vector.v"
EXPECTED = {
    "vaxpy": {"avx2_broadcast": 1, "avx2_fmadd": 1},
    "vscale": {"avx2_broadcast": 1, "avx2_mul": 1},
    "vfma": {"avx2_fmadd": 1},
    # Other operand orders: egglog matches them through commutativity; the certificate
    # swaps them into the lane rule's orientation (certify._comm_variants, audit #138).
    "vscale_r": {"avx2_broadcast": 1, "avx2_mul": 1},
    "vaxpy_r": {"avx2_broadcast": 1, "avx2_fmadd": 1},
}


def _avx2_cpu() -> bool:
    try:
        flags = Path("/proc/cpuinfo").read_text().split()
    except OSError:
        return False
    return "avx2" in flags and "fma" in flags


def test_avx2_is_an_idiom_family() -> None:
    assert "avx2" in IDIOM_FAMILIES


def test_blas_search_of_a_vector_kernel_has_no_vector_call() -> None:
    r = saturate(load_program(VECTOR, "vaxpy"), idioms="blas")
    assert not any(name.startswith("avx2_") for name in r.idioms)


@requires_coq
@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_vector_kernel_found_certified_and_run(name: str, tmp_path: Path) -> None:
    r = search(VECTOR, name, idioms="avx2", out=tmp_path)
    assert r.idioms == EXPECTED[name]
    assert r.cost < r.original_cost
    assert r.path is not None
    text = r.path.read_text()
    assert "use_instr avx2_" in text and "Qed." in text
    if "avx2_broadcast" in EXPECTED[name]:
        assert "rw lanes_bcast_" in text
    program = load_program(VECTOR, name)
    rng = np.random.default_rng(8)
    n = 5
    ins = {k: (np.asarray(rng.standard_normal(), dtype=np.float32) if not shape
               else rng.standard_normal((n, 8)).astype(np.float32))
           for k, shape in program.inputs}
    want = evaluate(program.expr, {k: np.float64(v) for k, v in ins.items()}, {"n": n})
    np.testing.assert_allclose(evaluate(r.found, {k: np.float64(v) for k, v in ins.items()},
                                        {"n": n}), want, rtol=1e-12)
    if not _avx2_cpu():
        pytest.skip("no AVX2/FMA on this CPU: the compiled kernel is not run")
    from verisched import pipeline
    kernel = pipeline.compile_derivation(r.path, f"{name}_scheduled", "avx2")
    np.testing.assert_allclose(kernel(ins, n=n), want, rtol=1e-5, atol=1e-5)
    from verisched.cli import main
    c_file = tmp_path / "k.c"
    assert main(["compile", str(r.path), "--derivation", f"{name}_scheduled", "--target",
                 "avx2", "-o", str(c_file), "-q"]) == 0
    assert "_mm256_" in c_file.read_text()
