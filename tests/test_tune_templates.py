"""The micro-kernel templates of the tuner's space (tune/templates.py): the directive
chains they write are the hand schedules' (examples/sgemm_avx2.py), their points are
proved by Coq and their kernels match numpy at sizes that are not tile multiples,
and a template that does not fit (a register tile on matvec) is refused by the
directive and logged as refused.  Budgets are counts of candidates, never times."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import requires_coq

from verisched import pipeline
from verisched.schedule import dsl
from verisched.schedule.coqfile import derived_name, standalone
from verisched.targets.cpu import cpu_flags
from verisched.targets.registry import get_target
from verisched.tune import tune
from verisched.tune.space import Space, with_template

n, m = dsl.sizes("n m")
A, x = dsl.tensor("A", n, m), dsl.tensor("x", m)
MATVEC = dsl.program("matvec", dsl.gen("i", n, lambda i:
                                       dsl.sum("j", m, lambda j: A[i, j] * x[j])))
M, N, K = dsl.sizes("M N K")
GA, GB, GC = dsl.tensor("A", M, K), dsl.tensor("B", K, N), dsl.tensor("C", M, N)
SGEMM = dsl.program(
    "sgemm", dsl.gen("i", M, lambda i: dsl.gen("j", N, lambda j: GC[i, j] + dsl.sum(
        "k", K, lambda k: GA[i, k] * GB[k, j]))), inputs=[GA, GB, GC], sizes=["M", "N", "K"])

LANES = {"template": "lanes", "ln_isa": "avx2", "ln_rows": 16, "ln_stage": True}
KERNEL = {"template": "microkernel", "mk_isa": "avx2", "mk_mc": 48, "mk_kc": 64, "mk_mr": 6,
          "mk_nr": 16, "mk_pack_col": True, "mk_pack_row": True, "mk_select": True}
# matvec's nest is a generation over a sum: register_tile refuses it (Coq says why)
MATVEC_KERNEL = {**KERNEL, "mk_select": False}
avx2 = pytest.mark.skipif("avx2" not in cpu_flags(), reason="the CPU has no AVX2")


def test_sgemm_template_is_the_hand_chain() -> None:
    space = Space.of(SGEMM, get_target("avx2"))
    assert "microkernel" in space.templates
    calls = [(op.method, op.args) for op in space.ops(KERNEL)]
    assert calls == [("split", ("i", {"mul": [8, 6]}, "io", "ii")), ("fission", ("ii",)),
                     ("split", ("k", 64, "ko", "kd")), ("reorder", ("ko", "ii", "j")),
                     ("register_tile", ("ii", "j", 6, 16, "avx2")),
                     ("stage", ("B", "io", "Bp")), ("compute_root", ("Bp",)),
                     ("stage", ("A", "ko", "Ap")), ("select_instr", ("t", "avx2"))]


def test_loop_points_keep_their_params_and_seeds_start_with_templates() -> None:
    space = Space.of(MATVEC, get_target("avx2"))
    assert with_template(space, {"order": "i,j"})["template"] == "loops"
    assert with_template(space, LANES) == LANES
    seeds = space.seeds({"order": "i,j"})
    assert [s.get("template") for s in seeds[:2]] == ["microkernel", "microkernel"]
    assert any(s.get("template") == "lanes" for s in seeds)
    assert [op.method for op in space.ops(LANES)] == ["split", "reorder", "rw", "stage",
                                                   "rename_loop", "vectorize"]


@requires_coq
@avx2
def test_matvec_lanes_proved_and_register_tile_refused(tmp_path) -> None:
    res = tune(MATVEC, target="avx2", sizes={"n": 37, "m": 45}, budget=None, trials=3,
               jobs=1, out_dir=tmp_path, enqueue=[LANES, MATVEC_KERNEL], seeds=False)
    by = {r.params.get("template", "loops"): r for r in res.records}
    assert by["lanes"].status == "proved", by["lanes"].message
    refused = by["microkernel"]
    assert refused.status == "refused" and refused.median_s is None
    assert "register_tile" in refused.message
    assert res.counters.refused >= 1
    rng = np.random.default_rng(5)
    path = tmp_path / "lanes.v"
    path.write_text(standalone(MATVEC, by["lanes"].steps, closed=True))
    kern = pipeline.compile_derivation(path, derived_name(MATVEC), "avx2")
    for rows, cols in ((37, 45), (70, 9), (1, 1)):
        a = rng.standard_normal((rows, cols)).astype(np.float32)
        v = rng.standard_normal(cols).astype(np.float32)
        np.testing.assert_allclose(kern({"A": a, "x": v}, n=rows, m=cols),
                                   a.astype(np.float64) @ v, rtol=1e-4, atol=1e-4)


@requires_coq
@avx2
def test_sgemm_microkernel_point_is_proved_and_its_winner_checked(tmp_path) -> None:
    res = tune(SGEMM, target="avx2", sizes={"M": 31, "N": 37, "K": 29}, budget=None,
               trials=2, jobs=1, out_dir=tmp_path, enqueue=[KERNEL], seeds=False)
    rec = next(r for r in res.records if r.params.get("template") == "microkernel")
    assert rec.status == "proved", rec.message
    assert [op[0] for op in rec.ops].count("register_tile") == 1
    assert res.coq is not None and res.coq.ok, res.coq
    rng = np.random.default_rng(6)
    path = tmp_path / "mk.v"
    path.write_text(standalone(SGEMM, rec.steps, closed=True))
    kern = pipeline.compile_derivation(path, derived_name(SGEMM), "avx2")
    for mm, nn, kk in ((31, 37, 29), (1, 1, 1), (50, 20, 70)):
        a = rng.standard_normal((mm, kk)).astype(np.float32)
        b = rng.standard_normal((kk, nn)).astype(np.float32)
        c = rng.standard_normal((mm, nn)).astype(np.float32)
        np.testing.assert_allclose(kern({"A": a, "B": b, "C": c}, M=mm, N=nn, K=kk),
                                   c.astype(np.float64) + a.astype(np.float64) @ b,
                                   rtol=1e-4, atol=1e-4)


DOT = {"template": "dot", "dt_isa": "avx2", "dt_vectors": 2}


@requires_coq
@avx2
def test_matvec_dot_point_proved_and_matches_numpy(tmp_path) -> None:
    # the reduction as 2 vector accumulators of 8 lanes (rfactor), summed by 2
    # horizontal adds: rows of 45 = 2 chunks of 16 and 13 left, of 9 none full, of 1
    # a tail only
    space = Space.of(MATVEC, get_target("avx2"))
    assert [op.method for op in space.ops(DOT)] == ["split", "rfactor", "vectorize",
                                                     "vectorize"]
    res = tune(MATVEC, target="avx2", sizes={"n": 37, "m": 45}, budget=None, trials=2,
               jobs=1, out_dir=tmp_path, enqueue=[DOT], seeds=False)
    rec = next(r for r in res.records if r.params.get("template") == "dot")
    assert rec.status == "proved", rec.message
    rng = np.random.default_rng(7)
    path = tmp_path / "dot.v"
    path.write_text(standalone(MATVEC, rec.steps, closed=True))
    kern = pipeline.compile_derivation(path, derived_name(MATVEC), "avx2")
    assert any("vs_hsum8(" in x for x in kern.lowered.body)   # the lanes' final sum
    for rows, cols in ((37, 45), (70, 9), (1, 1), (5, 64)):
        a = rng.standard_normal((rows, cols)).astype(np.float32)
        v = rng.standard_normal(cols).astype(np.float32)
        np.testing.assert_allclose(kern({"A": a, "x": v}, n=rows, m=cols),
                                   a.astype(np.float64) @ v, rtol=1e-4, atol=1e-4)
