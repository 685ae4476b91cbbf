"""Templates whose refusal no parameter changes: stop proposing them.

Why: Optuna's `template` choice is fixed for the whole study, so TPE keeps
proposing a template that cannot apply to the program (a register tile on matvec,
whose nest has one generation): each such point cost a proof attempt, about half of
a short budget in #74's matvec runs.

The rule reads only the directives' own refusals, never the program: a template is
*dead* when its refused points

- were all refused by the same directive (method) with the same message,
- cover at least two values of every parameter of the template that has two or
  more choices (so no single parameter value explains the refusal),

and no point of the template has been proved (or got past that refusal in any other
way: a different refusal or a failure after the proof).  A dead template's later
points are told to Optuna as pruned at once, without a proof, and counted as
`skipped`; nothing is logged for them (they are not candidates).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from .space_types import Op

# At least this many refused points before a template can be called dead.
MIN_REFUSED = 3


def reason(message: str) -> str:
    """A refusal's reason without the step that was refused (`step 1 (register_tile i
    j by 6 16 ...) refused by Coq: <reason>`): the step text carries the point's
    parameters, the reason is the directive's condition."""
    head, sep, tail = message.partition("refused by Coq:")
    return " ".join((tail if sep else _STEP.sub("", head)).split())


_STEP = re.compile(r"^step \d+ \(.*?\.\)\s*")


def refused_at(full: Sequence[Op], applied: Sequence[Op]) -> str:
    """The method of the directive that refused: the first of `full` (the point's
    chain) that is neither applied nor an optional cleanup; `build` when every
    directive applied (the refusal came from the lowering's annotation checks)."""
    j = 0
    for op in full:
        if j < len(applied) and applied[j] == op:
            j += 1
        elif not op.optional:
            return op.method
    return "build"


@dataclass
class Pruner:
    """The refusals seen per template, and the templates found dead."""

    # template -> (method, message) -> the refused points' parameters
    refusals: dict[str, dict[tuple[str, str], list[dict[str, Any]]]] = field(
        default_factory=dict)
    passed: set[str] = field(default_factory=set)   # templates with a non-refused point
    dead: dict[str, str] = field(default_factory=dict)   # template -> why
    # template -> parameter -> its choices (the union over the template's points:
    # a define-by-run parameter exists only in some of them)
    choices: dict[str, dict[str, Sequence[Any]]] = field(default_factory=dict)

    def note(self, params: dict[str, Any], status: str, method: str, message: str,
             choices: dict[str, Sequence[Any]]) -> str | None:
        """Record one finished point; returns the reason when this point made its
        template dead (once), else None.  `choices`: each parameter's choices."""
        t = params.get("template", "loops")
        if status != "refused":
            self.passed.add(t)
            self.dead.pop(t, None)
            return None
        if t in self.passed or t in self.dead:
            return None
        self.choices.setdefault(t, {}).update(choices)
        sites = self.refusals.setdefault(t, {})
        sites.setdefault((method, reason(message)), []).append(params)
        if len(sites) != 1:
            return None
        (site, points), = sites.items()
        if len(points) < MIN_REFUSED:
            return None
        for name, options in self.choices[t].items():
            if name == "template" or len(options) < 2:
                continue
            if len({repr(p.get(name)) for p in points}) < 2:
                return None
        self.dead[t] = (f"every point of template {t} tried was refused by {site[0]} "
                        f"with one message ({len(points)} points covering two values of "
                        f"each parameter): {site[1][:160]}")
        return self.dead[t]

    def skip(self, params: dict[str, Any]) -> bool:
        """Whether `params` belongs to a dead template."""
        return params.get("template", "loops") in self.dead
