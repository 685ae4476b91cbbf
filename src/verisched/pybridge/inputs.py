r"""Random inputs that satisfy a derivation's hypotheses.

A derivation proves `prog = derived` only under its section's hypotheses
(`Hypothesis Hn : 2 <= n`, `shaped [n; m] v`), so checking intermediate
programs numerically needs sizes and inputs that meet them.  Integer
constraints (comparisons, `/\`, `mod`) are parsed and met by rejection
sampling; `shaped [e1; ...] v` fixes the extents of input `v`.  Anything
else is reported as unparsed rather than silently assumed.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from .coqterm import parse_index
from .errors import TermParseError
from .terms import IConst, Idx, IVar

_CMP_RE = re.compile(r"\s*(<=|>=|<>|<|>|=)\s*")
_SHAPED_RE = re.compile(r"^shaped\s*\[([^\]]*)\]\s*([A-Za-z_][\w']*)$")


def eval_z(i: Idx, env: dict[str, int]) -> int:
    """An index expression on Python ints, with Coq's Z semantics."""
    if isinstance(i, IConst):
        return i.value
    if isinstance(i, IVar):
        return env[i.name]
    a, b = eval_z(i.left, env), eval_z(i.right, env)
    if i.op == "+":
        return a + b
    if i.op == "-":
        return a - b
    if i.op == "*":
        return a * b
    if i.op == "/":
        return 0 if b == 0 else a // b
    if i.op == "%":
        return a if b == 0 else a % b
    if i.op == "cdiv":
        return 0 if b == 0 else (a + b - 1) // b
    raise ValueError(f"unknown index operation {i.op!r}")


_OPS: dict[str, Callable[[int, int], bool]] = {
    "<": lambda a, b: a < b, "<=": lambda a, b: a <= b, "=": lambda a, b: a == b,
    ">": lambda a, b: a > b, ">=": lambda a, b: a >= b, "<>": lambda a, b: a != b,
}


@dataclass
class Constraints:
    shapes: dict[str, tuple[Idx, ...]] = field(default_factory=dict)
    checks: list[Callable[[dict[str, int]], bool]] = field(default_factory=list)
    unparsed: list[str] = field(default_factory=list)


def parse_constraints(hypotheses: list[str] | tuple[str, ...]) -> Constraints:
    c = Constraints()
    for h in hypotheses:
        h = " ".join(h.split())
        m = _SHAPED_RE.match(h)
        if m:
            try:
                c.shapes[m.group(2)] = tuple(parse_index(x) for x in m.group(1).split(";"))
            except TermParseError:
                c.unparsed.append(h)
            continue
        try:
            for conj in h.split("/\\"):
                c.checks.append(_chain(conj))
        except (TermParseError, ValueError):
            c.unparsed.append(h)
    return c


def _chain(text: str) -> Callable[[dict[str, int]], bool]:
    """`a <= b < c` -> a predicate on sizes."""
    parts = _CMP_RE.split(text.strip().strip("()"))
    if len(parts) < 3 or len(parts) % 2 == 0:
        raise ValueError(f"not a comparison: {text!r}")
    terms = [parse_index(p) for p in parts[0::2]]
    ops = parts[1::2]

    def check(env: dict[str, int]) -> bool:
        vals = [eval_z(t, env) for t in terms]
        return all(_OPS[o](vals[k], vals[k + 1]) for k, o in enumerate(ops))

    return check


def sample(
    sizes: tuple[str, ...] | list[str], tensors: dict[str, int], hypotheses: list[str],
    rng: np.random.Generator, max_size: int = 9, tries: int = 2000,
    bools: tuple[str, ...] | list[str] = (),
) -> tuple[dict[str, int], dict[str, np.ndarray]]:
    """Sizes meeting the integer hypotheses (the `bools` among them 0 or 1), and
    small-integer float inputs.

    Inputs hold small integers (as float64) so sums are exact whatever order
    a rewrite puts them in.
    """
    c = parse_constraints(hypotheses)
    for attempt in range(tries):
        # Small sizes first; widen slowly when the hypotheses demand more.
        hi = max_size + attempt // 100
        env = {s: int(rng.integers(0, 2 if s in bools else hi + 1)) for s in sizes}
        if all(chk(env) for chk in c.checks):
            break
    else:
        raise ValueError(f"no sizes up to {hi} satisfy {hypotheses}")
    inputs: dict[str, np.ndarray] = {}
    for name, rank in tensors.items():
        if name in c.shapes:
            shape = tuple(max(eval_z(e, env), 0) for e in c.shapes[name])
        else:
            shape = tuple(int(rng.integers(0, max_size + 1)) for _ in range(rank))
        inputs[name] = rng.integers(-5, 6, size=shape).astype(np.float64)
    return env, inputs


