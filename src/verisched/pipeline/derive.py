"""Stage 1: a derivation in a .v file -> its derived program, as Coq checked it.

The bridge (pybridge/replay.py) replays the file in a Coq session and
records the program after every step, with user definitions unfolded (the
`semantics` of each state).  The derived program handed on is the last
state's, in instruction form: where it calls instructions or places buffers
in memories, Coq's own printing of it (those are definitions too, and
unfolding them would lose the calls the lowering needs), otherwise the
unfolded one.  The section around the derivation gives its size variables,
its input tensors and their ranks (in the order of the .v file) and its
hypotheses (pybridge/hypotheses.py).

Whether Coq's `check_safe` proved the final program's accesses in bounds is
recorded here and enforced by the next stage (check.py).  Instructions the
Python side does not know are read from Coq during the replay
(pybridge/instr_coq.py).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from verisched.codegen.errors import CodegenError
from verisched.pipeline import cache as derive_cache
from verisched.pybridge.errors import BridgeError
from verisched.pybridge.hypotheses import Hypotheses, parse_hypotheses
from verisched.pybridge.replay import (
    ReplayedDerivation,
    outline_file,
    precheck_file,
    replay_file,
)
from verisched.pybridge.session import CoqSession, is_seconds
from verisched.pybridge.terms import Expr, Instr, Mem, any_node, free_vars


class DerivationError(CodegenError):
    """The derivation could not be replayed or did not yield a program."""


@dataclass(frozen=True)
class DerivedProgram:
    """What a replayed derivation yields (stage 1's output)."""

    source: str                            # "FILE.v:NAME", or where a Python program came from
    name: str
    expr: Expr                             # the derived program, in instruction form
    original: Expr | None                  # the program it started from, unfolded
    sizes: tuple[str, ...]                 # the section's size variables, in file order
    tensors: tuple[tuple[str, int], ...]   # the section's inputs and their ranks, in order
    hypotheses: Hypotheses
    # None when check_safe proved every access of the final program in bounds; else why not.
    safety_gap: str | None
    steps: int = 0
    bools: tuple[str, ...] = ()            # sizes that are Coq booleans (flags)
    axioms: tuple[str, ...] = ()           # what Coq's Print Assumptions listed
    # The derived program with every definition unfolded, instructions included (what
    # the interpreter checks `expr` against); None when it is `expr` itself.
    unfolded: Expr | None = None
    trace: Mapping[str, Any] | None = None  # every step, JSON-ready (Derivation.trace)


def _unfolded_hint(why: str) -> str:
    """Where the printed program holds a function Coq unfolded (a `fix` or a `match`
    from a definition the bridge keeps no name for), what it most often is."""
    if "{struct" not in why and "match " not in why:
        return ""
    return ("\n  (a function the bridge does not know was unfolded into its definition, "
            "such as Z.min, Z.max or Z.abs: write indices with + - * / mod cdiv and guards "
            "with <? <=? =? >? >=? and &&, which the bridge reads)")


def derivations_in(path: str | Path) -> list[str]:
    """The names of the derivations of a .v file, in order (read statically)."""
    try:
        return list(precheck_file(path))
    except BridgeError as exc:
        raise DerivationError(f"derivation: {exc}") from exc


class ReplayStep(str):
    """A progress message for one replayed step ("NAME: step k of n: TACTIC"), with
    its numbers as attributes, so a caller may show it in place (a terminal) or only
    every few steps (a log) while `progress` stays a plain `Callable[[str], None]`."""

    derivation: str
    step: int
    total: int

    def __new__(cls, derivation: str, step: int, total: int, tactic: str) -> ReplayStep:
        first = " ".join(tactic.split())
        first = first if len(first) <= 60 else first[:57] + "..."
        obj = super().__new__(cls, f"{derivation}: step {step} of {total}: {first}")
        obj.derivation, obj.step, obj.total = derivation, step, total
        return obj


def load(path: str | Path, name: str, *, timeout: float = 300.0,
         progress: Callable[[str], None] | None = None,
         on_step: Callable[..., None] | None = None, cache: bool = True) -> DerivedProgram:
    """Replay derivation `name` of `path` and return what it derived (from the cache of
    checked derivations when nothing it depends on changed: pipeline/cache.py)."""
    return load_many(path, [name], timeout=timeout, progress=progress, on_step=on_step,
                     cache=cache)[name]


def load_many(path: str | Path, names: list[str] | None = None, *, timeout: float = 300.0,
              progress: Callable[[str], None] | None = None,
              on_step: Callable[..., None] | None = None,
              cache: bool = True) -> dict[str, DerivedProgram]:
    """Replay the derivations `names` of `path` (all of them by default) in one Coq
    session: a file deriving several kernels costs one replay.  `progress(message)`
    is told what is being replayed and each step (a `ReplayStep`); `on_step(derivation,
    step)` sees every step, live, so it bypasses the cache.

    With `cache` (and VERISCHED_NO_CACHE unset), results come from the cache of
    checked derivations when the file, the Coq library, Coq and this package are
    unchanged (pipeline/cache.py); a replay's results are stored there, with those of
    the derivations it ran before the ones asked for."""
    if not isinstance(path, (str, Path)):
        raise DerivationError(f"derivation: the file must be a path, not {path!r}")
    if not is_seconds(timeout):
        raise DerivationError(f"derivation: timeout must be a positive number of seconds, "
                              f"not {timeout!r}")
    path = Path(path)
    if not path.is_file():
        raise DerivationError(f"derivation: {path} is a directory, not a .v file"
                              if path.is_dir() else f"derivation: no such file: {path}")
    available = derivations_in(path)
    wanted = available if names is None else list(names)
    missing = [n for n in wanted if n not in available]
    if missing:
        raise DerivationError(f"derivation: {path} has no derivation named "
                              f"{', '.join(map(repr, missing))} (available: "
                              f"{', '.join(available) or 'none'})")
    only = wanted[0] if len(wanted) == 1 else None
    what = f"{path}" + (f" :: {only}" if only else "")
    keys: dict[str, str | None] = {}
    if cache and on_step is None and derive_cache.enabled():
        keys = derive_cache.derivation_keys(path, wanted)
        hits = {n: v for n, k in keys.items()
                if k is not None and (v := derive_cache.fetch(k, n, DerivedProgram))}
        if len(hits) == len(wanted):
            if progress:
                progress(f"{what}: unchanged since Coq checked it (cached in "
                         f"{derive_cache.cache_dir()}; VERISCHED_NO_CACHE=1 replays)")
            return hits
    if progress:
        progress(f"replaying {what} in Coq ...")
    # A replay runs every derivation before the last one asked for (a later one may
    # build on them) and none after it; when results are cached it records and keeps
    # those too, so after a load of a file's last derivation every other one is a
    # cache hit (decision #145).
    cached = any(k is not None for k in keys.values())
    upto = max(wanted, key=available.index) if cached or not only else None
    out, extra = _replay(path, wanted, None if upto else only, timeout,
                         _step_reporter(path, progress, on_step), upto, keep=cached)
    if cached:
        every = {**extra, **out}
        now = derive_cache.derivation_keys(path, list(every))
        if all(now.get(n) == k for n, k in keys.items()):  # the file unchanged meanwhile
            for n, dp in every.items():
                k = now.get(n)
                if k is not None:
                    derive_cache.store(k, n, dp, (dp.expr, dp.original, dp.unfolded))
    return out


def _step_reporter(path: Path, progress: Callable[[str], None] | None,
                   on_step: Callable[..., None] | None) -> Callable[..., None] | None:
    """The replay's `on_step`: the caller's, and a `ReplayStep` for `progress`."""
    if progress is None:
        return on_step
    try:
        totals = {n: o.steps for n, o in outline_file(path).items()}
    except BridgeError:
        totals = {}

    def report(d: Any, res: Any) -> None:
        if on_step is not None:
            on_step(d, res)
        step = getattr(res, "step", None)
        if progress is not None and step is not None:
            progress(ReplayStep(d.name, step, max(totals.get(d.name, 0), step),
                                getattr(res, "tactic", "")))

    return report


def _replay(path: Path, wanted: list[str], only: str | None, timeout: float,
            on_step: Callable[..., None] | None, upto: str | None = None, keep: bool = False
            ) -> tuple[dict[str, DerivedProgram], dict[str, DerivedProgram]]:
    """The wanted derivations, and with `keep` the others the replay recorded and Coq
    accepted (for the cache; one it did not accept is not kept, and not an error here)."""
    try:
        with CoqSession(timeout=timeout) as session:
            result = replay_file(session, path, only=only, semantics=True, on_step=on_step,
                                 upto=upto)
    except BridgeError as exc:
        raise DerivationError(f"derivation: replaying {path}: {type(exc).__name__}: {exc}"
                              ) from exc
    if result.failure:
        f = result.failure
        # what the tactic printed before failing (rw's candidate sites, check_safe's
        # unproved accesses), which its message refers to as "listed above"
        listed = "\n" + f.details.rstrip() if f.details.strip() else ""
        raise DerivationError(f"derivation: {path}:{f.line}: Coq rejected {f.sentence!r}: "
                              f"{f.message}{listed}")
    out, extra = {}, {}
    for rd in result.derivations:
        n = rd.derivation.name
        if n in wanted:
            out[n] = from_replayed(rd, f"{path}:{n}")
        elif keep:
            try:
                extra[n] = from_replayed(rd, f"{path}:{n}")
            except DerivationError:
                pass  # not asked for: its failure is said when it is
    for f in result.rejected:
        if f.derivation in wanted:
            raise DerivationError(f"derivation: {path}:{f.line}: Coq rejected the statement "
                                  f"of {f.derivation}: {f.message}")
    for n in wanted:
        if n not in out:
            raise DerivationError(f"derivation: {path}: {n} was not replayed (an earlier "
                                  "derivation of the file failed)")
    return out, extra


def safety_gap(steps: list) -> str | None:
    """Why the derived program's accesses are not known to be in bounds, or None.

    The C kernel reads arrays without bounds checks, so the lowering needs
    Coq's `check_safe` to have succeeded on the *final* program: the last
    `check_safe` step must come after every step that changed the program.
    """
    checks = [k for k, s in enumerate(steps) if s.tactic.strip().startswith("check_safe")]
    if not checks:
        return "the derivation never runs check_safe"
    proved = steps[checks[-1]].after.program_text
    for s in steps[checks[-1] + 1:]:
        text = s.after.program_text
        if text is not None and text != proved:
            return f"step {s.step} ({s.tactic.strip()}) changed the program after check_safe"
    return None


def from_replayed(rd: ReplayedDerivation, source: str) -> DerivedProgram:
    """The derived program of a derivation replayed with `semantics=True` (for callers
    that replay themselves, such as the example tests sharing one replay)."""
    name = rd.derivation.name
    if rd.error is not None:
        raise DerivationError(f"derivation {name}: {rd.error.describe()}")
    if not rd.ok:
        v = rd.verdict
        if v is not None and v.accepted:  # Qed passed; Print Assumptions listed more
            raise DerivationError(f"derivation {name}: depends on disallowed axioms: "
                                  f"{', '.join(v.disallowed_axioms)} (only functional "
                                  "extensionality and the standard library's real-number "
                                  "axioms are allowed)")
        raise DerivationError(f"derivation {name}: Coq did not accept it: "
                              f"{v.message if v else 'not closed'}")
    progs = [p for p in rd.semantics if not isinstance(p, str)]
    if not rd.semantics or isinstance(rd.semantics[-1], str):
        why = rd.semantics[-1] if rd.semantics else "no program recorded"
        raise DerivationError(f"derivation {name}: the derived program is outside the AST's "
                              f"grammar: {why}{_unfolded_hint(why)}")
    final = progs[-1]
    original = progs[0] if progs and progs[0] is not rd.semantics[-1] else None
    sig = rd.signature
    expr = _instruction_form(rd, final)
    return DerivedProgram(
        source=source, name=name, expr=expr, original=original,
        unfolded=final if expr is not final else None,
        sizes=tuple(sig.sizes), tensors=tuple(sig.tensors.items()),
        hypotheses=parse_hypotheses(sig.hypotheses),
        safety_gap=safety_gap(rd.derivation.steps), steps=len(rd.derivation.steps),
        bools=tuple(sig.bools), axioms=tuple(rd.verdict.axioms) if rd.verdict else (),
        trace=rd.derivation.trace())


def _is_target_node(x: object) -> bool:
    return isinstance(x, (Instr, Mem))


def _instruction_form(rd: ReplayedDerivation, semantic: Expr) -> Expr:
    """The derived program as Coq printed it, if it uses instructions or memories and
    names nothing the unfolded program does not (no user definition left folded)."""
    steps = [s for s in rd.derivation.steps if getattr(s, "after", None) is not None]
    for s in reversed(steps):
        raw = s.after.program
        if raw is None:
            if s.after.program_text is None:
                continue  # the finished state
            return semantic
        if any_node(raw, _is_target_node) and free_vars(raw) <= free_vars(semantic):
            return raw
        return semantic
    return semantic
