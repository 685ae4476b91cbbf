"""A schedule as Coq sentences: the section that states the program, and the whole
standalone `.v` file that `coqc` checks on its own.

The live Coq session runs exactly the sentences of `section_sentences`, so the
file `to_coq` writes is the derivation the session checked, not a rendering of
it."""

from __future__ import annotations

from collections.abc import Sequence

from verisched.pipeline.ast import prop_of
from verisched.pybridge.coqterm import idx_to_coq, to_coq
from verisched.pybridge.terms import SBin, walk

from .dsl import RESERVED, Program

SCALAR_TYPE, SCALAR_INST, LAWS_INST, MAX_INST = RESERVED

HEADER = (
    "From Coq Require Import ZArith List derive.Derive.",
    "From Verisched Require Import ATL.",
    "Import ListNotations.",
    "Open Scope Z_scope. Open Scope atl_scope.",
)


def derived_name(p: Program) -> str:
    return f"{p.name}_scheduled"


def section_sentences(p: Program) -> list[str]:
    """Section, context, sizes, inputs, shape and size hypotheses, the program's
    definition, and the `Derive` that opens its derivation."""
    # The instances are named (not Coq's automatic H, H0), so that a size may be called
    # H (an image height) without Coq refusing its declaration; dsl.program reserves
    # these names (dsl.RESERVED).
    out = [f"From Verisched Require Import {m}." for m in p.requires]
    out.append(f"Section {p.name}_schedule.")
    if p.scalar == SCALAR_TYPE:
        out.append(f"Context {{{SCALAR_TYPE} : Type}} {{{SCALAR_INST} : Scalar {SCALAR_TYPE}}} "
                   f"{{{LAWS_INST} : ScalarLaws {SCALAR_TYPE}}}.")
        if any(isinstance(x, SBin) and x.op == "max" for x in walk(p.expr)):  # dsl.max
            out.append(f"Context {{{MAX_INST} : ScalarMax {SCALAR_TYPE}}}.")
    ints = [x for x in p.sizes if x not in p.bools]
    if ints:
        out.append(f"Variables ({' '.join(ints)} : Z).")
    if p.bools:
        out.append(f"Variables ({' '.join(p.bools)} : bool).")
    for t, shape in p.inputs:
        out.append(f"Variable {t} : {' -> '.join(['Z'] * len(shape) + [p.scalar])}.")
    for t, shape in p.inputs:
        if shape:
            out.append(f"Hypothesis Hshape_{t} : shaped [{'; '.join(map(idx_to_coq, shape))}] {t}.")
    # Sizes are extents: nonnegative (as every Halide extent).  Stated, so that the
    # directives' side conditions (peel, vectorize) can use it; a precondition at run time.
    for x in ints:
        if x not in p.signed:
            out.append(f"Hypothesis Hnonneg_{x} : 0 <= {x}.")
    for k, a in enumerate(p.assume):
        out.append(f"Hypothesis Hsize{k} : {prop_of(a)}.")
    out.append(f"Definition {p.name} := {to_coq(p.expr)}.")
    d = derived_name(p)
    out.append(f"Derive {d} SuchThat ({p.name} = {d}) As {d}_correct.")
    return out


def standalone(p: Program, steps: Sequence[str], *, closed: bool) -> str:
    """The whole file.  `closed`: the steps end the proof (`done.`), so `Qed.` follows;
    otherwise the file stops at the open derivation with `Abort.` and says so."""
    lines = [f"(* The schedule of {p.name}, written by verisched.schedule.  coqc checks it on",
             "   its own; every step is a directive or rewrite proved in the library. *)"]
    lines += list(HEADER)
    lines.append("")
    sents = section_sentences(p)
    head = len(p.requires)
    lines += sents[:head + 1]   # the Requires, then the Section
    lines += [f"  {s}" for s in sents[head + 1:]]
    lines.append("  Proof.")
    lines += [f"    {s}" for s in steps]
    if closed:
        lines.append("  Qed.")
    else:
        lines.append("  (* not finished: the derivation is open here *)")
        lines.append("  Abort.")
    lines.append(f"End {p.name}_schedule.")
    return "\n".join(lines) + "\n"
