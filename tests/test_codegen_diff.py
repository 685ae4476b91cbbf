"""Differential tests: random programs, lowered, compiled, run, against the reference.

Each hypothesis example draws a batch of programs and compiles them into one
shared object (and one sanitizer harness), so the number of C compilations
stays bounded: BATCH programs per compilation, MAX_EXAMPLES examples per
(target, dtype).  Every kernel runs at several sizes, including sizes that
are not multiples of the split factors, and once under ASan+UBSan.
"""

from __future__ import annotations

import numpy as np
import pytest
from codegen_programs import ENV, SIZE_SETS, programs
from codegen_reference import dense, run_reference
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from verisched.codegen import lower
from verisched.pybridge.interp import evaluate
from verisched.targets.native import build, build_sanitized, run_sanitized
from verisched.targets.registry import get_target

BATCH = 8
MAX_EXAMPLES = 10


def make_inputs(rng: np.random.Generator, sizes: dict[str, int], dtype: str
                ) -> dict[str, np.ndarray]:
    n, m = sizes["n"], sizes["m"]
    shapes = {"A": (n, m), "B": (m,), "C": (3, n), "s": ()}
    out = {}
    for k, shp in shapes.items():
        if dtype == "int32":
            a = rng.integers(-3, 4, size=shp).astype(np.int32)
        elif dtype == "int8":
            # Wide enough that outputs leave int8's range (the store wraps them).
            a = rng.integers(-20, 21, size=shp).astype(np.int8)
        else:
            a = rng.uniform(-2, 2, size=shp).astype(np.dtype(dtype))
        out[k] = a
    return out


def check(got: np.ndarray, want: np.ndarray, dtype: str, what: str) -> None:
    if dtype == "int32":
        np.testing.assert_array_equal(got, want, err_msg=what)
    elif dtype == "int8":
        # The exact Z result, wrapped into int8 on the store (targets/base.py ROUNDING).
        np.testing.assert_array_equal(got, want.astype(np.int64).astype(np.int8), err_msg=what)
    else:
        scale = max(1.0, float(np.max(np.abs(want))) if want.size else 1.0)
        # float64 kernels against the float64 reference: only reassociation differs.
        rtol, atol = (1e-10, 1e-12) if dtype == "float64" else (1e-4, 1e-5)
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol * scale, err_msg=what)


def run_batch(progs: list, target: str, dtype: str, sanitize: bool) -> None:
    t = get_target(target)
    lowered = [lower(e, ENV, name=f"k{i}", dtype=dtype, parallel=t.parallel,
                     sizes=["m", "n"]) for i, e in enumerate(progs)]
    kernels = build(lowered, t)
    exe = build_sanitized(lowered, t) if sanitize else None
    rng = np.random.default_rng(0)
    ref_dtype = np.int64 if dtype in ("int32", "int8") else np.float64
    for sizes in SIZE_SETS:
        inputs = make_inputs(rng, sizes, dtype)
        wide = {k: v.astype(ref_dtype) for k, v in inputs.items()}
        for e, lw in zip(progs, lowered, strict=False):
            k = kernels[lw.name]
            _, shape = k.extents(sizes)
            want = run_reference(e, wide, sizes, shape, ref_dtype)
            # The bridge's interpreter is the project's reference; ours cross-checks it.
            theirs = dense(evaluate(e, wide, sizes, ref_dtype), shape, ref_dtype)
            check(theirs, want, "int32" if dtype == "int8" else dtype,
                  f"interp.py vs tests' reference on {e}")
            what = f"{lw.name} at {sizes}:\n{e}\n" + "\n".join(lw.body)
            if exe is not None:
                # Sanitized first: an out-of-bounds store is then a report, not a crash.
                check(run_sanitized(exe, lw, inputs, sizes, shape), want, dtype,
                      "sanitized " + what)
            got = k.call(inputs, sizes)
            assert got.dtype == np.dtype(dtype), (got.dtype, what)
            check(got, want, dtype, what)


@pytest.mark.parametrize("target,dtype", [("c", "float32"), ("c", "int32"), ("c", "float64"),
                                          ("openmp", "float32"), ("openmp", "int32"),
                                          ("c", "int8")])
# No shrinking: every attempt recompiles a batch; the failure message already
# shows the failing program and its generated C.
@settings(max_examples=MAX_EXAMPLES, deadline=None, derandomize=True,
          phases=[Phase.explicit, Phase.reuse, Phase.generate],
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_random_programs_match_reference(target: str, dtype: str, data: st.DataObject) -> None:
    progs = [data.draw(programs(dtype), label=f"program {i}") for i in range(BATCH)]
    run_batch(progs, target, dtype, sanitize=True)
