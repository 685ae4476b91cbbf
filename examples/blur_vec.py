"""The fused blur vectorized (coq/Examples/BlurVec.v's `blur_avx2`, ten hand-aimed
steps after Blur.v's fused schedule): border peeled, then the interior columns
vectorized -- full vectors plus one masked tail, every lane an instruction of
coq/Targets/AVX.v -- as in coq/Examples/Directives/BlurVec.v.  AVX-512 as well
where the CPU has it (16 lanes), else AVX2 only.
Run: python examples/blur_vec.py
"""

from __future__ import annotations

import runpy
from pathlib import Path

import numpy as np

from verisched.schedule import Schedule

# The algorithm and its numpy reference are blur_fused.py's (one copy of the blur).
_FUSED = runpy.run_path(str(Path(__file__).with_name("blur_fused.py")))
blur, reference = _FUSED["blur"], _FUSED["reference"]


def cpu_has(flag: str) -> bool:
    """Whether /proc/cpuinfo lists `flag` (False where there is no /proc)."""
    try:
        return f" {flag}" in Path("/proc/cpuinfo").read_text()
    except OSError:
        return False


def main() -> None:
    isas = ["avx2"] + (["avx512"] if cpu_has("avx512f") else [])
    rng = np.random.default_rng(10)
    with Schedule.of(blur) as s:
        fused = s.peel("y", "x", into=("yc", "xc"))     # interior rows yc, columns xc
        for isa in isas:
            vec = fused.vectorize("xc", isa)             # the interior columns in vectors
            assert f"{isa}_loadu" in vec.text and f"{isa}_maskstore" in vec.text, vec.text
            kernel = vec.compile(isa)
            for rows, cols in ((2, 2), (3, 11), (5, 19), (40, 67)):
                img = rng.standard_normal((rows, cols)).astype(np.float32)
                np.testing.assert_allclose(kernel({"v": img}, n=rows, m=cols), reference(img),
                                           rtol=1e-5, atol=1e-5)
            print(f"blur vectorized with {isa} in 2 directives, checked against numpy")


if __name__ == "__main__":
    main()
