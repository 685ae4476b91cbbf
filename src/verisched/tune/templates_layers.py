"""The stencil and convolution templates of the schedule space (issue 17: blur, 3x3 conv).

Why two more templates: the hand-derived schedules of the blur (coq/Examples/
Blur.v, BlurVec.v, Directives/BlurTiled.v, BlurVec.v) and of the 3x3 convolution
(coq/Examples/Conv.v, Directives/Conv.v) are reached by directive chains the loop
and micro-kernel templates (space.py, templates.py) cannot write: the blur's speed
comes from peeling the border so that the interior is guard-free and then
vectorizing the interior columns, or from vectorizing the columns with their borders
as they are (`vectorize` makes a border guard a masked load, decision #139: one
directive, and as fast on the blur); the convolution's from a register tile over an output row
(pixels x output channels) whose *last* pixel tile is guarded (`rows="guard"`: the
row width need not be a multiple of the tile), fed from the row's im2col panel and
the packed weights.

- `stencil`: `peel y x into yc xc` (the consumer's first two generations: the
  border rows and columns apart, the interior guard-free), optionally `tile yc xc
  by kn km partition` (full tiles guard-free; Blur.v's Fig. 9 without the row
  buffer), `vectorize` of the interior's column loop (`xc`, or the tile's `xi`)
  with an ISA or not at all (gcc vectorizes a guard-free scalar row by itself),
  and `parallel` of the interior's row loop (`yc` or the tile row `yo`) on OpenMP
  targets.  Parameters: ISA or none, peel or not (with an ISA: without `peel`,
  `vectorize` of the nest's column loop with its borders, then `parallel` of its
  rows, no tile), tile or not, kn, km, parallel.
- `rtile`: Directives/Conv.v's chain on the consumer's last two generations above
  its reductions (`x`, `k` of the conv): `register_tile x k by mr nr` with an ISA
  and `rows="guard"`, optionally `stage` of the input read at `x` (the im2col
  panel) at the generation enclosing `x` (`y`), `stage` of the input read at `k`
  (the weights) there too followed by `compute_root` (packed once), and
  `select_instr`; `parallel` of the outermost generation (the batch) or of the one
  enclosing the tile (the output row) on OpenMP targets.
  Parameters: ISA, mr, nr, the two packs, select, parallel.

Nothing here decides legality: `peel` on a nest with a reduction, a `register_tile`
on a nest of one generation, a `stage` of a let are refused by the directives and
logged `refused` (space_types.Op; tune/prune.py then stops proposing a template
whose every point was refused the same way).  The program's structure is read only
to name the loops and operands the calls need.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from verisched.pybridge.terms import Expr, Gen, Guard, Sum, walk

from .space_types import NONE, Loop, Op, Trial, fresh, tensor_reads

KN_FACTORS = (8, 16, 32, 64)        # stencil tile rows
KM_FACTORS = (64, 128, 256, 512)    # stencil tile columns (multiples of 16 lanes)
RT_MR = (4, 6, 8)                   # conv register tile: pixels
RT_NR = (16, 32, 48, 64)            # conv register tile: output channels


@dataclass(frozen=True)
class Layer:
    """What the two templates need of one nest: its generations (outermost first),
    whether it reduces, and for the register tile the inputs read at the tile's
    rows (`row_operand`: the conv's image) and columns (`col_operand`: its
    weights)."""

    gens: tuple[str, ...]
    reduces: bool
    row_operand: str | None
    col_operand: str | None


def layer_of(e: Expr, loops: tuple[Loop, ...], inputs: set[str]) -> Layer:
    """The templates' view of the nest `loops` of `e`."""
    gens = tuple(lp.name for lp in loops if lp.kind == "gen")
    body = e
    while isinstance(body, (Gen, Sum, Guard)):
        body = body.body
    reduces = any(lp.kind == "sum" for lp in loops) or any(isinstance(x, Sum)
                                                         for x in walk(body))
    row = col = None
    if len(gens) >= 2:
        i, j = gens[-2], gens[-1]
        for t, vs in tensor_reads(e):
            if t not in inputs:
                continue
            if row is None and i in vs and j not in vs:
                row = t
            if col is None and j in vs and i not in vs:
                col = t
    return Layer(gens, reduces, row, col)


def suggest(trial: Trial, template: str, isas: tuple[str, ...], parallel: bool
            ) -> dict[str, Any]:
    """The template's parameters (define-by-run, constant choices)."""
    p: dict[str, Any] = {"template": template}
    if template == "stencil":
        p["st_isa"] = trial.suggest_categorical("st_isa", [NONE, *isas])
        if p["st_isa"] != NONE:  # the borders as masked loads: no peel, no tile
            p["st_peel"] = trial.suggest_categorical("st_peel", [True, False])
        if p.get("st_peel", True):
            p["st_tile"] = trial.suggest_categorical("st_tile", [False, True])
        if p.get("st_tile"):
            p["st_kn"] = trial.suggest_categorical("st_kn", KN_FACTORS)
            p["st_km"] = trial.suggest_categorical("st_km", KM_FACTORS)
        if parallel:
            p["st_parallel"] = trial.suggest_categorical("st_parallel", [False, True])
    elif template == "rtile":
        p["rt_isa"] = trial.suggest_categorical("rt_isa", list(isas))
        p["rt_mr"] = trial.suggest_categorical("rt_mr", RT_MR)
        p["rt_nr"] = trial.suggest_categorical("rt_nr", RT_NR)
        p["rt_pack_row"] = trial.suggest_categorical("rt_pack_row", [False, True])
        p["rt_pack_col"] = trial.suggest_categorical("rt_pack_col", [False, True])
        p["rt_select"] = trial.suggest_categorical("rt_select", [False, True])
        if parallel:   # the outermost generation (a batch), or the one enclosing the tile
            p["rt_parallel"] = trial.suggest_categorical("rt_parallel", [NONE, "outer", "row"])
    return p


def stencil_ops(n: Layer, p: dict[str, Any], taken: set[str]) -> list[Op]:
    """The stencil chain (module docstring) on the nest's first two generations."""
    y = n.gens[0] if n.gens else "y"
    x = n.gens[1] if len(n.gens) > 1 else y
    if not p.get("st_peel", True):  # the borders as masked loads (decision #139)
        out = [Op("vectorize", (x, p["st_isa"]))]
        return out + ([Op("parallel", (y,))] if p.get("st_parallel") else [])
    yc, xc = fresh(y + "c", taken), fresh(x + "c", taken)
    out = [Op("peel", (y, x), (("into", (yc, xc)),))]
    row, col = yc, xc
    if p.get("st_tile"):
        yo, xo = fresh(y + "o", taken), fresh(x + "o", taken)
        yi, xi = fresh(y + "i", taken), fresh(x + "i", taken)
        out.append(Op("tile", (yc, xc, p["st_kn"], p["st_km"], yo, xo, yi, xi),
                      (("partition", True),)))
        row, col = yo, xi
    if p.get("st_isa", NONE) != NONE:
        out.append(Op("vectorize", (col, p["st_isa"])))
    if p.get("st_parallel"):
        out.append(Op("parallel", (row,)))
    return out


def rtile_ops(n: Layer, p: dict[str, Any], taken: set[str]) -> list[Op]:
    """Directives/Conv.v's chain (module docstring) on the nest's last two generations."""
    gens = n.gens or ("i",)
    i = gens[-2] if len(gens) >= 2 else gens[0]
    j = gens[-1]
    t = fresh("t", taken)
    into = tuple(fresh(v, taken) for v in (i + "o", "ir", "jm", "jv", "l"))
    out = [Op("register_tile", (i, j, p["rt_mr"], p["rt_nr"], p["rt_isa"]),
              (("buffer", t), ("into", into), ("rows", "guard")))]
    # the packs sit at the generation enclosing the tile's rows (the conv's output
    # row y); with none (a nest of two generations), the rows' own micro-panel loop
    at = gens[-3] if len(gens) >= 3 else into[0]
    if p.get("rt_pack_row") and n.row_operand:
        out.append(Op("stage", (n.row_operand, at, fresh(n.row_operand + "p", taken))))
    if p.get("rt_pack_col") and n.col_operand:
        buf = fresh(n.col_operand + "p", taken)
        out += [Op("stage", (n.col_operand, at, buf)), Op("compute_root", (buf,))]
    if p.get("rt_select"):
        out.append(Op("select_instr", (t, p["rt_isa"])))
    if p.get("rt_parallel", NONE) != NONE:
        out.append(Op("parallel", (gens[0] if p["rt_parallel"] == "outer" or len(gens) < 3
                                   else gens[-3],)))
    return out


def seeds(n: Layer, isas: tuple[str, ...], lanes: dict[str, int], parallel: bool
          ) -> list[dict[str, Any]]:
    """The hand schedules' points first, widest ISA first, ordered by the nest's shape
    (an ordering of candidates, each still proved and measured; nothing is skipped):
    for a nest without a reduction, the stencil points (BlurVec.v: peeled and
    vectorized; parallel rows on OpenMP; Fig. 9's 32 x 256 tiles vectorized;
    examples/blur_borders.v's borders as masked loads; the peeled scalar rows); for
    a nest of three or more generations over a reduction, Conv.v's register tile
    (6 x 2 vectors, both packs, instruction selection), the same unselected, and
    4 x 4 vectors; on OpenMP targets the outermost generation parallel (the OpenMP
    lowering runs only a nest's outermost generation in parallel: `rt_parallel="row"`
    on the conv is refused by `parallel`'s check)."""
    out: list[dict[str, Any]] = []
    par = {"st_parallel": True} if parallel else {}
    if len(n.gens) >= 2 and not n.reduces:
        for isa in reversed(isas):
            out.append({"template": "stencil", "st_isa": isa, "st_peel": True,
                        "st_tile": False, **par})
        if isas:
            out.append({"template": "stencil", "st_isa": isas[-1], "st_peel": True,
                        "st_tile": True, "st_kn": 32, "st_km": 256, **par})
            out.append({"template": "stencil", "st_isa": isas[-1], "st_peel": False, **par})
        out.append({"template": "stencil", "st_isa": NONE, "st_tile": False, **par})
    if len(n.gens) >= 3 and n.reduces:
        rpar = {"rt_parallel": "outer"} if parallel else {}
        for isa in reversed(isas):
            two = 2 * lanes[isa]
            base = {"template": "rtile", "rt_isa": isa, "rt_mr": 6, "rt_nr": two,
                    "rt_pack_row": True, "rt_pack_col": True, **rpar}
            out += [{**base, "rt_select": True}, {**base, "rt_select": False}]
            if 4 * lanes[isa] in RT_NR:
                out.append({**base, "rt_mr": 4, "rt_nr": 4 * lanes[isa], "rt_select": True})
    return out


__all__ = ["KM_FACTORS", "KN_FACTORS", "Layer", "RT_MR", "RT_NR", "layer_of", "rtile_ops",
           "seeds", "stencil_ops", "suggest"]
