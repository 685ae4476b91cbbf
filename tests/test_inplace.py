"""In-place kernels (codegen/inplace.py): a program `C <+> X` may be handed C's own
buffer as its output, updating it as BLAS does with beta = 1; the result must equal
the interpreter's, and any overlap the lowering did not allow is refused before C runs."""

from __future__ import annotations

import numpy as np
import pytest

from verisched.codegen import lower
from verisched.codegen.errors import KernelCallError
from verisched.pybridge.coqterm import parse_program
from verisched.pybridge.interp import evaluate
from verisched.pybridge.terms import IVar
from verisched.targets.native import build
from verisched.targets.registry import get_target

n, m, p = IVar("n"), IVar("m"), IVar("p")
ENV = {"C": (n, m), "A": (n, p), "B": (p, m)}
PROD = "SUM [ k < p ] GEN [ j < m ] A _[ i ] _[ k ] * B _[ k ] _[ j ]"
PROGRAMS = {
    # C += A B: every read of C is the copy, so C may be the output.
    "gemm": (f"GEN [ i < n ] ((GEN [ j < m ] C _[ i ] _[ j ]) <+> ({PROD}))", ("C",)),
    # The copy is guarded: rows from 2 on are zero plus the product, so in place the
    # kernel must overwrite them (its zero stores are kept).
    "guarded": (f"GEN [ i < n ] ((GEN [ j < m ] |[ i <? 2 ]| C _[ i ] _[ j ]) <+> ({PROD}))",
                ("C",)),
    # C is read again after the copy: never in place.
    "rereads": ("GEN [ i < n ] ((GEN [ j < m ] C _[ i ] _[ j ]) <+> "
                "(SUM [ k < p ] GEN [ j < m ] C _[ i ] _[ j ] * A _[ i ] _[ k ]))", ()),
    # gemm's beta * C <+> A B (PolyBench, BLAS with beta): each store of row i reads C
    # at the element it writes, before anything else writes it (the general form).
    "scaled": (f"GEN [ i < n ] ((GEN [ j < m ] slit 6 5 * C _[ i ] _[ j ]) <+> ({PROD}))",
               ("C",)),
    # C read twice at the element written, and guarded: still elementwise.
    "square": ("GEN [ i < n ] GEN [ j < m ] |[ j <? 3 ]| C _[ i ] _[ j ] * C _[ i ] _[ j ] "
               "+ A _[ i ] _[ 0 ]", ("C",)),
    # Scaled, then C read again by the product: never in place.
    "scaled_rereads": ("GEN [ i < n ] ((GEN [ j < m ] slit 6 5 * C _[ i ] _[ j ]) <+> "
                       "(SUM [ k < p ] GEN [ j < m ] C _[ i ] _[ j ] * A _[ i ] _[ k ]))", ()),
    # C transposed-ish: the store of (i, j) reads another element.
    "scaled_shifted": ("GEN [ i < n ] ((GEN [ j < m ] |[ j + 1 <? m ]| slit 2 1 * "
                       f"C _[ i ] _[ j + 1 ]) <+> ({PROD}))", ()),
    # C read only by the accumulation after another store: never in place (an integer
    # kernel's `+=` is `out[E] = vs_iadd(out[E], ...)`, once read as a plain store).
    "accumulated": ("GEN [ i < n ] ((GEN [ j < m ] A _[ i ] _[ 0 ] * A _[ i ] _[ 0 ]) <+> "
                    "(GEN [ j < m ] C _[ i ] _[ j ]))", ()),
    # C shifted: not an identity copy.
    "shifted": ("GEN [ i < n ] ((GEN [ j < m ] |[ j + 1 <? m ]| C _[ i ] _[ j + 1 ]) <+> "
                f"({PROD}))", ()),
}


@pytest.mark.parametrize("dtype", ["float32", "int32"])
@pytest.mark.parametrize("target", ["c", "openmp"])
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_inplace_matches_the_interpreter(name: str, target: str, dtype: str) -> None:
    """int32 too: its accumulations are written `out[E] = vs_iadd(out[E], ...)`, which
    must not pass for the plain store the general form needs."""
    text, allowed = PROGRAMS[name]
    e = parse_program(text)
    t = get_target(target)
    lw = lower(e, ENV, name=name, dtype=dtype, parallel=t.parallel)
    assert lw.inplace == allowed, "\n".join(lw.body)
    kernel = build([lw], t)[name]
    if t.parallel:
        kernel.set_threads(2)
    rng = np.random.default_rng(7)
    for sizes in ({"n": 5, "m": 7, "p": 3}, {"n": 1, "m": 1, "p": 1}, {"n": 17, "m": 9, "p": 4}):
        shapes, _ = kernel.extents(sizes)
        if dtype == "int32":  # small values: exact, no overflow
            ins = {a: rng.integers(-20, 21, size=shapes[a]).astype(np.int32)
                   for a, _, _ in lw.inputs}
            want = evaluate(e, {a: v.astype(np.int64) for a, v in ins.items()}, sizes,
                            np.int64)
        else:
            ins = {a: rng.uniform(-1, 1, size=shapes[a]).astype(np.float32)
                   for a, _, _ in lw.inputs}
            want = evaluate(e, {a: v.astype(np.float64) for a, v in ins.items()}, sizes,
                            np.float64)
        np.testing.assert_allclose(kernel.call(ins, sizes), want, rtol=1e-5, atol=1e-5)
        c = ins["C"].copy()
        if allowed:
            got = kernel.call({**ins, "C": c}, sizes, out=c)
            assert got is c
            np.testing.assert_allclose(c, want, rtol=1e-5, atol=1e-5,
                                       err_msg=f"{name} in place at {sizes}")
        else:
            with pytest.raises(KernelCallError, match="cannot share memory with the output"):
                kernel.call({**ins, "C": c}, sizes, out=c)
            np.testing.assert_array_equal(c, ins["C"])  # refused before C ran


def test_other_overlaps_are_refused() -> None:
    e = parse_program(PROGRAMS["gemm"][0])
    lw = lower(e, ENV, name="gemm")
    kernel = build([lw], get_target("c"))["gemm"]
    sizes = {"n": 4, "m": 4, "p": 4}
    ins = {a: np.ones((4, 4), np.float32) for a in "ABC"}
    with pytest.raises(KernelCallError, match="input A cannot share memory"):
        kernel.call(ins, sizes, out=ins["A"])
    big = np.zeros((5, 4), np.float32)
    view = big[1:]  # C overlaps the output without being the same buffer
    with pytest.raises(KernelCallError, match="input C may be the output only as the whole"):
        kernel.call({**ins, "C": big[:4]}, sizes, out=view)
