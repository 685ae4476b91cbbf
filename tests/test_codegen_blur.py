"""The blur schedules of the benchmark (hand-built Fig. 8-9 ASTs) at small sizes,
including sizes that are not multiples of the tile sizes, both targets, against a
numpy blur and under ASan+UBSan."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from verisched.codegen import KernelCallError, lower
from verisched.targets.native import build, build_sanitized, run_sanitized
from verisched.targets.registry import get_target

_spec = importlib.util.spec_from_file_location(
    "bench_blur", Path(__file__).resolve().parents[1] / "benchmarks" / "bench_blur.py")
assert _spec and _spec.loader
blur = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(blur)

SIZES = [(2, 2), (3, 5), (10, 7), (19, 13), (67, 131)]


@pytest.mark.parametrize("target", ["c", "openmp"])
def test_blur_schedules_match_numpy(target):
    t = get_target(target)
    progs = {"two_stage": blur.two_stage(), "fused": blur.fused_all(),
             "tiled": blur.tiled(), "tiled_8x4": blur.tiled(8, 4), "tiled_3x5": blur.tiled(3, 5)}
    lowered = [lower(e, blur.ENV, name=k, parallel=t.parallel, assume=blur.ASSUME)
               for k, e in progs.items()]
    kernels = build(lowered, t)
    exe = build_sanitized(lowered, t)
    rng = np.random.default_rng(5)
    for n, m in SIZES:
        img = rng.standard_normal((n, m)).astype(np.float32)
        want = blur.numpy_blur(img)
        for lw in lowered:
            got = kernels[lw.name].call({"v": img}, {"n": n, "m": m})
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5,
                                       err_msg=f"{lw.name} {n}x{m}")
            san = run_sanitized(exe, lw, {"v": img}, {"n": n, "m": m}, (n, m))
            np.testing.assert_allclose(san, want, rtol=1e-5, atol=1e-5, err_msg=lw.name)
    with pytest.raises(KernelCallError, match="violate the assumption"):
        kernels["fused"].call({"v": np.ones((1, 4), np.float32)}, {"n": 1, "m": 4})


def test_blur_interior_tiles_are_guard_free():
    body = lower(blur.tiled(), blur.ENV, name="t", assume=blur.ASSUME).body
    start = next(k for k, s in enumerate(body) if "for (int yo" in s)
    tile = body[start:start + 14]
    assert any("float bx[4224];" in s for s in tile)
    assert not any("?" in s for s in tile) and not any("memset" in s for s in body)
