"""A program as nested HTML blocks of KaTeX lines, with loops and buffers collapsible.

One KaTeX formula per program does not work: a tiled blur is a 4,000-character term.
So a term that fits on a line (`LINE` characters of Coq's notation) is one formula;
a longer one is broken at its structure, as coqterm.pretty breaks text: a generation
or a sum becomes its head and an indented body, a let its buffer and its body, an
addition its operands.  Loops (generations, sums) and buffers (let values) are
`<details>` elements, so a reader folds what they do not need; in a step's program
only the blocks holding the changed subterm start open.

The HTML holds the LaTeX as text (`<span class="tex">`); the page's script typesets it.
"""

from __future__ import annotations

from collections.abc import Collection

from markupsafe import escape

from verisched.pybridge.terms import (
    Expr,
    Gen,
    Get,
    Guard,
    Instr,
    Iter,
    Let,
    Mem,
    SBin,
    Sum,
    TAdd,
    children,
    is_idx,
)

from .diff import Path, contains
from .latex import CHANGED, RESHAPE_TEX, TexWriter, name_tex, plain_width

LINE = 100


def tex_span(tex: str, display: bool = False) -> str:
    """The element the page's script typesets (KaTeX reads its text)."""
    cls = "tex display" if display else "tex"
    return f'<span class="{cls}">{escape(tex)}</span>'


class Layout:
    """Lays out one program; `marks` are the changed subterms' paths, `fold` says
    whether blocks without a change start closed."""

    def __init__(self, marks: Collection[Path] = (), fold: bool = False) -> None:
        self.marks = frozenset(marks)
        self.tex = TexWriter(self.marks)
        self.fold = fold

    def html(self, e: Expr) -> str:
        return f'<div class="prog">{self.block(e, (), 200)}</div>'

    def _line(self, tex: str, cls: str = "") -> str:
        return f'<div class="ln{(" " + cls) if cls else ""}">{tex_span(tex)}</div>'

    def _open(self, path: Path) -> str:
        inside = any(path[:len(m)] == m for m in self.marks)    # within a changed subterm
        return " open" if not self.fold or inside or contains(path, self.marks) else ""

    def _changed(self, path: Path) -> str:
        return f" {CHANGED}" if path in self.marks else ""

    def block(self, e: Expr, path: Path, level: int) -> str:
        """`e` at `path`, parenthesised if its notation binds looser than `level`."""
        if plain_width(e) <= LINE or not self._breakable(e):
            return self._line(self.tex.expr(e, path, level))
        inner = self._block(e, path)
        if self.tex.level(e) > level:
            inner = (self._line(r"\Big(") + f'<div class="ind">{inner}</div>'
                     + self._line(r"\Big)"))
        return f'<div class="blk{self._changed(path)}">{inner}</div>'

    def _breakable(self, e: Expr) -> bool:
        if isinstance(e, (Gen, Sum, Let, Iter, Guard, TAdd, Mem)) or type(e) in RESHAPE_TEX:
            return True
        if isinstance(e, SBin):
            return e.op in ("+", "*", "/")
        if isinstance(e, Get):
            return not isinstance(e.tensor, Get) or self._breakable(e.tensor)
        return isinstance(e, Instr) and any(not is_idx(a) for a in e.args)

    def _fold(self, kind: str, head: str, body: str, path: Path, tail: str = "") -> str:
        """A collapsible block: the head always shown, the body indented below it."""
        return (f'<details class="{kind}"{self._open(path)}><summary>{tex_span(head)}'
                f'</summary><div class="ind">{body}</div>{tail}</details>')

    def _block(self, e: Expr, path: Path) -> str:
        t = self.tex
        if isinstance(e, Gen):
            head = rf"\Big[\; {t.bounds(e, path)} \;\Big|"
            return self._fold("loop", head, self.block(e.body, path + (2,), 200), path,
                              self._line(r"\Big]"))
        if isinstance(e, Sum):
            head = t.sum_head(e, path, limits=True)
            return self._fold("loop", head, self.block(e.body, path + (2,), 40), path)
        if isinstance(e, Guard):
            head = rf"[{t.pred(e.pred, path + (0,))}] \cdot"
            return self._line(head) + (f'<div class="ind">'
                                       f'{self.block(e.body, path + (1,), 40)}</div>')
        if isinstance(e, Let):
            head = rf"\mathbf{{let}}\ {name_tex(e.var)} ="
            buf = self._fold("buffer", head, self.block(e.value, path + (0,), 200),
                             path + (0,))
            return (buf + self._line(r"\mathbf{in}")
                    + self.block(e.body, path + (1,), 200))
        if isinstance(e, Iter):
            init = self._fold("buffer", t.iter_head(e, path),
                              self.block(e.init, path + (1,), 200), path + (1,))
            return (init + self._line(r"\mathbf{in}")
                    + self._fold("loop", r"\text{step}", self.block(e.body, path + (2,), 200),
                                 path + (2,)))
        if isinstance(e, TAdd) or (isinstance(e, SBin) and e.op in ("+", "*", "/")):
            op = {"*": r"\cdot", "/": "/"}.get(getattr(e, "op", "+"), "+")
            lev = t.level(e)
            return (self.block(e.left, path + (0,), lev) + self._line(op, "op")
                    + self.block(e.right, path + (1,), lev - 1))
        if isinstance(e, Get):
            indices = [t.idx(e.index, path + (1,))]
            while isinstance(e.tensor, Get) and path + (0,) not in self.marks:
                e, path = e.tensor, path + (0,)
                indices.append(t.idx(e.index, path + (1,)))
            base = self.block(e.tensor, path + (0,), 200)
            return (self._line(r"\Big(") + f'<div class="ind">{base}</div>'
                    + self._line(rf"\Big)[{', '.join(reversed(indices))}]"))
        if isinstance(e, Mem):
            head = (r"\operatorname{in\_mem}_{\mathtt{" + e.memory.replace("_", r"\_")
                    + r"}}\Big(")
            return self._fold("buffer", head, self.block(e.body, path + (0,), 200), path,
                              self._line(r"\Big)"))
        if isinstance(e, Instr):
            head = r"\mathtt{" + e.name.replace("_", r"\_") + r"}\Big("
            args = self._args(list(enumerate(e.args)), path)
            return self._line(head) + f'<div class="ind">{args}</div>' + self._line(r"\Big)")
        _, n_ext = RESHAPE_TEX[type(e)]
        kids = list(enumerate(children(e)))[n_ext:]
        head = t.reshape_head(e, path) + r"\Big("
        return self._fold("reshape", head, self._args(kids, path), path,
                          self._line(r"\Big)"))

    def _args(self, kids: list[tuple[int, object]], path: Path) -> str:
        """Arguments one below the other, separated by commas."""
        parts = []
        for n, (k, a) in enumerate(kids):
            sep = self._line(",", "op") if n else ""
            body = (self._line(self.tex.idx(a, path + (k,))) if is_idx(a)  # type: ignore[arg-type]
                    else self.block(a, path + (k,), 200))  # type: ignore[arg-type]
            parts.append(sep + body)
        return "".join(parts)
