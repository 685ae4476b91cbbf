r"""Random inputs that satisfy a derivation's hypotheses.

A derivation proves `prog = derived` only under its section's hypotheses
(`Hypothesis Hn : 2 <= n`, `shaped [n; m] v`), so checking intermediate
programs numerically needs sizes and inputs that meet them.  Integer
constraints (comparisons, `/\`, `mod`) are parsed and met by rejection
sampling; `shaped [e1; ...] v` fixes the extents of input `v`.  Anything
else is reported as unparsed rather than silently assumed.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .hypotheses import Condition, parse_hypotheses
from .terms import Idx, eval_idx


@dataclass
class Constraints:
    shapes: dict[str, tuple[Idx, ...]] = field(default_factory=dict)
    checks: list[Condition] = field(default_factory=list)
    unparsed: list[str] = field(default_factory=list)


def parse_constraints(hypotheses: list[str] | tuple[str, ...]) -> Constraints:
    """The hypotheses (pybridge/hypotheses.py) as what sampling needs."""
    h = parse_hypotheses(("", text) for text in hypotheses)
    return Constraints(dict(h.shapes), list(h.conditions), [t for _, t in h.other])


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
        if all(chk.holds(env) for chk in c.checks):
            break
    else:
        raise ValueError(f"no sizes up to {hi} satisfy {hypotheses}")
    inputs: dict[str, np.ndarray] = {}
    for name, rank in tensors.items():
        if name in c.shapes:
            shape = tuple(max(eval_idx(e, env), 0) for e in c.shapes[name])
        else:
            shape = tuple(int(rng.integers(0, max_size + 1)) for _ in range(rank))
        inputs[name] = rng.integers(-5, 6, size=shape).astype(np.float64)
    return env, inputs


