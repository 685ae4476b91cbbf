"""One typed path from a derivation to a running kernel.

    load / from_ast  ->  DerivedProgram      (derive.py, ast.py: Coq replays or checks)
    check            ->  CheckedProgram      (check.py: check_safe required,
                                              hypotheses become preconditions)
    lower            ->  Lowered             (the target's lowering)
    render           ->  CSource             (C file and header)
    build            ->  {name: Kernel}      (compiled, cached, callable)

Every entry point goes this way: the CLI commands (verisched.commands), the
benchmarks, the demo and the Python API.  Targets are looked up by name in
the one registry (targets/registry.py).  The two shortcuts run it all:

    >>> from verisched import pipeline
    >>> k = pipeline.compile_derivation("coq/Examples/Blur.v", "blur_tiled", "openmp",
    ...                                 fix={"kn": 32, "km": 16})     # doctest: +SKIP
    >>> y = k({"v": img}, n=203, m=157)                             # doctest: +SKIP

A replay and a lowering are cached by content (cache.py): a second `load` of an
unchanged derivation starts no Coq, and a second `lower` of the same checked program
for the same target does not run the lowering again.  `load(..., cache=False)`,
`lower(..., cache=False)` or VERISCHED_NO_CACHE=1 turn that off; `progress=print`
shows each replayed step ("NAME: step k of n: TACTIC").

`compile_program` does the same for a program built in Python, after Coq has
checked its bounds.  Skipping that check takes `unsafe=True`, and the kernel
then says so (`kernel.unsafe`, and UNSAFE in its C file).
"""

from verisched.pipeline.ast import from_ast
from verisched.pipeline.check import CheckedProgram, FixValue, check
from verisched.pipeline.compile import (
    build,
    choose_target,
    compile_checked,
    compile_derivation,
    compile_program,
    default_target,
    lower,
    needs,
    render,
    supports,
)
from verisched.pipeline.derive import (
    DerivationError,
    DerivedProgram,
    derivations_in,
    load,
    load_many,
)
from verisched.pipeline.execute import (
    MemoryLimitError,
    Verdict,
    check_memory,
    float_agrees,
    random_inputs,
    verify,
)
from verisched.targets.base import CSource, Kernel, Lowered, Target, TargetUnavailable
from verisched.targets.registry import TARGETS, all_targets, get_target, target_names

__all__ = [
    "TARGETS", "CSource", "CheckedProgram", "DerivationError", "DerivedProgram", "Kernel",
    "MemoryLimitError",
    "FixValue", "Lowered", "Target", "TargetUnavailable", "Verdict", "all_targets", "build",
    "check", "check_memory", "choose_target",
    "compile_checked", "compile_derivation", "compile_program", "default_target",
    "derivations_in", "float_agrees",
    "from_ast", "get_target", "load", "load_many", "lower", "needs", "random_inputs", "render",
    "supports", "target_names", "verify",
]
