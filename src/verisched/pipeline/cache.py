"""A cache of checked derivations: replay a `.v` file in Coq only when something the
result depends on changed.

Replaying a derivation costs seconds to minutes (the README's SGEMM example: more
than a minute); its result, a `DerivedProgram`, depends only on

- the bytes of the `.v` file and the path it was named by (the path is part of
  the result: `source` and the trace name it),
- the derivation's name,
- the Coq library the session loads: every `.v` and `.vo` under `coq/` of the
  repository the session binds to `Verisched` (the whole tree rather than the
  file's transitive imports: a little coarser, never wrong; the `.vo` files are
  what coqtop actually loads, so a library edited but not rebuilt cannot make an
  entry computed against the old build look current),
- Coq itself (`coqtop --print-version` and its path),
- the Python that reads Coq's answers into the result (the parser, the
  hypotheses, the instruction registry: a hash of every module of the package,
  with the package version and this module's SCHEMA).

All of these make up the key; the timeout does not (it changes whether a replay
finishes, not what it yields, and only successful replays are stored).  A file
whose result could depend on anything else (`Load`, `Declare ML Module`, a
`Require` from a root other than `Coq` and `Verisched`, a load path added) is
never cached.

Entries are JSON, not pickle, so reading one runs no code: each value is a
dataclass from a fixed list of classes (the AST, the hypotheses, instruction
specifications, `DerivedProgram`), and anything else makes the entry invalid.
As in targets/toolchain.py, an entry is validated before reuse (schema, key,
derivation name, decodable), a bad one is evicted (and the derivation replayed),
and writes are atomic (temporary file and rename), so concurrent runs and a
killed run never leave a half-written entry.  The directory is safe to delete.

Where: $VERISCHED_CACHE_DIR, else $XDG_CACHE_HOME/verisched, else
~/.cache/verisched (entries under `derivations/`).  VERISCHED_NO_CACHE=1 turns it
off, as does `cache=False` in pipeline.load.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterable, Mapping
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

import verisched
from verisched.pybridge import hypotheses, instrs, terms
from verisched.pybridge.errors import BridgeError
from verisched.pybridge.sentences import split_file
from verisched.pybridge.session import REPO_ROOT
from verisched.targets.toolchain import atomic_write

SCHEMA = 1

# Sentences after which the replay could depend on files outside the key.
_UNCACHEABLE_RE = re.compile(r"^(?:Load|Declare\s+ML\s+Module|Add\s+(?:Rec\s+)?LoadPath|Cd)\b")
_REQUIRE_RE = re.compile(r"^(?:From\s+(\S+)\s+)?Require\s+(?:(?:Import|Export)\s+)?(.*)\.$",
                         re.S)
_ROOTS = ("Coq", "Verisched")


def enabled() -> bool:
    """False when VERISCHED_NO_CACHE is set to anything but '' or '0'."""
    return os.environ.get("VERISCHED_NO_CACHE", "").strip() in ("", "0")


def cache_dir() -> Path:
    """Where derivations are kept (created on first use); lowerings are kept beside it,
    in `lowerings/`."""
    base = os.environ.get("VERISCHED_CACHE_DIR")
    if base:
        root = Path(base)
    else:
        xdg = os.environ.get("XDG_CACHE_HOME")
        root = (Path(xdg) if xdg else Path.home() / ".cache") / "verisched"
    d = root / "derivations"
    d.mkdir(parents=True, exist_ok=True)
    return d


# -- the key ---------------------------------------------------------------------


def _hash_files(files: Iterable[Path], root: Path) -> str:
    h = hashlib.sha256()
    for f in sorted(files):
        h.update(str(f.relative_to(root)).encode() + b"\0")
        h.update(hashlib.sha256(f.read_bytes()).digest())
    return h.hexdigest()


def library_fingerprint(repo: Path = REPO_ROOT) -> str:
    """A hash of the Coq library a session loads: every .v and .vo under coq/, and the
    _CoqProject the .vo files were built with."""
    coq = repo / "coq"
    files = [p for p in coq.rglob("*") if p.suffix in (".v", ".vo") and p.is_file()]
    project = repo / "_CoqProject"
    if project.is_file():
        files.append(project)
    return _hash_files(files, repo)


@cache
def _coq_identity_of(exe: str, mtime_ns: int) -> str:
    try:
        out = subprocess.run([exe, "--print-version"], capture_output=True, text=True,
                             timeout=60).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        out = ""
    # The executable's mtime too: a reinstall of the same version (another standard
    # library build) gives new keys; at worst one needless replay.
    return f"{exe} {mtime_ns} {out or '(version unknown)'}"


def coq_identity(coqtop: str = "coqtop") -> str | None:
    """`coqtop --print-version`, the executable's path and mtime; None if there is no coqtop
    (then nothing is cached: the replay will say what is missing)."""
    exe = shutil.which(coqtop)
    if exe is None:
        return None
    return _coq_identity_of(exe, os.stat(exe).st_mtime_ns)


@lru_cache(maxsize=1)
def code_fingerprint() -> str:
    """The package version and a hash of every module of the package: the Python that
    turns Coq's answers into a DerivedProgram (computed once per process)."""
    root = Path(verisched.__file__).resolve().parent
    return f"{verisched.__version__} {_hash_files(root.rglob('*.py'), root)}"


def cacheable(path: Path) -> bool:
    """Does the replay of `path` depend only on the file, the library and Coq?"""
    try:
        sentences = split_file(path)
    except BridgeError:
        return False
    for s in sentences:
        text = s.text.strip()
        if _UNCACHEABLE_RE.match(text):
            return False
        m = _REQUIRE_RE.match(text)
        if m is None:
            continue
        roots = [m.group(1)] if m.group(1) else [w.split(".")[0] for w in m.group(2).split()]
        if any(r.strip("()") not in _ROOTS for r in roots):
            return False
    return True


def derivation_keys(path: str | Path, names: Iterable[str]) -> dict[str, str | None]:
    """The content hash naming each derivation's entry, or None for every name when
    the file cannot be cached (see `cacheable`) or there is no coqtop."""
    p = Path(path)
    names = list(names)
    coq = coq_identity()
    if coq is None or not p.is_file() or not cacheable(p):
        return dict.fromkeys(names)
    try:
        base = "\0".join([f"schema {SCHEMA}", code_fingerprint(), coq, library_fingerprint(),
                          str(path), hashlib.sha256(p.read_bytes()).hexdigest()])
    except OSError:  # a library file vanished while hashed (a rebuild): do not cache
        return dict.fromkeys(names)
    return {n: hashlib.sha256(f"{base}\0{n}".encode()).hexdigest()[:32] for n in names}


# -- values as JSON --------------------------------------------------------------


def _classes(extra: Iterable[type]) -> dict[str, type]:
    """The dataclasses an entry may hold, by name (nothing else is ever built)."""
    out: dict[str, type] = {}
    for mod in (terms, hypotheses):
        for v in vars(mod).values():
            if isinstance(v, type) and dataclasses.is_dataclass(v) and v.__module__ == mod.__name__:
                out[v.__name__] = v
    out["Param"] = instrs.Param
    for c in extra:
        out[c.__name__] = c
    return out


def encode(x: Any) -> Any:
    """`x` as JSON data: dataclasses tagged with their class name, tuples and mappings
    tagged so that decoding gives back equal values."""
    if x is None or isinstance(x, (bool, int, float, str)):
        return x
    if isinstance(x, tuple):
        return {"$t": [encode(v) for v in x]}
    if isinstance(x, list):
        return [encode(v) for v in x]
    if isinstance(x, Mapping):
        return {"$m": [[encode(k), encode(v)] for k, v in x.items()]}
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        return {"$c": type(x).__name__,
                "f": {f.name: encode(getattr(x, f.name)) for f in dataclasses.fields(x)}}
    raise TypeError(f"cannot cache a value of type {type(x).__name__}")


def decode(data: Any, classes: Mapping[str, type]) -> Any:
    """The inverse of `encode`; ValueError on anything `encode` does not produce."""
    if data is None or isinstance(data, (bool, int, float, str)):
        return data
    if isinstance(data, list):
        return [decode(v, classes) for v in data]
    if isinstance(data, dict):
        if set(data) == {"$t"}:
            return tuple(decode(v, classes) for v in data["$t"])
        if set(data) == {"$m"}:
            return {decode(k, classes): decode(v, classes) for k, v in data["$m"]}
        if set(data) == {"$c", "f"} and data["$c"] in classes:
            cls = classes[data["$c"]]
            return cls(**{k: decode(v, classes) for k, v in data["f"].items()})
    raise ValueError(f"not a cached value: {str(data)[:80]}")


# -- instructions read from Coq ---------------------------------------------------


def learned_instructions(exprs: Iterable[Any]) -> list[instrs.InstrSpec]:
    """The specifications, read from Coq during a replay (not registered by a Python
    target), of the instructions `exprs` call: a cached result must bring them back,
    or a later process could not evaluate or lower the calls."""
    seen: dict[str, instrs.InstrSpec] = {}
    todo = [e for e in exprs if e is not None]
    while todo:
        for node in terms.walk(todo.pop()):
            if isinstance(node, terms.Instr) and node.name not in seen:
                spec = instrs.lookup(node.name)
                if spec is not None and spec.doc == instrs.LEARNED and spec.native is None:
                    seen[node.name] = spec
                    todo.append(spec.body)
    return list(seen.values())


def _encode_spec(spec: instrs.InstrSpec) -> dict[str, Any]:
    return {"name": spec.name, "params": encode(spec.params), "body": encode(spec.body),
            "family": spec.family, "lanes": spec.lanes}


def _register_spec(data: Mapping[str, Any], classes: Mapping[str, type]) -> None:
    spec = instrs.InstrSpec(data["name"], decode(data["params"], classes),
                            decode(data["body"], classes), data["family"], data["lanes"],
                            instrs.LEARNED)
    instrs.register(spec)


# -- entries ----------------------------------------------------------------------

DERIVATIONS, LOWERINGS = "derivations", "lowerings"


def _entry(key: str, kind: str) -> Path:
    d = cache_dir().parent / kind if kind != DERIVATIONS else cache_dir()
    d.mkdir(parents=True, exist_ok=True)
    return d / f"{key}.json"


def evict(key: str, kind: str = DERIVATIONS) -> None:
    """Remove an entry found unusable (the work is redone and stored again)."""
    try:
        _entry(key, kind).unlink()
    except FileNotFoundError:
        pass


def fetch(key: str, name: str, cls: type, *, kind: str = DERIVATIONS,
          classes: Iterable[type] = ()) -> Any | None:
    """The cached value of `cls` (named `name`) for `key`, or None (absent, or invalid
    and evicted).  Its learned instructions are registered again before it is
    returned.  `classes`: further dataclasses the value may hold."""
    try:
        path = _entry(key, kind)
        if not path.is_file():
            return None
    except OSError:  # no usable cache directory: work as without a cache
        return None
    known = _classes([cls, *classes])
    try:
        data = json.loads(path.read_text())
        if data.get("schema") != SCHEMA or data.get("key") != key or data.get("name") != name:
            raise ValueError("entry for another key")
        value = decode(data["value"], known)
        if not isinstance(value, cls) or getattr(value, "name", None) != name:
            raise ValueError("entry holds another value")
        for spec in data["instructions"]:
            _register_spec(spec, known)
    except (OSError, ValueError, TypeError, KeyError, AttributeError, RecursionError,
            instrs.InstrError):
        evict(key, kind)
        return None
    try:
        os.utime(path)  # used now: trimming removes the least recently used first
    except OSError:
        pass
    return value


def store(key: str, name: str, value: Any, instr_exprs: Iterable[Any], *,
          kind: str = DERIVATIONS) -> bool:
    """Store `value` under `key`; False (and nothing written) when it cannot be
    encoded or written: the cache is an optimisation, never a reason to fail."""
    try:
        data = {"schema": SCHEMA, "key": key, "name": name, "value": encode(value),
                "instructions": [_encode_spec(s) for s in learned_instructions(instr_exprs)]}
        atomic_write(_entry(key, kind), json.dumps(data, separators=(",", ":")))
    except (OSError, TypeError, ValueError, RecursionError):
        return False
    trim()
    return True


# Default bound on the entries' total size (derivations and lowerings together); an
# entry is 50-70 KB, so about 3,000 of them.  VERISCHED_CACHE_MAX_MB overrides it.
MAX_MB = 200


def limit_bytes() -> int:
    try:
        return int(float(os.environ.get("VERISCHED_CACHE_MAX_MB", MAX_MB)) * 1e6)
    except ValueError:
        return int(MAX_MB * 1e6)


def trim(limit: int | None = None) -> int:
    """Keep the entries under `limit` bytes (default: `limit_bytes()`): past it, the
    least recently used entries are removed (a `fetch` marks an entry used) until the
    rest fit in 80% of it, so trimming is rare.  Returns how many were removed.  Only
    complete `.json` entries are touched; a concurrent writer's temporary file is not."""
    limit = limit_bytes() if limit is None else limit
    try:
        root = cache_dir().parent
        entries = []
        for kind in (DERIVATIONS, LOWERINGS):
            d = root / kind
            if d.is_dir():
                for p in d.glob("*.json"):
                    st = p.stat()
                    entries.append((st.st_mtime, st.st_size, p))
    except OSError:
        return 0
    total = sum(size for _, size, _ in entries)
    if total <= limit:
        return 0
    removed = 0
    for _, size, p in sorted(entries):
        if total <= 0.8 * limit:
            break
        try:
            p.unlink()
        except OSError:
            continue
        total -= size
        removed += 1
    return removed


def value_key(*parts: Any) -> str:
    """A content hash of `parts` (encoded values and strings) with SCHEMA and the
    package's code: the key of a result computed by Python alone from them."""
    text = json.dumps([f"schema {SCHEMA}", code_fingerprint(), *[encode(p) for p in parts]],
                      separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def instruction_specs(exprs: Iterable[Any]) -> list[dict[str, Any]]:
    """The specifications of the instructions `exprs` call (all of them, learned or a
    target's), as data: what a lowering of the calls may depend on."""
    out: dict[str, dict[str, Any]] = {}
    for e in exprs:
        for node in terms.walk(e):
            if isinstance(node, terms.Instr) and node.name not in out:
                spec = instrs.lookup(node.name)
                out[node.name] = ({**_encode_spec(spec), "doc": spec.doc,
                                   "native": spec.native is not None}
                                  if spec is not None else {"name": node.name})
    return [out[k] for k in sorted(out)]
