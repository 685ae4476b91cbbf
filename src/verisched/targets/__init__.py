"""Code generation targets: `c` (serial C11) and `openmp`."""

from __future__ import annotations

from verisched.codegen.errors import LowerError
from verisched.targets.base import Target


def get_target(name: str) -> Target:
    """Look a target up by name, with a clear error for unknown names."""
    from verisched.targets import c, openmp

    targets = {"c": c.TARGET, "openmp": openmp.TARGET}
    if name not in targets:
        raise LowerError(f"target: unknown target {name!r} (available: {', '.join(targets)})")
    return targets[name]
