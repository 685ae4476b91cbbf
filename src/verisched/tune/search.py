"""The search: Optuna's TPE sampler over the schedule space, ask-and-tell.

Why Optuna (docs/decisions.md): a maintained library whose TPE sampler handles
categorical, conditional (define-by-run) parameters like ours, supports an
ask/tell loop (our evaluations are asynchronous, on a pool or Ray) with
`constant_liar` for the trials still running, and takes finished trials back with
`add_trial` (resume from a log without re-measuring).

The objective is the log of the median time (minimised).  A refused candidate is
told as PRUNED, so TPE counts it among the bad points and moves away from it; a
failed one as FAIL (ignored).  A point already measured, in this run or in the
resumed log, is told its known value and never re-measured.
"""

from __future__ import annotations

import functools
import math
import os
import time
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from verisched.codegen.errors import CodegenError
from verisched.pybridge.derivation import write_text_atomic
from verisched.pybridge.errors import BridgeError
from verisched.schedule import AnnotationRefused
from verisched.schedule.dsl import Program
from verisched.targets.cpu import cpu_model
from verisched.targets.registry import get_target

from . import log as tlog
from .evaluate import REFUSALS, TOO_SLOW, Proof, Workload, build_file, measure, prove
from .executors import Executor
from .prune import Pruner, refused_at
from .space import Op, Space, describe, with_template

# After this many points in a row that were all seen before, the space is taken as
# exhausted (TPE keeps proposing known points) and the search stops.
MAX_REPEATS = 40
# A candidate whose first call takes more than this many times the best median (and
# more than 50 ms) is timed by that call alone (evaluate.measure).
SLOW_FACTOR = 20


def _optuna() -> Any:
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
    return optuna


@dataclass
class Counters:
    """What the progress line and the summary report."""

    proved: int = 0        # proved by Coq in this run
    measured: int = 0      # timed in this run
    refused: int = 0
    failed: int = 0
    reused: int = 0        # points known from the log or earlier in this run
    skipped: int = 0       # points of a dead template (prune.py): never proved
    resumed: int = 0       # records read from --resume

    def line(self, best: tlog.Record | None, elapsed: float) -> str:
        b = "none yet" if best is None or best.median_s is None else \
            f"{best.median_s * 1e3:.4g} ms (#{best.number})"
        return (f"tune {elapsed:5.0f}s: proved {self.proved}, measured {self.measured}, "
                f"refused {self.refused}, failed {self.failed}"
                + (f", reused {self.reused}" if self.reused else "")
                + (f", skipped {self.skipped}" if self.skipped else "") + f"; best {b}")


@dataclass
class Outcome:
    records: list[tlog.Record] = field(default_factory=list)   # resumed + new, in order
    counters: Counters = field(default_factory=Counters)
    stopped: str = ""        # "budget", "trials", "interrupted", "exhausted"

    @property
    def best(self) -> tlog.Record | None:
        timed = [r for r in self.records if r.status == "proved" and r.median_s is not None]
        return min(timed, key=lambda r: r.median_s) if timed else None


@dataclass
class Search:
    """One tuning run's loop state."""

    program: Program
    target: str
    space: Space
    work: Workload
    executor: Executor
    log_path: Path
    workdir: Path
    budget: float | None = None
    trials: int | None = None
    seed: int = 0
    timeout: float = 120.0
    progress: Callable[[str], None] | None = None
    on_record: Callable[[tlog.Record], None] | None = None
    pruner: Pruner = field(default_factory=Pruner)

    @functools.cached_property
    def where(self) -> tuple[str, int | None]:
        """Where each candidate is timed, as its record says: the CPU, and the OpenMP
        team of a parallel target (None for a serial one)."""
        return cpu_model(), self.work.threads if get_target(self.target).parallel else None

    def run(self, resumed: Iterable[tlog.Record] = (), enqueue: Iterable[dict] = ()
            ) -> Outcome:
        optuna = _optuna()
        sampler = optuna.samplers.TPESampler(seed=self.seed, constant_liar=True,
                                             n_startup_trials=8)
        study = optuna.create_study(direction="minimize", sampler=sampler)
        out = Outcome()
        seen: dict[str, tlog.Record] = {}
        for rec in resumed:
            self._add_known(optuna, study, rec)
            try:
                self._note(rec, {k: optuna.distributions.json_to_distribution(v)
                                 for k, v in rec.distributions.items()})
            except (ValueError, TypeError, KeyError):   # warned by _add_known
                pass
            seen[tlog.key(rec.params)] = rec
            out.records.append(rec)
            out.counters.resumed += 1
        for params in enqueue:
            if tlog.key(params) not in seen:
                study.enqueue_trial(with_template(self.space, params), skip_if_exists=True)
        self.t0 = time.monotonic()
        inflight: dict[Any, tuple[Any, dict[str, Any]]] = {}
        asked = repeats = 0
        try:
            while True:
                # The budget stops asking; candidates already in flight may finish
                # for one more `timeout` (a micro-kernel candidate's proof takes
                # minutes on a loaded machine: cut at the budget, a short run would
                # never see one), then the rest are dropped.
                if self._over_budget() and (not inflight or self.budget is None or
                                            self.elapsed() >= self.budget + self.timeout):
                    out.stopped = "budget"
                    break
                while len(inflight) < self.executor.slots and not self._enough(asked):
                    trial = study.ask()
                    params = self.space.suggest(trial)
                    k = tlog.key(params)
                    if k in seen or self.pruner.skip(params):
                        if k in seen:   # known: tell its value, measure nothing
                            self._tell_known(optuna, study, trial, seen[k])
                            out.counters.reused += 1
                        else:   # a dead template (prune.py): refused, without a proof
                            study.tell(trial, state=optuna.trial.TrialState.PRUNED)
                            out.counters.skipped += 1
                        repeats += 1
                        if repeats >= MAX_REPEATS:
                            break
                        continue
                    repeats = 0
                    asked += 1
                    seen[k] = tlog.Record(-1, params, {}, [], [], [], "failed",
                                          message="in flight")
                    ops = tuple(self.space.ops(params))
                    h = self.executor.submit(prove, self.program, self.target, ops,
                                             str(self.workdir), self.timeout,
                                             self.work.sizes, self._limit(out))
                    inflight[h] = (trial, params)
                if not inflight:
                    out.stopped = "exhausted" if repeats >= MAX_REPEATS else "trials"
                    break
                for h in self.executor.wait(list(inflight), 0.2):
                    trial, params = inflight.pop(h)
                    rec = self._decide(optuna, trial, params, self.executor.result(h), out)
                    seen[tlog.key(params)] = rec
                    self._note(rec, trial.distributions)
                    study.tell(trial, **self._verdict(optuna, rec))
        except KeyboardInterrupt:
            out.stopped = "interrupted"
        finally:
            self.executor.close()
        return out

    # -- stopping -------------------------------------------------------------------

    def elapsed(self) -> float:
        return time.monotonic() - self.t0

    def _over_budget(self) -> bool:
        return self.budget is not None and self.elapsed() >= self.budget

    def _enough(self, asked: int) -> bool:
        return self._over_budget() or (self.trials is not None and asked >= self.trials)

    def _limit(self, out: Outcome) -> float | None:
        """How long the worker lets one single-threaded call of a candidate run before
        calling it too slow: SLOW_FACTOR times the best so far, times the cores (the
        best may be a parallel kernel), at least a second; none before any is timed."""
        best = out.best
        if best is None or best.median_s is None:
            return None
        return max(1.0, SLOW_FACTOR * best.median_s * (os.cpu_count() or 1))

    # -- one candidate --------------------------------------------------------------

    def _decide(self, optuna: Any, trial: Any, params: dict[str, Any], proof: Proof,
                out: Outcome) -> tlog.Record:
        """Time a proved candidate here (the parent, one at a time) and log it."""
        c = out.counters
        status, median, message = proof.status, None, proof.message
        if status == "proved":
            c.proved += 1
            try:
                kernel = build_file(self._local_file(proof), self.program,
                                    proof.annotations, self.target, self.timeout)
                best = out.best
                slow = None if best is None else max(SLOW_FACTOR * best.median_s, 0.05)
                median, ok = measure(kernel, self.work, slow)
                c.measured += 1
                if slow is not None and median > slow:
                    message = (f"timed once: {median / best.median_s:.0f}x the best so far "
                               f"(more than {SLOW_FACTOR}x is not timed precisely)")
                if ok is False:
                    status, message = "failed", ("its output does not match the reference "
                                                 "interpreter (a lowering bug: please report)")
            except (*REFUSALS, AnnotationRefused) as exc:
                status, message = "refused", " ".join(str(exc).split())
            except (CodegenError, BridgeError, OSError) as exc:
                status, message = "failed", " ".join(str(exc).split())[:400]
        if status == "refused":
            c.refused += 1
        elif status == "failed":
            c.failed += 1
        rec = tlog.Record(
            number=len(out.records), params=params,
            distributions={k: optuna.distributions.distribution_to_json(d)
                           for k, d in trial.distributions.items()},
            ops=[op.to_json() for op in proof.ops], steps=list(proof.steps),
            annotations=[list(a) for a in proof.annotations], status=status,
            median_s=median if status == "proved" else None, message=message,
            prove_s=round(proof.prove_s, 3), worker=proof.worker,
            elapsed_s=round(self.elapsed(), 3), program=self.program.name,
            target=self.target, sizes=dict(self.work.sizes), cpu=self.where[0],
            threads=self.where[1])
        tlog.append(self.log_path, rec)
        out.records.append(rec)
        if self.on_record:
            self.on_record(rec)
        if self.progress:
            self.progress(c.line(out.best, self.elapsed()) + f"  [#{rec.number} {rec.status}: "
                          f"{describe(params)}]")
        return rec

    def _local_file(self, proof: Proof) -> Path:
        """The candidate's file here (a Ray worker on another machine wrote its own)."""
        path = Path(proof.vfile)
        if not path.is_file():
            path = self.workdir / path.name
            path.parent.mkdir(parents=True, exist_ok=True)
            write_text_atomic(path, proof.vtext)
        return path

    def _note(self, rec: tlog.Record, dists: dict[str, Any]) -> None:
        """Tell the pruner a finished point (prune.py); say so when its template dies."""
        try:
            full = self.space.ops(rec.params)
        except (KeyError, ValueError, TypeError):   # a resumed point of another space
            return
        why = self.pruner.note(
            rec.params, rec.status, refused_at(full, ops_of(rec)), rec.message,
            {k: getattr(d, "choices", ()) for k, d in dists.items()})
        if why and self.progress:
            self.progress(f"not proposed again: {why}")

    # -- telling Optuna -------------------------------------------------------------

    @staticmethod
    def _verdict(optuna: Any, rec: tlog.Record) -> dict[str, Any]:
        if rec.status == "proved" and rec.median_s is not None:
            return {"values": math.log(max(rec.median_s, 1e-12))}
        state = optuna.trial.TrialState
        bad = rec.status == "refused" or rec.message.startswith(TOO_SLOW)
        return {"state": state.PRUNED if bad else state.FAIL}

    def _tell_known(self, optuna: Any, study: Any, trial: Any, rec: tlog.Record) -> None:
        if rec.number < 0:   # still in flight: tell it as failed; the real one follows
            study.tell(trial, state=optuna.trial.TrialState.FAIL)
        else:
            study.tell(trial, **self._verdict(optuna, rec))

    def _add_known(self, optuna: Any, study: Any, rec: tlog.Record) -> None:
        """A logged candidate as a finished trial (resume: nothing re-measured)."""
        try:
            dists = {k: optuna.distributions.json_to_distribution(v)
                     for k, v in rec.distributions.items()}
            v = self._verdict(optuna, rec)
            params = rec.params
            if "template" in dists and "template" not in params:   # a loop-template point
                params = {**params, "template": "loops"}
            trial = optuna.trial.create_trial(
                params=params, distributions=dists, value=v.get("values"),
                state=v.get("state", optuna.trial.TrialState.COMPLETE))
            study.add_trial(trial)
        except (ValueError, TypeError, KeyError) as exc:
            warnings.warn(f"log record #{rec.number} not given to the sampler ({exc}); it is "
                          "still known and will not be measured again", stacklevel=2)


def ops_of(rec: tlog.Record) -> list[Op]:
    """The directives a record applied."""
    return [Op.from_json(o) for o in rec.ops]
