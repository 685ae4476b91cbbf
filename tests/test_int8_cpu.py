"""int8 kernels on the CPU targets (issue 13, item 2): int8 inputs and outputs, int32
arithmetic, the store wrapping modulo 2^8 (targets/base.py ROUNDING["int8"]).

A derived kernel from the examples, at sizes that are not multiples of its tiles,
against the reference interpreter's exact Z result wrapped into int8; and `--check`'s
note when an int32 kernel's values leave int32."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import requires_coq

from verisched import pipeline
from verisched.pybridge.interp import evaluate


@requires_coq
@pytest.mark.parametrize("target", ["c", "openmp"])
def test_derived_blur_in_int8_matches_the_wrapped_exact_result(target: str) -> None:
    checked = pipeline.check(pipeline.load("coq/Examples/Blur.v", "blur_tiled"),
                             fix={"kn": 8, "km": 4}, dtype="int8")
    source = pipeline.render(pipeline.lower(checked, target))
    assert "int8 inputs and outputs, computed in int32" in source.c
    k = pipeline.build(source)[checked.name]
    sizes = {"n": 37, "m": 23}
    inputs = pipeline.random_inputs(k, sizes, seed=3)
    assert inputs["v"].dtype == np.int8
    out = k(inputs, **sizes)
    assert out.dtype == np.int8
    verdicts = pipeline.verify(checked, inputs, sizes, out)
    assert len(verdicts) == 2 and all(v.ok for v in verdicts), verdicts
    # The blur's sums leave int8's range on these inputs, so the wrap is exercised.
    exact = evaluate(checked.program.expr, {"v": inputs["v"].astype(np.int64)}, sizes,
                     np.int64)
    assert np.abs(exact).max() > 127


@requires_coq
def test_an_int32_overflow_is_named_by_the_check() -> None:
    """An int32 kernel whose values leave int32 wraps, as its banner says; `--check`
    still reports the difference from the Z reference, and says why (it said a bare
    MISMATCH, as if the lowering were wrong)."""
    checked = pipeline.check(pipeline.load("coq/Examples/Pipeline.v", "fused"), dtype="int32")
    k = pipeline.build(pipeline.render(pipeline.lower(checked, "c")))[checked.name]
    big = np.array([2**31 - 1, 2**31 - 1, 5, -(2**31)], np.int32)
    sizes = {"n": 4}
    out = k({"f": big}, **sizes)
    verdicts = pipeline.verify(checked, {"f": big}, sizes, out)
    assert verdicts and all(v.ok is False for v in verdicts), verdicts
    assert all("beyond int32: the kernel wraps modulo 2^32" in v.note for v in verdicts)
    small = np.array([3, -7, 5, 11], np.int32)
    good = pipeline.verify(checked, {"f": small}, sizes, k({"f": small}, **sizes))
    assert all(v.ok and not v.note for v in good), good
