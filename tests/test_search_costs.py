"""Measured call costs for the extraction (search/costs.py, decisions #85): the table is
measured from our own kernels (each idiom's CBLAS call against its own loop, both checked
by Coq and built), kept per CPU, and it changes what the extraction takes.  No timing is
asserted: only that the costs are finite and positive, and what a given table implies."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from conftest import requires_coq

from verisched.search import SearchArgumentError, load_program, saturate
from verisched.search import costs as C
from verisched.search.rules import CALL_COST
from verisched.targets.cpu import cpu_model

REPO = Path(__file__).resolve().parents[1]
KERNELS = REPO / "examples" / "search" / "liar_blas.v"


@requires_coq
def test_measured_costs_are_built_and_timed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                            ) -> None:
    monkeypatch.setenv("VERISCHED_CACHE_DIR", str(tmp_path))
    got = C.measure(names=("blas_dot", "blas_fill"))
    assert set(got) == {"blas_dot", "blas_fill"}
    assert all(math.isfinite(v) and v > 0 for v in got.values())


def test_liar_cost_counts_loops_per_iteration() -> None:
    import verisched.targets.blas  # noqa: F401
    from verisched.pybridge.instrs import spec_of

    # SUM [k < n] x[k] * y[k]: 1 + n * (1 + (1 + (1 + 1) + (1 + 1)))
    assert C.liar_cost(spec_of("blas_dot").body, {"n": 10}) == 1 + 10 * 6


def test_a_measured_table_changes_the_extraction(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """axpy found by LIAR's constants; with a measured table where the call is dearer than
    the loop (as the out-of-place axpy, two passes, measures here), the loop is kept.  The
    table is read from the cache on the next search, not measured again."""
    monkeypatch.setenv("VERISCHED_CACHE_DIR", str(tmp_path))
    calls: list[int] = []

    def fake(progress=None, names=None):  # noqa: ANN001, ANN202
        calls.append(1)
        return {"blas_axpy": 50.0}

    monkeypatch.setattr(C, "measure", fake)
    program = load_program(KERNELS, "axpy")
    liar = saturate(program, costs="liar")
    assert "blas_axpy" in liar.idioms
    measured = saturate(program, costs="measured")
    assert measured.idioms == {} and calls == [1]
    saved = json.loads((tmp_path / C.FILE).read_text())
    assert saved["costs"] == {"blas_axpy": 50.0} and saved["cpu"] == cpu_model()
    assert saturate(program, costs="measured").idioms == {} and calls == [1]
    assert C.call_costs("measured")["blas_gemm"] == CALL_COST["blas_gemm"]


def test_unknown_costs_is_an_argument_error() -> None:
    program = load_program(KERNELS, "axpy")
    with pytest.raises(SearchArgumentError, match="costs must be one of liar, measured"):
        saturate(program, costs="guess")


@pytest.mark.parametrize("kw, says", [
    ({"steps": -1}, "steps must be at least 0, not -1"),
    ({"steps": "3"}, "steps must be an integer, not '3'"),
    ({"nodes": 0}, "nodes must be at least 1, not 0"),
    ({"nodes": 2.5}, "nodes must be an integer, not 2.5"),
    ({"timeout": 0}, "timeout must be above 0 (seconds), not 0"),
    ({"timeout": float("nan")}, "timeout must be above 0 (seconds), not nan"),
])
def test_a_wrong_limit_is_named_with_its_value(kw: dict, says: str) -> None:
    """One message said "steps must be >= 0, nodes and timeout > 0" whichever was
    wrong, and a string reached a comparison's TypeError."""
    program = load_program(KERNELS, "axpy")
    with pytest.raises(SearchArgumentError) as err:
        saturate(program, **kw)
    assert str(err.value) == says
    assert saturate(program, steps=np.int64(1), nodes=np.int64(500)).idioms is not None


def test_an_out_that_is_no_directory_is_refused_before_the_search(tmp_path: Path) -> None:
    """Not after a search of a minute, in mkdir's NotADirectoryError."""
    from verisched.search import search

    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(SearchArgumentError, match=r"out '.*/file/x': cannot be made a "
                       r"directory \(.*/file is not a directory\)"):
        search(KERNELS, "axpy", out=blocker / "x")


def test_costs_that_cannot_be_measured_are_a_message(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """No OpenBLAS (or no Coq) on the machine: a one-line error naming the way out, no
    traceback, and no half-written table."""
    from verisched.cli import main
    from verisched.codegen.errors import CompileError

    monkeypatch.setenv("VERISCHED_CACHE_DIR", str(tmp_path))

    def broken(progress=None, names=None):  # noqa: ANN001, ANN202
        raise CompileError("cannot find -lopenblas")

    monkeypatch.setattr(C, "measure", broken)
    assert main(["search", str(KERNELS), "--program", "axpy", "--costs", "measured",
                 "-q"]) == 1
    err = capsys.readouterr().err
    assert "cannot measure the idiom costs" in err and "--costs liar" in err
    assert "Traceback" not in err and not (tmp_path / C.FILE).exists()
