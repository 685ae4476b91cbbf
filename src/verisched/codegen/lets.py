"""Lets: `tlet x := value in body` as a buffer filled before the body (Fig. 3).

A scalar let is a C local.  A tensor let is a buffer of the value's extents
(clipped at 0), on the stack when it is small and constant, else on the
heap; a failed allocation sets the kernel's error flag and skips the body
(the Python wrapper raises), it never dereferences NULL.  A heap buffer's
element count is computed in 64 bits with every overflow checked, and an
extent beyond `int` counts as a failed allocation (the loops over it are
`int`): whatever the sizes, the buffer is never smaller than its indices,
whose linearisation is 64-bit too (cexpr.flat_text).  A buffer is
zeroed first only when the value's lowering does not write all of it.  A
let whose value is placed in a memory (`in_mem M`) is the target's
(codegen/hooks.py, `let_in_memory`); the target also names the C element
type of a DRAM buffer (`let_ctype`; Gemmini's int8 copies).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from verisched.codegen.cexpr import count_text, smax
from verisched.codegen.errors import LowerError, NotNormalError
from verisched.codegen.hooks import LetBody
from verisched.codegen.ir import (
    ELEM_BYTES,
    KERNEL_SLOT,
    Buf,
    Ctx,
    Emitter,
    ScalarVar,
    StoreSlot,
    whole,
)
from verisched.codegen.normal import show
from verisched.codegen.poly import Poly
from verisched.pybridge.terms import Let, Mem

if TYPE_CHECKING:
    from verisched.codegen.core import Lowering

STACK_LIMIT_BYTES = 64 * 1024


def with_let(lw: Lowering, e: Let, ctx: Ctx, out: Emitter, body: LetBody) -> bool:
    """Allocate `e.var`, fill it with `e.value`, run `body` in its scope, free it."""
    if isinstance(e.value, Mem) and e.var in lw.store_at:
        raise LowerError(f"store_at {e.var} {lw.store_at[e.var]}: {e.var} is placed in memory "
                         f"{e.value.memory} (in_mem), where the target allocates it")
    if isinstance(e.value, Mem):
        res = lw.target.let_in_memory(e, ctx, out, body)
        if res is not None:
            return res
        e = Let(e.var, e.value.body, e.body)
    ctype = lw.target.let_ctype(e.var)
    if ctype is None:
        return _dram_let(lw, e, ctx, out, body)
    saved = lw.ctype
    lw.ctype = ctype
    try:
        return _dram_let(lw, e, ctx, out, body)
    finally:
        lw.ctype = saved


def _dram_let(lw: Lowering, e: Let, ctx: Ctx, out: Emitter, body: LetBody) -> bool:
    dims = lw.shape(e.value, ctx)
    if dims is None:
        raise NotNormalError(f"lowering: let {e.var} binds a bare zero: {show(e)}")
    name = lw.names.fresh(e.var)
    if not dims:
        val = lw.scalar(e.value, ctx, out)
        out.line(f"{lw.ctype} {name} = {val};")
        c2 = ctx.child()
        c2.tensors[e.var] = ScalarVar(name)
        return body(c2, out)
    cdims = tuple(smax(d, Poly.const(0), ctx) for d in dims)
    slot = _slot(lw, e.var, cdims, ctx)
    buf = Buf(name, cdims, lw.support.support_of(e.value, ctx) if lw.vector_program else ())
    fill = Emitter()
    covered = lw.lower(e.value, whole(buf), "=", ctx, fill)
    total = Poly.const(1)
    for d in cdims:
        total = total * d
    c2 = ctx.child()
    c2.tensors[e.var] = buf
    tc = total.as_const()
    T = lw.ctype
    stack = tc is not None and tc * ELEM_BYTES.get(lw.dtype, 4) <= STACK_LIMIT_BYTES
    if slot is None and not stack:
        slot = kernel_slot(cdims, ctx)
    if slot is not None:
        return _placed_let(lw, slot, name, cdims, tc, covered, fill, c2, out, body)
    with out.block(""):
        if tc is not None and tc * ELEM_BYTES.get(lw.dtype, 4) <= STACK_LIMIT_BYTES:
            out.line(f"{T} {name}[{max(tc, 1)}];")
            if not covered:
                out.line(f"memset({name}, 0, sizeof({name}));")
            out.extend(fill)
            res = body(c2, out)
        else:
            out.line(f"{T} *{name} = ({T} *){_allocation(lw, cdims, covered, ctx)};")
            with out.block(f"if ({name} == NULL)"):
                out.line(f"{lw.error_flag} = 1;")
            with out.block("else"):
                out.extend(fill)
                res = body(c2, out)
                out.line(f"vs_free({name});")
    return res


def _slot(lw: Lowering, var: str, cdims: tuple[Poly, ...], ctx: Ctx) -> StoreSlot | None:
    """The slot a `store_at` places `var` in, after checking it may (Halide-semantics
    seed Sec. 8.4: the allocation must dominate every access; here also: its extents
    must be known at the slot, and no parallel loop may lie between slot and let, whose
    threads would share the buffer)."""
    loop = lw.store_at.get(var)
    if loop is None:
        return None
    where = f"store_at {var} {loop}"
    slot = ctx.slots.get(loop)
    if slot is None:
        raise LowerError(f"{where}: no loop {loop} encloses the let of {var} in the lowered "
                         "program (the allocation must enclose every use)")
    inner = sorted(set().union(*(d.vars() for d in cdims)) - slot.bound - ctx.facts.sizes)
    if inner:
        raise LowerError(f"{where}: the extents of {var} depend on {', '.join(inner)}, "
                         f"a loop inside {loop}, so one allocation at {loop} cannot hold "
                         "every iteration's buffer")
    if ctx.par_depth > slot.par_depth:
        raise LowerError(f"{where}: a loop between {loop} and the let of {var} runs in "
                         "parallel, and its threads would share the buffer; store it inside "
                         "that loop or compile for a serial target")
    lw.placed.add(var)
    return slot


def kernel_slot(cdims: tuple[Poly, ...], ctx: Ctx) -> StoreSlot | None:
    """The kernel's own scope, for a heap buffer inside a loop whose extents are over
    sizes only (issue 13: 2mm's row buffer was malloc'ed and freed at every row): it is
    allocated once, in the prologue, and refilled at every evaluation of its let, as a
    `store_at` at the kernel's scope would (Halide's store_root).  Not under a parallel
    loop, whose threads would share it, and not for a let outside every loop, which
    runs once anyway.  The cost: two such lets in sequence are both live for the whole
    call (their sum of memory, not their maximum)."""
    root = ctx.slots.get(KERNEL_SLOT)
    if root is None or ctx.par_depth > 0:
        return None
    loops = set(ctx.idx_names.values()) - ctx.facts.sizes
    if not loops:
        return None
    if any(d.vars() - ctx.facts.sizes for d in cdims):
        return None
    return root


def _placed_let(lw: Lowering, slot: StoreSlot, name: str, cdims: tuple[Poly, ...],
                tc: int | None, covered: bool, fill: Emitter, c2: Ctx, out: Emitter,
                body: LetBody) -> bool:
    """A let whose storage a `store_at` placed at an enclosing loop: allocated once per
    iteration of that loop, refilled (zeroed first where its value does not cover
    it) at every evaluation of the let."""
    T = lw.ctype
    stack = tc is not None and tc * ELEM_BYTES.get(lw.dtype, 4) <= STACK_LIMIT_BYTES
    if stack:
        slot.allocs.append(f"{T} {name}[{max(tc or 0, 1)}];")
    else:
        slot.allocs.append(f"{T} *{name} = ({T} *){_allocation(lw, cdims, True, c2)};")
        slot.frees.append(f"vs_free({name});")
    with out.block(""):
        if not stack:
            with out.block(f"if ({name} == NULL)"):
                out.line(f"{lw.error_flag} = 1;")
        with out.block("" if stack else "else"):
            if not covered:
                size = (f"sizeof({name})" if stack else
                        f"(size_t)({count_text(cdims, c2)}) * sizeof({T})")
                out.line(f"memset({name}, 0, {size});")
            out.extend(fill)
            res = body(c2, out)
    return res


def _allocation(lw: Lowering, cdims: tuple[Poly, ...], covered: bool, ctx: Ctx
                ) -> str:
    """The call allocating a heap buffer of extents `cdims`, zeroed unless its value
    covers it; NULL when it cannot be allocated.  The count is computed with every
    overflow checked (the helpers of codegen/templates/helpers.c.j2, in every target's
    C) and an extent beyond `int` (the loops over it are `int`) is refused: never a
    buffer smaller than its indices."""
    count = count_text(cdims, ctx)
    if not count.isidentifier() and not count.isdigit() \
            and all(d.vars() <= ctx.facts.sizes for d in cdims):
        # Over sizes only: computed once, in the prologue.  Measured: the checked count
        # computed at an allocation inside the kernel's loop nest cost sgemm_avx2 6% at
        # 1024^3 (gcc optimised the nest around it worse); hoisted, 3-6% in the same runs,
        # which moved by that much from run to run (docs/decisions.md #40).
        if count not in lw.hoisted:
            lw.hoisted[count] = lw.names.fresh("count")
        count = lw.hoisted[count]
        # reserved again on reuse: a probe (vloops.mask_split) gives back the names it
        # took, so a count it hoisted must not be handed out twice (two `count_2`)
        lw.names.used.add(count)
    return f"vs_alloc({count}, sizeof({lw.ctype}), {0 if covered else 1})"
