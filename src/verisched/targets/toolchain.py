"""The C toolchain every target builds with: the compiler, the artifact cache,
atomic writes.

Artifacts (shared objects, executables) are cached by a hash of everything
that determines them (sources, flags, the compiler's identity), so a kernel
is compiled once per content.  A cached file is validated before it is
reused: an empty or truncated artifact (a killed build, a full disk, a
compiler that exits 0 without writing anything) is evicted and rebuilt, so
one bad file never poisons every later load.

`$CC` may carry flags (`CC="gcc -DX"`, as make users write it): the first
word is the compiler, the rest are passed before ours.
"""

from __future__ import annotations

import hashlib
import os
import shlex
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path

from verisched.codegen.errors import CompileError
from verisched.pybridge.derivation import write_text_atomic

_ELF_MAGIC = b"\x7fELF"


def compiler() -> list[str]:
    """The C compiler command: $CC (split like a shell word list), else cc, else gcc."""
    env = os.environ.get("CC", "").strip()
    if env:
        try:
            words = shlex.split(env)
        except ValueError as exc:
            raise CompileError(f"compile: cannot parse CC={env!r}: {exc}") from exc
    else:
        words = [next((c for c in ("cc", "gcc") if shutil.which(c)), "cc")]
    path = shutil.which(words[0])
    if path is None:
        raise CompileError(f"compile: C compiler {words[0]!r} not found (CC={env or 'unset'}; "
                           "set CC or install gcc)")
    return [path, *words[1:]]


def cache_dir() -> Path:
    """Where artifacts are kept: $VERISCHED_CACHE, else a per-user temporary folder."""
    d = Path(os.environ.get("VERISCHED_CACHE")
             or Path(tempfile.gettempdir()) / f"verisched-kernels-{os.getuid()}")
    d.mkdir(parents=True, exist_ok=True)
    return d


def atomic_write(path: Path, text: str | bytes) -> None:
    """Write via a temporary file in the same directory and rename, so readers and
    concurrent writers never see a half-written file (pybridge's write_text_atomic,
    which also gives the file a plain `open`'s mode rather than mkstemp's 0600)."""
    write_text_atomic(path, text)


def _compiler_id(cc: list[str]) -> str:
    try:
        out = subprocess.run([cc[0], "--version"], capture_output=True, text=True, timeout=30)
        first = out.stdout.splitlines()[0] if out.stdout else cc[0]
    except (OSError, subprocess.SubprocessError):
        first = cc[0]
    return " ".join([first, *cc[1:]])


def valid_artifact(path: Path) -> bool:
    """Is `path` a plausible compiler output (a non-empty ELF file)?"""
    try:
        with open(path, "rb") as f:
            return f.read(4) == _ELF_MAGIC
    except OSError:
        return False


def evict(path: Path) -> None:
    """Remove a cached artifact found to be unusable (it is rebuilt on the next use)."""
    try:
        path.unlink()
    except FileNotFoundError:
        pass


def compile_c(source: str, flags: list[str], *, kind: str = "shared",
              extra_sources: tuple[str, ...] = (), include: tuple[Path, ...] = (),
              libs: tuple[str, ...] = ()) -> Path:
    """Compile `source` (plus `extra_sources`) to a shared object or executable in the
    cache; identical inputs reuse the cached artifact once it is validated.  `libs`
    (`-lopenblas`) go after the sources, where the linker resolves them.  On failure
    the generated file stays in the cache and the error names it with the compiler's
    message."""
    cc = compiler()
    inc = [f"-I{p}" for p in include]
    key = hashlib.sha256("\0".join([source, *extra_sources, *flags, *inc, *libs, kind,
                                    _compiler_id(cc)]).encode()).hexdigest()[:24]
    d = cache_dir()
    suffix = ".so" if kind == "shared" else ".exe"
    artifact = d / f"vs_{key}{suffix}"
    if artifact.exists():
        if valid_artifact(artifact):
            return artifact
        evict(artifact)
    srcs = []
    for k, text in enumerate((source, *extra_sources)):
        p = d / f"vs_{key}_{k}.c"
        atomic_write(p, text)
        srcs.append(str(p))
    # One name per process and thread: two threads building the same kernel at once
    # (the Python API from a thread pool) linked into one file and read each other's
    # half-written output ("exited 0 but wrote no usable shared object").
    tmp = d / f"vs_{key}.{os.getpid()}.{threading.get_ident()}{suffix}.tmp"
    cmd = [*cc, *flags, *inc, *(["-shared"] if kind == "shared" else []), *srcs,
           "-o", str(tmp), *libs, "-lm"]
    try:
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    except (OSError, subprocess.SubprocessError) as exc:
        raise CompileError(f"compile: could not run {cc[0]}: {exc}; generated file kept at "
                           f"{srcs[0]}") from exc
    if res.returncode != 0:
        if tmp.exists():
            tmp.unlink()
        raise CompileError(f"compile: {cc[0]} failed (exit {res.returncode}) on {srcs[0]}:\n"
                           f"{res.stderr.strip()}\ncommand: {shlex.join(cmd)}")
    if not valid_artifact(tmp):
        if tmp.exists():
            tmp.unlink()
        raise CompileError(f"compile: {shlex.join(cc)} exited 0 but wrote no usable "
                           f"{'shared object' if kind == 'shared' else 'executable'} "
                           f"(is CC a compiler?); generated file kept at {srcs[0]}")
    os.replace(tmp, artifact)
    return artifact
