"""`tune(program, target=..., sizes=..., budget=...)`: the whole tuning run.

The steps: the space of the program (space.py); the untuned program enqueued as
the first candidate (its time is the baseline); the search (search.py) on a
process pool or Ray (executors.py) with every candidate logged (log.py); then,
with every worker stopped, the final comparison timed round-robin in this
process (the best candidate, the untuned program and the hand-derived schedule
where one is given: the search's own times are never the only evidence), and the
outputs (output.py): the winner's `.v` checked by `coqc`, the script that
reproduces it, the plot.
"""

from __future__ import annotations

import math
import numbers
import os
import statistics
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from verisched.codegen.errors import CodegenError
from verisched.pipeline import (
    Kernel,
    Target,
    TargetUnavailable,
    check,
    compile_checked,
    get_target,
    load,
)
from verisched.pybridge.derivation import make_directory, unmakeable_directory, write_text_atomic
from verisched.pybridge.errors import BridgeError, OutputPathError
from verisched.pybridge.replay import outline_file
from verisched.pybridge.terms import Expr, free_vars, idx_free_vars
from verisched.schedule import Schedule, ScheduleArgumentError, ScheduleError
from verisched.schedule.coqfile import standalone
from verisched.schedule.dsl import Program
from verisched.targets.cpu import cpu_model

from . import log as tlog
from .evaluate import (
    REFUSALS,
    Workload,
    build_file,
    candidate_path,
    kernel_sizes,
    measure,
    workload,
)
from .executors import default_jobs, make_executor
from .output import CoqVerdict, coqc, plot, write_script, write_winner
from .search import Counters, Search
from .space import Space, with_template

# How the hand-derived baseline is given: a function of the schedule (Python), or a
# derivation of a .v file (path, name), built for the same target.
Hand = Callable[[Schedule], Schedule] | tuple[str | Path, str]
FINAL_ROUNDS = 5


@dataclass
class TuneResult:
    """What a run found.  Times are medians in seconds; `final` holds the round-robin
    re-timing done after the search with every worker stopped (None where a kernel
    could not be built, with the reason in `notes`)."""

    program: str
    target: str
    sizes: dict[str, int]
    best: tlog.Record | None
    records: list[tlog.Record]
    counters: Counters
    stopped: str
    log: Path
    out_dir: Path
    winner_v: Path | None = None
    winner_py: Path | None = None
    coq: CoqVerdict | None = None
    plot: Path | None = None
    final: dict[str, float | None] = field(default_factory=dict)
    # The fastest and slowest of the final rounds' medians, per kernel: the noise.
    final_spread: dict[str, tuple[float, float]] = field(default_factory=dict)
    # OpenMP threads of the timings (None: a serial target): during the search (the
    # cores the workers left) and in the final comparison (every core).
    threads: tuple[int | None, int | None] = (None, None)
    notes: list[str] = field(default_factory=list)

    def summary(self) -> str:
        """The result for a person, a few lines."""
        c = self.counters
        lines = [f"tuned {self.program} for {self.target} at {self.sizes}: stopped by "
                 f"{self.stopped}; {len(self.records)} candidate(s) logged "
                 f"({c.resumed} from the resumed log), proved {c.proved}, measured "
                 f"{c.measured}, refused {c.refused}, failed {c.failed}"]
        if self.best is None:
            lines.append("no candidate was proved and measured")
        else:
            lines.append(f"best: #{self.best.number} {self.best.median_s * 1e3:.4g} ms in the "
                         f"search; directives: "
                         + (" ".join(op[0] for op in self.best.ops) or "(none: untuned)"))
        lines += self._final_lines()
        if self.winner_v:
            lines.append(f"winner: {self.winner_v} ({self.coq.text if self.coq else 'unchecked'})"
                         f", script {self.winner_py}")
        lines += [f"note: {n}" for n in self.notes]
        lines.append(f"log: {self.log}" + (f"; plot: {self.plot}" if self.plot else ""))
        return "\n".join(lines)

    def _final_lines(self) -> list[str]:
        """The final comparison: medians with the spread of the rounds, the threads it
        ran with, and no speedup claimed where the best candidate is the program as
        written (its ratio to itself measures only noise)."""
        f, lines = self.final, []

        def ms(k: str) -> str:
            lo, hi = self.final_spread.get(k, (f[k], f[k]))
            return f"{f[k] * 1e3:.4g} ms ({lo * 1e3:.4g}-{hi * 1e3:.4g})"

        search_t, final_t = self.threads
        if final_t is not None:
            lines.append(f"timing threads: {search_t} in the search (the cores the proving "
                         f"workers left), {final_t} in the final timing (every core)")
        if not f.get("tuned"):
            return lines
        timed = [k for k in ("tuned", "untuned", "hand") if f.get(k)]
        lines.append(f"final timing (medians of {FINAL_ROUNDS} interleaved rounds, their range "
                     "in parentheses): " + ", ".join(f"{k} {ms(k)}" for k in timed))
        untuned_won = self.best is not None and not self.best.ops
        if untuned_won:
            lines.append("the best candidate is the untuned program (no directive): no "
                         "schedule beat it")
        lo, hi = self.final_spread.get("tuned", (f["tuned"], f["tuned"]))
        ratios = []
        for k in ("untuned", "hand"):
            if f.get(k) and not (k == "untuned" and untuned_won):
                klo, khi = self.final_spread.get(k, (f[k], f[k]))
                noise = " (the ranges overlap: within the noise)" if lo <= khi and klo <= hi \
                    else ""
                ratios.append(f"{f[k] / f['tuned']:.2f}x {k}{noise}")
        if ratios:
            lines.append("speed of tuned: " + ", ".join(ratios))
        return lines

    def stall_notes(self) -> list[str]:
        """A kernel slower in the final timing, on more threads, than in the search: on
        an idle machine more threads are not slower, so its team waited for a core
        (other load): the final ratios then measure the machine, not the schedules."""
        search_t, final_t = self.threads
        if final_t is None or search_t is None or final_t <= search_t:
            return []
        searched = {"tuned": self.best, "untuned": untuned_record(self.records)}
        out = []
        for k, rec in searched.items():
            fin = self.final.get(k)
            if rec is not None and rec.median_s and fin and fin > 3 * rec.median_s:
                out.append(f"{k}: {fin / rec.median_s:.0f}x slower in the final timing on "
                           f"{final_t} threads ({fin * 1e3:.4g} ms) than in the search on "
                           f"{search_t} ({rec.median_s * 1e3:.4g} ms): its OpenMP team waited "
                           "for busy cores, so the final ratios measure the machine's load; "
                           "compare the search's times, or rerun on a quiet machine")
        return out


def untuned_record(records: Sequence[tlog.Record]) -> tlog.Record | None:
    """The proved candidate with no directive (the program as written), if logged."""
    return next((r for r in records if r.status == "proved" and not r.ops), None)


def untuned_point(space: Space) -> dict[str, Any]:
    """The point of the space with no directive (the program as written)."""
    p: dict[str, Any] = {}
    if len(space.nest) >= 2:
        p["order"] = space.orders()[0]
    for prod in space.producers:
        p[f"at_{prod}"] = "none"
        own = space.inner.get(prod, ())
        if len(own) >= 2:
            p[f"order_{prod}"] = ",".join(lp.name for lp in own)
            if space.isas and own[-1].kind == "gen":
                p[f"vectorize_{prod}"] = "none"
    if len(space.nest) >= 2:
        p.update(tile_at=0, tile_outer=1, tile_inner=1)
    elif space.nest:
        p["tile_outer"] = 1
    if space.nest and space.nest[-1].kind == "gen" and space.isas:
        p["vectorize"] = "none"
    if space.nest:
        p["unroll"] = 1
    if space.target.parallel and any(lp.kind == "gen" for lp in space.nest):
        p["parallel"] = False
    return p


# Why a simulator target is refused: the search ranks candidates by their time, and a
# simulator's run (gemmini: a functional model) has none.  The command says it before it
# replays the derivation; `tune` again, for API callers.
UNTIMEABLE = ("runs on a simulator without a timing model, so its candidates cannot be "
              "timed; tune for a CPU target (native, avx2, avx512, c, openmp, ...)")


def timeable(t: Target) -> bool:
    """Whether `t`'s kernels can be timed (UNTIMEABLE says why not)."""
    return t.runs_on != "simulator"


def check_timeable(t: Target) -> None:
    if not timeable(t):
        raise ScheduleArgumentError("tune", "target", f"{t.name} {UNTIMEABLE}")


def tune(program: Program, *, target: str = "native", sizes: Mapping[str, int],
         budget: float | None = 60.0, trials: int | None = None, jobs: int | None = None,
         ray: str | None = None, resume: str | Path | None = None,
         out_dir: str | Path | None = None, seed: int = 0, hand: Hand | None = None,
         enqueue: Sequence[Mapping[str, Any]] = (), seeds: bool = True,
         timeout: float = 120.0,
         progress: Callable[[str], None] | None = None,
         on_record: Callable[[tlog.Record], None] | None = None) -> TuneResult:
    """Search schedules of `program` for `target` (default `native`: the best ISA of
    this CPU, where the candidates are timed) at `sizes`, every candidate proved
    by Coq, for `budget` seconds and/or `trials` candidates (new ones: logged ones
    are not measured again).  `jobs` worker processes prove candidates (default:
    all cores but one, left for timing); `ray` ("auto" or an address) proves them
    on Ray instead.  `resume`: a log of an earlier run.  `enqueue`: points to try
    first (after the untuned program); `seeds`: then a few vectorized orders
    (Space.seeds).  Writes the log, the winner
    (`NAME_tuned.v`, `NAME_tuned.py`) and the plot into `out_dir`.  Ctrl-C stops the
    search; the log and the best so far are kept and the outputs written."""
    t = get_target(target)
    check_timeable(t)
    t.check_runtime()
    if budget is None and trials is None:
        raise ScheduleArgumentError("tune", "budget", "give a budget (seconds) or trials")
    _check_arguments(budget=budget, trials=trials, jobs=jobs, timeout=timeout, seed=seed,
                     out_dir=out_dir)
    _check_size_names(program, sizes, hand)
    # The sizes checked (check_sizes), the reference computed and the resumed log read
    # before anything is written.
    work = workload(program, sizes, seed)
    jobs = jobs if jobs is not None else default_jobs()
    # Timing during the search uses the cores the local workers leave (all of them when
    # the workers are on a Ray cluster we only joined); the final comparison all.
    local = ray is None or ray == "auto"
    work.threads = max(1, (os.cpu_count() or 1) - (jobs if local else 0))
    resumed: list[tlog.Record] = []
    resume_notes: list[str] = []
    if resume is not None:
        resumed, resume_notes = _resumed(Path(resume), program, t.name, sizes,
                                         work.threads if t.parallel else None)
    out = Path(out_dir) if out_dir is not None else Path(tempfile.mkdtemp(prefix="vs-tune-"))
    try:
        make_directory(out)
    except OutputPathError as exc:  # what the check could not foresee (/proc as root)
        raise ScheduleArgumentError("tune", "out_dir", str(exc)) from None
    log_path = out / f"{program.name}.tune.jsonl"
    if resume is not None and Path(resume).resolve() != log_path.resolve():
        for r in resumed:   # the new log starts with what was resumed
            tlog.append(log_path, r)
    space = Space.of(program, t)
    say = progress or (lambda _m: None)
    executor = make_executor(jobs, ray)
    say(f"tune {program.name}: {executor.description}; timing in this process; "
        f"log {log_path}")
    search = Search(program, t.name, space, work, executor, log_path, out / "candidates",
                    budget=budget, trials=trials, seed=seed, timeout=timeout,
                    progress=progress, on_record=on_record)
    first = untuned_point(space)
    outcome = search.run(resumed, [first, *enqueue, *(space.seeds(first) if seeds else [])])
    res = TuneResult(program.name, t.name, dict(work.sizes), outcome.best, outcome.records,
                     outcome.counters, outcome.stopped, log_path, out)
    if work.note:
        res.notes.append(work.note)
    if space.isas:  # for `native`: the ISAs it found on this CPU
        res.notes.append(f"vector instructions the candidates could use: "
                         f"{', '.join(space.isas)} (target {t.name})")
    res.notes += resume_notes
    res.notes += _untuned_refused(res.records, [first, with_template(space, first)])
    _finish(res, program, space, work, hand, timeout, say)
    return res


def _check_arguments(*, budget: object, trials: object, jobs: object, timeout: object,
                     seed: object, out_dir: str | Path | None) -> None:
    """Each argument named with its value when it is wrong, before a worker starts: a
    NaN budget never ran out, `trials=0` ran nothing without a word, `jobs=0` quietly
    meant one worker, and `timeout=0` failed every candidate."""
    def whole(name: str, value: object, least: int) -> None:
        if isinstance(value, bool) or not isinstance(value, numbers.Integral):
            raise ScheduleArgumentError("tune", name, f"an integer, not {value!r}")
        if value < least:
            raise ScheduleArgumentError("tune", name, f"at least {least}, not {value!r}")

    for name, value in (("budget", budget), ("timeout", timeout)):
        if value is None and name == "budget":
            continue
        ok = isinstance(value, numbers.Real) and not isinstance(value, bool)
        if not ok or not 0 < value < math.inf:  # type: ignore[operator]
            raise ScheduleArgumentError("tune", name, f"seconds above 0, not {value!r}")
    if trials is not None:
        whole("trials", trials, 1)
    if jobs is not None:
        whole("jobs", jobs, 1)
    whole("seed", seed, 0)
    why = unmakeable_directory(out_dir) if out_dir is not None else None
    if why is not None:
        raise ScheduleArgumentError("tune", "out_dir", f"{str(out_dir)!r} cannot be made a "
                                    f"directory ({why})")


def _untuned_refused(records: list[tlog.Record], untuned: list[dict[str, Any]]) -> list[str]:
    """A note when the program as written was itself refused (its bounds not proved:
    a program that reads outside its inputs, such as Blur.v's `blur` under ATL's
    zero-outside semantics): every schedule of it is then refused too, and the user
    needs a program whose boundary reads are guarded, not a longer search."""
    rec = next((r for r in records if r.params in untuned), None)
    if rec is None or rec.status != "refused":
        return []
    return ["the untuned program itself was refused, so every schedule of it will be: "
            f"{' '.join(rec.message.split())[:240]} (start from a program whose reads "
            "outside its inputs are guarded, as Directives/BlurTiled.v's blur_bc guards "
            "Blur.v's blur)"]


def _check_size_names(program: Program, sizes: Mapping[str, int], hand: Hand | None
                      ) -> None:
    """A size that neither the program nor the hand derivation has is a mistake (a
    typo, a size of another kernel): refused before anything runs, where it used to
    be carried along unused.  A hand schedule given as a function schedules this
    program, whose sizes its directives cannot add to (a factor is a number or the
    program's size), so then the program's sizes are all there are."""
    known = set(program.sizes)
    theirs = ""
    if hand is not None and not callable(hand):
        # The section's sizes, read from the text (no Coq: the hand is loaded once, at
        # the end, where a failure to load it is said).
        try:
            outline = outline_file(hand[0]).get(hand[1])
        except (BridgeError, OSError):
            return
        if outline is None:
            return
        hand_sizes = outline.signature.sizes
        known |= set(hand_sizes)
        theirs = f"; the hand derivation's: {', '.join(hand_sizes)}"
    unknown = [k for k in sizes if k not in known]
    if unknown:
        raise ScheduleArgumentError(
            "tune", "sizes", f"{program.name} has no size {', '.join(unknown)} (its sizes: "
            f"{', '.join(program.sizes) or 'none'}{theirs})")


def _resumed(path: Path, program: Program, target: str, sizes: Mapping[str, int],
             threads: int | None = None) -> tuple[list[tlog.Record], list[str]]:
    """The records of an earlier run's log that this run can use (its program, target
    and sizes), and notes saying what was skipped and why: a file with no record at
    all is refused (it is no tuning log); a log whose records are all for something
    else is said, not silently ignored."""
    if not path.is_file():
        raise ScheduleArgumentError("tune", "resume", f"no such log: {path}")
    try:
        records, skipped = tlog.read_lines(path)
    except (OSError, ValueError) as exc:
        raise ScheduleArgumentError("tune", "resume", str(exc)) from None
    if skipped and not records:
        raise ScheduleArgumentError("tune", "resume", f"{path} is not a tuning log: none of "
                                    f"its lines is a record ({skipped[0]})")
    notes = [f"resumed log {path}: skipped {len(skipped)} line(s) that are no record "
             f"({skipped[0]})"] if skipped else []
    mine = {k: int(v) for k, v in sizes.items() if k in program.sizes}
    use = [r for r in records
           if r.program in ("", program.name) and r.target in ("", target)
           and (not r.sizes or {k: v for k, v in r.sizes.items()
                                if k in program.sizes} == mine)]
    if len(use) < len(records):
        kept = {id(r) for r in use}
        others = sorted({f"{r.program or '?'} on {r.target or '?'} at "
                         + ",".join(f"{k}={v}" for k, v in sorted(r.sizes.items()))
                         for r in records if id(r) not in kept})
        notes.append(f"resumed log {path}: {len(use)} of its {len(records)} records are "
                     f"for {program.name} on {target} at these sizes; not used: "
                     f"{'; '.join(others[:3])}{' ...' if len(others) > 3 else ''}")
    # A median measured on another CPU, or with another OpenMP team, is not comparable
    # with this run's (a log without them, written before they were recorded, is used,
    # and said).
    here = cpu_model()
    elsewhere = [r for r in use if r.cpu and r.cpu != here]
    other_team = [r for r in use if not (r.cpu and r.cpu != here) and threads is not None
                  and r.threads is not None and r.threads != threads]
    if elsewhere or other_team:
        drop = {id(r) for r in elsewhere + other_team}
        use = [r for r in use if id(r) not in drop]
        why = ([f"{len(elsewhere)} timed on another CPU ({elsewhere[0].cpu})"] if elsewhere
               else []) + ([f"{len(other_team)} timed with {other_team[0].threads} OpenMP "
                            f"thread(s), this run times with {threads}"] if other_team else [])
        notes.append(f"resumed log {path}: not used, measured elsewhere: {'; '.join(why)} "
                     f"(this CPU: {here}); those candidates are measured again")
    unplaced = sum(1 for r in use if not r.cpu)
    if unplaced:
        notes.append(f"resumed log {path}: {unplaced} record(s) do not say on which CPU they "
                     "were timed (a log from before that was recorded): used as if timed here")
    return use, notes


def _finish(res: TuneResult, program: Program, space: Space, work: Workload,
            hand: Hand | None, timeout: float, say: Callable[[str], None]) -> None:
    """Outputs and the final comparison (after the search: nothing else runs)."""
    best = res.best
    kernels: dict[str, Kernel | None] = {}
    untuned = untuned_record(res.records)
    for label, rec in (("tuned", best), ("untuned", untuned)):
        if rec is None:
            continue
        try:
            text = standalone(program, rec.steps, closed=True)
            path = candidate_path(res.out_dir / "candidates", text)
            if not path.is_file():   # resumed from a log written elsewhere
                path.parent.mkdir(parents=True, exist_ok=True)
                write_text_atomic(path, text)
            kernels[label] = build_file(path, program,
                                        tuple(tuple(a) for a in rec.annotations),
                                        res.target, timeout)
        except (*REFUSALS, CodegenError, BridgeError, ScheduleError, OSError) as exc:
            res.notes.append(f"{label}: could not be rebuilt for the final timing: {exc}")
    if hand is not None:
        kernels["hand"] = _hand_kernel(program, hand, res, timeout)
    searched = work.threads
    work.threads = None    # every core: no worker runs any more
    res.final, res.final_spread = _final_timing(_timeable(kernels, work, res.notes), work)
    if get_target(res.target).parallel:
        res.threads = (searched, os.cpu_count() or 1)
    res.notes += res.stall_notes()
    if best is not None:
        res.winner_v = write_winner(res.out_dir, program, best)
        say(f"checking {res.winner_v} with coqc")
        res.coq = coqc(res.winner_v)
        res.winner_py = write_script(res.out_dir, program, best)
    # The untuned line at its search time, measured as the plotted candidates were (the
    # final timing ran with other threads and at another time).
    untuned_s = (untuned.median_s if untuned else None) or res.final.get("untuned")
    res.plot = plot(res.out_dir, res.records, program.name, untuned_s)


def _hand_kernel(program: Program, hand: Hand, res: TuneResult, timeout: float
                 ) -> Kernel | None:
    try:
        if callable(hand):
            with Schedule.of(program, timeout=timeout) as s:
                return hand(s).compile(res.target)
        path, name = hand
        checked = check(load(path, name, timeout=timeout))
        return compile_checked(checked, res.target)
    except (*REFUSALS, CodegenError, BridgeError, ScheduleError, TargetUnavailable,
            OSError) as exc:
        res.notes.append(f"hand-derived schedule not built for {res.target}: "
                         f"{' '.join(str(exc).split())[:300]}")
        return None


def _final_timing(kernels: dict[str, Kernel], work: Workload
                  ) -> tuple[dict[str, float | None], dict[str, tuple[float, float]]]:
    """Each kernel timed in turn, FINAL_ROUNDS times (interleaved, so that all see
    the same load); the median of the rounds' medians, and their least and most."""
    times: dict[str, list[float]] = {k: [] for k in kernels}
    for _ in range(FINAL_ROUNDS):
        for k, kernel in kernels.items():
            times[k].append(measure(kernel, work)[0])
    return ({k: statistics.median(v) for k, v in times.items()},
            {k: (min(v), max(v)) for k, v in times.items()})


def _timeable(kernels: dict[str, Kernel | None], work: Workload, notes: list[str]
              ) -> dict[str, Kernel]:
    """The kernels that can be called at the given sizes (a hand derivation may take
    block sizes the user did not give: said in the notes, not timed)."""
    out = {}
    for k, kernel in kernels.items():
        if kernel is None:
            continue
        try:
            kernel_sizes(kernel, work.sizes)
        except ScheduleArgumentError as exc:
            notes.append(f"{k}: not timed: {exc}")
            continue
        out[k] = kernel
    return out


def program_of(path: str | Path, name: str, timeout: float = 300.0) -> Program:
    """`FILE.v --program NAME`: the *original* program of the derivation NAME (the left
    side of its `Derive`), with its section's sizes, input shapes and integer
    hypotheses, as a Program the tuner can schedule (docs/decisions.md)."""
    derived = load(path, name, timeout=timeout)
    if derived.original is None:
        raise ScheduleArgumentError("tune", "program", f"{path}: derivation {name} has no "
                                    "original program the bridge could read")
    expr: Expr = derived.original
    shapes = derived.hypotheses.shapes
    inputs = []
    for t, rank in derived.tensors:
        if t not in set(free_vars(expr)):
            continue
        if rank == 0 and t not in shapes:   # a scalar has no extent to state
            inputs.append((t, ()))
            continue
        if t not in shapes or len(shapes[t]) != rank:
            raise ScheduleArgumentError("tune", "program", f"{path}: input {t} of {name} has "
                                        "no `shaped` hypothesis giving its extents")
        inputs.append((t, tuple(shapes[t])))
    used = set(free_vars(expr))
    for _, shape in inputs:
        for d in shape:
            used |= set(idx_free_vars(d))
    sizes = tuple(s for s in derived.sizes if s in used)
    assume = tuple(p for c in derived.hypotheses.conditions if c.free_vars() <= set(sizes)
                   for p in c.preds())
    return Program(name, expr, tuple(inputs), sizes, assume)
