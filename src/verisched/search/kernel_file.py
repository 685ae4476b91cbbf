"""A program to search, read from a `.v` file.

The file declares sizes (`Variables (n m : Z).`), inputs (`Variables (A B : Z
-> Z -> S).`, scalars `Variable alpha : S.`) and programs (`Definition NAME :=
TERM.`), as examples/search/liar_blas.v does; a program sees the declarations before
it in its section, as in Coq (pybridge's reader, which the replay uses too, takes
every binder group of a `Variables` or `Hypotheses` line).  The program's inputs are the
declared tensors its term mentions; each input's shape is given by a `shaped`
hypothesis (`Hypothesis H : shaped [n + 2] a.`) or else inferred from the loops
that index it (PolyBench's array declarations say the same thing), and
stated as the derivation's `shaped` hypothesis, so Coq's `check_safe` proves
the found program's accesses in bounds under it.  Coq itself checks that the
file's definitions are well typed (coqc on the file); this reader only needs
the term, which pybridge's parser reads.
"""

from __future__ import annotations

from pathlib import Path

from verisched.pybridge import terms as A
from verisched.pybridge.coqterm import idx_to_coq, parse_program
from verisched.pybridge.errors import BridgeError, TermParseError
from verisched.pybridge.hypotheses import Condition, parse_hypotheses
from verisched.pybridge.replay import Signature, definitions_in_scope
from verisched.schedule.dsl import Program


class KernelFileError(ValueError):
    """The file or the program in it cannot be read (a user mistake: said plainly)."""


def _scopes(path: Path) -> dict[str, tuple[str, Signature]]:
    """The file's definitions with the declarations in scope at each, as Coq's
    sections give them (pybridge's reader: every binder of `Variables (A : Z -> Z -> S)
    (x : Z -> S).` and `Hypotheses (H1 : ...) (H2 : ...).`)."""
    try:
        return definitions_in_scope(path)
    except BridgeError as exc:  # unreadable, not UTF-8, unbalanced comment or string
        raise KernelFileError(str(exc)) from exc


def definitions(path: str | Path) -> dict[str, str]:
    """The definitions of the file, name -> term text."""
    return {name: term for name, (term, _) in _scopes(Path(path)).items()}


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
                            f"extents {idx_to_coq(seen[0])} and {idx_to_coq(ext)} (state "
                            f"its shape: Hypothesis H{t.name} : shaped [...] {t.name}.)")
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
    scopes = _scopes(p)
    if name not in scopes:
        raise KernelFileError(f"{p} defines no program {name} (it defines: "
                              f"{', '.join(sorted(scopes)) or 'nothing'})")
    term, sig = scopes[name]
    try:
        expr = parse_program(term)
    except TermParseError as exc:
        raise KernelFileError(f"{p}: the definition of {name} is not an ATL term the "
                              f"bridge reads: {exc}") from exc
    bools = set(sig.bools)
    sizes, tensors = set(sig.sizes) - bools, dict(sig.tensors)
    free = A.free_vars(expr)
    unknown = sorted(free - sizes - bools - set(tensors))
    if unknown:
        raise KernelFileError(f"{name} mentions {', '.join(unknown)}, which the file does "
                              "not declare (before it, in its section) as a size (Z) or an "
                              "input (Z -> ... -> S)")
    elements = {sig.elements[t] for t in free & set(tensors)}
    if len(elements) > 1:
        raise KernelFileError(f"{p}: the inputs of {name} mix element types "
                              f"({', '.join(sorted(elements))})")
    hyps = parse_hypotheses(sig.hypotheses)  # pybridge's one reader of hypotheses
    for hyp, text in hyps.other:
        if text.startswith("shaped"):
            raise KernelFileError(f"{p}: cannot read the shape hypothesis {hyp} : {text}")
    shapes = infer_shapes(expr, tensors)
    shapes.update({t: list(d) for t, d in hyps.shapes.items() if t in tensors})
    inputs = []
    for t in sorted(free & set(tensors)):
        shape = shapes.get(t, [])
        if tensors[t] and (len(shape) != tensors[t] or any(d is None for d in shape)):
            raise KernelFileError(f"{name}: cannot infer the shape of input {t} from the "
                                  "loops that index it (index it by loop variables)")
        inputs.append((t, tuple(shape)))
    used = set().union(*(A.idx_free_vars(d) for _, s in inputs for d in s)) if inputs else set()
    assume = _size_hypotheses(hyps.conditions, sizes, p)
    for a in assume:
        used |= A.pred_free_vars(a)
    order = tuple(sorted((free & (sizes | bools)) | (used & sizes)))
    extents = _extent_names(expr) | used
    # an integer only passed to calls (an output scale) is no extent: it may be negative
    signed = tuple(x for x in order if x in sizes and x not in extents)
    inferred = tuple((t, "[" + "; ".join(idx_to_coq(d) for d in s) + "]")  # type: ignore[arg-type]
                     for t, s in inputs if s and t not in hyps.shapes)
    return Program(name, expr, tuple(inputs), order, assume,  # type: ignore[arg-type]
                   scalar=elements.pop() if elements else "S",
                   bools=tuple(x for x in order if x in bools), signed=signed,
                   left_out=hyps.other + _partly_stated(hyps.conditions), inferred=inferred)


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


def _size_hypotheses(conditions: tuple[Condition, ...], sizes: set[str],
                     path: Path) -> tuple[A.Pred, ...]:
    """The integer hypotheses (`Hypothesis H : 2 <= n.`, chains, conjunctions) over the
    sizes: stated in the derivation, so that side conditions (a kernel at least one tap
    wide) can use them.  One over a name that is no size is refused."""
    out: list[A.Pred] = []
    for c in conditions:
        if not c.free_vars() <= sizes:
            raise KernelFileError(f"{path}: the hypothesis {c.name} : {c.text} is not over "
                                  "sizes")
        out += c.preds()
    return tuple(out)


def _partly_stated(conditions: tuple[Condition, ...]) -> tuple[tuple[str, str], ...]:
    """The conditions a derivation restates only in part: a `<>` is no predicate of the
    index language (`m <> 0` bounds nothing), so it is left out (Program.left_out)."""
    return tuple((c.name, c.text) for c in conditions
                 if len(c.preds()) < len(c.comparisons))
