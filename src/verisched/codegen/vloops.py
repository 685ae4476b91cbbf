"""Loop shaping for vector code: unrolled register loops and mask-free main loops.

Two rules of docs/decisions.md #14 and #23, held by the core lowering as a
component (`LoopShaping`) and consulted wherever it opens a loop:

- A loop whose variable indexes a register buffer (a let in AVX2_REG /
  AVX512_REG, codegen/vector.py) is unrolled by the lowering itself, so every
  register index is a constant and gcc keeps the vectors in registers
  (`needs_unroll`, `iterate`); its extent must be a constant.
- A generation whose vector masks (lanes still in bounds), unrolled guards
  or guards depend on its variable as `r - a*v >= 0` is split where they
  start to fail: a main loop that needs no mask and no guard, then the
  tail (`mask_split`).  The conditions are collected while probing the body
  (`log_needs`, called by every place that emits a mask or a guard).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack
from typing import TYPE_CHECKING

from verisched.codegen.cexpr import ctext, ge_text, smax, smin
from verisched.codegen.errors import LowerError
from verisched.codegen.ir import Ctx, Dest, Emitter, RegBuf
from verisched.codegen.normal import access_base
from verisched.codegen.poly import Atom, Poly, binop
from verisched.codegen.scan import has_guard, has_instr, has_register_tile
from verisched.pybridge.terms import (
    Expr,
    Gen,
    Get,
    Sum,
    Var,
    idx_free_vars,
    is_idx,
    walk_scoped,
)

if TYPE_CHECKING:
    from verisched.codegen.core import Lowering

# A loop indexing a register buffer is unrolled; beyond this extent, refuse.
MAX_UNROLL = 64
# A split loop's tail is lowered as at most this many versions (lower_tail).
MAX_VERSIONS = 8


class LoopShaping:
    """Unrolling over register buffers and mask splits (see the module docstring)."""

    def __init__(self, core: Lowering) -> None:
        self.core = core
        # While probing a loop body for its mask bounds (mask_split): the bounds seen,
        # and those that hold from some iteration on (a left border's masked loads).
        self.mask_log: list[Poly] | None = None
        self.head_log: list[Poly] = []
        self.probe_depth = 0
        # Inside a versioned tail (lower_tail): no second level of versions.
        self.versioning = 0

    # -- splitting loops into unmasked iterations and a masked tail --------------
    def mask_split(self, e: Gen | Sum, dest: Dest, mode: str, ctx: Ctx, out: Emitter,
                   lo: Poly, first: Poly, last: Poly, facts: list[Poly], head_ok: bool = True
                   ) -> tuple[Poly | None, list[Poly], Poly | None, list[Poly]] | None:
        """Where a generation's vector masks (and the guards of unrolled register
        copies) depend on its variable v as `r - a*v >= 0` (a > 0; the lanes still in
        bounds at the end of a row, the rows left in a register block), the
        iterations with v <= r / a need no mask: split the loop there, as a person
        writes a main loop and a tail.  Conditions logged as holding from some iteration
        on (`a*v + r >= 0`, a > 0: a left border's masked loads, `log_needs(lower=True)`)
        split off a head likewise, so that the main loop loads without a mask (unless
        `head_ok` is False: a parallel loop, one loop whose head stays masked).
        Returns (head, the facts after it, tail start, the facts before it), each point
        None where there is no such part, or None for no split at all.  The body is
        lowered once more for this (nested loops are not probed again), into a scratch
        emitter.

        A SUM is split the same way (its body added into `dest` at every iteration, in
        order, so two loops add what one did): a guard-tailed reduction whose lanes are
        several vectors (`split j by 32 .. rfactor ji`) keeps its blocks' masks out of
        the full iterations, whose vector loop then has a constant count and its
        accumulators stay in registers (decision #150)."""
        core = self.core
        if (core.isa is None or self.mask_log is not None or not core.vector_program
                or not (has_instr(e.body) or has_guard(e.body))):
            return None
        vname = ""

        def run(probe: Emitter) -> None:
            nonlocal vname
            with core.loop(e.var, first, last, ctx, probe, facts, False) as (c2, pv):
                vname = c2.idx_names[e.var]
                self.probe_depth = c2.facts.depth[vname]
                if isinstance(e, Sum):
                    c2.in_sum = True
                    core.lower(e.body, dest, "+=", c2, probe)
                else:
                    core.lower(e.body, dest.peel(pv - lo), mode, c2, probe)

        self.head_log = []
        log = self._probe(ctx, type(out), run)
        head, head_facts = self._head(vname, first, last, ctx)
        if not head_ok:
            head, head_facts = None, []
        scope = ctx.scope()
        # need = r - a v >= 0  iff  v <= r / a.  Of the needs with the same a and the
        # same r up to a constant only the smallest constant matters (floor division
        # is monotone; the prover does not know that).
        tightest: dict[tuple[int, str], Poly] = {}
        for need in log:
            coeff = var_coeff(need, vname)
            if coeff is None or coeff >= 0:
                continue
            r = need - Poly.var(vname).scale(coeff)
            if not r.vars() <= scope:
                continue
            key = (-coeff, (r - r.constant()).key())
            if key not in tightest or need.constant() < tightest[key].constant():
                tightest[key] = need
        points: dict[str, Poly] = {}
        extra: dict[str, Poly] = {}
        for (a, _), need in tightest.items():
            r = need + Poly.var(vname).scale(a)
            # floor(r / a) + 1, written so that equal points print (and compare) equal
            points[need.key()] = binop("/", r + a, Poly.const(a))
            extra[need.key()] = need.subst(vname, Poly.var("@"))
        mid: Poly | None = None
        if points:
            ps = list(points.values())
            mid = ps[0]
            for p in ps[1:]:
                mid = smin(mid, p, ctx)
            start = first if head is None else head
            mid = smax(smin(mid, last, ctx), start, ctx)
            if ctx.facts.le(mid, start) or ctx.facts.le(last, mid):
                mid = None  # one of the two parts is provably empty
        if mid is None and head is None:
            return None
        return head, head_facts, mid, list(extra.values()) if mid is not None else []

    def _head(self, vname: str, first: Poly, last: Poly, ctx: Ctx
              ) -> tuple[Poly | None, list[Poly]]:
        """The head split of `mask_split`: conditions `a*v + r >= 0` (a > 0, r in
        scope) hold for v >= ceil(-r / a); the main loop starts at the largest such
        point, clamped to [first, last].  Returns it (None where no head is cut off)
        and the conditions, which hold from there on."""
        scope = ctx.scope()
        pts: list[Poly] = []
        held: list[Poly] = []
        for need in self.head_log:
            coeff = var_coeff(need, vname)
            if coeff is None or coeff <= 0:
                continue
            r = need - Poly.var(vname).scale(coeff)
            if not r.vars() <= scope:
                continue
            # ceil(-r / a), in floor division: (a - 1 - r) / a
            pts.append(binop("/", Poly.const(coeff - 1) - r, Poly.const(coeff)))
            held.append(need.subst(vname, Poly.var("@")))
        self.head_log = []
        if not pts:
            return None, []
        head = pts[0]
        for p in pts[1:]:
            head = smax(head, p, ctx)
        head = smin(smax(head, first, ctx), last, ctx)
        if ctx.facts.le(head, first) or ctx.facts.le(last, head):
            return None, []  # no iteration before it, or none after it
        return head, held

    def log_needs(self, needs: list[Poly], ctx: Ctx, lower: bool = False) -> None:
        """While probing: conditions `f >= 0` under which the fast path (no mask, no
        guard) is taken.  A condition on a loop nested inside the probed one is also
        logged for its worst iteration (the loop variable at its constant bound), so
        the probed loop can be split where the whole inner loop is guard-free (an
        interior micro-panel packs 6 rows, not `min(6, M - ...)`)."""
        if self.mask_log is None:
            return
        if lower:
            # From some iteration on (mask_split's head): the loop's own variable only.
            self.head_log.extend(needs)
            return
        for need in needs:
            self.mask_log.append(need)
            worst: Poly | None = need
            for v in need.vars():
                if ctx.facts.depth.get(v, 0) <= self.probe_depth:
                    continue
                assert worst is not None
                coeff = var_coeff(worst, v)
                bound = _const_bound(ctx, v, upper=coeff is not None and coeff < 0)
                if coeff is None or bound is None:
                    worst = None
                    break
                worst = worst.subst(v, Poly.const(bound))
            if worst is not None and worst != need:
                self.mask_log.append(worst)

    def _probe(self, ctx: Ctx, emitter: type[Emitter], run: Callable[[Emitter], None]
               ) -> list[Poly]:
        """Lower something into a scratch emitter with `log_needs` recording, and give
        back everything the lowering changed meanwhile: its names, loops, counters and
        the allocations it placed in enclosing store_at slots (lets.py).  Returns the
        conditions logged."""
        core = self.core
        saved = (core.parallel_loops, set(core.gen_loops),
                 set(core.names.used), core.fallback_loops, dict(core.hoisted))
        slots = [(sl, len(sl.allocs), len(sl.frees)) for sl in ctx.slots.values()]
        self.mask_log = []
        try:
            run(emitter())
            return self.mask_log
        finally:
            self.mask_log = None
            core.parallel_loops, core.gen_loops = saved[0], saved[1]
            core.names.used, core.fallback_loops = saved[2], saved[3]
            # the prologue's counts it hoisted (lets.py) hold names just given back:
            # kept, a later count would get the same name (two `count_2` in C)
            core.hoisted = saved[4]
            for sl, na, nf in slots:
                del sl.allocs[na:], sl.frees[nf:]

    # -- the tail of a split loop, one version per number of live rows ------------
    def lower_tail(self, e: Gen, dest: Dest, mode: str, ctx: Ctx, out: Emitter, pv: Poly,
                   lo: Poly) -> bool:
        """The body of a split loop's tail iteration (`mask_split`): where its register
        tile's rows are guarded by thresholds on one quantity that the reduction does not
        change (`W - 6*xo >= 2`, `>= 3`, ... for the rows of a 6-row tile at the end of a
        row of 100 pixels), one copy of the body per band between thresholds, each
        lowered knowing which rows are live, so a partial tile computes only those rows
        (a 4-pixel tail of a 6 x 64 tile: 16 FMAs a step instead of 24).

        The guards stay in the program: a version only knows, as facts, which of them
        hold, so a guard that fails there lowers to its semantics' zero, and a
        product with a zero is not accumulated (codegen/vector.py).  Only the outermost
        tail is versioned (a corner tile inside a versioned row tail is not versioned
        again), at most MAX_VERSIONS copies, and only where the version with the fewest
        live rows that still has work has fewer FMAs than the body lowered once; otherwise, or while
        probing, the body is lowered once, as before."""
        core = self.core
        bands = None
        if (self.mask_log is None and not self.versioning and core.isa is not None
                and has_register_tile(e.body, core.isa.memory)):
            vname = ctx.idx_names[e.var]
            self.probe_depth = ctx.facts.depth[vname]
            fma = core.isa.fmadd.split("(")[0] + "("
            count: list[int] = []

            def probe(c2: Ctx) -> Callable[[Emitter], None]:
                def run(scratch: Emitter) -> None:
                    core.lower(e.body, dest.peel(pv - lo), mode, c2, scratch)
                    count.append(sum(s.count(fma) for s in scratch.lines))
                return run

            bands = _bands(self._probe(ctx, type(out), probe(ctx)), vname, ctx)
            if bands:
                # Worth it only where a version drops FMAs: of the versions with any
                # work, the one with the fewest live rows (the lowest band) drops the
                # most.  Not so where the rows read a zero-padded packed panel (SGEMM's
                # A, the conv's packed weights past the last channel): no guard there.
                for _, facts in bands[::-1]:
                    band = ctx.child()
                    for f in facts:
                        band.facts.add(f)
                    self._probe(ctx, type(out), probe(band))
                    if count[-1]:
                        break
                if not 0 < count[-1] < count[0]:
                    bands = None
        if not bands:
            return core.lower(e.body, dest.peel(pv - lo), mode, ctx, out)
        cov = True
        self.versioning += 1
        try:
            for k, (cond, facts) in enumerate(bands):
                header = ("if" if k == 0 else "else if") + f" ({cond})" if cond else "else"
                c2 = ctx.child()
                for f in facts:
                    c2.facts.add(f)
                with out.block(header):
                    cov = core.lower(e.body, dest.peel(pv - lo), mode, c2, out) and cov
        finally:
            self.versioning -= 1
        return cov

    # -- loops that must be unrolled -------------------------------------------
    def needs_unroll(self, var: str, body: Expr, dest: Dest | None, ctx: Ctx) -> bool:
        """Does the loop over `var` index a register buffer (so it must be unrolled)?"""
        regs = {k for k, t in ctx.tensors.items() if isinstance(t, RegBuf)}
        if dest is not None and isinstance(dest.buf, RegBuf) and len(dest.windows) > 1:
            return True
        return bool(regs) and reg_reads(body, var, regs)

    def iterate(self, var: str, lo: Poly, hi: Poly, ctx: Ctx, out: Emitter,
                facts: list[Poly], parallel: bool | str, unroll: bool,
                bounds: tuple[Poly, Poly] | None = None) -> Iterator[tuple[Ctx, Poly]]:
        """The iterations of a loop over `var` in [lo, hi): one C loop, or, when
        `unroll`, one copy per value of `bounds` (constant; default [lo, hi)), each
        with `var` a constant and guarded by `lo <= k < hi` where not provable."""
        core = self.core
        if not unroll:
            with core.loop(var, lo, hi, ctx, out, facts, parallel) as (c2, pv):
                yield c2, pv
            return
        blo, bhi = bounds or (lo, hi)
        a, b = blo.as_const(), bhi.as_const()
        if a is None or b is None:
            raise LowerError(f"lowering: the loop over {var} indexes a register buffer, so it "
                             "is unrolled, but its extent "
                             f"[{ctext(blo, ctx)}, {ctext(bhi, ctx)}) is not a constant")
        if b - a > MAX_UNROLL:
            raise LowerError(f"lowering: the loop over {var} indexes a register buffer and "
                             f"would be unrolled {b - a} times (at most {MAX_UNROLL})")
        for k in range(a, b):
            kp = Poly.const(k)
            conds = [kp - lo, hi - 1 - kp]
            if any(ctx.facts.ge0(-f - 1) for f in conds):
                continue
            cname = core.names.fresh(f"{var}_u")
            c2 = ctx.child()
            c2.idx_names[var] = cname
            c2.consts[cname] = k
            for f in facts:
                c2.facts.add(f.subst("@", kp))
            cond = ge_text(conds, ctx)
            if cond:
                self.log_needs([f for f in conds if not ctx.facts.ge0(f)], ctx)
            with ExitStack() as stack:
                if cond:
                    stack.enter_context(out.block(f"if ({cond})"))
                    for f in conds:
                        c2.facts.add(f)
                yield c2, kp


def reg_reads(e: object, var: str, regs: set[str]) -> bool:
    """Does `e` read a register buffer with a leading index mentioning `var` (free)?"""
    if not regs or is_idx(e):
        return False
    for x, bound in walk_scoped(e):  # type: ignore[arg-type]
        if var in bound or not isinstance(x, Get):
            continue
        base, idxs = access_base(x)
        # A full access's last index is the lane; a vector operand has no lane index, so
        # every index it has is a leading one (checked both ways).
        if (isinstance(base, Var) and base.name in regs and base.name not in bound
                and any(var in idx_free_vars(i) for i in idxs)):
            return True
    return False


def _const_bound(ctx: Ctx, v: str, upper: bool) -> int | None:
    """A constant bound on loop variable `v` among the facts (`c - v >= 0` for an
    upper bound, `v - c >= 0` for a lower one)."""
    best = None
    for f in ctx.facts.facts:
        coeff = var_coeff(f, v)
        if coeff not in (1, -1) or (coeff < 0) != upper:
            continue
        rest = f - Poly.var(v).scale(coeff)
        k = rest.as_const()
        if k is None:
            continue
        b = k if upper else -k
        if best is None or (b < best if upper else b > best):
            best = b
    return best


def var_coeff(p: Poly, name: str) -> int | None:
    """Coefficient of variable `name` in `p` if it occurs only linearly (else None)."""
    coeff = 0
    for m, c in p.terms:
        if m == (Atom("var", name),):
            coeff += c
        elif any(name in Poly.atom(a).vars() for a in m):
            return None
    return coeff


def _bands(log: list[Poly], vname: str, ctx: Ctx) -> list[tuple[str, list[Poly]]] | None:
    """The versions of a tail iteration (`lower_tail`), or None for one version.

    Of the conditions logged, `P + c >= 0` with P mentioning the tail's variable and
    nothing bound inside it (so no iteration of the reduction changes it), the group
    with the same P and the most distinct thresholds t = -c; for t_1 < ... < t_m the
    bands P >= t_m, then t_(j) <= P < t_(j+1), then P < t_1, without those the facts
    rule out.  Each band comes with its C condition (empty for the last: `else`) and
    the facts that hold in it."""
    scope = ctx.scope()
    groups: dict[str, tuple[Poly, set[int]]] = {}
    for need in log:
        if vname not in need.vars() or not need.vars() <= scope:
            continue
        c = need.constant()
        P = need - c
        groups.setdefault(P.key(), (P, set()))[1].add(-c)
    if not groups:
        return None
    P, found = max(groups.values(), key=lambda g: len(g[1]))
    ts = sorted(found)
    if len(ts) < 2 or len(ts) + 1 > MAX_VERSIONS:
        return None
    kept: list[tuple[int | None, list[Poly]]] = []
    # From the band where every threshold holds down to the one where none does.
    for low, high in zip([*ts[::-1], None], [None, *ts[::-1]], strict=True):
        if low is not None and ctx.facts.ge0(Poly.const(low - 1) - P):
            continue  # P < low throughout
        if high is not None and ctx.facts.ge0(P - high):
            continue  # P >= high throughout
        facts = ([P - low] if low is not None else []) + \
            ([Poly.const(high - 1) - P] if high is not None else [])
        kept.append((low, facts))
    bands: list[tuple[str, list[Poly]]] = []
    for low, facts in kept:
        cond = ge_text([P - low], ctx) if low is not None else ""
        bands.append((cond, facts))
        if not cond:
            break  # holds throughout (or the last band): the `else`
    if bands[-1][0]:
        bands[-1] = ("", bands[-1][1])  # the bands below it were ruled out
    return bands if len(bands) >= 2 else None
