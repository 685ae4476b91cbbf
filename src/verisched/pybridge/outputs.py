"""Several outputs swept by one loop: a tuple below the top of a program.

`fuse_outputs` (coq/Rewrites/Outputs.v) turns a pair of outputs into
`(p0, q0) <+> SUM [ i < n ] (a_i, b_i)`: pairs of tensors added and summed
componentwise (Coq's `TensorElem_pair`).  Everything that reads a program one
output at a time (the interpreter, shapes, the normal-form check) reads it
through `distribute_outputs`, which pushes the tuple back to the top by the same
componentwise laws (`sumr_pair`, the pair's `tadd`): the meaning of the fused
program, independently of how the lowering sweeps it.  The lowering itself
takes `fused_form` and emits the one loop.
"""

from __future__ import annotations

from dataclasses import dataclass

from verisched.pybridge.terms import Expr, Guard, Let, Sum, TAdd, Tuple, Zero, walk


def has_inner_tuple(e: Expr) -> bool:
    """Is there a tuple anywhere but at the very top?"""
    items = e.items if isinstance(e, Tuple) else (e,)
    return any(isinstance(n, Tuple) for x in items for n in walk(x))


def distribute_outputs(e: Expr) -> Expr:
    """`e` with every tuple pushed to the top, componentwise: `(a, b) <+> (c, d)` is
    `(a <+> c, b <+> d)`, `SUM i (a, b)` is `(SUM i a, SUM i b)`, and a guard or a
    let over a tuple is the tuple of the guarded (let-bound) components.  `e`
    itself when it holds no tuple below its top, or a tuple this cannot move (the
    callers then refuse it)."""
    if not has_inner_tuple(e):
        return e
    t = _dist(e)
    return t if t is not None else e


def _dist(e: Expr) -> Tuple | None:
    if isinstance(e, Tuple):
        return None if any(has_inner_tuple(x) or isinstance(x, Tuple) for x in e.items) \
            else e
    if isinstance(e, TAdd):
        left, right = _dist(e.left), _dist(e.right)
        if left is None or right is None or len(left.items) != len(right.items):
            return None
        return Tuple(tuple(TAdd(a, b) for a, b in zip(left.items, right.items, strict=True)))
    if isinstance(e, (Sum, Guard, Let)):
        body = _dist(e.body)
        if body is None:
            return None
        if isinstance(e, Sum):
            return Tuple(tuple(Sum(e.var, e.lo, e.hi, x) for x in body.items))
        if isinstance(e, Guard):
            return Tuple(tuple(Guard(e.pred, x) for x in body.items))
        return Tuple(tuple(Let(e.var, e.value, x) for x in body.items))
    return None


@dataclass(frozen=True)
class FusedOutputs:
    """`(inits) <+> SUM [ var ] (bodies)`: each output starts as its init (a zero when
    the program is a bare sum of tuples), then every iteration of the one loop adds
    each body into its output."""

    inits: tuple[Expr, ...]
    loop: Sum           # its body a Tuple, one item per output


def fused_form(e: Expr) -> FusedOutputs | None:
    """The form `fuse_outputs` leaves, or None."""
    if isinstance(e, Sum) and isinstance(e.body, Tuple):
        return FusedOutputs(tuple(Zero() for _ in e.body.items), e)
    if (isinstance(e, TAdd) and isinstance(e.left, Tuple) and isinstance(e.right, Sum)
            and isinstance(e.right.body, Tuple)
            and len(e.left.items) == len(e.right.body.items)):
        return FusedOutputs(e.left.items, e.right)
    return None
