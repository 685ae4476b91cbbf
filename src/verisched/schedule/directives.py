"""Each directive's arguments, checked against the current program, and its Coq text.

The checks here are the ones Python can make without Coq (Exo's API does the
same, the Exo thesis Sec. 4): that a loop or buffer of that name exists, that a
factor is a positive integer or an index expression, that a new name is a
fresh identifier and does not shadow an input, a size or another binder.
Legality itself (a triangular nest, a reduction made parallel, a region not
available) is Coq's to decide: the directive's tactic proves it or refuses
(coq/Rewrites/Directives.v, coq/Rewrites/Producers.v).  A check here only
turns a typo into a clear error before a Coq round trip.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from verisched.codegen.ir import C_INT_MAX
from verisched.pybridge.coqterm import idx_to_coq, to_coq
from verisched.pybridge.terms import Expr, Gen, Let, Sum, fresh_name, idx_free_vars, walk

from .dsl import COQ_WORDS, DslError, Ix, T, ix
from .errors import ScheduleArgumentError

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
IDENT = _IDENT
# Words the directives' notations reserve, with Coq's and ATL's (dsl.COQ_WORDS): a
# binder named so could not be written in the tactic, or read back from Coq's printing.
_RESERVED = frozenset({
    "by", "into", "at", "as", "in", "with", "past", "peel", "shift", "guard", "partition",
    "lanes", "struct", "_", "S",
}) | COQ_WORDS
TAILS = ("guard", "peel", "shift")
# Vector ISAs of coq/Targets/AVX.v: lanes per vector, and the element type of their lanes
# (the pd libraries: float64, decision #154).
ISAS = {"avx2": 8, "avx512": 16, "avx2pd": 4, "avx512pd": 8}
ISA_DTYPE = {"avx2": "float32", "avx512": "float32", "avx2pd": "float64",
             "avx512pd": "float64"}


@dataclass(frozen=True)
class Names:
    """The names a program's binders and parameters use."""

    loops: tuple[str, ...]
    buffers: tuple[str, ...]
    taken: frozenset[str]      # inputs, sizes: never reused as a binder name
    # {printed: (held, first)}: loops Coq prints under another name than the one a
    # directive matches (`i0` for a second `i`; ProofState.loop_aliases)
    aliases: Mapping[str, tuple[str, bool]] = field(default_factory=dict)
    # printed names of loops sharing a held name with one printed otherwise
    # (ProofState.shadowed_loops): no annotation names them
    shadowed: frozenset[str] = frozenset()


def names_of(expr: Expr | None, taken: Iterable[str],
             aliases: Mapping[str, tuple[str, bool]] | None = None,
             shadowed: Iterable[str] = ()) -> Names:
    loops: list[str] = []
    bufs: list[str] = []
    if expr is not None:
        for node in walk(expr):
            if isinstance(node, (Gen, Sum)) and node.var not in loops:
                loops.append(node.var)
            elif isinstance(node, Let) and node.var not in bufs:
                bufs.append(node.var)
    return Names(tuple(loops), tuple(bufs), frozenset(taken), dict(aliases or {}),
                 frozenset(shadowed))


def text(d: str, arg: str, value: object) -> str:
    """`value` as a non-empty string, stripped: a tactic, a lemma, a pattern, a target.
    Anything else is the user's mistake, named (None or an int failed deep inside, on
    `.strip()`)."""
    if not isinstance(value, str):
        raise ScheduleArgumentError(d, arg, f"{value!r} is not a string")
    if not value.strip():
        raise ScheduleArgumentError(d, arg, "empty")
    return value.strip()


def loop(d: str, arg: str, name: object, names: Names, *, printed: bool = False) -> str:
    """An existing loop's name, as the directive's tactic matches it: a name only Coq's
    printing gives (`i0` for a second `i`) becomes the name its binder holds where that
    finds this loop, and is refused, saying why, where it would find another (Coq said
    only that there was no such loop).  With `printed`, the name as printed (an
    annotation's: the lowering names its C loops so)."""
    if not isinstance(name, str) or name not in names.loops:
        have = ", ".join(names.loops) or "none"
        raise ScheduleArgumentError(d, arg, f"no loop named {name!r} (loops: {have})")
    if name in names.aliases and not printed:
        held, first = names.aliases[name]
        if first:
            return held
        raise ScheduleArgumentError(
            d, arg, f"loop {name!r} is a second loop named {held!r}, which Coq prints as "
                    f"{name!r}; a directive finds the first loop named {held!r}: rename "
                    f"that one first (rename_loop)")
    return name


def annotated_loop(d: str, arg: str, name: object, names: Names) -> str:
    """A loop an annotation names, as printed (the lowering names its C loops so): not
    one whose printed name depends on another loop's (`i` over `i0`, both holding
    `i`), since a later step (a rename, a split) could move the name onto the other."""
    i = loop(d, arg, name, names, printed=True)
    if i in names.shadowed:
        held = names.aliases.get(i, (i, True))[0]
        raise ScheduleArgumentError(
            d, arg, f"loop {i!r} holds the name {held!r} with another loop, which Coq "
                    f"prints under another name; a later step could move this annotation "
                    f"onto it: rename one of them first (rename_loop)")
    return i


def buffer(d: str, arg: str, name: object, names: Names) -> str:
    """An existing let buffer's name."""
    if not isinstance(name, str) or name not in names.buffers:
        have = ", ".join(names.buffers) or "none"
        raise ScheduleArgumentError(d, arg, f"no buffer named {name!r} (let buffers: {have})")
    return name


def fresh(d: str, arg: str, name: object, names: Names, reuse: Iterable[str] = ()) -> str:
    """A new binder name: an identifier that shadows no input, size or other binder
    (`reuse` are names the directive itself frees, such as the loop it splits)."""
    if not isinstance(name, str) or not _IDENT.fullmatch(name):
        raise ScheduleArgumentError(d, arg, f"{name!r} is not an identifier")
    if name in _RESERVED:
        raise ScheduleArgumentError(d, arg, f"{name!r} is a reserved word")
    if name in names.taken:
        raise ScheduleArgumentError(d, arg, f"{name!r} is an input or size of the program")
    if (name in names.loops or name in names.buffers) and name not in set(reuse):
        raise ScheduleArgumentError(d, arg, f"{name!r} already names a loop or buffer")
    return name


def distinct(d: str, args: dict[str, str]) -> None:
    seen: dict[str, str] = {}
    for arg, v in args.items():
        if v in seen:
            raise ScheduleArgumentError(d, arg, f"{v!r} is also given as {seen[v]}")
        seen[v] = arg


def factor(d: str, arg: str, k: object, names: Names) -> str:
    """A split or tile factor: a positive int, or an index expression over the sizes
    (whose positivity Coq must prove from the hypotheses)."""
    if isinstance(k, bool):
        raise ScheduleArgumentError(d, arg, f"{k!r} is not a factor")
    if isinstance(k, int):
        if k <= 0:
            raise ScheduleArgumentError(d, arg, f"the factor must be positive, got {k}")
        if k > C_INT_MAX:  # Coq would prove it; the C loops over it could not run
            raise ScheduleArgumentError(d, arg, f"the factor must be at most {C_INT_MAX} "
                                                f"(the kernels' loops run over C int), got {k}")
        return str(k)
    if isinstance(k, (str, Ix)):
        try:
            term = ix(k)
        except DslError as exc:  # "4", "n m": not a size name nor an index expression
            raise ScheduleArgumentError(d, arg, str(exc)) from None
        bad = sorted(idx_free_vars(term.term) - names.taken)
        if bad:
            raise ScheduleArgumentError(d, arg, f"the factor mentions {', '.join(bad)}, "
                                                "which are not sizes of the program")
        # %Z: with atl_scope open, a bare `*` would be ATL's scalar product (smul at
        # type Z), which is equal but not the same term as Z.mul for the directives'
        # syntactic matching (register_tile's exact split of q * mr) and the lowering.
        return f"({idx_to_coq(term.term)})%Z"
    raise ScheduleArgumentError(d, arg, f"{k!r} is not an int or an index expression")



def stage_fun(d: str, arg: str, g: object, names: Names) -> str:
    """A stage as a Coq function of (row, column): a Python function of two indices
    returning a DSL expression, printed as `(fun r c => ..)` with binder names that
    capture nothing of the program's; or Coq text as it is (Coq parses it)."""
    if isinstance(g, str):
        if not g.strip():
            raise ScheduleArgumentError(d, arg, "empty")
        return g.strip()
    if not callable(g):
        raise ScheduleArgumentError(d, arg, f"{g!r} is not a function of (row, column)")
    avoid = set(names.loops) | set(names.buffers) | set(names.taken)
    r = fresh_name("r", avoid)
    c = fresh_name("c", avoid | {r})
    fn: Callable[[Ix, Ix], object] = g
    try:
        body = fn(ix(r), ix(c))
    except DslError as e:
        raise ScheduleArgumentError(d, arg, str(e)) from None
    if not isinstance(body, T):
        raise ScheduleArgumentError(d, arg, f"it returned {body!r}, not a tensor expression")
    return f"(fun {r} {c} => {to_coq(body.term)})"


def isa_arg(d: str, isa: str, dtype: str | None, best: Callable[[str], str]) -> str:
    """Directive `d`'s vector library: `isa` named (checked against `dtype` where one is
    given: an avx512 vector holds float32 lanes, a float64 program's is avx512pd), or
    "native", the CPU's best for `dtype`'s lanes (`best(dtype)`; float32 by default)."""
    if dtype is not None and dtype not in ("float32", "float64"):
        raise ScheduleArgumentError(d, "dtype", f"{dtype!r} is not float32 or float64 (the "
                                                "element types of the vector libraries)")
    if isa == "native":
        return best(dtype or "float32")
    if not isinstance(isa, str) or isa not in ISAS:
        raise ScheduleArgumentError(d, "isa", f"{isa!r} is not one of "
                                              f"{', '.join(ISAS)} or native")
    if dtype is not None and ISA_DTYPE[isa] != dtype:
        other = next(k for k, v in ISA_DTYPE.items()
                     if v == dtype and k.startswith(isa.removesuffix("pd")))
        raise ScheduleArgumentError(d, "isa", f"{isa} has {ISA_DTYPE[isa]} lanes, not "
                                              f"{dtype}: use {other}")
    return isa
