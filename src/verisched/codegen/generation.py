"""Generations: `GEN [v] body` as a C loop over the destination's window (Fig. 3).

A generation peels the destination's first index and emits one loop,
clipped to the window (so generations write disjoint storage), with the
window's indices outside the generation's extent zero-filled.  The loop is
where the OpenMP rules of targets/openmp.py decide parallelism (the
outermost generation not under a SUM; a fallback generation under a SUM in
a parallel loop, rule 6), and where vector code splits off a mask-free main
part (codegen/vloops.py) or unrolls over register buffers.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from verisched.codegen.cexpr import ctext, inside, ix, smax, smin
from verisched.codegen.ir import Ctx, Dest, Emitter
from verisched.codegen.parallel import (
    FALLBACK,
    collapse_tiles,
    if_enough_work,
    only_if_several,
    serial_light_fallback,
)
from verisched.codegen.poly import Poly
from verisched.codegen.vloops import var_coeff
from verisched.pybridge.terms import (
    Concat,
    Gen,
    Guard,
    IBin,
    IConst,
    Idx,
    IVar,
    PCmp,
    idx_free_vars,
)

if TYPE_CHECKING:
    from verisched.codegen.core import Lowering


def lower_gen(lw: Lowering, e: Gen, dest: Dest, mode: str, ctx: Ctx, out: Emitter) -> bool:
    """Store generation `e` into `dest` (a destination with at least one window)."""
    lo, hi = ix(e.lo, ctx), ix(e.hi, ctx)
    extent = hi - lo
    a, b = dest.windows[0]
    start = smax(a, Poly.const(0), ctx)
    end = smin(b, extent, ctx)
    unroll = lw.loops.needs_unroll(e.var, e.body, dest, ctx)
    held: list[Poly] = []
    if not unroll:
        start, end, held = _store_bounds(dest, ctx, start, end)
    # A loop of at most one iteration is not worth a parallel region; the next
    # generation inside it may take the role (openmp.py, rule 2).
    tiny = ctx.facts.le(end - start, Poly.const(1))
    parallel: bool | str = (lw.parallel and not ctx.in_parallel and not ctx.in_sum
                            and not tiny)
    facts = _loop_facts(a, b, lo, held)
    parallel = parallel and not unroll
    if (lw.parallel and ctx.in_parallel and ctx.in_sum and ctx.fallback_ok
            and not tiny and not unroll):
        parallel = FALLBACK
    ranges: list[tuple[Poly, Poly, list[Poly], bool | str]] = [
        (lo + start, lo + end, [], parallel)]
    # (Scalar code only: vector code keeps its mask split and register unrolling.)
    pin = _guard_range(e) if mode == "+=" and not unroll and lw.isa is None else None
    if pin is not None:
        # The body is guarded by a bound on the loop's own variable (`GEN k |[ k =? i ]|`
        # from fuse_outputs' one-hot slices, a triangle's `j <=? i`): added into its
        # destination, the iterations where the guard fails add zero, so the loop keeps
        # only those where it holds (the guard stays, and holds there).
        (glo, ghi), rlo, rhi = pin, lo + start, lo + end
        rlo = rlo if glo is None else smax(rlo, ix(glo, ctx), ctx)
        rhi = rhi if ghi is None else smin(rhi, ix(ghi, ctx), ctx)
        one = glo is not None and ghi is not None  # at most one iteration: not parallel
        ranges = [(rlo, rhi, [], False if one else parallel)]
    tail = -1  # which of the ranges is a split's tail
    if not unroll and pin is None:  # (a guarded range: no vector split)
        # Vector code: iterations whose lanes are all in bounds first, unmasked; the
        # ragged tail after them (codegen/vloops.py, mask_split).
        # No head for a parallel loop (one loop: parallel_split): the tail's start must
        # then not be clamped to a head that is not split off (decision #139's audit:
        # iterations before it took the unmasked branch, reading and writing past
        # the arrays at small sizes).
        split = lw.loops.mask_split(e, dest, mode, ctx, out, lo, lo + start, lo + end, facts,
                                    head_ok=parallel is not True)
        if split is not None:
            head, held, mid, extra = split
            first = lo + start if head is None else head
            ranges = [(first, lo + end if mid is None else mid, held + extra, parallel)]
            if head is not None:  # a left border's head, masked, before the main loop
                ranges.insert(0, (lo + start, head, [], False))
            if mid is not None:
                ranges.append((mid, lo + end, held, False))
                tail = len(ranges) - 1
    if parallel is True and len(ranges) == 2 and tail == 1:
        cov = parallel_split(lw, e, dest, mode, ctx, out, lo, ranges, facts)
        return gen_zero_edges(lw, dest, mode, ctx, out, extent) and cov
    cov = True
    for k, (rlo, rhi, extra, par) in enumerate(ranges):
        mark, inner = len(out.lines), lw.fallback_loops
        for c2, pv in lw.loops.iterate(e.var, rlo, rhi, ctx, out, facts + extra, par, unroll,
                                       (lo, hi)):
            if not unroll:
                lw.gen_loops.add(c2.idx_names[e.var])
            if par is not True:
                c2.fallback_ok = False  # the first generation on this path had its turn
            if k == tail:  # the tail of a split: a version per band of live rows
                cov = lw.loops.lower_tail(e, dest, mode, c2, out, pv, lo) and cov
            else:
                cov = lw.lower(e.body, dest.peel(pv - lo), mode, c2, out) and cov
        if par is True:
            collapse_tiles(out, mark, lw.gen_loops)
            only_if_several(out, mark, rhi - rlo, ctx, inner, lw.fallback_loops)
            if_enough_work(out, mark, rhi - rlo, ctx)
        elif par == FALLBACK and serial_light_fallback(out, mark, rhi - rlo, end - start,
                                                       ctx):
            lw.parallel_loops -= 1
            lw.fallback_loops -= 1
    return gen_zero_edges(lw, dest, mode, ctx, out, extent) and cov


PROBE = "@i"  # the peeled index, while reading the destination's store conditions


def _store_bounds(dest: Dest, ctx: Ctx, start: Poly, end: Poly
                  ) -> tuple[Poly, Poly, list[Poly]]:
    """The generation's range [start, end) narrowed to where the destination's store
    conditions on its own index hold, and those conditions (in terms of PROBE).

    A window under flatten cannot be loop bounds where flatten is lowered (its
    condition ties two indices, reshape.py), so it is a condition on every store.
    Once the outer index is a loop variable, a condition `i + r >= 0` or
    `r - i >= 0` on the next index i, with r in scope, is a bound on i's loop: the
    iterations outside it store nothing, the zeros of the semantics included (every
    store tests the destination's conditions, core.store), so the loop skips them
    and its body knows the condition holds.  The partial row of 64 x 64 tiles in
    Blur.v's tiled schedule tested `yo*64 + yi < n - 2 && xo*64 + xi < m - 2` on
    all 4096 iterations of each tile, 14 rows of which had work (decision #119)."""
    probe = Poly.var(PROBE)
    rest = [Poly.var(f"@w{k}") for k in range(1, len(dest.windows))]
    _, conds = dest.fn([probe, *rest])
    scope = ctx.scope()
    held: list[Poly] = []
    for c in conds:
        coeff = var_coeff(c, PROBE)
        if coeff not in (1, -1):
            continue
        r = c - probe.scale(coeff)
        if not r.vars() <= scope:
            continue
        if coeff == 1:  # i >= -r
            if ctx.facts.ge0(start + r):
                continue
            start = smax(start, -r, ctx)
        else:  # i <= r
            if ctx.facts.ge0(r - end + 1):
                continue
            end = smin(end, r + 1, ctx)
        held.append(c)
    return start, end, held


def _loop_facts(a: Poly, b: Poly, lo: Poly, held: list[Poly]) -> list[Poly]:
    """What holds at loop variable `@` of a generation from `lo` whose destination
    index `@ - lo` is in the window [a, b) and meets the store conditions `held`
    (`_store_bounds`, over PROBE)."""
    at = Poly.var("@")
    return [at - lo - a, lo + b - 1 - at, *(c.subst(PROBE, at - lo) for c in held)]


def _guard_range(e: Gen) -> tuple[Idx | None, Idx | None] | None:
    """(lower, upper) bounds, upper exclusive, on the variable of `e` that a guard
    directly around its body states (`var <= x`, `x < var`, `var = x`, ... with `x`
    free of the variable; None for a side it leaves open), or None."""
    if not isinstance(e.body, Guard) or not isinstance(e.body.pred, PCmp):
        return None
    p, v = e.body.pred, IVar(e.var)
    one = IConst(1)
    if p.left == v and e.var not in idx_free_vars(p.right):
        x = p.right
        return {"<": (None, x), "<=": (None, IBin("+", x, one)),
                "=": (x, IBin("+", x, one))}.get(p.op)
    if p.right == v and e.var not in idx_free_vars(p.left):
        x = p.left
        return {"<": (IBin("+", x, one), None), "<=": (x, None),
                "=": (x, IBin("+", x, one))}.get(p.op)
    return None


def gen_zero_edges(lw: Lowering, dest: Dest, mode: str, ctx: Ctx, out: Emitter,
                   extent: Poly) -> bool:
    """Indices of the window outside the generation's extent are zero (Fig. 2)."""
    a, b = dest.windows[0]
    if mode == "=":
        if not ctx.facts.ge0(a):
            lw.zero_fill(replace(dest, windows=((a, smin(b, Poly.const(0), ctx)),
                                                *dest.windows[1:])), ctx, out)
        if not ctx.facts.le(b, extent):
            lw.zero_fill(replace(dest, windows=((smax(a, extent, ctx), b),
                                                *dest.windows[1:])), ctx, out)
    return True


def parallel_split(lw: Lowering, e: Gen, dest: Dest, mode: str, ctx: Ctx, out: Emitter,
                   lo: Poly, ranges: list[tuple[Poly, Poly, list[Poly], bool | str]],
                   facts: list[Poly]) -> bool:
    """A parallel generation split into a mask-free main part and a ragged tail
    (vloops.py, mask_split) stays one parallel loop, the two parts an `if` inside.

    Two loops would leave the tail serial: it is usually one iteration (the
    last, partial row block of a GEMM), so it would run on one thread after
    the parallel part, while the others wait; one loop gives it to the last
    thread like any other iteration (at M = 1024 in 96-row blocks, 10 full
    blocks and then a 64-row one that one thread ran while the other waited,
    about 6% of the 2-thread time)."""
    (first, mid, extra, _), (_, last, _, _) = ranges
    cov = True
    mark, inner = len(out.lines), lw.fallback_loops
    with lw.loop(e.var, first, last, ctx, out, facts, True) as (c2, pv):
        lw.gen_loops.add(c2.idx_names[e.var])
        with out.block(f"if ({c2.idx_names[e.var]} < {ctext(mid, c2)})"):
            c3 = c2.child()
            for f in [mid - 1 - pv, *(x.subst("@", pv) for x in extra)]:
                c3.facts.add(f)
            cov = lw.lower(e.body, dest.peel(pv - lo), mode, c3, out) and cov
        with out.block("else"):
            c3 = c2.child()
            c3.facts.add(pv - mid)
            cov = lw.loops.lower_tail(e, dest, mode, c3, out, pv, lo) and cov
    only_if_several(out, mark, last - first, ctx, inner, lw.fallback_loops)
    return cov


def lower_concat_gens(lw: Lowering, e: Concat, dest: Dest, mode: str, ctx: Ctx,
                      out: Emitter) -> bool | None:
    """`concat n1 n2 (GEN [v < n1] A) (GENR [n1 <= w < n1 + n2] B)` where it would be
    two parallel loops: one parallel loop over [0, n1 + n2), `A` where the index is
    below n1 and `B` from there on; None where the concat is not of that form.

    The tiling rewrites give this shape (Blur.v's tiled blur: its full rows of tiles,
    then the partial one), and two loops are two parallel regions: the second one's
    few iterations (14 of 1998 rows) cost a wake-up of the sleeping workers (about
    0.09 ms on the 2-vCPU Xeon, against 0.013 ms of work), and the first one's
    static split is uneven (31 rows of tiles on 2 threads: 16 and 15).  One loop of
    32 iterations splits 16 and 16, as parallel_split does for a vector loop's
    ragged tail.  Both parts write their own indices of the destination (the
    concat's), so the loop computes what the two did (targets/openmp.py, rule 8;
    decision #119)."""
    left, right = e.left, e.right
    # (A scalar program has no register buffers, so neither loop is unrolled.)
    if (not isinstance(left, Gen) or not isinstance(right, Gen) or mode != "="
            or not lw.parallel or ctx.in_parallel or ctx.in_sum or lw.vector_program):
        return None
    n1, n2 = ix(e.n1, ctx), ix(e.n2, ctx)
    same = [(ix(left.lo, ctx), Poly.const(0)), (ix(left.hi, ctx), n1),
            (ix(right.lo, ctx), n1), (ix(right.hi, ctx), n1 + n2)]
    if any((x - y).as_const() != 0 for x, y in same):
        return None
    a, b = dest.windows[0]
    start, end = smax(a, Poly.const(0), ctx), smin(b, n1 + n2, ctx)
    start, end, held = _store_bounds(dest, ctx, start, end)
    if ctx.facts.le(end - start, Poly.const(1)):
        return None
    facts = _loop_facts(a, b, Poly.const(0), held)
    cov = True
    mark, inner = len(out.lines), lw.fallback_loops
    with lw.loop(left.var, start, end, ctx, out, facts, True) as (c2, pv):
        cname = c2.idx_names[left.var]
        lw.gen_loops.add(cname)
        with out.block(f"if ({cname} < {ctext(n1, c2)})"):
            c3 = c2.child()
            c3.facts.add(n1 - 1 - pv)
            cov = lw.lower(left.body, dest.peel(pv), mode, c3, out) and cov
        with out.block("else"):
            c3 = c2.child()
            c3.idx_names[right.var] = cname
            c3.facts.add(pv - n1)
            cov = lw.lower(right.body, dest.peel(pv), mode, c3, out) and cov
    only_if_several(out, mark, end - start, ctx, inner, lw.fallback_loops)
    return (cov and ctx.facts.ge0(n1) and ctx.facts.ge0(n2)
            and inside((a, b), n1 + n2, ctx))
