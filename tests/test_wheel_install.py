"""A built wheel works outside the checkout (issue 15): installed into a fresh venv, run
from another directory with an empty cache, it builds the Coq library it ships once
(with progress on stderr), replays a user's derivation, compiles and runs the kernel;
a second run does not build again.  About a minute on a 2-core machine, most of it the
one-time library build."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO

# A derivation over a scalar input alpha (a user's file, outside the checkout).
AXPY = (Path(__file__).parent / "data" / "scalar_axpy.v").read_text()

RUN = """import numpy as np
import verisched
from verisched import pipeline
assert "site-packages" in verisched.__file__, verisched.__file__
k = pipeline.compile_derivation("axpy.v", "axpy_s", "c", fix={"alpha": "1/2"})
x, y = np.arange(7, dtype=np.float32), np.ones(7, np.float32)
np.testing.assert_allclose(k({"x": x, "y": y}, n=7), x / 2 + y)
print("kernel OK")
"""


@pytest.mark.skipif(shutil.which("coqc") is None, reason="Coq is not installed")
def test_wheel_installs_and_runs_outside_the_checkout(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    subprocess.run([sys.executable, "-m", "pip", "wheel", str(REPO), "--no-deps",
                    "--no-build-isolation", "-q", "-w", str(wheels)], check=True)
    wheel = next(wheels.glob("verisched-*.whl"))
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = subprocess.run([str(venv / "bin" / "pip"), "install", "-q", str(wheel)],
                         capture_output=True, text=True)
    if pip.returncode != 0 and "No matching distribution" in pip.stderr:
        pytest.skip(f"the package index is unreachable: {pip.stderr.strip()[-300:]}")
    assert pip.returncode == 0, pip.stderr
    work = tmp_path / "work"
    work.mkdir()
    (work / "axpy.v").write_text(AXPY)
    (work / "run.py").write_text(RUN)
    env = {k: v for k, v in os.environ.items()
           if k not in ("VERISCHED_REPO", "PYTHONPATH", "VERISCHED_NO_CACHE")}
    env.update(HOME=str(tmp_path / "home"), VERISCHED_CACHE_DIR=str(tmp_path / "cache"))
    runs = [subprocess.run([str(venv / "bin" / "python"), "run.py"], cwd=work, env=env,
                           capture_output=True, text=True, timeout=900) for _ in range(2)]
    for r in runs:
        assert r.returncode == 0, r.stdout + r.stderr
        assert "kernel OK" in r.stdout
    assert "building the Coq library (first use only)" in runs[0].stderr
    assert "Coq library: " in runs[0].stderr  # progress, file by file
    assert "building the Coq library" not in runs[1].stderr
    built = list((tmp_path / "cache").glob("coq-*/coq/ATL.vo"))
    assert len(built) == 1 and not list((tmp_path / "cache").glob("*.build-*"))
