"""`search`: equality saturation for library idioms, certified by Coq.

    program (a .v file's definition)
      -> e-graph (egraph.py)  -- saturate: rules.py, step by step, within budget
      -> extract (extract.py: LIAR's cost model)
      -> certificate (certify.py: the path, replayed by Coq)
      -> NAME_found.v (a derivation coqc accepts)

Budgets: `steps` saturation steps, `nodes` e-nodes and `timeout` seconds.  A
budget reached stops the saturation cleanly; the best program of the e-graph
as it is then is extracted and certified like any other (`SearchResult.stopped`
says which budget).  egglog runs one step at a time so that the budget is
checked between steps (a step itself is not interrupted: its time is the
granularity of the timeout).
"""

from __future__ import annotations

import dataclasses
import math
import numbers
import subprocess
import tempfile
import time
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path

from egglog import EGraph, ruleset, union

import verisched.targets.avx  # noqa: F401 - registers the AVX2 specifications
import verisched.targets.blas  # noqa: F401 - registers the BLAS specifications
import verisched.targets.gemmini.instrs  # noqa: F401 - registers the Gemmini specifications
from verisched.pybridge import terms as A
from verisched.pybridge.coqterm import pretty, to_coq
from verisched.pybridge.derivation import (
    output_directory,
    same_file,
    unmakeable_directory,
    write_text_atomic,
)
from verisched.pybridge.errors import OutputPathError
from verisched.pybridge.instrs import registered
from verisched.pybridge.session import REPO_ROOT
from verisched.schedule import Schedule
from verisched.schedule.dsl import Program

from . import egraph as E
from .certify import CertificateRefused, Step, find_path, replay
from .costs import COSTS, call_costs
from .extract import calls_last, cost_model
from .glenside import ACC_OUT, LOOPS, REQUIRES, closure, egglog_idioms, unrolled_text
from .kernel_file import load_program
from .latent import lane_egglog_rules, latent_egglog_rules, latent_names
from .operands import bind_operands
from .rules import egglog_rules, idiom_rule, temp_name

IDIOM_FAMILIES = ("blas", "avx2", "gemmini")


class SearchArgumentError(ValueError):
    """A bad argument (unknown idiom family, nonpositive budget)."""


@dataclass
class SearchResult:
    """What a search found and how: the program, the calls in it, the saturation
    steps run, the e-graph's size (e-nodes) at the end, the time, the certificate
    (its steps) and the file Coq accepted (None when `certify=False`)."""

    name: str
    original: A.Expr
    found: A.Expr
    cost: float
    original_cost: float
    steps: int
    enodes: int
    seconds: float
    stopped: str | None
    certificate: list[Step] = field(default_factory=list)
    path: Path | None = None
    saturated: bool = False
    # After the certificate: the operands of calls bound to buffers (search/operands.py,
    # `name_buffer` steps) and the program derived at the end, which the file states.
    bound: list[str] = field(default_factory=list)
    program: A.Expr | None = None
    # `--idioms gemmini`: NAME_gemmini.v, the found program with its hardware loop
    # unrolled into single instructions, which the gemmini target lowers (glenside.py)
    lowering: Path | None = None
    # The file's hypotheses the found derivation does not restate (Program.left_out):
    # it is proved under fewer assumptions than the file makes.
    left_out: tuple[tuple[str, str], ...] = ()
    # Inputs whose shapes the file did not state, read off their loops (Program.inferred):
    # the found derivation states them as hypotheses.
    inferred: tuple[tuple[str, str], ...] = ()

    @property
    def idioms(self) -> dict[str, int]:
        """Calls of the found program by name, with their counts."""
        out: dict[str, int] = {}
        for x in A.walk(self.found):
            # gemmini_acc_out is a scalar primitive of the algorithm, not an idiom
            if isinstance(x, A.Instr) and x.name != ACC_OUT:
                out[x.name] = out.get(x.name, 0) + 1
        return dict(sorted(out.items()))

    def summary(self) -> str:
        calls = " + ".join(f"{k} x {n}" for n, k in self.idioms.items()) or "no idiom"
        stop = f", stopped: {self.stopped}" if self.stopped else ""
        return (f"{self.name}: {calls}; {self.steps} saturation steps, {self.enodes} e-nodes, "
                f"{self.seconds:.2f} s{stop}; cost {self.original_cost:.0f} -> {self.cost:.0f}")


def _enodes(g: EGraph) -> int:
    # the terms of the encoding only (the side-condition relations are not e-nodes)
    return sum(n for fn, n in g.all_function_sizes()
               if repr(fn).split(".")[0] in ("T", "Ix"))


def _check_numbers(*, steps: object, nodes: object, timeout: object) -> None:
    """Each limit named with its value when it is wrong: `steps` an integer of 0 or
    more, `nodes` one above 0, `timeout` seconds above 0."""
    for arg, value, least, whole in (("steps", steps, 0, True), ("nodes", nodes, 1, True),
                                     ("timeout", timeout, None, False)):
        kinds = numbers.Integral if whole else numbers.Real   # numpy's scalars too
        if isinstance(value, bool) or not isinstance(value, kinds):
            raise SearchArgumentError(f"{arg} must be {'an integer' if whole else 'a number'}"
                                      f", not {value!r}")
        if (value < least) if least is not None else not 0 < value < math.inf:
            bound = f"at least {least}" if least is not None else "above 0 (seconds)"
            raise SearchArgumentError(f"{arg} must be {bound}, not {value!r}")


def _check_out(out: str | Path | None) -> None:
    """`out` must be a directory or makeable as one: refused before the search, not
    after it (the command line's --out is checked likewise)."""
    why = unmakeable_directory(out) if out is not None else None
    if why is not None:
        raise SearchArgumentError(f"out {str(out)!r}: cannot be made a directory ({why})")


def _check_not_input(path: str | Path, name: str, out: str | Path | None) -> None:
    """The files the search writes must not be the .v file it reads (`gemv_found.v`
    searched for `gemv` into its own directory would be replaced by the certificate,
    losing the file's other definitions)."""
    target = Path(out) if out is not None else Path(path).parent
    for written in (f"{name}_found.v", f"{name}_found_refused.v", f"{name}_gemmini.v"):
        if same_file(target / written, path):
            raise SearchArgumentError(
                f"{path} is where the search writes {written}: it would replace the input "
                "(rename the file, or give another output directory with --out)")


def saturate(program: Program, *, idioms: str = "blas", steps: int = 10,
             nodes: int = 50_000, timeout: float = 60.0, costs: str = "liar",
             progress: Callable[[str], None] | None = None) -> SearchResult:
    """Grow the e-graph of `program` and extract the best program (no certificate)."""
    if idioms not in IDIOM_FAMILIES:
        raise SearchArgumentError(f"unknown idiom family {idioms!r} (known: "
                                  f"{', '.join(IDIOM_FAMILIES)})")
    _check_numbers(steps=steps, nodes=nodes, timeout=timeout)
    if costs not in COSTS:
        raise SearchArgumentError(f"costs must be one of {', '.join(COSTS)}, not {costs!r}")
    table = call_costs(costs, progress)   # measured once per CPU, before the clock starts
    start = time.monotonic()
    g = EGraph()
    root = g.let("root", E.to_egg(program.expr))
    binders = {b for x in A.walk(program.expr) if (b := A.binder(x)) is not None}
    latent = latent_names(program.expr)
    E.seed(g, binders | set(latent), program.sizes)
    g.register(E.is_root(root))
    specs = [s for s in registered().values() if s.family == idioms]
    glen: list[object] = []
    others: list[A.Expr] = []
    if idioms == "gemmini":
        # Our Gemmini matmul specification, the hardware loop, is the idiom (its body
        # is the per-tile schedule, no pattern): its rule is glenside.py's, and the
        # substituting rules (flatten3, merge_rows, im2col) are applied by Python to the
        # program, their results unioned with the root below (egglog cannot substitute).
        specs = [s for s in specs if s.name in LOOPS]
        glen = egglog_idioms()
        others = closure(program.expr, dict(program.inputs), program.assume)
    # the vector idioms bring the broadcast rule (search/latent.py); the masked forms
    # (guards) are not searched: the encoding's idiom patterns have no guard
    lanes = lane_egglog_rules(latent[3]) if any(s.lanes for s in specs) else []
    rules = ruleset(*egglog_rules(temp_name(program.expr)), *latent_egglog_rules(latent),
                    *lanes, *glen, *[idiom_rule(s) for s in specs if not glen and not any(
                        isinstance(x, A.Guard) for x in A.walk(s.body))]
                    )  # type: ignore[arg-type]
    model = cost_model(frozenset(latent[1:3]),   # the window's binders
                       frozenset(program.signed) | frozenset(program.bools), table)
    _, original_cost = g.extract(root, include_cost=True, cost_model=model)
    for other in others:   # after the original's cost: it is the program's, not the class's
        g.register(union(root).with_(E.to_egg(other)))
        binders |= {b for x in A.walk(other) if (b := A.binder(x)) is not None}
    if others:
        E.seed(g, binders, program.sizes)
    stopped: str | None = None
    done = 0
    saturated = False
    for k in range(1, steps + 1):
        # A step that goes over a budget is undone (egglog's push/pop): the best program
        # is taken from the last e-graph within the budgets, whose extraction (a Python
        # cost model, about 0.5 ms per e-node) stays as cheap as the budget says.
        g.push()
        g.run(E.SIDE_RULES.saturate())
        report = g.run(rules)
        size = _enodes(g)
        elapsed = time.monotonic() - start
        if progress:
            progress(f"{program.name}: step {k}: {size} e-nodes, {elapsed:.2f} s")
        over = (f"node budget ({size} e-nodes > {nodes})" if size > nodes else
                f"time budget ({elapsed:.1f} s > {timeout} s)" if elapsed > timeout else None)
        if over is not None:
            g.pop()
            stopped = (f"{over} at step {k}; step {k} undone, the best program of step "
                       f"{k - 1}'s e-graph ({_enodes(g)} e-nodes)")
            if progress:
                progress(f"{program.name}: stopped: {stopped}")
            break
        done = k
        if not report.updated:
            saturated = True
            break
    g.run(E.SIDE_RULES.saturate())
    term, cost = g.extract(root, include_cost=True, cost_model=model)
    found = calls_last(E.from_egg(term))
    return SearchResult(program.name, program.expr, found, cost[0], original_cost[0], done,
                        _enodes(g), time.monotonic() - start, stopped, saturated=saturated,
                        left_out=program.left_out, inferred=program.inferred)


def search(path: str | Path, name: str, *, idioms: str = "blas", steps: int = 10,
           nodes: int = 50_000, timeout: float = 60.0, out: str | Path | None = None,
           certify: bool = True, costs: str = "liar",
           progress: Callable[[str], None] | None = None) -> SearchResult:
    """Search program `name` of the `.v` file at `path` for `idioms` calls and, with
    `certify`, write `NAME_found.v` (into `out`, a directory, default the file's),
    the derivation from the program to the found one that Coq has just checked.
    Raises CertificateError (certify.py) if no certificate is found or Coq refuses
    one."""
    _check_out(out)
    _check_not_input(path, name, out)
    program = load_program(path, name)
    if idioms == "gemmini":   # the certificate's lemmas (glenside.py)
        program = dataclasses.replace(program, requires=REQUIRES)
    result = saturate(program, idioms=idioms, steps=steps, nodes=nodes, timeout=timeout,
                      costs=costs, progress=progress)
    if progress:
        progress(f"{name}: found {pretty(result.found)}")
    if not certify:
        return result
    result.certificate = find_path(program.expr, result.found, shapes=dict(program.inputs),
                                   assume=program.assume, gemmini=idioms == "gemmini")

    def bind(s: Schedule) -> Schedule:
        s, result.bound = bind_operands(s, progress=progress)
        result.program = s.program
        return s

    sched = replay(program, result.found, result.certificate, progress=progress,
                   before_end=bind)
    with ExitStack() as made:  # a directory made for the files, removed if they fail
        try:
            target = Path(out) if out is not None else Path(path).parent
            try:
                made.enter_context(output_directory(target))
            except OutputPathError as exc:  # what _check_out could not foresee (/proc, root)
                raise SearchArgumentError(f"out {exc}") from None
            text = state_found(sched.to_coq(), name, result.program or result.found)
        finally:
            sched.close()
        if progress:
            progress(f"{name}: coqc {target / f'{name}_found.v'}")
        result.path = write_checked(target / f"{name}_found.v", text)
        if any(isinstance(x, A.Instr) and x.name in LOOPS for x in A.walk(result.found)):
            if progress:
                progress(f"{name}: {name}_gemmini.v (the loop unrolled, for the gemmini "
                         "target)")
            result.lowering = write_checked(
                result.path.parent / f"{name}_gemmini.v",
                unrolled_text(program, [s.coq for s in result.certificate]))
    return result


def state_found(text: str, name: str, found: A.Expr) -> str:
    """The derivation's file with the found program stated and proved to be the derived
    one (`same_program`: call for call, loop for loop), as every example states its
    result."""
    end = f"End {name}_schedule."
    lemma = (f"  Lemma {name}_found_program : {name}_scheduled =\n"
             f"    {to_coq(found)}.\n  Proof. same_program. Qed.\n")
    return text.replace(end, lemma + end)


def check_file(path: Path) -> None:
    """coqc on the written file (the artifact a user keeps is checked, not only the
    live session's replay)."""
    _coqc(path.read_text(), path.name, shown=path)


def write_checked(path: Path, text: str) -> Path:
    """Write `text` to `path` once coqc has accepted it, so a NAME_found.v on disk is
    always one Coq checked (and an older one is never overwritten by a refused one).
    A refused text is kept beside it as NAME_found_refused.v, for the user to read
    (or to run coqc on), and named in the error."""
    refused = path.with_name(f"{path.stem}_refused.v")
    try:
        _coqc(text, path.name, shown=refused)
    except CertificateRefused as exc:
        write_text_atomic(refused, text)
        raise CertificateRefused(f"{exc}\n({path} was not written)") from None
    refused.unlink(missing_ok=True)
    return write_text_atomic(path, text)


def _coqc(text: str, name: str, *, shown: Path) -> None:
    """coqc on `text` as a file called `name` in a scratch directory (its .vo and .glob
    go there); `shown` is the path the messages name."""
    try:
        with tempfile.TemporaryDirectory() as tmp:
            copy = Path(tmp) / name
            copy.write_text(text)
            r = subprocess.run(["coqc", "-Q", str(REPO_ROOT / "coq"), "Verisched", "-w",
                                "-notation-overridden", copy.name], cwd=tmp,
                               capture_output=True, text=True, timeout=600)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise CertificateRefused(f"coqc could not check {shown}: {exc}") from exc
    if r.returncode != 0:  # Coq's locations named by the path the user has
        said = f"{r.stdout}{r.stderr}".replace(f'File "./{name}"', f'File "{shown}"')
        raise CertificateRefused(f"coqc refused {shown}:\n{said}")
