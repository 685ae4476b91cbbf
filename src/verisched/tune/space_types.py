"""The small types the schedule space and its templates share (space.py,
templates.py): kept apart so that neither module imports the other's internals."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from verisched.pybridge.terms import Expr, Get, Var, idx_free_vars, walk

NONE = "none"


class Trial(Protocol):
    """What the space needs of an Optuna trial (optuna.trial.Trial has it)."""

    def suggest_categorical(self, name: str, choices: Any) -> Any: ...


@dataclass(frozen=True)
class Op:
    """One directive call on a `Schedule`: `getattr(s, method)(*args, **kwargs)`.
    `optional`: a cleanup (simpl_guard) whose refusal only means there was nothing
    to clean; it is then left out of the candidate, not counted as a refusal."""

    method: str
    args: tuple[Any, ...] = ()
    kwargs: tuple[tuple[str, Any], ...] = ()
    optional: bool = False

    def python(self) -> str:
        """The call as Python source (`.tile('i', 'j', 32, 8, ...)`)."""
        parts = [_arg_source(a) for a in self.args] + [f"{k}={v!r}" for k, v in self.kwargs]
        return f".{self.method}({', '.join(parts)})"

    def call_args(self) -> tuple[Any, ...]:
        """The positional arguments as the Schedule method takes them: a `{"mul": [q,
        r]}` (JSON-safe, as logged) becomes the index expression `q * r`, unevaluated,
        for the directives that match a product syntactically (register_tile's exact
        row split `q * mr`: a split by 96 is refused, by 16 * 6 accepted)."""
        return tuple(_arg_value(a) for a in self.args)

    def to_json(self) -> list[Any]:
        return [self.method, list(self.args), dict(self.kwargs)]

    @staticmethod
    def from_json(data: list[Any]) -> Op:
        method, args, kwargs = data
        return Op(method, tuple(args), tuple(sorted(kwargs.items())))


@dataclass(frozen=True)
class Loop:
    name: str
    kind: str  # "gen" or "sum"


def fresh(base: str, taken: set[str]) -> str:
    """`base`, or `base1`, `base2`, ...: the first name not in `taken` (then taken)."""
    name, k = base, 1
    while name in taken:
        name, k = f"{base}{k}", k + 1
    taken.add(name)
    return name




def mul(q: int, r: int) -> dict[str, list[int]]:
    """The factor `q * r`, kept a product (see `Op.call_args`)."""
    return {"mul": [q, r]}


def _arg_value(a: Any) -> Any:
    if isinstance(a, dict) and set(a) == {"mul"}:
        from verisched.pybridge.terms import IBin, IConst
        from verisched.schedule.dsl import Ix

        q, r = a["mul"]
        return Ix(IBin("*", IConst(q), IConst(r)))
    return a


def _arg_source(a: Any) -> str:
    if isinstance(a, dict) and set(a) == {"mul"}:
        q, r = a["mul"]
        return f"Ix(IBin('*', IConst({q}), IConst({r})))"
    return repr(a)


def tensor_reads(e: Expr) -> list[tuple[str, frozenset[str]]]:
    """Each access of a named tensor under `e` with the variables of its indices (the
    templates read a nest's operands from them: templates.py, templates_layers.py)."""
    out = []
    for x in walk(e):
        if isinstance(x, Get):
            vs: frozenset[str] = frozenset()
            t: Expr = x
            while isinstance(t, Get):
                vs |= idx_free_vars(t.index)
                t = t.tensor
            if isinstance(t, Var):
                out.append((t.name, vs))
    return out
