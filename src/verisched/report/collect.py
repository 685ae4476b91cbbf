"""What a derivation report shows, gathered once: the replay's trace, Coq's verdict and the C.

The report is built in two stages so that the slow one (Coq replays the derivation,
the pipeline lowers it) is separate from the fast one (the page is rendered): a
`ReportData` is plain JSON, so tests and anyone tuning the page can keep one and
render it again without Coq (`ReportData.to_json` / `from_json`).

The derived program goes through the same pipeline as `verisched compile`
(load -> check -> lower -> render); a program that cannot be lowered still gets
a report, with the reason in place of the C, because a derivation Coq accepted
is worth reading even when no kernel can be built from it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from verisched.codegen.errors import CodegenError
from verisched.pipeline import (
    CSource,
    DerivationError,
    DerivedProgram,
    check,
    default_target,
    derivations_in,
    get_target,
    load,
    lower,
    render,
)
from verisched.pybridge.coqterm import idx_str, to_coq


class ReportError(Exception):
    """A report cannot be made (no such file, no such derivation, Coq refused)."""


@dataclass
class ReportData:
    """Everything the page shows, JSON-ready (see the module docstring)."""

    file: str
    derivation: str
    derivations: list[str]                 # every derivation of the file, in order
    trace: dict[str, Any]                  # Derivation.trace(): steps, verdict
    original: str | None                   # the original program, unfolded, as Coq text
    sizes: list[str]
    tensors: list[list[Any]]               # [name, rank]
    hypotheses: list[str]                  # the section's hypotheses, as Coq states them
    safety: str | None                     # None: check_safe proved the final program
    target: str | None = None              # the target the C is for
    c_source: str | None = None
    c_error: str | None = None             # why there is no C
    seconds: dict[str, float] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ReportData:
        return cls(**data)


def pick_derivation(path: Path, name: str | None) -> tuple[str, list[str]]:
    """The derivation to report on and the file's derivations; a clear error otherwise.

    Read statically, before Coq starts, so a typo costs nothing."""
    if not path.is_file():
        raise ReportError(f"{path} is a directory, not a .v file" if path.is_dir()
                          else f"no such file: {path}")
    try:
        names = derivations_in(path)
    except DerivationError as exc:
        raise ReportError(str(exc).removeprefix("derivation: ")) from None
    if not names:
        raise ReportError(f"{path} has no derivation (Derive ... SuchThat ... As ...)")
    if name is None:
        if len(names) > 1:
            raise ReportError(f"{path} has {len(names)} derivations; choose one with "
                              f"--derivation: {', '.join(names)}")
        return names[0], names
    if name not in names:
        raise ReportError(f"{path} has no derivation named {name!r}; its derivations: "
                          f"{', '.join(names)}")
    return name, names


def _c_for(derived: DerivedProgram,
           target: str | None) -> tuple[str | None, str | None, str | None]:
    """(target, C source, why not): `target`, or the first registered target that
    provides every instruction and memory the program uses (`c` for plain ATL)."""
    chosen = default_target(derived.expr) if target is None else get_target(target)
    if chosen is None:
        return None, None, "no registered target provides what this program uses"
    try:
        checked = check(derived)
        src = render(lower(checked, chosen))
    except CodegenError as exc:
        return chosen.name, None, str(exc)
    return chosen.name, src.c, None


def collect(path: str | Path, derivation: str | None = None, *, target: str | None = None,
            timeout: float = 300.0,
            on_step: Callable[..., None] | None = None) -> ReportData:
    """Replay `derivation` of `path` in Coq and gather what its report shows."""
    path = Path(path)
    name, names = pick_derivation(path, derivation)
    t0 = time.perf_counter()
    try:
        derived = load(path, name, timeout=timeout, on_step=on_step)
    except DerivationError as exc:
        raise ReportError(str(exc).removeprefix("derivation: ")) from None
    data = from_derived(derived, path, names, target=target)
    data.seconds["replay"] = round(time.perf_counter() - t0 - data.seconds["lower"], 3)
    return data


def from_derived(derived: DerivedProgram, path: str | Path, names: list[str] | None = None,
                 *, target: str | None = None, source: CSource | None = None) -> ReportData:
    """The report's data for a derivation already replayed (`pipeline.load`), such as
    the one a `Schedule` replays when it compiles: no second replay.  `source`: its C,
    when already rendered (then nothing is lowered again)."""
    t1 = time.perf_counter()
    if source is not None:
        tgt, c_source, c_error = source.target.name, source.c, None
    else:
        tgt, c_source, c_error = _c_for(derived, target)
    t2 = time.perf_counter()
    return ReportData(
        file=str(path), derivation=derived.name, derivations=names or [derived.name],
        trace=dict(derived.trace or {}),
        original=to_coq(derived.original) if derived.original is not None else None,
        sizes=list(derived.sizes), tensors=[[n, r] for n, r in derived.tensors],
        hypotheses=_hypothesis_texts(derived), safety=derived.safety_gap, target=tgt,
        c_source=c_source, c_error=c_error, seconds={"lower": round(t2 - t1, 3)})


def _hypothesis_texts(derived: DerivedProgram) -> list[str]:
    """The section's hypotheses as text: the shapes, then the conditions, then the rest."""
    h = derived.hypotheses
    out = [f"shaped [{'; '.join(idx_str(x) for x in shape)}] {name}"
           for name, shape in h.shapes.items()]
    out += [c.text for c in h.conditions]
    out += [text for _, text in h.other]
    return out
