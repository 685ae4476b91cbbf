"""Which CPU features this machine has, and the refusal to run code it cannot.

A vector kernel compiled for AVX-512 on a CPU without it would die of SIGILL
(a crash of the calling Python process); every call is checked first.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterable
from pathlib import Path

from verisched.codegen.errors import CompileError, KernelCallError
from verisched.targets.toolchain import compile_c


class CpuSupportError(KernelCallError):
    """The kernel uses instructions this CPU lacks: calling it would die of SIGILL."""


_CPU_FLAGS: frozenset[str] | None = None


def cpu_flags() -> frozenset[str]:
    """The CPU feature flags the OS reports (Linux /proc/cpuinfo: features the kernel
    has enabled, e.g. no avx512f when the OS does not save its registers)."""
    global _CPU_FLAGS
    if _CPU_FLAGS is None:
        flags: set[str] = set()
        try:
            with open("/proc/cpuinfo") as f:
                for line in f:
                    if line.startswith("flags"):
                        flags |= set(line.split(":", 1)[1].split())
                        break
        except OSError:
            flags = set(_probe_flags())
        _CPU_FLAGS = frozenset(flags)
    return _CPU_FLAGS


_PROBED = ("avx2", "fma", "avx512f")


def _probe_flags() -> list[str]:
    """Without /proc/cpuinfo: ask gcc's __builtin_cpu_supports in a tiny program."""
    checks = "\n".join(f'  if (__builtin_cpu_supports("{f}")) puts("{f}");' for f in _PROBED)
    src = ("#include <stdio.h>\nint main(void) {\n  __builtin_cpu_init();\n"
           f"{checks}\n  return 0;\n}}\n")
    try:
        exe = compile_c(src, ["-O0"], kind="exe")
        res = subprocess.run([str(exe)], capture_output=True, text=True, timeout=30)
    except (CompileError, OSError, subprocess.SubprocessError):
        return []
    return res.stdout.split()


def check_cpu(features: Iterable[str], target: str, what: str) -> None:
    """Refuse to run code needing `features` on a CPU without them (never SIGILL)."""
    missing = [f for f in features if f not in cpu_flags()]
    if missing:
        raise CpuSupportError(f"{what}: this CPU does not support target {target} (missing "
                              f"CPU feature(s) {', '.join(missing)}); the kernel compiles but "
                              "cannot run here")


def cpu_model() -> str:
    """The CPU's model name (/proc/cpuinfo), for results and caches kept per machine."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown CPU"
