"""Code generation targets: `c` (serial C11), `openmp`, and the vector targets
`avx2`, `avx512` (instruction calls and register memories, codegen/vector.py),
each also with OpenMP (`avx2-openmp`, `avx512-openmp`)."""

from __future__ import annotations

from verisched.codegen.errors import LowerError
from verisched.targets.base import Target


def get_target(name: str) -> Target:
    """Look a target up by name, with a clear error for unknown names."""
    targets = all_targets()
    if name not in targets:
        raise LowerError(f"target: unknown target {name!r} (available: {', '.join(targets)})")
    return targets[name]


def all_targets() -> dict[str, Target]:
    from verisched.targets import avx2, avx512, c, openmp

    return {t.name: t for t in (c.TARGET, openmp.TARGET, avx2.TARGET, avx2.TARGET_OPENMP,
                                avx512.TARGET, avx512.TARGET_OPENMP)}


TARGET_NAMES = ("c", "openmp", "avx2", "avx2-openmp", "avx512", "avx512-openmp")
