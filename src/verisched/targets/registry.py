"""The one list of targets.

Every command, benchmark and API call finds its target here, by name; nothing
else enumerates targets or compares target names.  Importing a target's
module registers its instruction specifications (pybridge/instrs.py), so
importing this module makes every target's instructions known.

Adding a target: its Coq file (instructions and memories, coq/Targets/), its
Python module (an object implementing targets.base.Target), and one line in
TARGETS below.  docs/architecture.md walks through an example.
"""

from __future__ import annotations

from verisched.codegen.errors import LowerError
from verisched.targets import auto, avx2, avx512, c, cblas, openmp
from verisched.targets.base import Target
from verisched.targets.gemmini import target as gemmini

TARGETS: tuple[Target, ...] = (
    c.TARGET,
    openmp.TARGET,
    avx2.TARGET,
    avx2.TARGET_OPENMP,
    avx512.TARGET,
    avx512.TARGET_OPENMP,
    auto.TARGET,
    auto.TARGET_OPENMP,
    gemmini.TARGET,
    cblas.TARGET,
)


def all_targets() -> dict[str, Target]:
    """Name -> target, in the order of TARGETS."""
    return {t.name: t for t in TARGETS}


def target_names() -> tuple[str, ...]:
    return tuple(t.name for t in TARGETS)


def get_target(name: str | Target) -> Target:
    """The target called `name` (a Target is returned as it is), with a clear error
    naming the available ones."""
    if not isinstance(name, str):
        if not all(callable(getattr(name, m, None)) for m in ("lower", "render")):
            raise LowerError(f"target: {name!r} is neither a target's name nor a Target "
                             f"(available: {', '.join(all_targets())})")
        return name
    targets = all_targets()
    if name not in targets:
        raise LowerError(f"target: unknown target {name!r} (available: {', '.join(targets)})")
    return targets[name]
