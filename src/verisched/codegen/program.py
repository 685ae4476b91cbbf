"""What a target lowers: a checked program with its signature and preconditions.

Every path to a kernel (the CLI, the benchmarks, the demo, the Python API)
builds one of these in verisched.pipeline and hands it to a target
(targets/base.py); a target never reads a derivation itself.  It says:

- the term and the C name of its kernel;
- the inputs, in signature order, with their extents (index expressions over
  the size parameters), and the size parameters in signature order;
- the preconditions: the derivation's integer hypotheses over the kernel's
  sizes.  The kernel is proved equal to the program only where they hold, so
  the lowering may rely on them and the kernel refuses sizes that break them;
- how bounds safety was established: by Coq's `check_safe` on this very
  program, or not at all (`unsafe`, which the generated code says in its
  banner and the kernel object carries).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from verisched.pybridge.hypotheses import Condition
from verisched.pybridge.terms import Expr, Pred, Shape


@dataclass(frozen=True)
class KernelProgram:
    """A program ready for a target's lowering (see the module docstring)."""

    name: str
    expr: Expr
    inputs: tuple[tuple[str, Shape], ...]
    sizes: tuple[str, ...]
    preconditions: tuple[Condition, ...] = ()
    dtype: str | None = None  # None: the target's default element type
    # Where the bounds proof comes from, or why there is none.
    safety: str = ""
    unsafe: bool = False
    # Hypotheses the kernel cannot check (data properties, sizes it does not take).
    assumed: tuple[str, ...] = field(default=())
    # Storage placement (Halide's store_at): (let buffer, loop whose body allocates it).
    # Changes where memory is allocated, never what is computed: nothing to prove.
    store_at: tuple[tuple[str, str], ...] = field(default=())

    @property
    def env(self) -> dict[str, Shape]:
        """Input name -> extents, in signature order (what codegen.lower takes)."""
        return dict(self.inputs)

    def assume(self) -> list[Pred]:
        """The preconditions as lowering predicates (facts the generated code may use)."""
        return [p for c in self.preconditions for p in c.preds()]

    def violated(self, sizes: Mapping[str, int]) -> Condition | None:
        """The first precondition `sizes` break, or None."""
        for c in self.preconditions:
            if not c.holds(sizes):
                return c
        return None
