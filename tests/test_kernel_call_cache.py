"""A kernel keeps the extents it checked for each size tuple it accepted (a loop of
calls at the same sizes re-checked them every time: 60% of a small call's Python
overhead), and nothing else: refused sizes are refused on every call, the arrays are
checked on every call, and the kept entries are bounded."""

from __future__ import annotations

import numpy as np
import pytest

from verisched.codegen import lower
from verisched.codegen.errors import KernelCallError
from verisched.pybridge.coqterm import parse_program
from verisched.pybridge.terms import IVar
from verisched.targets.native import build
from verisched.targets.registry import get_target


@pytest.fixture(scope="module")
def kern():
    n, m = IVar("n"), IVar("m")
    t = get_target("c")
    k = lower(parse_program("GEN [ i < n ] SUM [ j < m ] A _[i] _[j]"), {"A": (n, m)},
              name="rowsum", sizes=["n", "m"], dtype="float32", parallel=t.parallel)
    return build([k], t)["rowsum"]


def test_checked_sizes_are_kept_refusals_and_arrays_are_checked_each_call(kern) -> None:
    kern._extents.clear()
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    for _ in range(2):
        assert kern({"A": a}).tolist() == [6, 22, 38]
    assert list(kern._extents) == [(3, 4)]      # (n, m)
    # the same sizes, a wrong array: the shape is still checked
    with pytest.raises(KernelCallError, match="shape"):
        kern.call({"A": a[:, :3]}, {"n": 3, "m": 4})
    with pytest.raises(KernelCallError, match="dtype"):
        kern.call({"A": a.astype(np.float64)}, {"n": 3, "m": 4})
    for _ in range(2):    # a refusal is not kept: said again
        with pytest.raises(KernelCallError, match="size n = 0 must be positive"):
            kern.call({"A": a[:0]}, {"n": 0, "m": 4})
    assert len(kern._extents) == 1


def test_the_kept_extents_are_bounded_and_stay_right(kern) -> None:
    rng = np.random.default_rng(0)
    for rows in range(1, 80):
        a = rng.standard_normal((rows, 2)).astype(np.float32)
        np.testing.assert_allclose(kern({"A": a}), a.sum(axis=1), rtol=1e-6)
    assert len(kern._extents) <= 64
    a = rng.standard_normal((1, 2)).astype(np.float32)    # evicted, checked again
    np.testing.assert_allclose(kern({"A": a}), a.sum(axis=1), rtol=1e-6)
