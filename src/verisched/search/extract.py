"""Extraction by LIAR's cost model (its Sec. IV and Listing 7).

A loop costs its extent times its body; a library call costs a discounted
amount per element it touches (`rules.CALL_COST`: dot, axpy and fill per
element, gemv per matrix element, gemm per multiply-add); every other node
costs 1 plus its children.  Extents are symbolic sizes, so each size counts
as `NOMINAL_SIZE` (LIAR's own extents are concrete); a constant counts as
itself.  Costs are pairs (cost, nominal value): index terms carry the value
of the extent they denote, at cost 0, so that a loop and a call can read
their extents from their children's costs.  `tadd` of two tensors costs 1:
the model does not know extents there (a known imprecision, LIAR's
element-wise add costs per element).  A generation the latent rules introduce
as a view (`VIEW`) costs its body once, as LIAR's views cost nothing per element."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from egglog import EGraph
from egglog.deconstruct import get_callable_args, get_callable_fn, get_literal_value

from verisched.pybridge import terms as A

from .egraph import Ix, T
from .rules import CALL_COST

NOMINAL_SIZE = 64.0
# The value a tensor term carries when it is a *view*: an access of a variable or of a
# view (VAR marks a variable), or a generation that the latent rules introduce as a view
# (its binder is one of `views`: the window of a stencil, search/latent.py) whose body
# is one, or a generation of such a generation; a gather (a <+> of guarded reads, which
# selects one read) is one too.  Such a view costs its body once, not per element:
# LIAR's views are index remappings, not loops.  A copy loop the program itself has is
# not one of them and keeps its cost.  Costs stay monotone (a node costs at least its
# children), which egglog's extractor needs.
VIEW = -1.0
VAR = -2.0
# a view generation: a latent view binder's generation of reads, or a generation of one
# (the outer loop of a 2-D window or gather view, which may reuse the program's binder)
VIEW_GEN = -3.0

Cost = tuple[float, float]


def _op(a: float, op: str, b: float) -> float:
    if op == "+":
        return a + b
    if op == "-":
        return a - b
    if op == "*":
        return a * b
    if op in ("/", "cdiv"):
        return a / b if b else a
    return a


def liar_cost(egraph: EGraph, expr: object, children: list[Cost],
              views: frozenset[str] = frozenset(), params: frozenset[str] = frozenset(),
              call_cost: Mapping[str, float] = CALL_COST) -> Cost:
    """The egglog cost model (see the module docstring); `views` the binder names of
    the generations the latent rules introduce as views (search/latent.py); `params`
    the program's integer parameters that are no extents (an output scale, a ReLU
    flag), which count 1 where a call's extents are multiplied, not as a size;
    `call_cost` the per-element cost of each call (LIAR's, or measured: costs.py)."""
    fn = get_callable_fn(expr)  # type: ignore[type-var]
    if fn is None:  # a literal (name, number): no cost
        return (0.0, 0.0)
    if fn == Ix.var:
        name = str(get_literal_value(get_callable_args(expr)[0]))  # type: ignore[type-var, call-overload]
        return (0.0, 1.0 if name in params else NOMINAL_SIZE)
    if fn == Ix.const:
        v = get_literal_value(get_callable_args(expr)[0])  # type: ignore[type-var, call-overload]
        return (0.0, float(v))  # type: ignore[arg-type]
    if fn == Ix.bin:
        op = get_literal_value(get_callable_args(expr)[0])  # type: ignore[type-var, call-overload]
        return (0.0, _op(children[1][1], str(op), children[2][1]))
    if fn in (Ix.true, Ix.false):
        return (0.0, 0.0)
    body = sum(c[0] for c in children)
    if fn == T.var:
        return (1.0, VAR)
    if fn == T.get:
        return (1.0 + body, VIEW if children[0][1] in (VIEW, VAR, VIEW_GEN) else 0.0)
    if fn == T.gen and (children[3][1] == VIEW_GEN or children[3][1] == VIEW and str(
            get_literal_value(get_callable_args(expr)[0])) in views):  # type: ignore[type-var, call-overload]
        return (1.0 + children[3][0], VIEW_GEN)
    # a gather (search/latent.py, gather5_gemv): guarded reads, <+>-summed, select a read
    if fn == T.guard and children[1][1] == VIEW:
        return (1.0 + body, VIEW)
    if fn == T.tadd and children[0][1] == VIEW and children[1][1] == VIEW:
        return (1.0 + body, VIEW)
    if fn in (T.gen, T.sum):
        extent = max(children[2][1] - children[1][1], 0.0)
        return (1.0 + extent * (1.0 + children[3][0]), 0.0)
    if fn == T.ixarg:
        return (0.0, children[0][1])
    if fn == T.nil:
        return (0.0, 1.0)
    if fn == T.cons:
        # a call's argument list: value = product of its index arguments' extents
        # (an index argument carries its value, a tensor argument value 0)
        ext = children[0][1] if children[0][1] > 0 else 1.0
        return (body, ext * children[1][1])
    if fn == T.call:
        name = str(get_literal_value(get_callable_args(expr)[0]))  # type: ignore[type-var, call-overload]
        return (1.0 + children[1][0] + call_cost.get(name, 1.0) * children[1][1], 0.0)
    return (1.0 + body, 0.0)


def cost_model(views: frozenset[str], params: frozenset[str] = frozenset(),
               call_cost: Mapping[str, float] = CALL_COST
               ) -> Callable[[EGraph, object, list[Cost]], Cost]:
    """`liar_cost` with the view binders and the non-extent parameters of one
    program, and a table of call costs."""
    def model(egraph: EGraph, expr: object, children: list[Cost]) -> Cost:
        return liar_cost(egraph, expr, children, views, params, call_cost)
    return model


def _accumulates(e: A.Expr) -> bool:
    """As codegen/normal.py's: a reduction, a call, or a `<+>` ending in one."""
    while isinstance(e, (A.Let, A.Guard)):
        e = e.body
    if isinstance(e, A.TAdd):
        return _accumulates(e.right)
    return isinstance(e, (A.Sum, A.Instr))


def calls_last(e: A.Expr) -> A.Expr:
    """The same program with each `<+>` whose left operand is a call or a reduction and
    whose right one is not swapped: the C lowering stores the left operand and
    accumulates the right one (codegen/core.py, lower_tadd), and a call is stored by
    accumulating (CBLAS's beta = 1).  Both orders are in the e-class (comm is a rule) at the same
    cost; the certificate proves the swap (tadd_comm_t)."""
    e = A.rebuild(e, lambda c: c if A.is_idx(c) else calls_last(c))  # type: ignore[arg-type]
    if isinstance(e, A.TAdd) and _accumulates(e.left) and not _accumulates(e.right):
        return A.TAdd(e.right, e.left)
    return e
