"""Shared fixtures: one Coq session per test module.

Starting coqtop with the library costs about a second, so modules share a
session instead of paying it per test; tests that break their session on
purpose (kill, timeout) make their own.
"""

from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

import verisched.targets.registry  # noqa: F401  (every target's instructions, as in a real run)
from verisched.pybridge.session import REPO_ROOT

# The tests never read or fill the user's cache of checked derivations (pipeline/cache.py):
# each test session gets a fresh one (subprocesses inherit it), removed at exit.  Under
# pytest-xdist (`make test` runs `-n $(JOBS)`) the controller makes it and its workers,
# which inherit the controller's environment, share it: entries are written atomically
# (pipeline/cache.py), so a derivation one worker replays is reused by the others.
if os.environ.get("PYTEST_XDIST_WORKER") and os.environ.get("VERISCHED_TEST_CACHE_DIR"):
    os.environ["VERISCHED_CACHE_DIR"] = os.environ["VERISCHED_TEST_CACHE_DIR"]
else:
    os.environ["VERISCHED_CACHE_DIR"] = tempfile.mkdtemp(prefix="verisched-test-cache-")
    os.environ["VERISCHED_TEST_CACHE_DIR"] = os.environ["VERISCHED_CACHE_DIR"]
    atexit.register(shutil.rmtree, os.environ["VERISCHED_CACHE_DIR"], True)

REPO = REPO_ROOT  # the source tree, or $VERISCHED_REPO
# Test-only and benchmark-only helpers live outside the package: the benchmarks' peers and
# references (benchmarks/) are imported by name like the tests' own helpers (tests/).
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))


def _library_ready() -> str | None:
    if shutil.which("coqtop") is None:
        return "coqtop is not installed"
    needed = [REPO / "coq" / "ATL.vo", REPO / "coq" / "Bridge" / "Print.vo"]
    if not all(p.exists() for p in needed):
        return "the Coq library is not built (run `make proofs`)"
    return None


requires_coq = pytest.mark.skipif(_library_ready() is not None,
                                  reason=_library_ready() or "")


@pytest.fixture(scope="module")
def coq() -> Iterator[object]:
    """A Coq session with the Verisched library loaded, shared by a module."""
    reason = _library_ready()
    if reason:
        pytest.skip(reason)
    from verisched.pybridge.session import CoqSession

    with CoqSession(REPO, timeout=120) as session:
        yield session


@pytest.fixture(scope="session")
def repo() -> Path:
    return REPO
