"""Evaluating one candidate: prove it (a worker), then build and time it (the parent).

Why two halves: proving is Coq's work (seconds per candidate, one core each) and
runs in parallel on a process pool or a Ray cluster (tune/executors.py); timing
must see a quiet core, so it runs in the parent, one candidate at a time
(docs/decisions.md, the autotuning entries).

`prove` applies the candidate's directives with `verisched.schedule.Schedule`; a
directive's own refusal (`DirectiveRefused`, `AnnotationRefused`,
`ScheduleArgumentError`) makes the candidate "refused", which is how illegal points
are pruned.  A candidate that passes is written as a standalone `.v` file, replayed
from that file by Coq (pipeline.load: the same check as `verisched compile`) and
built once, so the parent's build of the same file comes from the caches.
`measure` then times the kernel on the user's sizes (warm-up, then the median of
repeated calls) and compares its output with the reference once.
"""

from __future__ import annotations

import hashlib
import os
import statistics
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from verisched.codegen.errors import CodegenError
from verisched.pipeline import Kernel, check, float_agrees, get_target, load
from verisched.pybridge.coqterm import pred_str
from verisched.pybridge.derivation import write_text_atomic
from verisched.pybridge.errors import BridgeError
from verisched.pybridge.interp import InterpError, evaluate
from verisched.pybridge.terms import eval_idx, eval_pred
from verisched.schedule import (
    AnnotationRefused,
    DirectiveRefused,
    Schedule,
    ScheduleArgumentError,
    ScheduleError,
)
from verisched.schedule.annotations import build_annotated, check_parallel_target
from verisched.schedule.coqfile import derived_name
from verisched.schedule.dsl import Program
from verisched.targets.base import size_fits

from .space import Op

REFUSALS = (DirectiveRefused, AnnotationRefused, ScheduleArgumentError)


@dataclass(frozen=True)
class Proof:
    """What a worker sends back: whether the candidate was proved, its applied
    directives, the finished Coq steps, the lowering annotations and the file."""

    status: str                          # "proved", "refused" or "failed"
    ops: tuple[Op, ...] = ()
    steps: tuple[str, ...] = ()
    annotations: tuple[tuple, ...] = ()
    vfile: str = ""
    vtext: str = ""
    message: str = ""
    prove_s: float = 0.0
    worker: str = ""


# One open schedule (a coqtop session) per program in each worker process: later
# candidates branch from its root, so a worker pays coqtop's start once.
_ROOTS: dict[Program, Schedule] = {}


def _root(program: Program, timeout: float) -> Schedule:
    s = _ROOTS.get(program)
    if s is None or not s.live.session.alive:
        s = _ROOTS[program] = Schedule.of(program, timeout=timeout)
    return s


def candidate_path(workdir: Path, vtext: str) -> Path:
    """Where a candidate's standalone file lives: named by its content, so the parent
    and a worker name the same file (the pipeline's caches are keyed by path too)."""
    return workdir / f"cand_{hashlib.sha256(vtext.encode()).hexdigest()[:16]}.v"


def prove(program: Program, target: str, ops: tuple[Op, ...], workdir: str,
          timeout: float = 120.0, sizes: Mapping[str, int] | None = None,
          limit: float | None = None) -> Proof:
    """Apply `ops` to `program` in Coq, finish the proof, replay the standalone file
    and build it for `target`; with `sizes` and `limit`, also call the kernel once
    (gate_call) and fail it as too slow when that call runs past `limit` seconds.
    Never raises for a candidate's own fault: a refusal or failure is the returned
    status (a worker must survive any candidate)."""
    import socket

    t0 = time.perf_counter()
    who = f"{socket.gethostname()}:{os.getpid()}"
    applied: list[Op] = []
    try:
        s = _root(program, timeout)
        for op in ops:
            try:
                s = getattr(s, op.method)(*op.call_args(), **dict(op.kwargs))
            except DirectiveRefused:
                if op.optional:
                    continue
                raise
            applied.append(op)
        check_parallel_target(s.annotations, get_target(target))
        vtext = s.to_coq()        # check_safe and done, in this session
        steps = s.finished_steps()
        path = candidate_path(Path(workdir), vtext)
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists():   # content-addressed: a half-written one would be reused
            write_text_atomic(path, vtext)
        kernel = build_file(path, program, s.annotations, target, timeout)
        if sizes is not None and limit is not None and not gate_call(kernel, program, sizes,
                                                                     limit):
            return Proof("failed", tuple(applied), message=f"{TOO_SLOW}: one call ran past "
                         f"{limit:.3g} s on one thread, stopped", prove_s=time.perf_counter() - t0,
                         worker=who)
    except REFUSALS as exc:
        return Proof("refused", tuple(applied), message=_one_line(exc),
                     prove_s=time.perf_counter() - t0, worker=who)
    except (ScheduleError, CodegenError, BridgeError, OSError) as exc:
        _ROOTS.pop(program, None)  # the session may be broken: start a fresh one
        return Proof("failed", tuple(applied), message=_one_line(exc),
                     prove_s=time.perf_counter() - t0, worker=who)
    return Proof("proved", tuple(applied), steps, s.annotations, str(path), vtext,
                 prove_s=time.perf_counter() - t0, worker=who)


TOO_SLOW = "too slow"


def gate_call(kernel: Kernel, program: Program, sizes: Mapping[str, int], limit: float
              ) -> bool:
    """Whether one call of `kernel` at `sizes` (one thread) ends within `limit` seconds.

    Why here and in a child process: a schedule can be correct and proved yet
    asymptotically worse (a producer computed inside a loop it does not depend on:
    the chained matmul's A·B recomputed per output element is n^5), and a C call
    cannot be interrupted from Python, so the parent would hang on it.  The call runs
    in a forked child of this worker (which never ran OpenMP, so the child's OpenMP
    runtime starts fresh), killed at the limit."""
    import signal

    inputs = random_inputs(program, sizes)
    ks = kernel_sizes(kernel, sizes)
    pid = os.fork()
    if pid == 0:   # the child: one call, then leave without any cleanup
        try:
            set_threads = getattr(kernel, "set_threads", None)
            if set_threads is not None:
                try:
                    set_threads(1)
                except CodegenError:
                    pass
            kernel.call(inputs, ks)
        finally:
            os._exit(0)
    end = time.monotonic() + limit
    while time.monotonic() < end:
        done, _ = os.waitpid(pid, os.WNOHANG)
        if done:
            return True
        time.sleep(0.01)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    return False


def build_file(path: Path, program: Program, annotations: tuple[tuple, ...], target: str,
               timeout: float = 120.0) -> Kernel:
    """The kernel of a candidate's standalone file: replayed by Coq (or taken from
    the cache of checked derivations), checked (check_safe required) and built with
    its annotations."""
    derived = load(path, derived_name(program), timeout=timeout)
    return build_annotated(check(derived), annotations, target)


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text if len(text) <= 400 else text[:397] + "..."


# -- timing (the parent) -----------------------------------------------------------


@dataclass
class Workload:
    """The user's sizes, random inputs at those sizes (seeded; the same for every
    candidate) and the reference output, computed once."""

    sizes: dict[str, int]
    inputs: dict[str, np.ndarray]
    reference: np.ndarray | None = None
    note: str = ""
    warmup: int = 2
    repeat: int = 7
    # OpenMP threads of a parallel kernel while it is timed: during the search, the
    # cores the proving workers leave free (an OpenMP team sharing a core with a
    # worker waits at every barrier: measured 100x slower); None: every core (the
    # final comparison, with no worker running).
    threads: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def workload(program: Program, sizes: Mapping[str, int], seed: int = 0) -> Workload:
    """Random float32 inputs of the program's shapes at `sizes` (normal, seeded) and
    the reference interpreter's output of the original program on them (float64)."""
    check_sizes(program, sizes)
    inputs = random_inputs(program, sizes, seed)
    # every size given: the program's, and any other the hand-derived schedule takes
    # (block sizes of a derivation); a candidate's kernel takes the program's
    w = Workload({k: int(v) for k, v in sizes.items()}, inputs)
    try:
        w.reference = evaluate(program.expr, {k: v.astype(np.float64) for k, v in inputs.items()},
                               dict(w.sizes), np.float64)
    except InterpError as exc:
        w.note = f"the reference interpreter cannot evaluate the program: {exc}"
    return w


def check_sizes(program: Program, sizes: Mapping[str, int]) -> None:
    """Refuse sizes no kernel takes before the search proves anything: every candidate's
    kernel would refuse them after its proof (a size below 1, beyond a C int, a flag
    other than 0/1, a violated hypothesis), and numpy could not draw inputs of a
    negative extent.  The same rules as a kernel's call (targets/native.py)."""
    missing = sorted(set(program.sizes) - set(sizes))
    if missing:
        raise ScheduleArgumentError("tune", "sizes", f"no value for {', '.join(missing)} "
                                    f"(sizes of {program.name}: {', '.join(program.sizes)})")
    for s in program.sizes:
        v = sizes[s]
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise ScheduleArgumentError("tune", "sizes", f"{s} must be an int, got {v!r}")
        if s in program.bools:
            ok, rule = v in (0, 1), "a boolean: 0 or 1"
        elif s in program.signed:
            ok, rule = size_fits(v, signed=True), "must fit in a C int"
        else:
            ok, rule = size_fits(v), "must be positive (and fit in a C int)"
        if not ok:
            raise ScheduleArgumentError("tune", "sizes", f"{s} = {v}: {rule}")
    values = {s: int(sizes[s]) for s in program.sizes}
    for p in program.assume:   # printed as the section states it: `2 <= n`, not `2 <=? n`
        if not eval_pred(p, values):
            raise ScheduleArgumentError(
                "tune", "sizes", f"{values} violate {program.name}'s hypothesis "
                f"{pred_str(p).replace('?', '')}; its schedules are only proved where it holds")


def random_inputs(program: Program, sizes: Mapping[str, int], seed: int = 0
                  ) -> dict[str, np.ndarray]:
    """Random normal float32 inputs of the program's shapes at `sizes` (seeded)."""
    rng = np.random.default_rng(seed)
    return {t: rng.standard_normal(tuple(eval_idx(d, sizes) for d in shape))
            .astype(np.float32) for t, shape in program.inputs}


def measure(kernel: Kernel, w: Workload, slow: float | None = None
            ) -> tuple[float, bool | None]:
    """Median seconds of `w.repeat` calls after `w.warmup` untimed ones, and whether
    the output matched the reference (None: no reference).  A kernel whose first
    (checked) call already takes more than `slow` seconds is not called again: that
    call's time is returned (a candidate far behind the best needs no precise time,
    and its calls would hold the search, and a Ctrl-C, for as long)."""
    sizes = kernel_sizes(kernel, w.sizes)
    set_threads = getattr(kernel, "set_threads", None)
    if set_threads is not None:
        try:
            set_threads(w.threads or os.cpu_count() or 1)
        except CodegenError:
            pass   # not an OpenMP kernel
    _, shape = kernel.extents(sizes)
    out = np.empty(shape, dtype=np.dtype(getattr(kernel, "dtype", np.float32)))
    t0 = time.perf_counter()
    run = kernel.bind(w.inputs, sizes, out)   # one checked call first
    first = time.perf_counter() - t0
    ok = None if w.reference is None else float_agrees(out, w.reference)
    if slow is not None and first > slow:
        return first, ok
    for _ in range(w.warmup):
        run()
    times = []
    for _ in range(w.repeat):
        t0 = time.perf_counter()
        run()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), ok


def kernel_sizes(kernel: Kernel, sizes: Mapping[str, int]) -> dict[str, int]:
    """The sizes `kernel` takes (a derived program may no longer mention every size)."""
    lowered = getattr(kernel, "lowered", None)
    if lowered is None:
        return dict(sizes)
    missing = [a for a, _ in lowered.sizes if a not in sizes]
    if missing:
        raise ScheduleArgumentError("tune", "sizes", f"kernel {kernel.name} takes size "
                                    f"{', '.join(missing)}: give it (--size {missing[0]}=INT)")
    return {a: int(sizes[a]) for a, _ in lowered.sizes}
