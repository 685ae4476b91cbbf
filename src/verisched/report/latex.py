"""ATL terms as LaTeX, in the paper's notation, for KaTeX to typeset.

Sums are `\\sum` with bounds, generations bracketed comprehensions `[e | i < n]`,
guards Iverson brackets `[p] \\cdot e`, lets `let x = ... in`, reshape operators by
name with their extents as subscripts.  Every term is addressed by its path in the
AST (the child indices of `terms.children`, the order the diff uses), so a changed
subterm can be wrapped in `\\htmlClass{vs-changed}{...}` wherever it sits.

Precedence levels decide parentheses, as coqterm.pretty's do: 0 atoms, 40 products
(and guards, which multiply), 45 sums, 50 additions, 200 lets.
"""

from __future__ import annotations

import re
from collections.abc import Collection

from verisched.pybridge.coqterm import pretty
from verisched.pybridge.terms import (
    Concat,
    Expr,
    Flatten,
    Gen,
    Get,
    Guard,
    IBin,
    IConst,
    Idx,
    Instr,
    Iter,
    IVar,
    Let,
    Lit,
    Mem,
    PadL,
    PadR,
    PAnd,
    PBool,
    PCmp,
    Pred,
    SBin,
    Split,
    Sum,
    TAdd,
    Transpose,
    TruncL,
    TruncR,
    Tuple,
    Var,
    Zero,
    children,
    is_idx,
)

Path = tuple[int, ...]
CHANGED = "vs-changed"
# A comparison's operator; `_FLIPPED` for one written with `>=?` or `>?` (PCmp.flipped).
_CMP = {"<": "<", "<=": r"\le", "=": "="}
_FLIPPED = {"<": ">", "<=": r"\ge"}  # terms.FLIPPED_OPS in TeX

# Reshape operators (Fig. 4-5): the name shown and which children are extents.
RESHAPE_TEX: dict[type, tuple[str, int]] = {
    Concat: ("concat", 2), Transpose: ("transpose", 2), Flatten: ("flatten", 2),
    Split: ("split", 2), PadR: ("pad_r", 2), PadL: ("pad_l", 2), TruncR: ("trunc_r", 1),
    TruncL: ("trunc_l", 2),
}


def name_tex(name: str) -> str:
    """An identifier: one letter in math italic, longer ones as a word, `_` escaped."""
    base, primes = re.match(r"^(.*?)('*)$", name).groups()  # type: ignore[union-attr]
    m = re.fullmatch(r"([A-Za-z])(\d+)", base)
    if m:
        tex = f"{m.group(1)}_{{{m.group(2)}}}"
    elif base == "_":  # a binder Coq prints as `_` (unnamed): a blank, not a subscript
        tex = r"\_"
    elif len(base) == 1:
        tex = base
    else:
        tex = r"\mathit{" + base.replace("_", r"\_") + "}"
    return tex + primes


def op_tex(name: str) -> str:
    return r"\operatorname{" + name.replace("_", r"\_") + "}"


class TexWriter:
    """Renders terms, wrapping the subterms at `marks` (paths) as changed."""

    def __init__(self, marks: Collection[Path] = ()) -> None:
        self.marks = frozenset(marks)

    def _mark(self, tex: str, path: Path) -> str:
        return rf"\htmlClass{{{CHANGED}}}{{{tex}}}" if path in self.marks else tex

    # -- indices and predicates ---------------------------------------------

    def idx(self, i: Idx, path: Path = (), level: int = 200) -> str:
        return self._mark(self._idx(i, path, level), path)

    def _idx(self, i: Idx, path: Path, level: int) -> str:
        if isinstance(i, IVar):
            return name_tex(i.name)
        if isinstance(i, IConst):
            return f"({i.value})" if i.value < 0 and level < 200 else str(i.value)
        a, b = path + (0,), path + (1,)
        if i.op in ("/", "cdiv"):
            lo, hi = ("lfloor", "rfloor") if i.op == "/" else ("lceil", "rceil")
            q = f"{self.idx(i.left, a, 40)} / {self.idx(i.right, b, 39)}"
            return rf"\left\{lo} {q} \right\{hi}"
        if i.op in ("+", "-"):
            s, lev = f"{self.idx(i.left, a, 50)} {i.op} {self.idx(i.right, b, 49)}", 50
        elif i.op == "%":
            s, lev = rf"{self.idx(i.left, a, 40)} \bmod {self.idx(i.right, b, 39)}", 40
        else:
            s, lev = rf"{self.idx(i.left, a, 40)} \cdot {self.idx(i.right, b, 39)}", 40
        return f"({s})" if lev > level else s

    def pred(self, p: Pred, path: Path = ()) -> str:
        """A guard's test; one read from `>=?` or `>?` is shown as written."""
        if isinstance(p, PBool):
            tex = r"\mathrm{true}" if p.value else r"\mathrm{false}"
        elif isinstance(p, PCmp):
            left, right = self.idx(p.left, path + (0,)), self.idx(p.right, path + (1,))
            if p.flipped:  # as written: `right >= left` (Coq's Z.geb, Z.gtb)
                tex = f"{right} {_FLIPPED[p.op]} {left}"
            else:
                tex = f"{left} {_CMP[p.op]} {right}"
        else:
            assert isinstance(p, PAnd)
            tex = rf"{self.pred(p.left, path + (0,))} \land {self.pred(p.right, path + (1,))}"
        return self._mark(tex, path)

    def iter_head(self, e: Iter, path: Path) -> str:
        """`iterate^T u :=`: the step applied T times, starting from what follows."""
        return (rf"\mathbf{{iterate}}^{{{self.idx(e.steps, path + (0,))}}}\ "
                rf"{name_tex(e.var)} :=")

    def bounds(self, e: Gen | Sum, path: Path) -> str:
        """`lo <= i < hi`, or `i < hi` from zero."""
        var = name_tex(e.var)
        hi = self.idx(e.hi, path + (1,))
        if e.lo == IConst(0) and path + (0,) not in self.marks:
            return f"{var} < {hi}"
        return rf"{self.idx(e.lo, path + (0,))} \le {var} < {hi}"

    def sum_head(self, e: Sum, path: Path, limits: bool = False) -> str:
        """`\\sum_{i=lo}^{hi-1}`, the paper's form (the last index, not the extent);
        `limits`: the bounds above and below, as on a line of its own."""
        var = name_tex(e.var)
        lo = self.idx(e.lo, path + (0,))
        hi = e.hi
        if path + (1,) in self.marks:
            top = rf"{self.idx(hi, path + (1,), 50)} - 1"
        elif isinstance(hi, IBin) and hi.op == "+" and hi.right == IConst(1):
            top = self.idx(hi.left, path + (1, 0))
        elif isinstance(hi, IConst):
            top = str(hi.value - 1)
        else:
            top = rf"{self.idx(hi, path + (1,), 50)} - 1"
        op = r"\sum\limits" if limits else r"\sum"
        return rf"{op}_{{{var}={lo}}}^{{{top}}}"

    def node(self, n: object, path: Path = ()) -> str:
        """Any node: an index, a predicate or a tensor expression."""
        if is_idx(n):
            return self.idx(n, path)  # type: ignore[arg-type]
        if isinstance(n, (PBool, PCmp, PAnd)):
            return self.pred(n, path)
        return self.expr(n, path)  # type: ignore[arg-type]

    # -- tensor expressions ----------------------------------------------------

    def expr(self, e: Expr, path: Path = (), level: int = 200) -> str:
        tex, lev = self._expr(e, path)
        tex = self._mark(tex, path)
        return rf"\left({tex}\right)" if lev > level else tex

    def level(self, e: Expr) -> int:
        """The precedence level of `e`'s notation (see the module docstring)."""
        if isinstance(e, (Let, Iter)):
            return 200
        if isinstance(e, TAdd) or (isinstance(e, SBin) and e.op == "+"):
            return 50
        if isinstance(e, Sum):
            return 45
        if isinstance(e, Guard) or (isinstance(e, SBin) and e.op in ("*", "/")):
            return 40
        return 0

    def _expr(self, e: Expr, path: Path) -> tuple[str, int]:
        lev = self.level(e)
        if isinstance(e, Var):
            return name_tex(e.name), 0
        if isinstance(e, Zero):
            return "0", 0
        if isinstance(e, Lit):
            return literal_tex(e.num, e.den), 0
        if isinstance(e, Gen):
            body = self.expr(e.body, path + (2,))
            return rf"\left[\, {body} \;\middle|\; {self.bounds(e, path)} \,\right]", 0
        if isinstance(e, Sum):
            return rf"{self.sum_head(e, path)} {self.expr(e.body, path + (2,), 40)}", lev
        if isinstance(e, Guard):
            body = self.expr(e.body, path + (1,), 40)
            return rf"[{self.pred(e.pred, path + (0,))}] \cdot {body}", lev
        if isinstance(e, Let):
            value = self.expr(e.value, path + (0,))
            body = self.expr(e.body, path + (1,))
            return (rf"\mathbf{{let}}\ {name_tex(e.var)} = {value}\ \mathbf{{in}}\ {body}",
                    lev)
        if isinstance(e, Tuple):
            parts = [self.expr(x, path + (k,)) for k, x in enumerate(e.items)]
            return r"\left(" + r",\ ".join(parts) + r"\right)", 0
        if isinstance(e, Iter):
            return (rf"{self.iter_head(e, path)}\ {self.expr(e.init, path + (1,))}\ "
                    rf"\mathbf{{in}}\ {self.expr(e.body, path + (2,))}", lev)
        if isinstance(e, Get):
            return self.access(e, path), 0
        if isinstance(e, TAdd) or (isinstance(e, SBin) and e.op == "+"):
            return (f"{self.expr(e.left, path + (0,), 50)} + "
                    f"{self.expr(e.right, path + (1,), 49)}"), lev
        if isinstance(e, SBin) and e.op in ("*", "/"):
            op = r"\cdot" if e.op == "*" else "/"
            return (f"{self.expr(e.left, path + (0,), 40)} {op} "
                    f"{self.expr(e.right, path + (1,), 39)}"), lev
        if isinstance(e, SBin):
            return (rf"\{e.op}\left({self.expr(e.left, path + (0,))}, "
                    rf"{self.expr(e.right, path + (1,))}\right)"), 0
        if isinstance(e, Mem):
            return (rf"{op_tex('in_mem')}_{{\mathtt{{{e.memory.replace('_', chr(92) + '_')}}}}}"
                    rf"\left({self.expr(e.body, path + (0,))}\right)"), 0
        if isinstance(e, Instr):
            args = ", ".join(self.idx(a, path + (k,)) if is_idx(a)
                             else self.expr(a, path + (k,)) for k, a in enumerate(e.args))
            return rf"\mathtt{{{e.name.replace('_', chr(92) + '_')}}}\left({args}\right)", 0
        return self.reshape_head(e, path) + rf"\left({self.reshape_args(e, path)}\right)", 0

    def reshape_head(self, e: Expr, path: Path) -> str:
        """`\\operatorname{concat}_{n_1, n_2}`: the operator and its extents."""
        name, n_ext = RESHAPE_TEX[type(e)]
        kids = children(e)
        ext = ", ".join(self.idx(kids[k], path + (k,)) for k in range(n_ext))
        return f"{op_tex(name)}_{{{ext}}}"

    def reshape_args(self, e: Expr, path: Path) -> str:
        _, n_ext = RESHAPE_TEX[type(e)]
        kids = children(e)
        return ", ".join(self.expr(kids[k], path + (k,)) for k in range(n_ext, len(kids)))

    def access(self, e: Get, path: Path) -> str:
        """`v[i, j]` for a chain of accesses `v _[i] _[j]`."""
        indices: list[str] = []
        while isinstance(e, Get):
            indices.append(self.idx(e.index, path + (1,)))
            inner = path + (0,)
            if isinstance(e.tensor, Get) and inner not in self.marks:
                e, path = e.tensor, inner
                continue
            base = self.expr(e.tensor, inner, 0)
            return f"{base}[{', '.join(reversed(indices))}]"
        raise AssertionError("unreachable")


def plain_width(e: Expr) -> int:
    """How wide `e` is on one line, in characters of Coq's notation (a layout estimate)."""
    return len(pretty(e, width=10**9))


def literal_tex(num: int, den: int) -> str:
    """A literal as the number the user wrote: an integer, a terminating decimal
    (`0.33333`), else a fraction (`\\tfrac{1}{3}`), exactly, never a rounded float."""
    if den == 1:
        return str(num)
    d, twos, fives = den, 0, 0
    while d % 2 == 0:
        d, twos = d // 2, twos + 1
    while d % 5 == 0:
        d, fives = d // 5, fives + 1
    if d == 1 and max(twos, fives) <= 12:
        places = max(twos, fives)
        scaled = num * 10**places // den
        whole, frac = divmod(scaled, 10**places)
        return f"{whole}.{str(frac).zfill(places).rstrip('0')}"
    return rf"\tfrac{{{num}}}{{{den}}}"
