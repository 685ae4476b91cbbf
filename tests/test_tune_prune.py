"""Pruning templates that cannot apply (tune/prune.py): a template whose points are
all refused by the same directive with the same message, over two values of each of
its parameters, is not proposed again (its later points are skipped, never proved);
a template with a point that passes is never pruned.  No timings."""

from __future__ import annotations

from conftest import requires_coq

from verisched.schedule import dsl
from verisched.tune import tune
from verisched.tune.prune import MIN_REFUSED, Pruner, refused_at
from verisched.tune.space_types import Op

n, m = dsl.sizes("n m")
A, x = dsl.tensor("A", n, m), dsl.tensor("x", m)
MATVEC = dsl.program("matvec", dsl.gen("i", n, lambda i:
                                       dsl.sum("j", m, lambda j: A[i, j] * x[j])))
CHOICES = {"template": ("loops", "microkernel"), "a": (1, 2, 3), "b": (False, True),
           "c": ("only",)}


def _kernel(mc: int, kc: int, mr: int, nr: int, flag: bool) -> dict:
    return {"template": "microkernel", "mk_isa": "avx2", "mk_mc": mc, "mk_kc": kc,
            "mk_mr": mr, "mk_nr": nr, "mk_pack_col": flag, "mk_pack_row": flag,
            "mk_select": flag}


def test_refused_at_names_the_first_directive_not_applied() -> None:
    full = [Op("split", ("i", 8)), Op("simpl_guard", optional=True), Op("vectorize", ("ii",))]
    assert refused_at(full, [full[0]]) == "vectorize"   # the optional cleanup skipped
    assert refused_at(full, []) == "split"
    assert refused_at(full, [full[0], full[2]]) == "build"


def test_dead_only_when_every_parameter_varied_and_nothing_passed() -> None:
    p = Pruner()
    pts = [{"template": "microkernel", "a": 1, "b": False, "c": "only"},
           {"template": "microkernel", "a": 2, "b": True, "c": "only"},
           {"template": "microkernel", "a": 1, "b": True, "c": "only"}]
    for q in pts[:-1]:
        assert p.note(q, "refused", "register_tile", "no nest", CHOICES) is None
    assert len(pts) == MIN_REFUSED
    assert p.note(pts[-1], "refused", "register_tile", "no nest", CHOICES)
    assert p.skip(pts[0]) and not p.skip({"template": "loops"})
    # the same refusals with one parameter held fixed: that value may be the cause
    q = Pruner()
    for b in (False, True, True):
        q.note({"template": "microkernel", "a": 1, "b": b}, "refused", "register_tile",
               "no nest", CHOICES)
    assert not q.skip(pts[0])
    # two different refusals, or a proved point: alive
    r = Pruner()
    r.note(pts[0], "proved", "build", "", CHOICES)
    for q2 in pts:
        r.note(q2, "refused", "register_tile", "no nest", CHOICES)
    assert not r.skip(pts[0])
    s = Pruner()
    for k, q2 in enumerate(pts + pts):
        s.note(q2, "refused", "stage" if k == 0 else "register_tile", "no nest", CHOICES)
    assert not s.skip(pts[0])


@requires_coq
def test_register_tile_on_matvec_stops_being_proposed(tmp_path) -> None:
    # matvec's nest has one generation: register_tile refuses every point of the
    # micro-kernel template; after three that vary every parameter, the fourth is
    # skipped without a proof
    points = [_kernel(48, 64, 6, 16, True), _kernel(96, 128, 4, 32, False),
              _kernel(192, 256, 8, 64, True), _kernel(96, 64, 6, 64, False)]
    res = tune(MATVEC, target="avx2", sizes={"n": 37, "m": 45}, budget=None, trials=5,
               jobs=1, out_dir=tmp_path, enqueue=points, seeds=False)
    kernels = [r for r in res.records if r.params.get("template") == "microkernel"]
    assert len(kernels) == 3 and all(r.status == "refused" for r in kernels)
    assert all("register_tile" in r.message for r in kernels)
    assert res.counters.skipped >= 1
