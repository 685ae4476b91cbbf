"""Running a program inside Coq, to check the numpy interpreter against it.

The library's scalars are generic, so instantiating them with Z makes every
program computable in Coq (`vm_compute`).  Inputs go in as lists through
`of_list` and the result comes back through nested `to_list`
(coq/Bridge/Print.v); both sides then agree or the interpreter is wrong.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping

import numpy as np

from .coqterm import to_coq
from .errors import CoqCommandError, TermParseError
from .session import CoqSession
from .terms import Expr


def _tensor_type(rank: int) -> str:
    return " -> ".join(["Z"] * (rank + 1))


def _list_literal(a: np.ndarray) -> str:
    if a.ndim == 0:
        v = int(a)
        return f"({v})" if v < 0 else str(v)
    items = [_list_literal(x) for x in a]
    inner = " :: ".join(items + ["nil"])
    return f"({inner})"


def _of_list(a: np.ndarray) -> str:
    """Coq text of the tensor holding `a` (zero outside)."""
    if a.ndim == 0:
        v = int(a)
        return f"({v})" if v < 0 else str(v)
    if a.ndim == 1:
        return f"(of_list {_list_literal(a)})"
    items = [_of_list(x) for x in a]
    return "(of_list (" + " :: ".join(items + ["nil"]) + "))"


def coq_eval_text(
    program: Expr, rank: int, box: tuple[int, ...],
    inputs: Mapping[str, np.ndarray], sizes: Mapping[str, int], bools: Collection[str] = (),
) -> str:
    """The `Eval vm_compute` sentence computing `program` on the box [0, box);
    the sizes named in `bools` are Coq booleans (nonzero is true)."""
    binds = [f"let {k} := {'true' if v else 'false'} in" if k in bools
             else f"let {k} := {v if v >= 0 else f'({v})'} in" for k, v in sizes.items()]
    for name, arr in inputs.items():
        a = np.asarray(arr)
        binds.append(f"let {name} := ({_of_list(a)} : {_tensor_type(a.ndim)}) in")
    body = f"({to_coq(program)} : {_tensor_type(rank)})"
    vars_ = [f"bridge_i{k}" for k in range(rank)]

    def nest(k: int) -> str:
        # to_list E_k over dimension k, the outer indices already bound
        applied = body if k == 0 else f"({body} {' '.join(vars_[:k])})"
        if k == rank - 1:
            return f"to_list {box[k]} {applied}"
        return f"to_list {box[k]} (fun {vars_[k]} => {nest(k + 1)})"

    text = nest(0) if rank else body
    return f"Eval vm_compute in ({' '.join(binds)} {text})."


def coq_evaluate(
    session: CoqSession, program: Expr, rank: int, box: tuple[int, ...],
    inputs: Mapping[str, np.ndarray], sizes: Mapping[str, int], timeout: float | None = None,
    bools: Collection[str] = (),
) -> np.ndarray:
    """The values of `program` (scalars := Z) on [0, box), computed by Coq."""
    sentence = coq_eval_text(program, rank, box, inputs, sizes, bools)
    r = session.run(sentence, timeout=timeout)
    if not r.ok:
        raise CoqCommandError(f"Coq could not evaluate the program: {r.error}", sentence,
                              r.error or "")
    m = re.search(r"=\s*(.*?)\s*:\s*(?:list|Z)\b[^:]*$", r.output, re.S)
    if not m:
        raise TermParseError(f"unexpected vm_compute output: {r.output[:200]!r}")
    value = parse_coq_value(m.group(1))
    return np.array(value, dtype=np.int64).reshape(box)


_VAL_TOK = re.compile(r"\s*(::|nil|-?\d+|[()\[\];])")


def parse_coq_value(text: str) -> object:
    """Parse Coq's printing of nested `list Z` (or a Z) to Python lists.

    Accepts both `a :: b :: nil` and the `[a; b]` of ListNotations, mixed.
    """
    text = re.sub(r"%(list|Z)", "", text)
    toks: list[str] = []
    pos = 0
    while pos < len(text):
        m = _VAL_TOK.match(text, pos)
        if not m:
            if text[pos:].strip() == "":
                break
            raise TermParseError(f"unexpected {text[pos:pos + 20]!r} in a Coq value")
        toks.append(m.group(1))
        pos = m.end()
    i = 0

    def cons() -> object:
        nonlocal i
        a = atom()
        if i < len(toks) and toks[i] == "::":
            i += 1
            rest = cons()
            assert isinstance(rest, list)
            return [a, *rest]
        return a

    def atom() -> object:
        nonlocal i
        t = toks[i]
        i += 1
        if t == "(":
            v = cons()
            if toks[i] != ")":
                raise TermParseError("unbalanced parentheses in a Coq value")
            i += 1
            return v
        if t == "nil":
            return []
        if t == "[":
            items: list[object] = []
            if toks[i] == "]":
                i += 1
                return items
            while True:
                items.append(cons())
                t2 = toks[i]
                i += 1
                if t2 == "]":
                    return items
                if t2 != ";":
                    raise TermParseError("malformed list in a Coq value")
        return int(t)

    v = cons()
    if i != len(toks):
        raise TermParseError("trailing text in a Coq value")
    return v
