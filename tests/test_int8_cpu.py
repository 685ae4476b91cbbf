"""int8 kernels on the CPU targets (issue 13, item 2): int8 inputs and outputs, int32
arithmetic, the store wrapping modulo 2^8 (targets/base.py ROUNDING["int8"]).

A derived kernel from the examples, at sizes that are not multiples of its tiles,
against the reference interpreter's exact Z result wrapped into int8."""

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
