"""The `c` target: portable C11, every loop serial."""

from __future__ import annotations

from verisched.targets.base import Target

TARGET = Target(name="c", parallel=False)
