"""The micro-kernel templates of the schedule space: what the hand schedules do.

Why these two: the hand-derived fast kernels (coq/Examples/Directives/Sgemm.v,
Matmul.v) reach their speed by a register tile of several independent vector
accumulators with the depth loop outside it, fed from packed operands; the loop
template of space.py (order, one tile, vectorize the innermost generation) cannot
express either, so the tuner stalled at 0.2-0.3x OpenBLAS (decisions #59).

- `microkernel`: Sgemm.v's directive chain on the consumer's first two generations
  `a`, `b` and its reduction `k`: `split a by mc`, `fission` when the body is
  `C <+> sum` (SGEMM), `split k by kc`, `reorder ko ai b`, `register_tile ai b by mr
  nr` with an ISA, `stage` of the operand indexed by `b` at `ao` (+ `compute_root`)
  and of the one indexed by `a` at `ko`, `select_instr`.  Each step optional where
  the hand schedules differ (packs, instruction selection, the producers' own nests).
- `lanes`: several independent accumulators for a generation over a reduction
  (matvec): `split a by rows`, `reorder k ai` (the sum outside, a vector of rows
  inside: rows / lanes accumulators), optionally `stage` of the matrix at `ao` (its
  rows x K block packed in the loop order, K outside rows, so the vector loads are
  contiguous; the edge guard first moved onto the matrix's read by `rw guard_smul_l`,
  so the pack is zero-padded and the product's lanes are unguarded but for the tail),
  and `vectorize ai`.
- `dot`: a reduction read contiguously, as several vector accumulators (matvec's
  row): `split k by v * lanes` (the guard tail: the lowering runs the full chunks
  unmasked, #150), `rfactor kl into ku as t` (Halide's rfactor,
  coq/Rewrites/Rfactor.v: the `v * lanes` terms become a buffer `t`'s generation `ku`
  inside the depth `ko`, summed once at the end), `vectorize ku`: `v` independent
  vector accumulators over the depth, and `vectorize kl`: their final sum as `v`
  horizontal adds (`reduce_add`) per output element; no pack (decisions #78, #146,
  #151).

Nothing here decides legality: a template applied where it does not fit (a
register tile on a nest with one generation, a stage of a let buffer, an instruction
selection of unpacked operands) is refused by the directive and logged `refused`.
The names and operands are read from the program's structure only so that the
directive calls can be written at all.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from verisched.pybridge.terms import Expr, Gen, Guard, Sum, TAdd, walk
from verisched.targets.registry import get_target

from .space_types import NONE, Loop, Op, Trial, fresh, mul, tensor_reads

# stencil and rtile: templates_layers.py (the blur, the 3x3 conv)
TEMPLATES = ("loops", "microkernel", "lanes", "dot", "stencil", "rtile")
MC_FACTORS = (48, 96, 192)     # row blocks: multiples of every register-tile height
KC_FACTORS = (64, 128, 256)    # depth blocks
MR_FACTORS = (4, 6, 8)         # register tile rows
NR_FACTORS = (16, 32, 64)      # register tile columns (multiples of 8 and 16 lanes)
ROW_FACTORS = (16, 32, 64)     # lanes template: rows per vector block
DOT_VECTORS = (1, 2, 4)        # dot template: vector accumulators per output element
SEEDS_PER_ISA = 9              # seeds(): 3 micro-kernel, 2 dot and 4 lanes points


@dataclass(frozen=True)
class Nest:
    """What a template needs of one matmul-like nest: its two outer generations, the
    reduction, the operands indexed by each generation, whether the body adds to a
    tensor (`C <+> sum`: SGEMM, fission first)."""

    a: str | None
    b: str | None
    k: str | None
    row_operand: str | None   # the input read at `a` (A of A·B)
    col_operand: str | None   # the input read at `b` (B of A·B)
    adds: bool


def nest_of(e: Expr, loops: tuple[Loop, ...], inputs: set[str]) -> Nest:
    """The template's view of the nest `loops` of `e` (its body read for the sum)."""
    gens = [lp.name for lp in loops if lp.kind == "gen"]
    body = e
    while isinstance(body, (Gen, Sum, Guard)):
        body = body.body
    sums = [lp.name for lp in loops if lp.kind == "sum"]
    sums += [x.var for x in walk(body) if isinstance(x, Sum)]
    a = gens[0] if gens else None
    b = gens[1] if len(gens) > 1 else None
    ops = [(t, vs) for t, vs in tensor_reads(e) if t in inputs]
    row = next((t for t, vs in ops if a in vs and b not in vs and sums and sums[0] in vs), None)
    col = next((t for t, vs in ops if b is not None and b in vs and a not in vs), None)
    return Nest(a, b, sums[0] if sums else None, row, col, isinstance(body, TAdd))


def suggest(trial: Trial, template: str, isas: tuple[str, ...], has_producers: bool
            ) -> dict[str, Any]:
    """The template's parameters (define-by-run, constant choices)."""
    p: dict[str, Any] = {"template": template}
    if template == "microkernel":
        p["mk_isa"] = trial.suggest_categorical("mk_isa", list(isas))
        p["mk_mc"] = trial.suggest_categorical("mk_mc", MC_FACTORS)
        p["mk_kc"] = trial.suggest_categorical("mk_kc", KC_FACTORS)
        p["mk_mr"] = trial.suggest_categorical("mk_mr", MR_FACTORS)
        p["mk_nr"] = trial.suggest_categorical("mk_nr", NR_FACTORS)
        p["mk_pack_col"] = trial.suggest_categorical("mk_pack_col", [False, True])
        p["mk_pack_row"] = trial.suggest_categorical("mk_pack_row", [False, True])
        p["mk_select"] = trial.suggest_categorical("mk_select", [False, True])
        if has_producers:
            p["mk_producers"] = trial.suggest_categorical("mk_producers", [False, True])
            if p["mk_producers"]:   # the producers' own instruction selection
                p["mk_select_producers"] = trial.suggest_categorical(
                    "mk_select_producers", [False, True])
    elif template == "lanes":
        p["ln_isa"] = trial.suggest_categorical("ln_isa", list(isas))
        p["ln_rows"] = trial.suggest_categorical("ln_rows", ROW_FACTORS)
        p["ln_stage"] = trial.suggest_categorical("ln_stage", [False, True])
    elif template == "dot":
        p["dt_isa"] = trial.suggest_categorical("dt_isa", list(isas))
        p["dt_vectors"] = trial.suggest_categorical("dt_vectors", DOT_VECTORS)
    return p


def microkernel_ops(n: Nest, p: dict[str, Any], taken: set[str], tag: str = "",
                    select: str = "mk_select") -> list[Op]:
    """Sgemm.v's chain on the nest `n` (see the module docstring); `select`: the
    parameter that asks for its instruction selection (a producer whose operands are
    inputs can be packed and selected where the consumer reading a let cannot)."""
    if n.a is None or n.b is None:
        # nothing to name a tile by: ask register_tile anyway, so Coq says why
        first = n.a or n.k or "i"
        return [Op("register_tile", (first, n.k or first, p["mk_mr"], p["mk_nr"],
                                     p["mk_isa"]),
                   (("buffer", fresh("t" + tag, taken)),
                    ("into", tuple(fresh(x + tag, taken) for x in
                                   ("im", "ir", "jm", "jv", "l")))))]
    ao, ai = fresh(n.a + "o" + tag, taken), fresh(n.a + "i" + tag, taken)
    # the row block as q * mr, the form register_tile's exact split matches (MC_FACTORS
    # are multiples of every MR_FACTORS entry)
    out = [Op("split", (n.a, mul(p["mk_mc"] // p["mk_mr"], p["mk_mr"]), ao, ai))]
    if n.adds:
        out.append(Op("fission", (ai,)))
    if n.k is not None:
        ko, kk = fresh(n.k + "o" + tag, taken), fresh(n.k + "d" + tag, taken)
        out += [Op("split", (n.k, p["mk_kc"], ko, kk)), Op("reorder", (ko, ai, n.b))]
    t = fresh("t" + tag, taken)
    into = tuple(fresh(x + tag, taken) for x in ("im", "ir", "jm", "jv", "l"))
    out.append(Op("register_tile", (ai, n.b, p["mk_mr"], p["mk_nr"], p["mk_isa"]),
                  (("buffer", t), ("into", into))))
    if p.get("mk_pack_col") and n.col_operand:
        buf = fresh(n.col_operand + "p", taken)
        out += [Op("stage", (n.col_operand, ao, buf)), Op("compute_root", (buf,))]
    if p.get("mk_pack_row") and n.row_operand:
        at = ko if n.k is not None else ao
        out.append(Op("stage", (n.row_operand, at, fresh(n.row_operand + "p", taken))))
    if p.get(select):
        out.append(Op("select_instr", (t, p["mk_isa"])))
    return out


def lanes_ops(n: Nest, p: dict[str, Any], taken: set[str]) -> list[Op]:
    """Rows / lanes independent vector accumulators (see the module docstring)."""
    a = n.a or "i"
    ao, ai = fresh(a + "o", taken), fresh(a + "i", taken)
    out = [Op("split", (a, p["ln_rows"], ao, ai))]
    if n.k is not None:
        out.append(Op("reorder", (n.k, ai)))
    if p.get("ln_stage") and n.row_operand:
        # the edge guard onto the matrix's read (absent when the extent divides:
        # optional), so that stage moves it into the zero-padded pack; the pack's
        # own copy of `ai` is renamed, so that vectorize finds the product's
        out += [Op("rw", ("guard_smul_l",), optional=True),
                Op("stage", (n.row_operand, ao, fresh(n.row_operand + "p", taken))),
                Op("rename_loop", (ai, fresh(ai + "p", taken)))]
    out.append(Op("vectorize", (ai, p["ln_isa"])))
    return out


def dot_ops(n: Nest, p: dict[str, Any], taken: set[str]) -> list[Op]:
    """`dt_vectors` vector accumulators over the reduction (see the module docstring)."""
    k = n.k or "j"
    ko, kl = fresh(k + "o", taken), fresh(k + "l", taken)
    ku, t = fresh(k + "u", taken), fresh("t", taken)
    return [Op("split", (k, p["dt_vectors"] * lanes(p["dt_isa"]), ko, kl)),
            Op("rfactor", (kl, ku, t)), Op("vectorize", (ku, p["dt_isa"])),
            Op("vectorize", (kl, p["dt_isa"]))]


def lanes(isa: str) -> int:
    """The float32 lanes of a vector ISA's target (8 for avx2, 16 for avx512)."""
    vec = getattr(get_target(isa), "isa", None)
    return vec.lanes if vec is not None else 8


def seeds(isas: tuple[str, ...], has_producers: bool) -> list[dict[str, Any]]:
    """The hand schedules' points, widest ISA first: Sgemm.v's 6 x (4 vectors) tile
    with both packs and instruction selection at mc 96, kc 256 (and the same without
    instruction selection, which the chained matmul's let operand needs), the dot
    template with 1 and 2 vector accumulators, and the lanes template at 32 and 64
    rows, packed and not."""
    out: list[dict[str, Any]] = []
    for isa in reversed(isas):
        nr = 4 * lanes(isa)  # Sgemm.v's tile: four vectors wide
        # with producers (the chained matmul), the consumer reads a let: its tile
        # unselected first, the producers' selected
        for sel, row in (((False, True), (True, True), (False, False)) if has_producers
                         else ((True, True), (False, True), (False, False))):
            q = {"template": "microkernel", "mk_isa": isa, "mk_mc": 96, "mk_kc": 256,
                 "mk_mr": 6, "mk_nr": nr, "mk_pack_col": True, "mk_pack_row": row,
                 "mk_select": sel}
            if has_producers:
                q["mk_producers"] = True
                q["mk_select_producers"] = row
            out.append(q)
        for v in (1, 2):
            out.append({"template": "dot", "dt_isa": isa, "dt_vectors": v})
        for rows in (32, 64):
            for st in (True, False):
                out.append({"template": "lanes", "ln_isa": isa, "ln_rows": rows,
                            "ln_stage": st})
    return out


__all__ = ["NONE", "TEMPLATES", "Nest", "dot_ops", "lanes", "lanes_ops", "microkernel_ops",
           "nest_of", "seeds", "suggest"]
