"""The `c` target: portable C11, every loop serial."""

from __future__ import annotations

from verisched.targets.native import NativeTarget

TARGET = NativeTarget(name="c", summary="portable C11, every loop serial")
