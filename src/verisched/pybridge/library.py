"""Where the Coq library lives, and its one-time build for an installed package.

In a source checkout the library is the checkout's `coq/`, built by `make proofs`.
A wheel cannot ship `.vo` files (they are tied to the exact Coq build that made
them), so it ships the `.v` sources (setup.py copies them into `verisched/_coq/`)
and the library is built on first use into the user's cache directory, keyed by a
hash of the sources and of `coqc --version`: a new release or a new Coq gets a new
build, an old one is never loaded against the wrong Coq.  The build runs once (a
file lock serialises concurrent first uses), in a temporary directory renamed into
place when complete, so an interrupted build leaves nothing half-written; it builds
the library the bridge loads (`ATL`, `Bridge.Print`), not the paper's examples.

`VERISCHED_REPO` overrides all of this: the root whose `coq/` to use, as built.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from .errors import LibraryNotBuiltError

_CHECKOUT = Path(__file__).resolve().parents[3]
PACKAGED = Path(__file__).resolve().parents[1] / "_coq"
# What the bridge's prelude loads (session.PRELUDE), with everything it imports.
TARGETS = ("coq/ATL.vo", "coq/Bridge/Print.vo")


def cache_home() -> Path:
    """The user cache directory (as pipeline/cache.py chooses it)."""
    env = os.environ.get("VERISCHED_CACHE_DIR")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "verisched"


def default_root() -> Path:
    """The root whose `coq/` the bridge loads: `VERISCHED_REPO`, else the source
    checkout this package runs from, else the cache build of the packaged sources
    (which may not be built yet: `ensure_built`)."""
    env = os.environ.get("VERISCHED_REPO")
    if env:
        return Path(env)
    if (_CHECKOUT / "coq" / "ATL.v").exists() or not PACKAGED.is_dir():
        return _CHECKOUT
    return cache_home() / f"coq-{_fingerprint()}"


def _fingerprint() -> str:
    h = hashlib.sha256()
    for p in sorted(PACKAGED.rglob("*")):
        if p.is_file():
            h.update(str(p.relative_to(PACKAGED)).encode())
            h.update(p.read_bytes())
    h.update(_coq_version().encode())
    return h.hexdigest()[:16]


def _coq_version() -> str:
    try:
        out = subprocess.run(["coqc", "--version"], capture_output=True, text=True,
                             timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return "no coqc"
    return out.stdout.strip()


def ensure_built(root: Path, progress: Callable[[str], None] | None = None) -> None:
    """Build the packaged library into `root` if `root` is the cache build and it is
    not there yet; otherwise do nothing (a checkout is built by `make proofs`)."""
    if (root / "coq" / "ATL.vo").exists():
        return
    if not PACKAGED.is_dir() or root.parent != cache_home() or not root.name.startswith("coq-"):
        raise LibraryNotBuiltError(f"the Coq library is not built ({root / 'coq' / 'ATL.vo'} "
                                   f"is missing): run `make proofs` in {root}")
    if shutil.which("coqc") is None or shutil.which("coq_makefile") is None:
        raise LibraryNotBuiltError("coqc and coq_makefile are needed to build the Coq library "
                                   "on first use (Debian: apt-get install coq)")
    say = progress or (lambda line: print(line, file=sys.stderr, flush=True))
    root.parent.mkdir(parents=True, exist_ok=True)
    import fcntl  # POSIX only, as is coqtop's pexpect driver

    with open(root.parent / f"{root.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (root / "coq" / "ATL.vo").exists():
            return  # another process built it while we waited
        _build(root, say)


def _build(root: Path, say: Callable[[str], None]) -> None:
    tmp = Path(tempfile.mkdtemp(prefix=f"{root.name}.build-", dir=root.parent))
    try:
        shutil.copytree(PACKAGED, tmp, dirs_exist_ok=True)
        subprocess.run(["coq_makefile", "-f", "_CoqProject", "-o", "CoqMakefile"], cwd=tmp,
                       check=True, capture_output=True, text=True)
        total = sum(1 for p in (tmp / "coq").rglob("*.v") if "Examples" not in p.parts)
        say(f"building the Coq library (first use only) in {root}: {total} files, "
            "about a minute")
        jobs = str(os.cpu_count() or 2)
        proc = subprocess.Popen(["make", "-f", "CoqMakefile", f"-j{jobs}", *TARGETS],
                                cwd=tmp, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True)
        assert proc.stdout is not None
        done, tail = 0, []
        for line in proc.stdout:
            tail = (tail + [line.rstrip()])[-20:]
            m = re.match(r"\s*COQC\s+(\S+)", line)
            if m:
                done += 1
                say(f"  Coq library: {done} of about {total}: {m.group(1)}")
        if proc.wait() != 0:
            raise LibraryNotBuiltError("building the packaged Coq library failed:\n"
                                       + "\n".join(tail))
        os.replace(tmp, root)
        say(f"Coq library built in {root}")
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
