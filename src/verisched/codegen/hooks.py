"""The extension interface of the lowering: where a target plugs in its own rules.

The core lowering (codegen/core.py: Fig. 3 and 6 of the ATL paper) knows
generations, sums, guards, lets, reshapes and scalars.  What a target adds
-- instruction calls, buffers in its own memories, its own way to write
zeros, its element types -- it supplies as an object implementing
`TargetHooks`, which the core consults at six points and nowhere else:

- `meaning(call)`: shape inference meets an instruction call.  The target
  gives its specification (the ATL term it stands for), or refuses the call.
- `lower_term(e, dest, mode, ctx, out)`: before the core's rules, for every
  term stored into a destination.  The target lowers the term itself (an
  instruction call, a reduction into its memory) or refuses it; None: the
  core's rules apply.
- `scalar_term(e, ctx, out)`: before the core's rules, for every term in
  scalar position.  The target returns its C expression or refuses it;
  None: the core's rules apply.
- `let_in_memory(let, ctx, out, body)`: a let whose value is `in_mem M (...)`.
  The target allocates the buffer in M, fills it and runs `body` in its
  scope; None: M means nothing to it (DRAM), the core drops the marker.
- `let_ctype(var)`: a let buffer in DRAM is declared.  The target names its
  C element type; None: the kernel's.
- `zero_fill(dest, ctx, out)`: the semantics asks for zeros in a
  destination.  The target writes them its own way (True: a buffer in its
  memory) or leaves it to the core's stores (False).

(`let_in_memory` and `let_ctype` are the two halves of "allocate a let": in a
target memory, or in DRAM.)

Implementations: `codegen.vector.VectorRules` (targets c, openmp, avx2,
avx512 and their OpenMP variants: instruction calls become intrinsics,
register lets become vector variables; without a `VectorISA` both are
refused), and `targets.gemmini.rules.GemminiRules` (on-chip lets with static
rows, gemmini.h moves and products, first-product overwrite, zeros by moves
from address 0, int8/int32 DRAM lets).  A hook receives the core when it is
built and calls back into it (`core.lower`, `core.loop`, `core.names`, ...)
to lower subterms; it never subclasses the core.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from verisched.codegen.ir import Ctx, Dest, Emitter
from verisched.pybridge.terms import Expr, Instr, Let

# A let's body, lowered in the scope the let opens: (ctx with the let bound, out) -> covered.
LetBody = Callable[[Ctx, Emitter], bool]


class TargetHooks(Protocol):
    """What a target adds to the core lowering (see the module docstring)."""

    def meaning(self, e: Instr) -> Expr:
        """The ATL term instruction call `e` stands for (its extents are its shape)."""
        ...

    def lower_term(self, e: Expr, dest: Dest, mode: str, ctx: Ctx, out: Emitter
                   ) -> bool | None:
        """Store `e` into `dest` (`mode` "=" or "+="), returning whether every windowed
        index was written; None to leave `e` to the core."""
        ...

    def scalar_term(self, e: Expr, ctx: Ctx, out: Emitter) -> str | None:
        """The C expression of scalar `e` (statements it needs go to `out`); None to
        leave `e` to the core."""
        ...

    def let_in_memory(self, e: Let, ctx: Ctx, out: Emitter, body: LetBody) -> bool | None:
        """Lower `e`, whose value is `in_mem M (...)`: allocate, fill, run `body`, free;
        return what `body` returned.  None: M means nothing to the target (DRAM)."""
        ...

    def let_ctype(self, var: str) -> str | None:
        """C element type of the DRAM buffer of let `var`; None for the kernel's type."""
        ...

    def zero_fill(self, dest: Dest, ctx: Ctx, out: Emitter) -> bool:
        """Write zeros over `dest`'s windows if the target must do it its own way (a
        buffer in its memory); False to let the core store them."""
        ...
