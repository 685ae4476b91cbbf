"""The stencil and register-tile templates of the tuner (tune/templates_layers.py): the
directive chains they write are the hand schedules' (coq/Examples/Directives/BlurVec.v,
BlurTiled.v, Conv.v), seeds follow the nest's shape, a template that does not fit is
refused by the directive, and each new problem's winner is a `.v` that coqc accepts,
whose kernel matches numpy at sizes that are not tile multiples.  Budgets are counts of
candidates, never times."""

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
v = dsl.tensor("v", n, m)


def _blur_x(x: dsl.Ix, y: dsl.Ix) -> dsl.T:
    row = (dsl.guard(x - 1 >= 0, v[y, x - 1]) + v[y, x]) + dsl.guard(x + 1 < m, v[y, x + 1])
    return dsl.guard((y >= 0) & (y < n), row)


BLUR = dsl.program("blur", dsl.gen("y", n, lambda y: dsl.gen("x", m, lambda x:
                   (_blur_x(x, y - 1) + _blur_x(x, y)) + _blur_x(x, y + 1))),
                   inputs=[v], sizes=["n", "m"], assume=[n >= 2, m >= 2])
NB, H, W, CI, KO = dsl.sizes("NB H W CI KO")
IMG, WTS = dsl.tensor("I", NB, H + 2, W + 2, CI), dsl.tensor("w", 3, 3, CI, KO)
CONV = dsl.program(
    "conv",
    dsl.gen("n", NB, lambda n: dsl.gen("y", H, lambda y: dsl.gen("x", W, lambda x:
        dsl.gen("k", KO, lambda k: dsl.sum("r", 3, lambda r: dsl.sum("s", 3, lambda s:
            dsl.sum("c", CI, lambda c: IMG[n, y + r, x + s, c] * WTS[r, s, c, k]))))))),
    inputs=[IMG, WTS], sizes=["NB", "H", "W", "CI", "KO"], assume=[CI >= 1])
n2, m2 = dsl.sizes("n m")
A, x = dsl.tensor("A", n2, m2), dsl.tensor("x", m2)
MATVEC = dsl.program("matvec", dsl.gen("i", n2, lambda i:
                                       dsl.sum("j", m2, lambda j: A[i, j] * x[j])))

STENCIL = {"template": "stencil", "st_isa": "avx2", "st_peel": True, "st_tile": False}
STENCIL_TILED = {"template": "stencil", "st_isa": "avx2", "st_peel": True, "st_tile": True,
                 "st_kn": 8, "st_km": 64}
STENCIL_MASKED = {"template": "stencil", "st_isa": "avx2", "st_peel": False}
RTILE = {"template": "rtile", "rt_isa": "avx2", "rt_mr": 6, "rt_nr": 16,
         "rt_pack_row": True, "rt_pack_col": True, "rt_select": True}
avx2 = pytest.mark.skipif("avx2" not in cpu_flags(), reason="the CPU has no AVX2")


def blur_reference(img: np.ndarray) -> np.ndarray:
    p = np.pad(img.astype(np.float64), 1)
    h = p[:, :-2] + p[:, 1:-1] + p[:, 2:]
    return h[:-2] + h[1:-1] + h[2:]


def conv_reference(img: np.ndarray, wts: np.ndarray) -> np.ndarray:
    _, hp, wp, _ = img.shape
    out = np.zeros((img.shape[0], hp - 2, wp - 2, wts.shape[3]))
    for r in range(3):
        for s in range(3):
            win = img[:, r:r + hp - 2, s:s + wp - 2, :].astype(np.float64)
            out += np.einsum("nyxc,ck->nyxk", win, wts[r, s].astype(np.float64))
    return out


def test_stencil_template_is_the_blur_hand_chain() -> None:
    # Directives/BlurVec.v: the border peeled, the interior columns vectorized; with a
    # tile, Directives/BlurTiled.v's partitioned tiles, the tile's columns vectorized
    space = Space.of(BLUR, get_target("avx2-openmp"))
    assert {"stencil", "rtile"} <= set(space.templates)
    calls = [(op.method, op.args, dict(op.kwargs)) for op in space.ops(STENCIL)]
    assert calls == [("peel", ("y", "x"), {"into": ("yc", "xc")}),
                     ("vectorize", ("xc", "avx2"), {})]
    tiled = [(op.method, op.args) for op in space.ops({**STENCIL_TILED, "st_parallel": True})]
    assert tiled[1:] == [("tile", ("yc", "xc", 8, 64, "yo", "xo", "yi", "xi")),
                         ("vectorize", ("xi", "avx2")), ("parallel", ("yo",))]
    scalar = space.ops({"template": "stencil", "st_isa": "none", "st_tile": False})
    assert [op.method for op in scalar] == ["peel"]
    # examples/blur_borders.v: no peel, the borders as masked loads
    masked = [(op.method, op.args) for op in space.ops({**STENCIL_MASKED, "st_parallel": True})]
    assert masked == [("vectorize", ("x", "avx2")), ("parallel", ("y",))]


def test_rtile_template_is_the_conv_hand_chain() -> None:
    # Directives/Conv.v: the output row x k register-tiled with a guarded last pixel
    # tile, the im2col panel and the weights staged at the row, the weights packed once
    space = Space.of(CONV, get_target("avx2"))
    calls = [(op.method, op.args, dict(op.kwargs)) for op in space.ops(RTILE)]
    assert calls == [
        ("register_tile", ("x", "k", 6, 16, "avx2"),
         {"buffer": "t", "into": ("xo", "ir", "jm", "jv", "l"), "rows": "guard"}),
        ("stage", ("I", "y", "Ip"), {}), ("stage", ("w", "y", "wp"), {}),
        ("compute_root", ("wp",), {}), ("select_instr", ("t", "avx2"), {})]
    omp = Space.of(CONV, get_target("avx2-openmp"))
    assert omp.ops({**RTILE, "rt_parallel": "row"})[-1].args == ("y",)     # output rows
    assert omp.ops({**RTILE, "rt_parallel": "outer"})[-1].args == ("n",)   # the batch
    assert omp.ops({**RTILE, "rt_parallel": "none"})[-1].method == "select_instr"


def test_seeds_follow_the_nest_shape() -> None:
    # a nest without a reduction starts with the stencil points, a conv-shaped nest
    # with the register tile's; matvec (one generation) with neither
    blur = Space.of(BLUR, get_target("avx512"))
    first = blur.seeds({})
    assert first[0] == {"template": "stencil", "st_isa": "avx512", "st_peel": True,
                        "st_tile": False}
    assert first[1] == {"template": "stencil", "st_isa": "avx512", "st_peel": True,
                        "st_tile": True, "st_kn": 32, "st_km": 256}
    assert first[2] == {"template": "stencil", "st_isa": "avx512", "st_peel": False}
    conv = Space.of(CONV, get_target("avx512"))
    head = conv.seeds({})[0]
    assert head["template"] == "rtile" and head["rt_nr"] == 32 and head["rt_select"]
    mv = Space.of(MATVEC, get_target("avx2"))
    assert not any(s.get("template") in ("stencil", "rtile") for s in mv.seeds({}))
    assert with_template(blur, STENCIL) == STENCIL


@requires_coq
@avx2
def test_blur_stencil_points_proved_winner_checked(tmp_path) -> None:
    res = tune(BLUR, target="avx2", sizes={"n": 19, "m": 45}, budget=None, trials=4,
               jobs=1, out_dir=tmp_path, enqueue=[STENCIL, STENCIL_TILED, STENCIL_MASKED],
               seeds=False)
    recs = {repr(sorted(r.params.items())): r for r in res.records}
    for p in (STENCIL, STENCIL_TILED, STENCIL_MASKED):
        rec = recs[repr(sorted(p.items()))]
        assert rec.status == "proved", rec.message
    assert res.best is not None and res.coq is not None and res.coq.ok, res.coq
    rng = np.random.default_rng(11)
    for p in (STENCIL, STENCIL_TILED, STENCIL_MASKED):
        rec = recs[repr(sorted(p.items()))]
        path = tmp_path / f"blur_{len(rec.ops)}.v"
        path.write_text(standalone(BLUR, rec.steps, closed=True))
        kern = pipeline.compile_derivation(path, derived_name(BLUR), "avx2")
        for rows, cols in ((19, 45), (2, 2), (9, 131)):
            img = rng.standard_normal((rows, cols)).astype(np.float32)
            np.testing.assert_allclose(kern({"v": img}, n=rows, m=cols), blur_reference(img),
                                       rtol=1e-4, atol=1e-4)


@requires_coq
@avx2
def test_conv_rtile_point_proved_winner_checked_and_refused_on_matvec(tmp_path) -> None:
    res = tune(CONV, target="avx2", sizes={"NB": 1, "H": 3, "W": 13, "CI": 3, "KO": 35},
               budget=None, trials=2, jobs=1, out_dir=tmp_path / "conv", enqueue=[RTILE],
               seeds=False)
    rec = next(r for r in res.records if r.params.get("template") == "rtile")
    assert rec.status == "proved", rec.message
    assert res.best is not None and res.coq is not None and res.coq.ok, res.coq
    path = tmp_path / "conv.v"
    path.write_text(standalone(CONV, rec.steps, closed=True))
    kern = pipeline.compile_derivation(path, derived_name(CONV), "avx2")
    rng = np.random.default_rng(12)
    for nb, h, wd, ci, ko in ((1, 3, 13, 3, 35), (2, 1, 1, 1, 1), (1, 4, 7, 5, 17)):
        img = rng.standard_normal((nb, h + 2, wd + 2, ci)).astype(np.float32)
        wts = rng.standard_normal((3, 3, ci, ko)).astype(np.float32)
        np.testing.assert_allclose(kern({"I": img, "w": wts}, NB=nb, H=h, W=wd, CI=ci, KO=ko),
                                   conv_reference(img, wts), rtol=1e-4, atol=1e-4)
    # matvec has one generation: the register tile is refused by the directive
    mv = tune(MATVEC, target="avx2", sizes={"n": 9, "m": 7}, budget=None, trials=2, jobs=1,
              out_dir=tmp_path / "mv", enqueue=[{**RTILE, "rt_select": False}], seeds=False)
    refused = next(r for r in mv.records if r.params.get("template") == "rtile")
    assert refused.status == "refused" and "register_tile" in refused.message


def test_a_refused_untuned_program_is_said_in_the_notes() -> None:
    # Blur.v's `blur` reads outside the image (zero outside): check_safe refuses the
    # untuned point, and the summary says why every schedule will be refused too
    from verisched.tune.api import _untuned_refused
    from verisched.tune.log import Record

    def rec(params: dict, status: str, message: str = "") -> Record:
        return Record(0, params, {}, [], [], [], status, message=message)

    first = {"order": "y,x"}
    bad = [rec(first, "refused", "step 1 (check_safe.) refused by Coq: cannot prove")]
    (note,) = _untuned_refused(bad, [first])
    assert "untuned program itself was refused" in note and "check_safe" in note
    assert _untuned_refused([rec(first, "proved")], [first]) == []
    assert _untuned_refused([rec({"order": "x,y"}, "refused")], [first]) == []
