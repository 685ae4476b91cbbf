"""Gemmini target: a host-side functional simulator of Gemmini's `gemmini.h` interface.

The C side lives in `include/` (drop-in `gemmini.h` + `gemmini_params.h`); the
Python side (`sim`) compiles C programs against it, runs them and reads the
instruction/byte counters they leave behind.  Lowering to Gemmini can thus be
tested on any host, without RISC-V tools or Spike.
"""

from verisched.targets.gemmini.sim import (
    COUNTER_NAMES,
    GemminiSimError,
    RunResult,
    compile_program,
    include_dir,
    parse_counters,
    run_program,
)

__all__ = [
    "COUNTER_NAMES",
    "GemminiSimError",
    "RunResult",
    "compile_program",
    "include_dir",
    "parse_counters",
    "run_program",
]
