"""ATL terms to and from Coq's concrete syntax.

`parse_program` reads a program as coqtop prints it with the session's
settings (session.PRELUDE: notations of coq/Tensor/Core.v, Z_scope and
atl_scope open, `Set Printing Parentheses`), producing the AST of terms.py.
The grammar mirrors the notation levels declared in Core.v: binders (GEN,
SUM, tlet) at 200, `<+>` and scalar `+` at 50 (left), the guard `|[p]| e` at
45 (right), `*` `/` at 40 (left), application at 10, access `_[ ]` at 2;
indices use Z's levels (`+ -` 50, `* / mod` 40) and predicates bool's (`&&`
40, comparisons 70).  Whether `+` means Z.add or sadd is decided by position
(index or tensor), which is exactly how Coq's scopes resolve it.

`to_coq` prints an AST as fully parenthesised Coq text, so elaboration does
not depend on levels; `pretty` prints it for people, with minimal
parentheses and indentation.

Reshape operators (coq/Reshape/Defs.v) have no notation and print as
applications `flatten n m e`; the table RESHAPE_SIGS gives their arguments.
Memory markers print as `in_mem AVX2_REG (e)` and instruction calls as
applications `avx2_loadu (B _[ k ]) (8 * jv)` (coq/Targets/Instr.v, AVX.v);
the instruction registry (instrs.py) gives each instruction's arguments.
"""

from __future__ import annotations

import contextvars
import re
import sys
from collections.abc import Sequence
from dataclasses import replace
from typing import cast

from .errors import TermParseError
from .instrs import INDEX, InstrError, check_call, lookup
from .terms import (
    FLIPPED_OPS,
    SCALAR_FUNS,
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
    Node,
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
    free_vars,
    rebuild,
    walk,
)

# Coq name -> (AST class, argument kinds in order: "i" index, "e" expression)
RESHAPE_SIGS: dict[str, tuple[type, str]] = {
    "concat": (Concat, "iiee"),
    "transpose": (Transpose, "iie"),
    "flatten": (Flatten, "iie"),
    "split": (Split, "iie"),
    "pad_r": (PadR, "iie"),
    "pad_l": (PadL, "iie"),
    "trunc_r": (TruncR, "ie"),
    "trunc_l": (TruncL, "iie"),
}
_RESHAPE_NAME = {cls: name for name, (cls, _) in RESHAPE_SIGS.items()}
_SCALAR_FUN_NAME = {op: name for name, op in SCALAR_FUNS.items()}
_RESHAPE_QUALIFIERS = ("", "Defs.", "Reshape.Defs.", "Verisched.Reshape.Defs.")

# `szero` and `sone` of class Scalar, as Coq prints them (bare or qualified): the
# semantics printer keeps them folded (coq/Bridge/Print.v), e.g. a ReLU's broadcast 0.
_SCALAR_CONSTS = {f"{q}{c}" for c in ("szero", "sone")
                  for q in ("", "Scalar.", "Tensor.Scalar.", "Verisched.Tensor.Scalar.")}
KEYWORDS = {"GEN", "GENR", "SUM", "SUMR", "tlet", "ITER", "in", "tzero", "true", "false",
            "mod", "cdiv", "fun", "if", "then", "else", "match", "let"}

_TOKEN_RE = re.compile(r"""
    (?P<ws>\s+)
  | (?P<scope>%[A-Za-z_]+)
  | (?P<num>\d+)
  | (?P<op><\+>|<=\?|<\?|>=\?|>\?|=\?|<=|:=|\|\[|\]\||_\[|&&|\|\||[-+*/()<>\[\]:=?|,;])
  | (?P<ident>[A-Za-z_][A-Za-z0-9_']*(?:\.[A-Za-z_][A-Za-z0-9_']*)*)
  | (?P<bad>.)
""", re.VERBOSE | re.S)


class _Tok:
    __slots__ = ("kind", "text", "pos", "space_before")

    def __init__(self, kind: str, text: str, pos: int, space_before: bool) -> None:
        self.kind = kind
        self.text = text
        self.pos = pos
        self.space_before = space_before

    def __repr__(self) -> str:
        return f"{self.text!r}@{self.pos}"


def tokenize(text: str) -> list[_Tok]:
    toks: list[_Tok] = []
    space = True
    for m in _TOKEN_RE.finditer(text):
        kind = m.lastgroup or ""
        if kind == "ws":
            space = True
        elif kind == "bad":
            pos = m.start()
            # Coq takes `α` in a name; this reader (and the C names made from them) takes
            # ASCII letters, digits, _ and ' only: said so, not left a puzzle.
            why = (" (names in programs must be ASCII: letters, digits, _ and ')"
                   if text[pos].isalpha() and not text[pos].isascii() else "")
            raise TermParseError(f"unexpected character {text[pos]!r} at offset {pos}{why}: "
                                 f"...{text[max(0, pos - 30):pos + 30]}...")
        elif kind != "scope":  # %Z, %atl: delimiters add nothing for a parser by position
            toks.append(_Tok(kind, m.group(), m.start(), space))
            space = False
    toks.append(_Tok("eof", "", len(text), True))
    return toks


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.toks = tokenize(text)
        self.i = 0

    # -- helpers -----------------------------------------------------------
    @property
    def tok(self) -> _Tok:
        return self.toks[self.i]

    def peek(self, k: int = 1) -> _Tok:
        return self.toks[min(self.i + k, len(self.toks) - 1)]

    def fail(self, what: str) -> TermParseError:
        t = self.tok
        ctx = self.text[max(0, t.pos - 40):t.pos + 40].replace("\n", " ")
        return TermParseError(f"{what} at offset {t.pos} (near {t.text or 'end'!r}): ...{ctx}...")

    def eat(self, text: str) -> _Tok:
        if self.tok.text != text:
            raise self.fail(f"expected {text!r}")
        t = self.tok
        self.i += 1
        return t

    def _applied(self) -> bool:
        """Is the identifier at the cursor followed by an argument?"""
        nxt = self.toks[self.i + 1] if self.i + 1 < len(self.toks) else None
        return nxt is not None and (nxt.kind in ("ident", "num") and nxt.text not in KEYWORDS
                                    or nxt.text == "(")

    def at(self, *texts: str) -> bool:
        return self.tok.text in texts

    def name(self) -> str:
        t = self.tok
        if t.kind != "ident" or t.text in KEYWORDS:
            raise self.fail("expected a name")
        self.i += 1
        return t.text

    # -- index expressions -------------------------------------------------
    def idx(self, level: int = 200) -> Idx:
        left, llev = self.idx_atom_or_app()
        while True:
            op = self.tok.text
            if op in ("+", "-") and level >= 50:
                self.i += 1
                right = self.idx(49)
                left, llev = IBin(op, left, right), 50
            elif op in ("*", "/", "mod") and level >= 40 and llev <= 40:
                self.i += 1
                right = self.idx(39)
                left, llev = IBin("%" if op == "mod" else op, left, right), 40
            else:
                return left

    def idx_atom_or_app(self) -> tuple[Idx, int]:
        t = self.tok
        if t.text == "cdiv":
            self.i += 1
            a = self.idx_arg()
            b = self.idx_arg()
            return IBin("cdiv", a, b), 10
        if t.text == "-" and self.peek().kind == "num" and not self.peek().space_before:
            self.i += 2
            return IConst(-int(self.toks[self.i - 1].text)), 0
        if t.text == "-":
            raise self.fail("unsupported index operation: negation (Z.opp)")
        return self.idx_arg(check_app=True), 0

    def idx_arg(self, check_app: bool = False) -> Idx:
        t = self.tok
        if t.kind == "num":
            self.i += 1
            return IConst(int(t.text))
        if t.text == "-" and self.peek().kind == "num" and not self.peek().space_before:
            self.i += 2
            return IConst(-int(self.toks[self.i - 1].text))
        if t.text == "(":
            self.i += 1
            if self.at("-") and self.peek().kind == "num" and self.peek(2).text == ")":
                self.i += 2
                self.eat(")")
                return IConst(-int(self.toks[self.i - 2].text))
            e = self.idx()
            self.eat(")")
            return e
        if t.kind == "ident" and t.text not in KEYWORDS:
            self.i += 1
            if check_app and self.tok.kind in ("ident", "num") \
                    and self.tok.text not in KEYWORDS:
                raise self.fail(f"unsupported index function {t.text!r}")
            return IVar(t.text)
        raise self.fail("expected an index expression")

    # -- predicates --------------------------------------------------------
    def pred(self, level: int = 200) -> Pred:
        left = self.pred_atom()
        while self.at("&&") and level >= 40:
            self.i += 1
            right = self.pred_atom()
            left = PAnd(left, right)
        if self.at("||"):
            raise self.fail("unsupported predicate: disjunction")
        return left

    def pred_atom(self) -> Pred:
        t = self.tok
        if t.text in ("true", "false"):
            self.i += 1
            return PBool(t.text == "true")
        start = self.i
        try:
            left = self.idx(50)
            op = self.tok.text
            if op in ("<?", "<=?", "=?"):
                self.i += 1
                right = self.idx(50)
                return PCmp(op[:-1], left, right)
            if op in (">?", ">=?"):
                # Z.gtb / Z.geb: the same test with the operands swapped (Z.gtb_ltb,
                # Z.geb_leb), so everything below reads one form
                self.i += 1
                right = self.idx(50)
                return PCmp("<=" if op == ">=?" else "<", right, left, flipped=True)
            raise self.fail("expected a comparison (<?, <=?, =?, >?, >=?)")
        except TermParseError:
            self.i = start
            if not self.at("("):
                raise
        self.eat("(")
        p = self.pred()
        self.eat(")")
        return p

    # -- tensor expressions ------------------------------------------------
    def expr(self, level: int = 200) -> Expr:
        left, llev = self.expr_prefix(level)
        while True:
            op = self.tok.text
            if op == "_[" and llev <= 2:
                self.i += 1
                index = self.idx()
                self.eat("]")
                left, llev = Get(left, index), 2
            elif op in ("<+>", "+") and level >= 50 and llev <= 50:
                self.i += 1
                right = self.expr(49)
                left = TAdd(left, right) if op == "<+>" else SBin("+", left, right)
                llev = 50
            elif op in ("*", "/") and level >= 40 and llev <= 40:
                self.i += 1
                right = self.expr(39)
                left, llev = SBin(op, left, right), 40
            else:
                return left

    def expr_prefix(self, level: int, check_app: bool = True) -> tuple[Expr, int]:
        t = self.tok
        if t.text in ("GEN", "SUM"):
            self.i += 1
            self.eat("[")
            var = self.name()
            self.eat("<")
            hi = self.idx()
            self.eat("]")
            body = self.expr(200)
            node = Gen if t.text == "GEN" else Sum
            return node(var, IConst(0), hi, body), 200
        if t.text in ("GENR", "SUMR"):
            self.i += 1
            self.eat("[")
            lo = self.idx(69)
            self.eat("<=")
            var = self.name()
            self.eat("<")
            hi = self.idx()
            self.eat("]")
            body = self.expr(200)
            node = Gen if t.text == "GENR" else Sum
            return node(var, lo, hi, body), 200
        if t.text == "ITER":
            self.i += 1
            self.eat("[")
            steps = self.idx()
            self.eat("]")
            var = self.name()
            self.eat(":=")
            init = self.expr(200)
            self.eat("in")
            body = self.expr(200)
            return Iter(var, steps, init, body), 200
        if t.text == "tlet":
            self.i += 1
            var = self.name()
            self.eat(":=")
            value = self.expr(200)
            self.eat("in")
            body = self.expr(200)
            return Let(var, value, body), 200
        if t.text == "|[":
            self.i += 1
            p = self.pred()
            self.eat("]|")
            body = self.expr(45)
            return Guard(p, body), 45
        if t.text == "(":
            self.i += 1
            e = self.expr()
            if self.at(","):  # a pair: a program with several outputs (left-nested)
                items = [e]
                while self.at(","):
                    self.i += 1
                    items.append(self.expr())
                self.eat(")")
                return Tuple(tuple(items)), 0
            self.eat(")")
            return e, 0
        if t.text == "tzero":
            self.i += 1
            return Zero(), 0
        if t.kind == "ident" and t.text not in KEYWORDS:
            head = t.text
            base = head.rsplit(".", 1)[-1]
            if base in SCALAR_FUNS:
                self.i += 1
                x = self.expr_arg()
                y = self.expr_arg()
                return SBin(SCALAR_FUNS[base], x, y), 10
            if head in _SCALAR_CONSTS:  # the class's 0 and 1 (Tensor/Scalar.v)
                self.i += 1
                return (Zero() if base == "szero" else Lit(1, 1)), 0
            if base == "slit" and head in ("slit", "Scalar.slit", "Tensor.Scalar.slit",
                                           "Verisched.Tensor.Scalar.slit"):
                self.i += 1
                num, den = self.idx_arg(), self.idx_arg()
                if not (isinstance(num, IConst) and isinstance(den, IConst)
                        and num.value > 0 and den.value > 0):
                    raise self.fail("a literal `slit n d` takes two positive numerals")
                return Lit(num.value, den.value), 10
            if base == "in_mem":
                self.i += 1
                mem = self.name().rsplit(".", 1)[-1]
                return Mem(mem, self.expr_arg()), 10
            spec = lookup(base)
            if spec is None and self._applied():
                # An applied constant we do not know: a session may know it as an
                # instruction (instr_coq.resolving_with, instr_coq.learn).
                spec = lookup(base, resolve=True)
            if spec is not None:
                self.i += 1
                iargs: list[object] = []
                for k in spec.kinds:
                    if self.tok.kind == "eof" or self.at(")", "in", "]", "]|"):
                        raise self.fail(f"instruction {base} applied to {len(iargs)} "
                                        f"argument(s), expects {len(spec.kinds)}")
                    iargs.append(self.idx_arg() if k == INDEX else self.expr_arg())
                return Instr(base, tuple(iargs)), 10  # type: ignore[arg-type]
            if base in RESHAPE_SIGS and head[: len(head) - len(base)] in _RESHAPE_QUALIFIERS:
                self.i += 1
                cls, kinds = RESHAPE_SIGS[base]
                args: list[object] = []
                for k in kinds:
                    args.append(self.idx_arg() if k == "i" else self.expr_arg())
                return cls(*args), 10
            self.i += 1
            nxt = self.tok
            if check_app and (nxt.kind in ("ident", "num") and nxt.text not in KEYWORDS
                              or nxt.text == "("):
                raise self.fail(f"unsupported application of {head!r} (not an ATL construct)")
            return Var(head), 0
        raise self.fail("expected an ATL expression")

    def expr_arg(self) -> Expr:
        """An application argument (Coq level 9): an atom with its accesses."""
        left, llev = self.expr_prefix(9, check_app=False)
        if llev > 9:
            raise self.fail("application argument must be parenthesised")
        while self.at("_["):
            self.i += 1
            index = self.idx()
            self.eat("]")
            left = Get(left, index)
        return left


def parse_program(text: str) -> Expr:
    """Parse a program as Coq prints it; raises TermParseError."""
    p = _Parser(text)
    e = p.expr()
    if p.tok.kind != "eof":
        raise p.fail("unexpected text after the program")
    return e


def _held(e: Expr, names: Sequence[str]) -> list[tuple[Gen | Sum, str]] | None:
    """Each loop of `e` in pre-order (`walk`) with the name its binder holds, `names`
    (`bridge_show_loop_names`, coq/Bridge/Print.v; `_` for a binder with none); None
    where the counts differ (a term this does not read as Coq does)."""
    loops = [x for x in walk(e) if isinstance(x, (Gen, Sum))]
    return list(zip(loops, names, strict=True)) if len(loops) == len(names) else None


def with_loop_names(e: Expr, names: Sequence[str]) -> Expr:
    """`e` with the names Coq did not print put back into its loops.

    Coq prints a loop whose body does not use its index as `GEN [ _ < n ]`,
    whatever the binder's name; the directives still find the loop by that name
    (coq/Rewrites/Tactics.v `atl_named_binder`), so the program a user reads must
    show it.  `names` are every loop's held name in pre-order (`_held`).  Where the
    counts differ nothing is renamed: a wrong name would be worse than none.  A name
    that occurs free in the loop's body is left out (it would capture that
    occurrence)."""
    pairs = _held(e, names)
    if pairs is None or all(x.var != "_" for x, _ in pairs):
        return e
    todo = iter(names)

    def go(n: Node) -> Node:
        if isinstance(n, (Gen, Sum)):
            name = next(todo)  # the node before its children: pre-order, as walk
            if n.var == "_" and name != "_" and name not in free_vars(n.body):
                n = replace(n, var=name)
        return rebuild(n, go)

    return cast(Expr, go(e))


def _renamed(x: Gen | Sum, held: str) -> bool:
    """Is loop `x` printed under another name than the one its binder holds (not a
    `_` on either side: an unused or unnamed binder)?"""
    return x.var != held and "_" not in (x.var, held)


def loop_aliases(e: Expr, names: Sequence[str]) -> dict[str, tuple[str, bool]]:
    """The loops of `e` whose printed name is not the name their binder holds, as
    {printed: (held, first)}: Coq's printer renames a binder that would shadow a name
    in scope (`i0` for a second `i`, `n0` for a loop named as a size), and a directive
    matches the held name, the first loop holding it in pre-order; `first` says
    whether that is this loop (a printed name another loop holds is no exception:
    `i0` printed for a second `i` while a third loop holds `i0`).  Empty where the
    counts differ."""
    pairs = _held(e, names) or []
    return {x.var: (h, h not in names[:k])
            for k, (x, h) in enumerate(pairs) if _renamed(x, h)}


def shadowed_loops(e: Expr, names: Sequence[str]) -> frozenset[str]:
    """The printed names of the loops that hold a name some loop is printed without
    (`i` and `i0`, both holding `i`): the printing of each depends on the other, so a
    step on one can move a name onto the other.  Empty where the counts differ."""
    pairs = _held(e, names) or []
    hidden = {h for x, h in pairs if _renamed(x, h)}
    return frozenset(x.var for x, h in pairs if h in hidden)


def parse_index(text: str) -> Idx:
    p = _Parser(text)
    e = p.idx()
    if p.tok.kind != "eof":
        raise p.fail("unexpected text after the index")
    return e


# ---------------------------------------------------------------------------
# AST -> Coq text (fully parenthesised)


def idx_to_coq(i: Idx) -> str:
    if isinstance(i, IVar):
        return i.name
    if isinstance(i, IConst):
        return f"({i.value})" if i.value < 0 else str(i.value)
    if i.op == "cdiv":
        return f"(cdiv {idx_to_coq(i.left)} {idx_to_coq(i.right)})"
    op = "mod" if i.op == "%" else i.op
    return f"({idx_to_coq(i.left)} {op} {idx_to_coq(i.right)})"


def pred_to_coq(p: Pred) -> str:
    if isinstance(p, PBool):
        return "true" if p.value else "false"
    if isinstance(p, PCmp):
        return f"({idx_to_coq(p.left)} {p.op}? {idx_to_coq(p.right)})"
    return f"({pred_to_coq(p.left)} && {pred_to_coq(p.right)})"


def to_coq(e: Expr) -> str:
    """Coq text elaborating to `e` whatever the surrounding notation levels."""
    if isinstance(e, Var):
        return e.name
    if isinstance(e, Zero):
        return "tzero"
    if isinstance(e, Lit):
        return f"(slit {e.num} {e.den})"
    if isinstance(e, Tuple):
        return "(" + ", ".join(to_coq(x) for x in e.items) + ")"
    if isinstance(e, (Gen, Sum)):
        kw = "GEN" if isinstance(e, Gen) else "SUM"
        if e.lo == IConst(0):
            return f"({kw} [ {e.var} < {idx_to_coq(e.hi)} ] {to_coq(e.body)})"
        return f"({kw}R [ {idx_to_coq(e.lo)} <= {e.var} < {idx_to_coq(e.hi)} ] {to_coq(e.body)})"
    if isinstance(e, Guard):
        return f"(|[ {pred_to_coq(e.pred)} ]| {to_coq(e.body)})"
    if isinstance(e, Let):
        return f"(tlet {e.var} := {to_coq(e.value)} in {to_coq(e.body)})"
    if isinstance(e, Iter):
        return (f"(ITER [ {idx_to_coq(e.steps)} ] {e.var} := {to_coq(e.init)} in "
                f"{to_coq(e.body)})")
    if isinstance(e, Get):
        return f"({to_coq(e.tensor)} _[ {idx_to_coq(e.index)} ])"
    if isinstance(e, TAdd):
        return f"({to_coq(e.left)} <+> {to_coq(e.right)})"
    if isinstance(e, SBin) and e.op in _SCALAR_FUN_NAME:
        return f"({_SCALAR_FUN_NAME[e.op]} {to_coq(e.left)} {to_coq(e.right)})"
    if isinstance(e, SBin):
        return f"({to_coq(e.left)} {e.op} {to_coq(e.right)})"
    if isinstance(e, Mem):
        return f"(in_mem {e.memory} {to_coq(e.body)})"
    if isinstance(e, Instr):
        _check_instr(e)
        args = [idx_to_coq(a) if not _is_expr_value(a) else to_coq(a) for a in e.args]
        return "(" + " ".join([e.name, *args]) + ")"
    name = _RESHAPE_NAME.get(type(e))
    if name is None:
        raise TypeError(f"not an ATL term: {e!r}")
    parts = [name]
    for v in children(e):
        parts.append(to_coq(v) if _is_expr_value(v) else idx_to_coq(v))
    return "(" + " ".join(parts) + ")"


def _is_expr_value(v: object) -> bool:
    return not isinstance(v, (IVar, IConst, IBin))


def _check_instr(e: Instr) -> None:
    try:
        check_call(e)
    except InstrError as exc:
        raise TypeError(f"not a well-formed instruction call: {exc}") from exc


# ---------------------------------------------------------------------------
# Human-readable printing (paper-like: Coq's notation, minimal parentheses)


def idx_str(i: Idx, level: int = 200) -> str:
    if isinstance(i, IVar):
        return i.name
    if isinstance(i, IConst):
        return f"({i.value})" if i.value < 0 and level <= 9 else str(i.value)
    if i.op == "cdiv":
        s, lev = f"cdiv {idx_str(i.left, 9)} {idx_str(i.right, 9)}", 10
    elif i.op in ("+", "-"):
        s, lev = f"{idx_str(i.left, 50)} {i.op} {idx_str(i.right, 49)}", 50
    else:
        op = "mod" if i.op == "%" else i.op
        s, lev = f"{idx_str(i.left, 40)} {op} {idx_str(i.right, 39)}", 40
    if isinstance(i, IBin) and level < 9 and i.op != "cdiv":
        return f"({s})"
    return f"({s})" if lev > level else s


def pred_str(p: Pred, level: int = 200) -> str:
    if isinstance(p, PBool):
        return "true" if p.value else "false"
    if isinstance(p, PCmp):
        s = (f"{idx_str(p.right, 50)} {FLIPPED_OPS[p.op]}? {idx_str(p.left, 50)}"
             if p.flipped else f"{idx_str(p.left, 50)} {p.op}? {idx_str(p.right, 50)}")
        return f"({s})" if level < 70 else s
    s = f"{pred_str(p.left, 40)} && {pred_str(p.right, 39)}"
    return f"({s})" if level < 40 else s


def pretty(e: Expr, width: int = 90) -> str:
    """Multi-line rendering for people; binders open an indented block.  Each node's
    one-line text is computed once (`_pp` asks for it at every level, which made the
    printing quadratic: 66% of a 150-step report on a 150-term program)."""
    deep_enough()
    token = _FLAT_MEMO.set({})
    try:
        return "\n".join(_pp(e, 200, 0, width))
    finally:
        _FLAT_MEMO.reset(token)


# Terms are printed and walked recursively: a chain of 500 additions (a 3 KB program)
# passed Python's default limit of 1,000 frames.  Python 3.11's calls between Python
# functions take no C stack, so a higher limit costs only memory; it is raised, never
# lowered (it is the process's).
RECURSION_LIMIT = 100_000


def deep_enough() -> None:
    """Raise the interpreter's recursion limit to RECURSION_LIMIT if it is lower."""
    if sys.getrecursionlimit() < RECURSION_LIMIT:
        sys.setrecursionlimit(RECURSION_LIMIT)


# id(node) -> its one-line text and level, within one `pretty` call (the term, which
# holds every node, outlives it, so no id is reused meanwhile).
_FLAT_MEMO: contextvars.ContextVar[dict[int, tuple[str, int]] | None] = \
    contextvars.ContextVar("_FLAT_MEMO", default=None)


def _flat(e: Expr, level: int) -> tuple[str, int]:
    """One-line text of `e` and its notation level (which `level`, the context's, does
    not change: memoized by node within `pretty`)."""
    memo = _FLAT_MEMO.get()
    if memo is None:
        return _flat_text(e)
    got = memo.get(id(e))
    if got is None:
        got = memo[id(e)] = _flat_text(e)
    return got


def _flat_text(e: Expr) -> tuple[str, int]:
    if isinstance(e, Var):
        return e.name, 0
    if isinstance(e, Zero):
        return "tzero", 0
    if isinstance(e, Lit):
        return f"slit {e.num} {e.den}", 10
    if isinstance(e, Tuple):
        return "(" + ", ".join(_flat(x, 200)[0] for x in e.items) + ")", 0
    if isinstance(e, (Gen, Sum)):
        kw = "GEN" if isinstance(e, Gen) else "SUM"
        body, _ = _flat(e.body, 200)
        if e.lo == IConst(0):
            return f"{kw} [ {e.var} < {idx_str(e.hi)} ] {body}", 200
        return f"{kw}R [ {idx_str(e.lo, 69)} <= {e.var} < {idx_str(e.hi)} ] {body}", 200
    if isinstance(e, Let):
        return f"tlet {e.var} := {_wrap(e.value, 200)} in {_wrap(e.body, 200)}", 200
    if isinstance(e, Iter):
        return (f"ITER [ {idx_str(e.steps)} ] {e.var} := {_wrap(e.init, 200)} in "
                f"{_wrap(e.body, 200)}"), 200
    if isinstance(e, Guard):
        return f"|[ {pred_str(e.pred)} ]| {_wrap(e.body, 45)}", 45
    if isinstance(e, Get):
        return f"{_wrap(e.tensor, 2)} _[{idx_str(e.index)}]", 2
    if isinstance(e, TAdd):
        return f"{_wrap(e.left, 50)} <+> {_wrap(e.right, 49)}", 50
    if isinstance(e, SBin) and e.op in _SCALAR_FUN_NAME:
        return f"{_SCALAR_FUN_NAME[e.op]} {_wrap(e.left, 9)} {_wrap(e.right, 9)}", 10
    if isinstance(e, SBin):
        lev = 50 if e.op == "+" else 40
        return f"{_wrap(e.left, lev)} {e.op} {_wrap(e.right, lev - 1)}", lev
    if isinstance(e, Mem):
        return f"in_mem {e.memory} {_wrap(e.body, 9)}", 10
    if isinstance(e, Instr):
        args = [_wrap(a, 9) if _is_expr_value(a) else idx_str(a, 0) for a in e.args]
        return " ".join([e.name, *args]), 10
    name = _RESHAPE_NAME[type(e)]
    parts = [name]
    for v in children(e):
        parts.append(_wrap(v, 9) if _is_expr_value(v) else idx_str(v, 0))
    return " ".join(parts), 10


def _wrap(e: Expr, level: int) -> str:
    s, lev = _flat(e, level)
    return f"({s})" if lev > level else s


def _pp(e: Expr, level: int, indent: int, width: int) -> list[str]:
    flat, lev = _flat(e, level)
    pad = " " * indent
    paren = lev > level
    if len(flat) + indent + 2 <= width or isinstance(e, (Var, Zero, Lit)):
        return [pad + (f"({flat})" if paren else flat)]
    lines: list[str]
    if isinstance(e, (Gen, Sum)):
        kw = "GEN" if isinstance(e, Gen) else "SUM"
        head = (f"{kw} [ {e.var} < {idx_str(e.hi)} ]" if e.lo == IConst(0)
                else f"{kw}R [ {idx_str(e.lo, 69)} <= {e.var} < {idx_str(e.hi)} ]")
        lines = [pad + head] + _pp(e.body, 200, indent + 2, width)
    elif isinstance(e, Let):
        lines = [pad + f"tlet {e.var} :="] + _pp(e.value, 200, indent + 4, width)
        lines += [pad + "in"] + _pp(e.body, 200, indent, width)
    elif isinstance(e, Tuple):
        lines = []
        for k, x in enumerate(e.items):
            sub = _pp(x, 200, indent + 1, width)
            sub[0] = pad + ("(" if k == 0 else " ") + sub[0][indent + 1:]
            sub[-1] += ")" if k == len(e.items) - 1 else ","
            lines += sub
        return lines
    elif isinstance(e, Iter):
        lines = [pad + f"ITER [ {idx_str(e.steps)} ] {e.var} :="]
        lines += _pp(e.init, 200, indent + 4, width)
        lines += [pad + "in"] + _pp(e.body, 200, indent + 2, width)
    elif isinstance(e, Guard):
        lines = [pad + f"|[ {pred_str(e.pred)} ]|"] + _pp(e.body, 45, indent + 2, width)
    elif isinstance(e, TAdd):
        lines = _pp(e.left, 50, indent, width) + [pad + "<+>"] + _pp(e.right, 49, indent, width)
    elif isinstance(e, Mem):
        lines = [pad + f"in_mem {e.memory} ("] + _pp(e.body, 200, indent + 2, width)
        lines[-1] += ")"
    else:
        lines = [pad + flat]
        paren = False
        return [pad + (f"({flat})" if lev > level else flat)]
    if paren:
        lines[0] = pad + "(" + lines[0][indent:]
        lines[-1] = lines[-1] + ")"
    return lines
