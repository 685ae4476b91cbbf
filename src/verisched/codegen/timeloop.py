"""Time iteration (`ITER [ T ] u := x0 in step`, coq/Tensor/Iter.v) as a C loop over
time with double buffering.

Two buffers of the state's extents are allocated once per evaluation of the
iteration (once per call where its extents allow, lets.py), never per step: the
initial tensor is written into `cur`, each step reads `cur` (the state `u`) and
writes `nxt`, and the pointers are swapped; after the loop, the last step reads
`cur` and writes the destination itself (with its mode, `=` or `+=`), so the
result is never copied; with no step, the initial tensor is written there.
Lets inside the step are allocated once per call where their extents allow
(lets.py, `kernel_slot`).

The step must keep the state's extents (the lowering compares them symbolically
and refuses otherwise): Coq's [titer] allows any step, but a buffer of fixed size
cannot hold a state that grows.  Untrusted like the rest of the lowering: the
differential tests compare it with the interpreter.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from verisched.codegen.cexpr import count_text, ctext, ix, smax
from verisched.codegen.errors import LowerError, NotNormalError
from verisched.codegen.ir import Buf, Ctx, Dest, Emitter, whole
from verisched.codegen.lets import kernel_slot
from verisched.codegen.normal import show
from verisched.codegen.poly import Poly
from verisched.pybridge.terms import Expr, Iter

if TYPE_CHECKING:
    from verisched.codegen.core import Lowering


def lower_iter(lw: Lowering, e: Iter, dest: Dest, mode: str, ctx: Ctx, out: Emitter) -> bool:
    """Emit the time loop of `e` and store its final state into `dest`."""
    dims = lw.shape(e.init, ctx)
    if dims is None:
        raise NotNormalError(f"lowering: time iteration from a bare zero: {show(e)}")
    cdims = tuple(smax(d, Poly.const(0), ctx) for d in dims)
    cur, nxt = lw.names.fresh(f"{e.var}_cur"), lw.names.fresh(f"{e.var}_nxt")
    inner = ctx.child()
    inner.tensors[e.var] = Buf(cur, cdims)
    step_dims = lw.shape(e.body, inner)
    if step_dims is not None and (
            len(step_dims) != len(cdims)
            or any(not ctx.facts.le(d, s) or not ctx.facts.le(s, d)
                   for d, s in zip(cdims, (smax(x, Poly.const(0), ctx) for x in step_dims),
                                   strict=True))):
        raise LowerError(f"lowering: the step of the time iteration over {e.var} does not "
                         "provably keep the state's extents, so two fixed buffers cannot "
                         f"hold its states: {show(e)}")
    T = lw.ctype
    count = count_text(cdims, ctx)
    steps = ctext(ix(e.steps, ctx), ctx)
    # No step: the initial tensor itself.
    with out.block(f"if ({steps} <= 0)"):
        covered_init = lw.lower(e.init, dest, mode, ctx, out)
    allocs = [f"{T} *{cur} = ({T} *)vs_alloc({count}, sizeof({T}), 0);",
              f"{T} *{nxt} = ({T} *)vs_alloc({count}, sizeof({T}), 0);"]
    frees = [f"vs_free({cur});", f"vs_free({nxt});"]
    # Inside a loop, with extents over sizes: the two buffers once per call (lets.py).
    slot = kernel_slot(cdims, ctx)
    if slot is not None:
        slot.allocs.extend(allocs)
        slot.frees.extend(frees)
    t = lw.names.fresh("t")
    # The time loop counts as a loop for the lets of the step (allocated once per call).
    inner.idx_names[f"<time {t}>"] = t
    with out.block("else"):
        if slot is None:
            for line in allocs:
                out.line(line)
        with out.block(f"if ({cur} == NULL || {nxt} == NULL)"):
            out.line(f"{lw.error_flag} = 1;")
        with out.block("else"):
            _fill(lw, e.init, Buf(cur, cdims), ctx, out)
            # Steps 1 .. T-1 between the two buffers; the last one into the destination.
            with out.block(f"for (int {t} = 1; {t} < {steps}; ++{t})"):
                _fill(lw, e.body, Buf(nxt, cdims), inner, out)
                swap = lw.names.fresh("swap")
                out.line(f"{T} *{swap} = {cur}; {cur} = {nxt}; {nxt} = {swap};")
            covered_last = lw.lower(e.body, dest, mode, inner, out)
        if slot is None:
            for line in frees:
                out.line(line)
    return covered_init and covered_last


def _fill(lw: Lowering, value: Expr, buf: Buf, ctx: Ctx, out: Emitter) -> None:
    """`buf` := `value` (zeroed first where the value's lowering does not write it)."""
    fill = Emitter()
    covered = lw.lower(value, whole(buf), "=", ctx, fill)
    if not covered:
        out.line(f"memset({buf.cname}, 0, (size_t)({count_text(buf.dims, ctx)}) * "
                 f"sizeof({lw.ctype}));")
    out.extend(fill)
