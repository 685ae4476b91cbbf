"""A kernel called without its sizes takes them from the inputs' shapes, where a size is
by itself an input's extent; everything else is still checked before C runs."""

from __future__ import annotations

import numpy as np
import pytest

from verisched.codegen import lower
from verisched.codegen.errors import KernelCallError
from verisched.pybridge.coqterm import parse_program
from verisched.pybridge.terms import IBin, IConst, IVar
from verisched.targets.native import build
from verisched.targets.registry import get_target

n, m = IVar("n"), IVar("m")


def kernel(text: str, env: dict, name: str):
    return build([lower(parse_program(text), env, name=name)], get_target("c"))[name]


def test_sizes_are_inferred_from_input_extents() -> None:
    k = kernel("GEN [ i < n ] SUM [ j < m ] A _[ i ] _[ j ] * x _[ j ]",
               {"A": (n, m), "x": (m,)}, "mv")
    rng = np.random.default_rng(1)
    a = rng.standard_normal((5, 3)).astype(np.float32)
    x = rng.standard_normal(3).astype(np.float32)
    np.testing.assert_allclose(k({"A": a, "x": x}), a @ x, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(k({"A": a, "x": x}, n=5), a @ x, rtol=1e-5, atol=1e-6)
    with pytest.raises(KernelCallError, match="inputs disagree on size m: A axis 1 has "
                                              "length 3, x axis 0 has 4"):
        k({"A": a, "x": np.ones(4, np.float32)})
    # A size given explicitly wins, and the shapes are then checked against it.
    with pytest.raises(KernelCallError, match="input A"):
        k({"A": a, "x": x}, n=4)
    # A misnamed or non-array input is named as such, before any size is inferred (it
    # used to be reported as the size it would have given, missing).
    with pytest.raises(KernelCallError, match=r"inputs must be \['A', 'x'\], got \['B', 'x'\]"):
        k({"B": a, "x": x})
    with pytest.raises(KernelCallError, match="input A must be a numpy array, got list"):
        k({"A": a.tolist(), "x": x})
    # An array of the wrong rank is said to be one (it was reported as the size its
    # axis would have given, missing); an array where the dict belongs is named too.
    with pytest.raises(KernelCallError, match="mv: input x is a 2-d array, expected 1-d"):
        k({"A": a, "x": x.reshape(3, 1)})
    with pytest.raises(KernelCallError, match=r"mv: the inputs are a dict from name to "
                                              r"numpy array \(A, x\), got ndarray"):
        k(a)
    # Inputs as keywords (where keywords are sizes) were reported as no inputs at all.
    with pytest.raises(KernelCallError, match=r"mv: inputs A, x given as keyword arguments, "
                       r"where keywords are sizes; pass the inputs as a dict: "
                       r"mv\(\{'A': \.\.\., 'x': \.\.\.\}\)"):
        k(A=a, x=x)
    with pytest.raises(KernelCallError, match="mv: input x given as a keyword argument"):
        k({"A": a}, x=x)


def test_a_size_that_is_not_an_extent_by_itself_must_be_given() -> None:
    k = kernel("GEN [ i < n ] f _[ i + 2 ]", {"f": (IBin("+", n, IConst(2)),)}, "shift")
    f = np.arange(7, dtype=np.float32)
    with pytest.raises(KernelCallError, match="missing \\['n'\\].*inferred only where"):
        k({"f": f})
    np.testing.assert_array_equal(k({"f": f}, n=5), f[2:])
