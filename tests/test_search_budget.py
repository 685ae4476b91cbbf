"""A search that cannot finish (issue 14): examples/search/explode.v, a kernel of ours
(not in LIAR's table), a gemv plus a sum of ten vectors.  Associativity and
commutativity of + (rules assoc_l, assoc_r, comm) give the sum an e-class per subset of
its terms, so the e-graph grows about sevenfold a step and passes the *default* node
budget; the search stops with a message that says which budget, at which step, and
which e-graph the program comes from; the step that went over is undone, the best
program so far (the gemv, found in the first steps) is extracted, and Coq certifies it.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from conftest import requires_coq

from verisched.pybridge.interp import evaluate
from verisched.search import load_program, search

REPO = Path(__file__).resolve().parents[1]
EXPLODE = REPO / "examples" / "search" / "explode.v"


@requires_coq
def test_explosion_stops_at_the_default_budget_with_the_best_so_far(tmp_path: Path) -> None:
    progress: list[str] = []
    r = search(EXPLODE, "gemv_plus_many", out=tmp_path, progress=progress.append)
    assert r.stopped is not None
    assert r.stopped.startswith("node budget (") and "> 50000) at step" in r.stopped
    assert "undone" in r.stopped and r.enodes <= 50_000
    assert not r.saturated
    assert any("stopped: node budget" in line for line in progress)
    assert r.idioms == {"blas_gemv": 1}
    assert r.cost < r.original_cost
    assert r.path is not None and "Qed." in r.path.read_text()
    program = load_program(EXPLODE, "gemv_plus_many")
    rng = np.random.default_rng(5)
    sizes = {"n": 6, "m": 4}
    ins = {name: rng.standard_normal((6, 4) if name == "A" else (4 if name == "x" else 6))
           for name, _ in program.inputs}
    np.testing.assert_allclose(evaluate(r.found, ins, sizes),
                               evaluate(program.expr, ins, sizes), rtol=1e-12)
