"""Where candidates are proved: a local process pool (the default) or a Ray cluster.

One small interface for both, so the search loop (tune/search.py) does not care:
`submit(fn, *args)` returns a handle, `wait(handles, timeout)` the handles that are
done, `result(handle)` the value, `close()` ends every worker (an interrupted or
finished run never leaves a worker, or the coqtop it drives, behind).

The pool is `multiprocessing`'s with the `fork` start method: `spawn` and
`forkserver` re-import the caller's main module in every worker, so a user's
script without an `if __name__ == "__main__":` guard would start its own tuning
run in each worker; a forked worker is a copy of the caller taken before any Coq
session of the run opens.  `terminate()` ends running candidates at once (their
coqtop processes lose their terminal and exit).  Ray is an optional extra
(`pip install 'verisched[ray]'`): `ray_address="auto"` starts a local instance,
any other value is the address of a running cluster.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import threading
import time
from collections.abc import Callable
from typing import Any, Protocol

from verisched.pybridge.session import kill_all_sessions


class ExecutorError(RuntimeError):
    """An executor that cannot be started (Ray missing, a cluster not reachable)."""


class Executor(Protocol):
    slots: int
    description: str

    def submit(self, fn: Callable[..., Any], *args: Any) -> Any: ...

    def wait(self, handles: list[Any], timeout: float) -> list[Any]: ...

    def result(self, handle: Any) -> Any: ...

    def close(self) -> None: ...


class PoolExecutor:
    """`jobs` worker processes on this machine."""

    def __init__(self, jobs: int) -> None:
        self.slots = max(1, jobs)
        self.description = f"process pool of {self.slots} worker(s)"
        self.pool = multiprocessing.get_context("fork").Pool(self.slots, _init_worker)

    def submit(self, fn: Callable[..., Any], *args: Any) -> Any:
        return self.pool.apply_async(fn, args)

    def wait(self, handles: list[Any], timeout: float) -> list[Any]:
        end = time.monotonic() + timeout
        while True:
            done = [h for h in handles if h.ready()]
            if done or time.monotonic() >= end:
                return done
            time.sleep(0.05)

    def result(self, handle: Any) -> Any:
        return handle.get()

    def close(self, grace: float = 15.0) -> None:
        """End every worker; never wait on the pool's machinery for more than `grace` s.

        `Pool.terminate()` takes the task queue's lock and joins its handler threads: a
        worker killed while it held that lock, or half-way through writing a result,
        would leave the caller waiting forever (seen once in CI after a Ctrl-C).  So it
        runs in a daemon thread; past `grace`, the workers are killed outright and the
        caller goes on, the pool's own threads being daemons that die with it."""
        workers = list(getattr(self.pool, "_pool", []))
        closer = threading.Thread(target=self._terminate, daemon=True)
        closer.start()
        closer.join(grace)
        if closer.is_alive():
            for p in workers:
                if p.exitcode is None:
                    p.kill()

    def _terminate(self) -> None:
        self.pool.terminate()
        self.pool.join()


class RayExecutor:
    """Tasks on a Ray cluster (`address="auto"`: a local instance started here)."""

    def __init__(self, address: str, jobs: int) -> None:
        try:
            import ray
        except ImportError:
            raise ExecutorError("--ray needs Ray: pip install 'verisched[ray]'") from None
        self.ray = ray
        self.started = False
        env = {"env_vars": {k: os.environ[k] for k in ("PYTHONPATH", "VERISCHED_CACHE_DIR",
                                                        "VERISCHED_NO_CACHE", "PATH")
                            if k in os.environ}}
        try:
            if address == "auto":
                ray.init(num_cpus=max(1, jobs), include_dashboard=False,
                         runtime_env=env, log_to_driver=False, configure_logging=False)
                self.started = True
                where = "a local Ray instance"
            else:
                ray.init(address=address, runtime_env=env, log_to_driver=False,
                         configure_logging=False)
                where = f"the Ray cluster at {address}"
        except Exception as exc:  # Ray raises many kinds (ConnectionError, RuntimeError)
            raise ExecutorError(f"--ray {address}: Ray could not start or connect: "
                                f"{' '.join(str(exc).split())[:300]}") from None
        cpus = int(ray.cluster_resources().get("CPU", 1))
        self.slots = max(1, min(jobs, cpus)) if address == "auto" else max(1, cpus)
        self.description = f"{where} ({self.slots} slot(s))"
        self._remote: dict[Callable[..., Any], Any] = {}

    def submit(self, fn: Callable[..., Any], *args: Any) -> Any:
        remote = self._remote.get(fn)
        if remote is None:
            remote = self._remote[fn] = self.ray.remote(num_cpus=1, max_retries=0)(fn)
        return remote.remote(*args)

    def wait(self, handles: list[Any], timeout: float) -> list[Any]:
        if not handles:
            return []
        done, _ = self.ray.wait(handles, num_returns=1, timeout=timeout)
        return list(done)

    def result(self, handle: Any) -> Any:
        return self.ray.get(handle)

    def close(self) -> None:
        # Running tasks of a cluster we only joined are cancelled by the driver's exit;
        # a local instance started here is shut down with its workers.
        self.ray.shutdown()


def _init_worker() -> None:
    """Workers leave Ctrl-C to the parent, which stops the search and ends them; a
    SIGTERM (from `close`) kills the worker's coqtop processes and exits at once.

    A worker must not run the Coq bridge's own SIGTERM handler (pybridge/session.py),
    which raises SystemExit: that unwinds through the pool's worker loop, which may hold
    a queue lock at that moment, and the worker can then outlive `terminate()`."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, _die)


def _die(signum: int, frame: object) -> None:
    kill_all_sessions()
    os._exit(128 + signum)


def make_executor(jobs: int, ray_address: str | None) -> Executor:
    """The pool, or Ray when an address (or "auto") is given."""
    if ray_address:
        return RayExecutor(ray_address, jobs)
    return PoolExecutor(jobs)


def default_jobs() -> int:
    """Workers that prove: every core but one, which stays free for timing."""
    return max(1, (os.cpu_count() or 2) - 1)
