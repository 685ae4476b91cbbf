"""The schedule space: parameterised directive templates for one program and target.

Why templates and not free-form search over tactics: a template is a short, fixed
sequence of directives (Halide's and Exo's vocabulary) whose *parameters* vary, so
Optuna searches a small space of named choices (tile sizes, a loop order, the loop
to vectorize and its ISA, the loop to run in parallel, where a producer is
computed).  Nothing here decides legality: a point the directives refuse
(`DirectiveRefused`, `AnnotationRefused`, `ScheduleArgumentError`) is pruned by that
refusal, counted and logged as "refused" (tune/evaluate.py).

The space is read from the program's AST: its producers (root lets) and the
consumer's loop nest (generations and sums from the root, through guards and
lets).  `Space.suggest(trial)` asks an Optuna trial for the parameters
(define-by-run: a parameter exists only where it means something), and
`Space.ops(params)` turns parameters into directive calls: a pure function, so a
logged candidate can be rebuilt from its parameters alone (resume, the workers).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

from verisched.pipeline import Target
from verisched.pybridge.terms import Expr, Gen, Guard, Let, Sum, binder, walk
from verisched.schedule.directives import ISA_DTYPE, ISAS
from verisched.schedule.dsl import Program

from . import templates as tpl
from . import templates_layers as lay
from .space_types import NONE, Loop, Op, Trial
from .space_types import fresh as _fresh

# Tile factors tried for each of the two tiled loops; 1 means "not split".
TILE_FACTORS = (1, 4, 8, 16, 32, 64, 128, 256)
UNROLL_FACTORS = (1, 4, 8)


def consumer_nest(e: Expr) -> tuple[tuple[str, ...], tuple[Loop, ...]]:
    """The root lets (producers, outermost first) and the loops of the consumer's
    nest: generations and sums from the root, through guards, down to the first
    other node."""
    lets: list[str] = []
    while isinstance(e, Let):
        lets.append(e.var)
        e = e.body
    return tuple(lets), loop_nest(e)


def loop_nest(e: Expr) -> tuple[Loop, ...]:
    """The generations and sums from `e` down, through guards."""
    loops: list[Loop] = []
    while isinstance(e, (Gen, Sum, Guard)):
        if isinstance(e, (Gen, Sum)):
            loops.append(Loop(e.var, "gen" if isinstance(e, Gen) else "sum"))
        e = e.body
    return tuple(loops)


@dataclass
class Space:
    """The directive templates of one program for one target.

    Order of the directives of a candidate: the consumer nest's loop order
    (`reorder`), each producer's placement (`compute_at` at a consumer loop, or
    `inline`), a tile of two adjacent loops (`tile`, or `split` when one factor
    is 1), `vectorize` of the innermost loop (a generation) with an ISA the
    target compiles, `unroll` of the innermost loop, `parallel` on the outermost
    generation (OpenMP targets)."""

    program: Program
    target: Target
    producers: tuple[str, ...] = ()
    nest: tuple[Loop, ...] = ()
    isas: tuple[str, ...] = ()
    taken: set[str] = field(default_factory=set)
    # each producer's own nest (the let's value), by producer
    inner: dict[str, tuple[Loop, ...]] = field(default_factory=dict)
    # the micro-kernel templates' view of the consumer and of each producer (templates.py)
    kernel: tpl.Nest | None = None
    kernels: dict[str, tpl.Nest] = field(default_factory=dict)
    # the stencil and register-tile templates' view of the consumer (templates_layers.py)
    layer: lay.Layer | None = None

    @property
    def templates(self) -> tuple[str, ...]:
        """The templates offered: the loop template alone without a vector ISA or a
        nest (nothing for a micro-kernel to be built of), else all of them; whether
        one fits a program is the directives' to say."""
        return tpl.TEMPLATES if self.isas and self.nest else ("loops",)

    @classmethod
    def of(cls, program: Program, target: Target) -> Space:
        producers, nest = consumer_nest(program.expr)
        taken = set(program.sizes) | {t for t, _ in program.inputs}
        taken |= {b for x in walk(program.expr) if (b := binder(x)) is not None}
        # float32 kernels (the tuner times float32): the pd libraries are not tried
        isas = tuple(isa for isa in ISAS if isa in target.families
                     and ISA_DTYPE[isa] == "float32")
        inner: dict[str, tuple[Loop, ...]] = {}
        kernels: dict[str, tpl.Nest] = {}
        ins = {t for t, _ in program.inputs}
        e = program.expr
        while isinstance(e, Let):
            inner[e.var] = loop_nest(e.value)
            kernels[e.var] = tpl.nest_of(e.value, inner[e.var], ins)
            e = e.body
        return cls(program, target, producers, nest, isas, taken, inner,
                   tpl.nest_of(e, nest, ins), kernels, lay.layer_of(e, nest, ins))

    @staticmethod
    def _perms(loops: tuple[Loop, ...]) -> list[str]:
        names = [lp.name for lp in loops]
        head, tail = names[:-3], names[-3:]
        return [",".join(head + list(p)) for p in itertools.permutations(tail)]

    # -- the parameters ---------------------------------------------------------------

    def orders(self) -> list[str]:
        """Loop orders of the consumer nest (the innermost three loops permuted; the
        program's own order first)."""
        return self._perms(self.nest)

    def suggest(self, trial: Trial) -> dict[str, Any]:
        """Ask `trial` for one point of the space (define-by-run).  The loop template's
        points carry no `template` key (logs written before the micro-kernel templates
        stay valid)."""
        if len(self.templates) > 1:
            template = trial.suggest_categorical("template", list(self.templates))
            if template in ("stencil", "rtile"):
                return lay.suggest(trial, template, self.isas, self.target.parallel)
            if template != "loops":
                return tpl.suggest(trial, template, self.isas, bool(self.producers))
        p: dict[str, Any] = {}
        if len(self.nest) >= 2:
            p["order"] = trial.suggest_categorical("order", self.orders())
        order = self._order(p)
        # The same choices in every trial (Optuna refuses a categorical whose choices
        # change): the consumer's generations in the program's own order.
        gens = [lp.name for lp in self.nest if lp.kind == "gen"]
        for prod in self.producers:
            p[f"at_{prod}"] = trial.suggest_categorical(f"at_{prod}", [NONE, "inline", *gens])
            own = self.inner.get(prod, ())
            if p[f"at_{prod}"] == "inline" or len(own) < 2:
                continue
            p[f"order_{prod}"] = trial.suggest_categorical(f"order_{prod}", self._perms(own))
            kinds = {lp.name: lp.kind for lp in own}
            if self.isas and kinds[p[f"order_{prod}"].split(",")[-1]] == "gen":
                p[f"vectorize_{prod}"] = trial.suggest_categorical(f"vectorize_{prod}",
                                                                   [NONE, *self.isas])
        if len(order) >= 2:
            p["tile_at"] = trial.suggest_categorical("tile_at", list(range(len(order) - 1)))
            p["tile_outer"] = trial.suggest_categorical("tile_outer", TILE_FACTORS)
            p["tile_inner"] = trial.suggest_categorical("tile_inner", TILE_FACTORS)
        elif order:
            p["tile_outer"] = trial.suggest_categorical("tile_outer", TILE_FACTORS)
        final = self._tiled(order, p)
        if final and final[-1].kind == "gen" and self.isas:
            p["vectorize"] = trial.suggest_categorical("vectorize", [NONE, *self.isas])
        if final and p.get("vectorize", NONE) == NONE:
            p["unroll"] = trial.suggest_categorical("unroll", UNROLL_FACTORS)
        if self.target.parallel and any(lp.kind == "gen" for lp in final):
            p["parallel"] = trial.suggest_categorical("parallel", [False, True])
        return p

    def _order(self, p: dict[str, Any]) -> list[Loop]:
        if "order" not in p:
            return list(self.nest)
        kinds = {lp.name: lp for lp in self.nest}
        return [kinds[x] for x in p["order"].split(",")]

    def _names(self, order: list[Loop], p: dict[str, Any]) -> dict[str, str]:
        """The names the tile's loops get (fresh against the program's names)."""
        taken = set(self.taken)
        return {k: _fresh(f"{lp.name}{suffix}", taken)
                for lp in order for k, suffix in ((f"{lp.name}:o", "o"), (f"{lp.name}:i", "i"))}

    def _tiled(self, order: list[Loop], p: dict[str, Any]) -> list[Loop]:
        """The consumer nest after the tile of `p`."""
        if not order:
            return []
        names = self._names(order, p)
        at = p.get("tile_at", 0)
        fo, fi = p.get("tile_outer", 1), p.get("tile_inner", 1)
        a = order[at]
        b = order[at + 1] if at + 1 < len(order) else None
        rest = order[at + 2:] if b is not None else order[at + 1:]

        def o(lp: Loop) -> Loop:
            return Loop(names[f"{lp.name}:o"], lp.kind)

        def i(lp: Loop) -> Loop:
            return Loop(names[f"{lp.name}:i"], lp.kind)

        if b is not None and fo > 1 and fi > 1:
            mid = [o(a), o(b), i(a), i(b)]
        elif fo > 1:
            mid = [o(a), i(a)] + ([b] if b else [])
        elif b is not None and fi > 1:
            mid = [a, o(b), i(b)]
        else:
            mid = [a] + ([b] if b else [])
        return order[:at] + mid + list(rest)

    def seeds(self, base: dict[str, Any]) -> list[dict[str, Any]]:
        """A few points to try first, after the untuned `base`: each loop order whose
        innermost loop is a generation, vectorized with each ISA (and, on an OpenMP
        target, parallel), with each producer left in place or computed at the
        outermost generation.  A fixed ordering of candidates, not a cost model:
        every seed is proved and measured like any other point (the issue's rule:
        order candidates, never skip measuring), and TPE starts from their times."""
        first: list[dict[str, Any]] = []
        if len(self.templates) > 1:   # the hand schedules' points, widest ISA only
            if self.layer is not None:   # the stencil and conv points, by the nest's shape
                first = lay.seeds(self.layer, self.isas, {i: tpl.lanes(i) for i in self.isas},
                                  self.target.parallel)
            first += tpl.seeds(self.isas, bool(self.producers))[:tpl.SEEDS_PER_ISA]
        out: list[dict[str, Any]] = []
        gens = [lp.name for lp in self.nest if lp.kind == "gen"]
        placements = [NONE] + gens[:1]
        for order in self.orders() if len(self.nest) >= 2 else [None]:
            p = dict(base)
            if order is not None:
                p["order"] = order
            loops = self._order(p)
            if not loops or loops[-1].kind != "gen":
                continue
            for isa in self.isas:
                for where in placements if self.producers else [NONE]:
                    q = dict(p, vectorize=isa)
                    q.pop("unroll", None)
                    for prod in self.producers:
                        q[f"at_{prod}"] = where
                        own = self.inner.get(prod, ())
                        if len(own) >= 2:   # the producer with a generation innermost
                            kinds = {lp.name: lp.kind for lp in own}
                            porder = next((o for o in self._perms(own)
                                           if kinds[o.split(",")[-1]] == "gen"), None)
                            if porder is not None:
                                q[f"order_{prod}"] = porder
                                q[f"vectorize_{prod}"] = isa
                    if self.target.parallel:
                        q["parallel"] = True
                    out.append(q)
        return first + out[:8]

    # -- parameters -> directives ----------------------------------------------------

    def ops(self, p: dict[str, Any]) -> list[Op]:
        """The directive calls of the point `p` (a pure function of `p`)."""
        template = p.get("template", "loops")
        if template == "microkernel" and self.kernel is not None:
            taken = set(self.taken)
            out = []
            if p.get("mk_producers"):
                for prod in self.producers:
                    out += tpl.microkernel_ops(self.kernels[prod], p, taken, tag=prod,
                                               select="mk_select_producers")
            return out + tpl.microkernel_ops(self.kernel, p, taken)
        if template == "lanes" and self.kernel is not None:
            return tpl.lanes_ops(self.kernel, p, set(self.taken))
        if template == "dot" and self.kernel is not None:
            return tpl.dot_ops(self.kernel, p, set(self.taken))
        if template == "stencil" and self.layer is not None:
            return lay.stencil_ops(self.layer, p, set(self.taken))
        if template == "rtile" and self.layer is not None:
            return lay.rtile_ops(self.layer, p, set(self.taken))
        out: list[Op] = []
        order = self._order(p)
        if order and [lp.name for lp in order] != [lp.name for lp in self.nest]:
            # reorder takes the loops whose position changed, as one nest
            moved = [k for k, (x, y) in enumerate(zip(order, self.nest, strict=True))
                     if x.name != y.name]
            out.append(Op("reorder", tuple(order[k].name for k in range(moved[0], moved[-1] + 1))))
        for prod in self.producers:
            own = [lp.name for lp in self.inner.get(prod, ())]
            want = p.get(f"order_{prod}")
            if want and want.split(",") != own:
                moved = [k for k, (a, b) in enumerate(zip(want.split(","), own, strict=True))
                         if a != b]
                out.append(Op("reorder", tuple(want.split(",")[moved[0]:moved[-1] + 1])))
        for prod in self.producers:
            where = p.get(f"at_{prod}", NONE)
            if where == "inline":
                out.append(Op("inline", (prod,)))
            elif where != NONE:
                out.append(Op("compute_at", (prod, where)))
                out.append(Op("simpl_guard", optional=True))
        if order:
            names = self._names(order, p)
            at = p.get("tile_at", 0)
            fo, fi = p.get("tile_outer", 1), p.get("tile_inner", 1)
            a = order[at].name
            b = order[at + 1].name if at + 1 < len(order) else None
            if b is not None and fo > 1 and fi > 1:
                out.append(Op("tile", (a, b, fo, fi, names[f"{a}:o"], names[f"{b}:o"],
                                       names[f"{a}:i"], names[f"{b}:i"])))
            elif fo > 1:
                out.append(Op("split", (a, fo, names[f"{a}:o"], names[f"{a}:i"])))
            elif b is not None and fi > 1:
                out.append(Op("split", (b, fi, names[f"{b}:o"], names[f"{b}:i"])))
        final = self._tiled(order, p)
        if p.get("vectorize", NONE) != NONE:
            out.append(Op("vectorize", (final[-1].name, p["vectorize"])))
        for prod in self.producers:
            if p.get(f"vectorize_{prod}", NONE) != NONE:
                out.append(Op("vectorize", (p[f"order_{prod}"].split(",")[-1],
                                            p[f"vectorize_{prod}"])))
        if p.get("unroll", 1) > 1:
            out.append(Op("unroll", (final[-1].name, p["unroll"])))
        if p.get("parallel"):
            out.append(Op("parallel", (next(lp.name for lp in final if lp.kind == "gen"),)))
        return out


def with_template(space: Space, p: dict[str, Any]) -> dict[str, Any]:
    """`p` as Optuna must be given it: a loop-template point without its `template`
    key gets `template=loops` when the space asks for one (enqueue, resume)."""
    if len(space.templates) > 1 and "template" not in p:
        return {**p, "template": "loops"}
    return dict(p)


def describe(p: dict[str, Any]) -> str:
    """A point of the space in one short line (for progress and tables)."""
    return " ".join(f"{k}={v}" for k, v in sorted(p.items()))
