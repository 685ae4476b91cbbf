"""Operands a library call cannot read in place, bound to buffers by a proved step.

A CBLAS routine reads a strided matrix or vector.  LIAR's latent idioms (Sec. IV-C of
liar-latent-idiom-recognition.txt: the window of a 1-D stencil, the gather of
stencil2d, a vector of ones) give a call an operand that is a *view*, a tensor
expression such as `GEN [ j < m ] GEN [ k < 5 ] |[ k =? 0 ]| img _[i] _[j + 1] <+> ...`,
or another call (`blas_fill 5 1`).  LIAR's C materialises such an operand before the
call (its `ones` array); we do the same in the derivation: each one is bound by
`name_buffer (pattern) as NAME` (Rewrites/Tactics.v, `let_intro`), a step Coq checks
like every other, so the lowering finds a let buffer, which it fills and hands to the
routine.  The calls and their count are unchanged.

Only the BLAS family is treated: the vector instructions take their operands as
registers (a nested load is their normal form), and Gemmini's moves are explicit.
"""

from __future__ import annotations

from collections.abc import Callable

from verisched.pybridge import terms as A
from verisched.pybridge.instrs import spec_of
from verisched.schedule import DirectiveRefused, Schedule

from .certify import CertificateRefused, site_pattern

FAMILIES = ("blas",)


def _in_place(e: A.Expr) -> bool:
    """A tensor operand the routine reads where it lies: a buffer or an access into one."""
    while isinstance(e, A.Get):
        e = e.tensor
    return isinstance(e, A.Var)


def unbound_operands(e: A.Expr) -> list[tuple[A.Expr, frozenset[str]]]:
    """The tensor operands of library calls that are views or calls, outermost call first,
    each with the variables bound around it."""
    out: list[tuple[A.Expr, frozenset[str]]] = []
    for node, bound in A.walk_scoped(e):
        if not isinstance(node, A.Instr):
            continue
        spec = spec_of(node.name)
        if spec.family not in FAMILIES:
            continue
        for param, arg in zip(spec.params, node.args, strict=True):
            if param.kind == "tensor" and not _in_place(arg):   # type: ignore[arg-type]
                out.append((arg, bound))   # type: ignore[arg-type]
    return out


def bind_operands(s: Schedule, *, progress: Callable[[str], None] | None = None
                  ) -> tuple[Schedule, list[str]]:
    """`s` with every unbound operand let-bound (one `name_buffer` step each, Coq-checked),
    and the steps.  A step that binds nothing new (a pattern that matched another
    subterm first) is refused: the lowering would then refuse the call, and a silent
    half-bound program would hide why."""
    steps: list[str] = []
    while (prog := s.program) is not None and (todo := unbound_operands(prog)):
        node, bound = todo[0]
        taken = {b for x in A.walk(prog) if (b := A.binder(x)) is not None}
        taken |= A.free_vars(prog)
        name = A.fresh_name("view" if isinstance(node, A.Gen) else "operand", taken)
        sentence = f"name_buffer ({site_pattern(node, bound)}) as {name}."
        if progress:
            progress(f"operand of a call bound to a buffer: {sentence}")
        try:
            after = s.apply(sentence)
        except DirectiveRefused as exc:
            raise CertificateRefused(f"Coq refused {sentence}\n{exc}") from exc
        if after.program is None or len(unbound_operands(after.program)) >= len(todo):
            raise CertificateRefused(f"{sentence} did not bind the call's operand")
        s = after
        steps.append(sentence)
    return s, steps
