"""Gemmini's products: `gemmini_matmul` into accumulator tiles, and reductions of them.

A product is a preload of B (the weights: weight-stationary dataflow, the
only one configured) naming the output tile, then a compute streaming A
(Gemmini.v); operands are read only within their valid rows and columns, so
partial tiles need no padding.  `SUM [k] gemmini_matmul a b` into an
accumulator tile overwrites on its first iteration (preload without the
accumulate bit) and accumulates on the others, so no zeroing move is needed
(docs/decisions.md #16); `bias <+> SUM ...` loads the bias and always
accumulates.  An empty sum (only when a size may make it so) zeroes the
tile under a run-time test.
"""

from __future__ import annotations

from contextlib import nullcontext
from typing import TYPE_CHECKING

from verisched.codegen.cexpr import ctext, ix
from verisched.codegen.errors import LowerError
from verisched.codegen.ir import Ctx, Dest, Emitter
from verisched.codegen.normal import show
from verisched.pybridge.terms import Sum, TAdd
from verisched.targets.gemmini import config as cfg
from verisched.targets.gemmini.arith import positive_at_min
from verisched.targets.gemmini.instrs import Role
from verisched.targets.gemmini.onchip import (
    DIM,
    check_mem,
    onchip_dest,
    operand_tile,
    record_written,
    tile_extent,
    zero_tile,
)

if TYPE_CHECKING:
    from verisched.targets.gemmini.rules import GemminiRules

# Execute config: weight-stationary, no activation, no shift, A_stride 1, no transposes.
EX_WS = ("WEIGHT_STATIONARY", "NO_ACTIVATION", "0", "1", "0", "0")


def emit_matmul(g: GemminiRules, role: Role, args: dict, dest: Dest, mode: str, ctx: Ctx,
                out: Emitter, where: str) -> bool:
    """A product into an accumulator tile: overwriting (`=`, or the first iteration of
    the reduction it is in) or accumulating."""
    c_addr, mem, lead = onchip_dest(g, dest, ctx, where)
    check_mem(mem, role, where)
    a_addr, a_mem = operand_tile(g, args[role.a], ctx, f"operand {role.a} of {where}")
    b_addr, b_mem = operand_tile(g, args[role.b], ctx, f"operand {role.b} of {where}")
    for m, which in ((a_mem, role.a), (b_mem, role.b)):
        if m != "GEMMINI_SPAD":
            raise LowerError(f"gemmini: operand {which} of {where} is in {m}; the systolic "
                             "array reads its operands from the scratchpad")
    a_rows, a_cols = tile_extent(g, args[role.a], ctx)
    b_rows, b_cols = tile_extent(g, args[role.b], ctx)
    assert dest.buf is not None
    acc = g.onchip[dest.buf.cname]
    firsts = g.first.get(dest.buf.cname)
    if mode == "=":
        target = c_addr
        record_written(acc, lead, a_rows, b_cols, ctx, where)
    elif firsts:
        cond = " && ".join(f"({f})" for f in firsts)
        target = f"({c_addr}) | (({cond}) ? 0u : 0x{cfg.ACCUMULATE_BIT:x}u)"
        record_written(acc, lead, a_rows, b_cols, ctx, where)
    else:
        target = f"({c_addr}) | 0x{cfg.ACCUMULATE_BIT:x}u"
    t = {k: ctext(v, ctx) for k, v in
         (("ar", a_rows), ("ac", a_cols), ("br", b_rows), ("bc", b_cols))}
    out.line(cfg.marker("ex", EX_WS))
    # Weight-stationary (Gemmini.v): preload B (the weights) naming the output C with
    # b_cols x a_rows, then stream A (a_rows x a_cols); every operand is zero outside
    # the rows and columns given, so partial tiles need no zero padding.  A product
    # whose output block is empty (no valid row of A or column of B: a tile past the
    # matrix's edge) writes nothing, so it is skipped.
    empty = [f"{t[x]} > 0" for x, p in (("ar", a_rows), ("bc", b_cols))
             if not ctx.facts.ge0(p - 1)]
    with out.block(f"if ({' && '.join(empty)})") if empty else nullcontext():
        out.line(f"gemmini_extended_preload({b_addr}, {target}, {t['bc']}, {t['br']}, "
                 f"{t['bc']}, {t['ar']});")
        out.line(f"gemmini_extended_compute_preloaded({a_addr}, {cfg.GARBAGE_ADDR}, "
                 f"{t['ac']}, {t['ar']}, {DIM}, {DIM});")
    return True


def lower_acc_sum(g: GemminiRules, e: Sum, dest: Dest, mode: str, ctx: Ctx, out: Emitter) -> bool:
    """`SUM [k] body` into an accumulator tile: the first iteration overwrites."""
    assert dest.buf is not None
    name = dest.buf.cname
    if g.onchip[name].memory != "GEMMINI_ACC":
        raise LowerError(f"gemmini: a sum is stored into a scratchpad buffer: {show(e)}; "
                         "reductions accumulate in GEMMINI_ACC")
    lo, hi = ix(e.lo, ctx), ix(e.hi, ctx)
    fresh = mode == "="
    if fresh and not ctx.facts.lt(lo, hi) and not positive_at_min(hi - lo, ctx.facts.sizes):
        # An empty sum is zero: zero the tile when the loop may not run.
        sub = Emitter()
        zero_tile(g, dest, ctx, sub)
        with out.block(f"if ({ctext(hi, ctx)} <= {ctext(lo, ctx)})"):
            out.extend(sub)
    saved = g.first.get(name)
    with g.core.loop(e.var, lo, hi, ctx, out, []) as (c2, pv):
        c2.in_sum = True
        if fresh or saved is not None:
            g.first[name] = [*(saved or []), f"{ctext(pv, c2)} == {ctext(lo, ctx)}"]
        try:
            g.core.lower(e.body, dest, "+=", c2, out)
        finally:
            if saved is None:
                g.first.pop(name, None)
            else:
                g.first[name] = saved
    return True


def lower_acc_tadd(g: GemminiRules, e: TAdd, dest: Dest, mode: str, ctx: Ctx, out: Emitter
                   ) -> bool:
    """acc := bias <+> SUM ...: the left operand writes, the right accumulates."""
    assert dest.buf is not None
    covered = g.core.lower(e.left, dest, mode, ctx, out)
    # The right operand adds to what the left wrote: it never overwrites, even in
    # the first iteration of an enclosing reduction.
    name = dest.buf.cname
    saved = g.first.pop(name, None)
    try:
        g.core.lower(e.right, dest, "+=", ctx, out)
    finally:
        if saved is not None:
            g.first[name] = saved
    return covered
