"""The tuner on a Ray cluster given by address (issue 17, item 4): a head node started
here as a separate process (`ray start --head --block`), joined by `tune(ray=ADDRESS)`
as a user joins their cluster; candidates are proved on its workers, not in this
process, and the winner is still checked by coqc here.  The cluster is stopped by
ending its process group (never `ray stop`, which would stop every Ray instance of the
user, a local one of another test included)."""

from __future__ import annotations

import importlib.util
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from conftest import REPO, requires_coq
from test_tune import MATVEC, SIZES, TILED

from verisched.tune import tune

pytestmark = [requires_coq,
              pytest.mark.skipif(importlib.util.find_spec("ray") is None,
                                 reason="ray is not installed (pip install 'verisched[ray]')")]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_tune_on_a_cluster_given_by_address(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    port = _free_port()
    ray_exe = Path(sys.executable).with_name("ray")
    # A short session directory: Ray's sockets live under it (107-byte AF_UNIX limit).
    short = Path(tempfile.mkdtemp(prefix="vsray", dir="/tmp"))
    # A cluster on this machine for this test: no usage report, no token to hand around.
    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")
    env = {**os.environ, "PYTHONPATH": str(REPO / "src"), "RAY_USAGE_STATS_ENABLED": "0",
           "RAY_AUTH_MODE": "disabled"}
    head = subprocess.Popen(
        [str(ray_exe), "start", "--head", "--block", f"--port={port}", "--num-cpus=1",
         "--include-dashboard=false", "--node-ip-address=127.0.0.1",
         f"--temp-dir={short}"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
        start_new_session=True)
    try:
        address = f"127.0.0.1:{port}"
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:  # the head accepts connections once it is up
            if head.poll() is not None:
                pytest.fail(f"ray start exited: {head.stdout.read() if head.stdout else ''}")
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.5)
        said: list[str] = []
        res = tune(MATVEC, target="c", sizes=SIZES, budget=None, trials=2, jobs=1,
                   out_dir=tmp_path / "out", ray=address, enqueue=[TILED],
                   progress=said.append)
        assert any(f"the Ray cluster at {address} (1 slot(s))" in m for m in said), said
        assert res.best is not None and res.coq is not None and res.coq.ok
        workers = {r.worker for r in res.records}
        assert workers and all(w and not w.endswith(f":{os.getpid()}") for w in workers)
    finally:
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(head.pid, sig)
                head.wait(timeout=60)
                break
            except ProcessLookupError:
                break
            except subprocess.TimeoutExpired:
                continue
        shutil.rmtree(short, ignore_errors=True)
