"""The `gemmini` target: C for Gemmini's `gemmini.h`, run on the functional simulator.

It implements targets.base.Target like the C family: its instructions
(`gemmini_` moves, the 16x16x16 multiply-accumulate, the output path;
instrs.py, checked against coq/Targets/Gemmini.v) and memories (scratchpad,
accumulator) are its own; it lowers with lower.py, renders one C file per
kernel with a file-driven `main` (build.py), and runs that program on the
simulator (sim.py), whose per-process counters are the performance figures.
A kernel is therefore called through a subprocess, not ctypes, and remembers
the counters of its last call.

Gemmini computes on int8 data with int32 accumulators: the element type is
int8 (int32 inputs, such as a bias, are typed by the lowering).  Output-path
settings (`sm`, `se`, `act`: the scale and the activation) are integer kernel
arguments that are not sizes (lower.config_names), so they may be zero or
negative.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from verisched.codegen.errors import CompileError, KernelCallError, LowerError, PreconditionError
from verisched.codegen.program import KernelProgram
from verisched.pybridge.instrs import InstrSpec, registered
from verisched.pybridge.terms import Tuple, walk
from verisched.targets.base import (
    CSource,
    Kernel,
    Lowered,
    TargetUnavailable,
    banner,
    c_source_arg,
    check_input_names,
    infer_sizes,
)
from verisched.targets.gemmini import build as gbuild
from verisched.targets.gemmini import instrs  # noqa: F401  (registers the specifications)
from verisched.targets.gemmini.lower import (
    GemminiKernel,
    config_names,
    lower_gemmini,
    padding_names,
)
from verisched.targets.gemmini.sim import include_dir
from verisched.targets.toolchain import compiler


@dataclass
class GemminiRunner:
    """A Gemmini kernel built against the simulator (implements targets.base.Kernel)."""

    lowered: GemminiKernel
    exe: Path
    program: KernelProgram | None = None
    target: str = "gemmini"
    # The simulator's counters of the last call (instructions, bytes moved, ...).
    counters: dict[str, int] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.lowered.name

    @property
    def unsafe(self) -> bool:
        return bool(self.program and self.program.unsafe)

    def input_dtypes(self) -> dict[str, np.dtype]:
        return {a: np.dtype(gbuild.NP_TYPES[t]) for a, _, _, t in self.lowered.inputs}

    def extents(self, sizes: Mapping[str, int]
                ) -> tuple[dict[str, tuple[int, ...]], tuple[int, ...]]:
        self._check_preconditions(sizes)
        return gbuild.shapes(self.lowered, dict(sizes))

    def _check_preconditions(self, sizes: Mapping[str, int]) -> None:
        if self.program is None:
            return
        want = set(self.program.sizes)
        if set(sizes) != want:
            raise KernelCallError(f"{self.name}: size parameters must be {sorted(want)}, got "
                                  f"{sorted(sizes)}")
        bad = self.program.violated(sizes)
        if bad is not None:
            raise PreconditionError(f"{self.name}: sizes {dict(sizes)} violate the precondition "
                                  f"{bad.name + ' : ' if bad.name else ''}{bad.text}; the kernel "
                                  "is only proved equal to the program where it holds")

    def call(self, inputs: Mapping[str, np.ndarray], sizes: Mapping[str, int],
             out: np.ndarray | None = None) -> np.ndarray:
        """Run on the simulator; every input is checked first.  `out`, if given, receives
        the result (the simulator writes a file, so it is a copy either way)."""
        check_input_names(self.name, [a for a, _, _, _ in self.lowered.inputs], inputs)
        self._check_preconditions(sizes)
        if out is not None and (not isinstance(out, np.ndarray) or not out.flags.writeable):
            raise KernelCallError(f"{self.name}: out must be a writable numpy array "
                                  "(a read-only one cannot receive the result)")
        res = gbuild.run(self.lowered, dict(inputs), dict(sizes), self.exe)
        self.counters = dict(res.counters)
        if out is not None:
            if out.shape != res.out.shape or out.dtype != res.out.dtype:
                raise KernelCallError(f"{self.name}: out must be {res.out.dtype} of shape "
                                      f"{res.out.shape}")
            out[...] = res.out
            return out
        return res.out

    def __call__(self, inputs: Mapping[str, np.ndarray] | None = None, /,
                 **sizes: int) -> np.ndarray:
        """Run on `inputs`; a size that is exactly an input's extent may be left out
        (`kernel({"A": a, "B": b, "D": d}, sm=1, se=0, act=0)`), as for the C targets."""
        ins = {} if inputs is None else inputs
        k = self.lowered
        check_input_names(self.name, [a for a, _, _, _ in k.inputs], ins, sizes)
        return self.call(ins, infer_sizes(self.name, [(a, d) for a, _, d, _ in k.inputs],
                                          k.sizes, ins, sizes))


@dataclass(frozen=True)
class GemminiTarget:
    """Gemmini behind the Target protocol (see the module docstring)."""

    name: str = "gemmini"
    summary: str = "gemmini.h calls (scratchpad, accumulator, 16x16 systolic array), run on " \
                   "the functional simulator"
    dtypes: tuple[str, ...] = ("int8",)
    memories: tuple[str, ...] = ("GEMMINI_SPAD", "GEMMINI_ACC")
    families: tuple[str, ...] = ("gemmini",)
    parallel: bool = False
    runs_on: str = "simulator"
    coq_scalar: str = "gint"  # coq/Targets/Gemmini.v states its instructions over Z data

    def instructions(self) -> tuple[InstrSpec, ...]:
        return tuple(s for s in registered().values() if s.family in self.families)

    def check_runtime(self) -> None:
        try:
            compiler()
        except CompileError as exc:  # the simulator is C: it cannot be built
            raise TargetUnavailable(f"target gemmini: the simulator needs a C compiler: "
                                    f"{exc}") from exc
        if not (include_dir() / "gemmini.h").is_file():
            raise TargetUnavailable(f"target gemmini: simulator headers missing in "
                                    f"{include_dir()}")

    def lower(self, program: KernelProgram) -> Lowered:
        dtype = program.dtype or self.dtypes[0]
        if dtype not in self.dtypes:  # its int32 bias inputs are the lowering's choice
            raise LowerError(f"target gemmini: element type {dtype} is not supported "
                             f"({', '.join(self.dtypes)}; a bias input is int32 where the "
                             "program moves it into the accumulator)")
        if program.store_at:
            var, loop = program.store_at[0]
            raise LowerError(f"store_at {var} {loop}: target gemmini places buffers itself "
                             "(DRAM lets at their let, on-chip ones by in_mem); the CPU "
                             "targets honour store_at")
        # at the top, or inside a fused sweep (mvt_sweep: a SUM of pairs, which reached
        # the shape computation and an AttributeError)
        if any(isinstance(x, Tuple) for x in walk(program.expr)):
            raise LowerError("target gemmini: a program with several outputs is not "
                             "supported (its runner reads one output matrix); derive and "
                             "compile each output as its own program")
        # Output-path settings are not sizes: facts about them are not handed to the
        # prover (they are still checked before every call, GemminiRunner).  A padding is
        # not a size either (it may be 0), but its facts are (pd >= 0, KH <= H + 2 pd).
        configs = config_names(program.expr) - padding_names(program.expr)
        assume = [p for c in program.preconditions if not c.free_vars() & configs
                  for p in c.preds()]
        # Those about the configuration are checked at the kernel's entry all the same.
        on_configs = [p for c in program.preconditions if c.free_vars() & configs
                      for p in c.preds()]
        k = lower_gemmini(program.expr, program.env, name=program.name, dtype=dtype,
                          sizes=list(program.sizes), assume=assume, check_only=on_configs)
        st = k.configs
        summary = (f"{k.spad_rows} scratchpad and {k.acc_rows} accumulator rows, "
                   f"{st.emitted if st else 0} config instruction(s) for "
                   f"{st.requirements if st else 0} requirement(s)")
        return Lowered(self, program, k, summary)

    def build_hint(self, c_file: Path, dtype: str | None = None) -> str:
        """How to compile the C file: its `#include "include/gemmini.h"` finds the
        simulator in this package, or, for the accelerator, Gemmini's own header.
        (`dtype`: the same flags for every element type; the accumulators' arithmetic is
        the simulator's, which saturates as the hardware does.)"""
        return (f"cc -std=gnu11 -O2 -I{shlex.quote(str(include_dir().parent))} -c "
                f"{c_source_arg(c_file)} (the functional "
                "simulator's include/gemmini.h; for the accelerator, -I the directory of "
                "gemmini-rocc-tests that holds include/gemmini.h)")

    def render(self, lowered: Sequence[Lowered]) -> CSource:
        if len(lowered) != 1:
            raise LowerError("target gemmini: one kernel per C file (each is a simulator "
                             f"program), got {len(lowered)}")
        lw = lowered[0]
        notes = banner(lowered)
        return CSource(self, tuple(lowered), gbuild.render(lw.kernel, notes=notes),
                       gbuild.header(lw.kernel, notes))

    def build(self, source: CSource, *, fast_math: bool = False) -> dict[str, Kernel]:
        lw = source.lowered[0]
        exe = gbuild.build(lw.kernel, source.c)
        return {lw.name: GemminiRunner(lw.kernel, exe, lw.program)}


TARGET = GemminiTarget()
