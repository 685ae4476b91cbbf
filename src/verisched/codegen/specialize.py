"""Fixing size parameters to constants before lowering.

A derivation proved for every tile size (Blur.v's `kn`, `km`) stays valid
for any particular one; substituting the constant lets the index
simplifier and the prover see `(n - 2) / 64` instead of `(n - 2) / kn`, so
tile buffers become constant-size stack arrays and loop bounds fold.
Binders that shadow a fixed name are respected.
"""

from __future__ import annotations

from dataclasses import fields, is_dataclass, replace

from verisched.pybridge.terms import IBin, IConst, Idx, IVar, PAnd, PBool, PCmp, Pred


def subst_idx(i: Idx, values: dict[str, int]) -> Idx:
    if isinstance(i, IVar):
        return IConst(values[i.name]) if i.name in values else i
    if isinstance(i, IBin):
        return IBin(i.op, subst_idx(i.left, values), subst_idx(i.right, values))
    return i


def subst_pred(p: Pred, values: dict[str, int]) -> Pred:
    if isinstance(p, PCmp):
        return PCmp(p.op, subst_idx(p.left, values), subst_idx(p.right, values))
    if isinstance(p, PAnd):
        return PAnd(subst_pred(p.left, values), subst_pred(p.right, values))
    assert isinstance(p, PBool)
    return p


def specialize(e: object, values: dict[str, int]) -> object:
    """`e` with the size parameters in `values` replaced by constants."""
    if isinstance(e, (IVar, IConst, IBin)):
        return subst_idx(e, values)
    if isinstance(e, (PCmp, PAnd, PBool)):
        return subst_pred(e, values)
    if isinstance(e, tuple):  # an instruction's arguments
        return tuple(specialize(x, values) for x in e)
    if not is_dataclass(e):
        return e
    changes = {}
    bound = getattr(e, "var", None)
    for f in fields(e):
        v = getattr(e, f.name)
        if f.name == "var" or isinstance(v, str):
            continue
        inner = values
        if bound is not None and f.name == "body" and bound in values:
            inner = {k: x for k, x in values.items() if k != bound}
        changes[f.name] = specialize(v, inner)
    return replace(e, **changes)
