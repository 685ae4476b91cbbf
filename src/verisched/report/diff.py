"""The subterms a step changed: a structural diff of two ASTs.

A reader of a derivation wants to see where a rewrite acted, not the whole program
again.  Two terms are compared node by node (pybridge/terms.py's `children`,
`data` and `binder`): where they agree on the constructor, its data and its binder,
the diff descends into the children; where they do not, the new node is the
smallest subtree that differs.  The result is the set of paths (child indices from
the root) of those subtrees in the new program, which latex.py and layout.py
highlight.
"""

from __future__ import annotations

import difflib
import re

from markupsafe import Markup, escape

from verisched.pybridge.terms import Node, binder, children, data

Path = tuple[int, ...]

# Past this many separate changes the step reads better as one change at their
# common ancestor (a rewrite of a whole loop nest touches every index in it).
MAX_MARKS = 64


def changed_paths(old: Node, new: Node) -> list[Path]:
    """The paths in `new` of the smallest subtrees that differ from `old` ([] if equal)."""
    out: list[Path] = []
    _diff(old, new, (), out)
    if len(out) > MAX_MARKS:
        return [common_prefix(out)]
    return out


def _diff(old: Node, new: Node, path: Path, out: list[Path]) -> None:
    if old == new:
        return
    same_shape = (type(old) is type(new) and data(old) == data(new)
                  and binder(old) == binder(new))
    if same_shape:
        a, b = children(old), children(new)
        if len(a) == len(b):
            before = len(out)
            for k, (x, y) in enumerate(zip(a, b, strict=True)):
                _diff(x, y, path + (k,), out)
            if len(out) > before:
                return
    out.append(path)


def subterm(e: Node, path: Path) -> Node:
    """The subterm of `e` at `path` (child indices from the root)."""
    for k in path:
        e = children(e)[k]
    return e


def common_prefix(paths: list[Path]) -> Path:
    """The longest path every one of `paths` starts with."""
    first = paths[0]
    n = len(first)
    for p in paths[1:]:
        n = min(n, len(p))
        for k in range(n):
            if p[k] != first[k]:
                n = k
                break
    return first[:n]


def contains(path: Path, marks: frozenset[Path] | set[Path]) -> bool:
    """Whether a changed subterm lies at or below `path`."""
    return any(m[:len(path)] == path for m in marks)


_TOKEN = re.compile(r"\s+|[\w']+|[^\w\s]")


def text_diff_html(old: str | None, new: str) -> Markup:
    """`new` as HTML with the tokens that are not in `old` marked: the change, for a
    program the AST does not cover (Coq's printing of a user definition not yet
    inlined), where no structural diff is possible."""
    b = _TOKEN.findall(new)
    if old is None:
        return Markup(escape(new))
    a = _TOKEN.findall(old)
    out: list[str] = []
    for op, _, _, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        chunk = str(escape("".join(b[j1:j2])))
        out.append(chunk if op == "equal" or not chunk.strip()
                   else f'<mark class="vs-changed">{chunk}</mark>')
    return Markup("".join(out))
