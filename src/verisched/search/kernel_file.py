"""A program to search, read from a `.v` file.

The file declares sizes (`Variables (n m : Z).`), inputs (`Variables (A B : Z
-> Z -> S).`, scalars `Variable alpha : S.`) and programs (`Definition NAME :=
TERM.`), as examples/search/liar_blas.v does.  The program's inputs are the
declared tensors its term mentions; each input's shape is given by a `shaped`
hypothesis (`Hypothesis H : shaped [n + 2] a.`) or else inferred from the loops
that index it (PolyBench's array declarations say the same thing), and
stated as the derivation's `shaped` hypothesis, so Coq's `check_safe` proves
the found program's accesses in bounds under it.  Coq itself checks that the
file's definitions are well typed (coqc on the file); this reader only needs
the term, which pybridge's parser reads.
"""

from __future__ import annotations

import re
from pathlib import Path

from verisched.pybridge import terms as A
from verisched.pybridge.coqterm import parse_index, parse_program
from verisched.pybridge.errors import TermParseError
from verisched.schedule.dsl import Program


class KernelFileError(ValueError):
    """The file or the program in it cannot be read (a user mistake: said plainly)."""


_COMMENT = re.compile(r"\(\*.*?\*\)", re.S)
_VARS = re.compile(r"\bVariables?\s+(\(([^)]*)\)|([^.:]+?)\s*:\s*([^.]+))\.", re.S)
_SHAPED = re.compile(r"\bHypothesis\s+[\w']+\s*:\s*shaped\s*\[([^\]]*)\]\s*([\w']+)\s*\.")
_HYP = re.compile(r"\bHypothesis\s+[\w']+\s*:\s*([^.]*?)\s*(<=|<)\s*([^.]*?)\s*\.")
_DEF = re.compile(r"\bDefinition\s+([A-Za-z_][\w']*)\s*:=(.*?)\.\s*(?=\n|$)", re.S)


def _declarations(text: str) -> tuple[set[str], dict[str, int], set[str], set[str]]:
    """(Z sizes, tensors with their ranks, bool sizes, element types of the tensors):
    a tensor's elements are the generic `S` or Gemmini's integers `gint`."""
    sizes: set[str] = set()
    tensors: dict[str, int] = {}
    bools: set[str] = set()
    elements: set[str] = set()
    for m in _VARS.finditer(text):
        if m.group(2) is not None:
            names_text, _, typ = m.group(2).partition(":")
        else:
            names_text, typ = m.group(3), m.group(4)
        parts = [p.strip() for p in typ.split("->")]
        for name in names_text.split():
            if parts == ["Z"]:
                sizes.add(name)
            elif parts == ["bool"]:
                bools.add(name)
            elif parts[-1] in ("S", "gint") and all(p == "Z" for p in parts[:-1]):
                tensors[name] = len(parts) - 1
                elements.add(parts[-1])
    return sizes, tensors, bools, elements


def definitions(path: str | Path) -> dict[str, str]:
    """The definitions of the file, name -> term text."""
    text = _COMMENT.sub(" ", Path(path).read_text())
    return {m.group(1): m.group(2).strip() for m in _DEF.finditer(text)}


def _loop_offset(i: A.Idx) -> tuple[str, int] | None:
    """`v` or `v + c` (c >= 0 a constant): the loop variable and the offset."""
    if isinstance(i, A.IVar):
        return i.name, 0
    if (isinstance(i, A.IBin) and i.op == "+" and isinstance(i.left, A.IVar)
            and isinstance(i.right, A.IConst) and i.right.value >= 0):
        return i.left.name, i.right.value
    return None


def infer_shapes(e: A.Expr, tensors: dict[str, int]) -> dict[str, list[A.Idx | None]]:
    """Each input's extents from the loops that index it: a dimension read at `v` or at
    `v + c` by a loop `v < n` (from 0) has extent `n + c`, the largest `c` of its reads
    (a stencil's `x[i + 4]`); two loops of different extents on one dimension are an
    error, as the dimension's extent is then a guess."""
    shapes: dict[str, list[A.Idx | None]] = {}
    extents: dict[str, A.Idx] = {}
    reach: dict[tuple[str, int], tuple[A.Idx, int]] = {}

    def visit(x: A.Expr) -> None:
        if isinstance(x, (A.Gen, A.Sum)) and x.lo == A.IConst(0):
            extents[x.var] = x.hi
        if isinstance(x, A.Get):
            chain: list[A.Idx] = []
            t: A.Expr = x
            while isinstance(t, A.Get):
                chain.append(t.index)
                t = t.tensor
            if isinstance(t, A.Var) and t.name in tensors:
                shape = shapes.setdefault(t.name, [None] * tensors[t.name])
                for k, i in enumerate(reversed(chain)):
                    lo = _loop_offset(i)
                    if k >= len(shape) or lo is None or lo[0] not in extents:
                        continue
                    ext, off = extents[lo[0]], lo[1]
                    seen = reach.get((t.name, k))
                    if seen is not None and seen[0] != ext:
                        raise KernelFileError(
                            f"input {t.name}: dimension {k + 1} is indexed by loops of "
                            f"extents {seen[0]} and {ext}")
                    off = max(off, seen[1]) if seen is not None else off
                    reach[(t.name, k)] = (ext, off)
                    shape[k] = A.IBin("+", ext, A.IConst(off)) if off else ext
        for c in A.children(x):
            if not A.is_idx(c):
                visit(c)  # type: ignore[arg-type]

    visit(e)
    return shapes


def load_program(path: str | Path, name: str) -> Program:
    """The program `name` of the file at `path`."""
    p = Path(path)
    if not p.is_file():
        raise KernelFileError(f"no such file: {p}")
    defs = definitions(p)
    if name not in defs:
        raise KernelFileError(f"{p} defines no program {name} (it defines: "
                              f"{', '.join(sorted(defs)) or 'nothing'})")
    try:
        expr = parse_program(defs[name])
    except TermParseError as exc:
        raise KernelFileError(f"{p}: the definition of {name} is not an ATL term the "
                              f"bridge reads: {exc}") from exc
    text = _COMMENT.sub(" ", p.read_text())
    sizes, tensors, bools, elements = _declarations(text)
    if len(elements) > 1:
        raise KernelFileError(f"{p}: its inputs mix element types ({', '.join(sorted(elements))})")
    free = A.free_vars(expr)
    unknown = sorted(free - sizes - bools - set(tensors))
    if unknown:
        raise KernelFileError(f"{name} mentions {', '.join(unknown)}, which the file does "
                              "not declare as a size (Z) or an input (Z -> ... -> S)")
    shapes = infer_shapes(expr, tensors)
    for m in _SHAPED.finditer(_COMMENT.sub(" ", p.read_text())):
        if m.group(2) in tensors:
            try:
                shapes[m.group(2)] = [parse_index(d) for d in m.group(1).split(";")]
            except TermParseError as exc:
                raise KernelFileError(f"{p}: cannot read the shape of {m.group(2)}: "
                                      f"{exc}") from exc
    inputs = []
    for t in sorted(free & set(tensors)):
        shape = shapes.get(t, [])
        if tensors[t] and (len(shape) != tensors[t] or any(d is None for d in shape)):
            raise KernelFileError(f"{name}: cannot infer the shape of input {t} from the "
                                  "loops that index it (index it by loop variables)")
        inputs.append((t, tuple(shape)))
    used = set().union(*(A.idx_free_vars(d) for _, s in inputs for d in s)) if inputs else set()
    assume = _size_hypotheses(text, sizes, p)
    for a in assume:
        used |= A.pred_free_vars(a)
    order = tuple(sorted((free & (sizes | bools)) | (used & sizes)))
    extents = _extent_names(expr) | used
    # an integer only passed to calls (an output scale) is no extent: it may be negative
    signed = tuple(x for x in order if x in sizes and x not in extents)
    return Program(name, expr, tuple(inputs), order, assume,  # type: ignore[arg-type]
                   scalar=elements.pop() if elements else "S",
                   bools=tuple(x for x in order if x in bools), signed=signed)


def _extent_names(e: A.Expr) -> set[str]:
    """The size names the program uses as extents or in indices (not only as arguments
    of calls)."""
    out: set[str] = set()
    for x in A.walk(e):
        if isinstance(x, (A.Gen, A.Sum)):
            out |= A.idx_free_vars(x.lo) | A.idx_free_vars(x.hi)
        elif isinstance(x, A.Get):
            out |= A.idx_free_vars(x.index)
        elif isinstance(x, A.Guard):
            out |= A.pred_free_vars(x.pred)
    return out


def _size_hypotheses(text: str, sizes: set[str], path: Path) -> tuple[A.Pred, ...]:
    """`Hypothesis H : a < b.` (or `<=`) over the sizes: stated in the derivation, so
    that side conditions (a kernel at least one tap wide) can use them."""
    out: list[A.Pred] = []
    for m in _HYP.finditer(text):
        if "shaped" in m.group(1):
            continue
        try:
            left, right = parse_index(m.group(1)), parse_index(m.group(3))
        except TermParseError as exc:
            raise KernelFileError(f"{path}: cannot read the hypothesis {m.group(0)!r}: "
                                  f"{exc}") from exc
        if not (A.idx_free_vars(left) | A.idx_free_vars(right)) <= sizes:
            raise KernelFileError(f"{path}: the hypothesis {m.group(0)!r} is not over sizes")
        out.append(A.PCmp(m.group(2), left, right))
    return tuple(out)
