"""Sites of a program: its subterms with their paths and the binders around them, and
a subterm printed as a Coq `at (pattern)` (shared by the path search, certify.py, and
the rules that apply to whole programs, glenside.py)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

from verisched.pybridge import terms as A
from verisched.pybridge.coqterm import to_coq

Path = tuple[int, ...]


def positions(e: A.Expr, path: Path = (), bound: frozenset[str] = frozenset()
               ) -> Iterator[tuple[Path, A.Expr, frozenset[str]]]:
    """Every subterm of `e` (index terms excepted) with its path and the binders
    around it: the sites a rule may rewrite at."""
    yield path, e, bound
    var = A.binder(e)
    kids = A.children(e)
    for k, c in enumerate(kids):
        if A.is_idx(c):
            continue
        inner = bound | {var} if var is not None and k == len(kids) - 1 else bound
        yield from positions(c, path + (k,), inner)  # type: ignore[arg-type]


def replace_at(e: A.Expr, path: Path, new: A.Expr) -> A.Expr:
    """`e` with the subterm at `path` replaced by `new`."""
    if not path:
        return new
    k = path[0]
    kids = A.children(e)
    child = replace_at(kids[k], path[1:], new)  # type: ignore[arg-type]
    if isinstance(e, A.Instr):
        return A.Instr(e.name, kids[:k] + (child,) + kids[k + 1:])
    field = A._CHILD_FIELDS[type(e)][k]  # noqa: SLF001 - the field order is the AST's
    return replace(e, **{field: child})


def site_pattern(node: A.Expr, bound: frozenset[str]) -> str:
    """The node as a Coq pattern: the variables bound around it become holes."""
    holes = {b: A.Var("_") for b in bound}
    ix = {b: A.IVar("_") for b in bound}
    return to_coq(A.subst(node, holes, ix))  # type: ignore[arg-type]
