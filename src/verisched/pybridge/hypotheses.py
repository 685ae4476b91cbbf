"""A derivation's section hypotheses, read once for every consumer.

A derivation proves `program = derived` only under the hypotheses of its
section (`Hypothesis Hn : 2 <= n.`, `Hypothesis Hv : shaped [n; m] v.`).
Three things need them: the lowering (input extents come from `shaped`),
the kernel (integer hypotheses over sizes become preconditions checked
before every call) and the semantic checks (random sizes must satisfy them).
They are parsed here, and only here:

- `shaped [e1; ...; ek] v`: the extents of input `v`;
- an integer condition: a conjunction (`/\\`) of comparison chains
  (`0 < k <= n`) over index expressions;
- anything else (a property of the data, a Prop we cannot read) is kept as
  text and reported as assumed, never silently checked or dropped.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from .coqterm import parse_index
from .errors import TermParseError
from .terms import CMP_FUNS, Idx, PCmp, Pred, Shape, eval_idx, idx_free_vars, specialize

_SHAPED_RE = re.compile(r"^shaped\s*\[(.*)\]\s*([A-Za-z_][\w']*)$")
_CMP_RE = re.compile(r"\s*(<=|>=|<>|<|>|=)\s*")
# `a > b` is `b < a`: the lowering's predicates only have <, <=, =.
_FLIP = {">": "<", ">=": "<="}


@dataclass(frozen=True)
class Comparison:
    """`left op right` in Z; op is one of < <= = > >= <>."""

    left: Idx
    op: str
    right: Idx

    def holds(self, values: Mapping[str, int]) -> bool:
        """Its truth under `values` (KeyError names a variable without a value)."""
        return bool(CMP_FUNS[self.op](eval_idx(self.left, values),
                                      eval_idx(self.right, values)))

    def pred(self) -> Pred | None:
        """As a lowering predicate, or None for `<>` (which has none)."""
        if self.op in _FLIP:
            return PCmp(_FLIP[self.op], self.right, self.left)
        return PCmp(self.op, self.left, self.right) if self.op != "<>" else None

    def free_vars(self) -> frozenset[str]:
        return idx_free_vars(self.left) | idx_free_vars(self.right)

    def specialize(self, values: Mapping[str, int]) -> Comparison:
        return Comparison(specialize(self.left, values), self.op,  # type: ignore[arg-type]
                          specialize(self.right, values))  # type: ignore[arg-type]


@dataclass(frozen=True)
class Condition:
    """An integer hypothesis: every comparison must hold."""

    name: str
    text: str
    comparisons: tuple[Comparison, ...]

    def free_vars(self) -> frozenset[str]:
        out: frozenset[str] = frozenset()
        for c in self.comparisons:
            out |= c.free_vars()
        return out

    def holds(self, values: Mapping[str, int]) -> bool:
        return all(c.holds(values) for c in self.comparisons)

    def preds(self) -> tuple[Pred, ...]:
        return tuple(p for p in (c.pred() for c in self.comparisons) if p is not None)

    def specialize(self, values: Mapping[str, int]) -> Condition:
        return Condition(self.name, self.text,
                         tuple(c.specialize(values) for c in self.comparisons))


@dataclass(frozen=True)
class Hypotheses:
    """The section's hypotheses, sorted by what can be done with them."""

    shapes: Mapping[str, Shape]
    conditions: tuple[Condition, ...]
    # (name, text) of hypotheses that are neither: assumed, not checked.
    other: tuple[tuple[str, str], ...]


def parse_shaped(text: str) -> tuple[str, Shape] | None:
    """`shaped [n; m] v` -> ("v", (n, m)); None if `text` is not a shape hypothesis."""
    m = _SHAPED_RE.match(" ".join(text.split()))
    if m is None:
        return None
    dims = [d.strip() for d in re.split(r"[;,]", m.group(1)) if d.strip()]
    return m.group(2), tuple(parse_index(d) for d in dims)


def _unwrap(text: str) -> str:
    """`text` without parentheses that enclose all of it (`(2 <= n)` -> `2 <= n`, but
    `(n - 2) / k < m` unchanged)."""
    text = text.strip()
    while text.startswith("(") and text.endswith(")"):
        depth = 0
        for k, ch in enumerate(text):
            depth += {"(": 1, ")": -1}.get(ch, 0)
            if depth == 0 and k < len(text) - 1:
                return text  # the first parenthesis closes before the end
        text = text[1:-1].strip()
    return text


def parse_condition(name: str, text: str) -> Condition | None:
    """An integer condition (`2 <= n`, `0 < k <= n /\\ n mod k = 0`), or None."""
    text = " ".join(text.split())
    comps: list[Comparison] = []
    try:
        for conj in text.split("/\\"):
            parts = _CMP_RE.split(_unwrap(conj))
            if len(parts) < 3 or len(parts) % 2 == 0:
                return None
            terms = [parse_index(p) for p in parts[0::2]]
            comps += [Comparison(terms[k], op, terms[k + 1])
                      for k, op in enumerate(parts[1::2])]
    except TermParseError:
        return None
    return Condition(name, text, tuple(comps))


def parse_hypotheses(hyps: Iterable[tuple[str, str]]) -> Hypotheses:
    """Sort `(name, proposition)` pairs into shapes, integer conditions and the rest."""
    shapes: dict[str, Shape] = {}
    conditions: list[Condition] = []
    other: list[tuple[str, str]] = []
    for name, text in hyps:
        text = " ".join(text.split())
        try:
            shaped = parse_shaped(text)
        except TermParseError:
            shaped = None
            other.append((name, text))
            continue
        if shaped is not None:
            shapes[shaped[0]] = shaped[1]
            continue
        cond = parse_condition(name, text)
        if cond is not None:
            conditions.append(cond)
        else:
            other.append((name, text))
    return Hypotheses(shapes, tuple(conditions), tuple(other))
