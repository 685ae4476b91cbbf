"""A schedule: a derivation in a live Coq session, driven one directive at a time.

Each method runs one directive's tactic through the bridge and returns the next
`Schedule`; the one it was called on is unchanged, so states branch as
LeanDojo's do (pybridge/derivation.py keeps coqtop's state numbers, and a
step from an older state first goes back to it).  Arguments are checked in
Python before Coq runs (directives.py); legality is Coq's: a refusal raises
`DirectiveRefused` with the step and Coq's message.  Nothing is trusted that
Coq did not check: `.compile()` writes the standalone `.v` file and sends it
through the same pipeline as `verisched compile` (replayed by Coq, `check_safe`
required, size hypotheses become preconditions).

    >>> from verisched.schedule import Schedule, dsl
    >>> n = dsl.sizes("n")[0]
    >>> f = dsl.tensor("f", n)
    >>> p = dsl.program("twice", dsl.gen("i", n, lambda i: f[i] + f[i]))
    >>> s = Schedule.of(p).split("i", 8, "io", "ii")         # doctest: +SKIP
    >>> k = s.compile("c")                                   # doctest: +SKIP
"""

from __future__ import annotations

import re
import tempfile
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from verisched.codegen.errors import CodegenError
from verisched.codegen.normal import check_normal, rank_of, two_pass_tadd
from verisched.pipeline import (
    CheckedProgram,
    FixValue,
    Kernel,
    check,
    get_target,
    load,
)
from verisched.pybridge.derivation import (
    Derivation,
    ProofState,
    StepError,
    check_writable,
    write_text_atomic,
)
from verisched.pybridge.errors import CoqCommandError, ScriptSyntaxError
from verisched.pybridge.outputs import distribute_outputs
from verisched.pybridge.session import CoqSession
from verisched.pybridge.terms import Expr, Gen, Iter, Let, Sum, Tuple, pred_free_vars, walk
from verisched.targets.auto import best_vector_isa

from . import directives as D
from .annotations import build_annotated, check_parallel_target, loops_of
from .coqfile import derived_name, section_sentences, standalone
from .dsl import Cond, IxLike, Program
from .errors import AnnotationRefused, DirectiveRefused, ScheduleArgumentError, ScheduleError


class _Live:
    """The Coq session and open derivation all states of one schedule share."""

    def __init__(self, program: Program, timeout: float) -> None:
        self.program = program
        self.timeout = timeout
        self.branches: list[_Live] = []   # bound()'s sessions, closed with this one
        self.session = CoqSession(timeout=timeout)
        self.session.start()
        sents = section_sentences(program)
        for s in sents[:-1]:
            r = self.session.run(s)
            if not r.ok:
                self.session.close()
                raise ScheduleError(f"program {program.name}: Coq rejected {s!r}: {r.error}")
        try:
            self.derivation = Derivation.begin(self.session, sents[-1], derived_name(program),
                                               f"{derived_name(program)}_correct")
        except CoqCommandError as exc:
            self.session.close()
            raise ScheduleError(str(exc)) from exc

        self.root = self.derivation.state
        # The steps on coqtop's current line of states, each with the state after it.
        # Going back to a state (BackTo) expires every later one, so a branch that is
        # not on this line is replayed from the longest prefix that is.
        self.line: list[tuple[str, ProofState]] = []
        # Finished step lists already run to `done.` in this session (Schedule.to_coq).
        self.proved: set[tuple[str, ...]] = set()
        # Whether `normalize.` after these steps leaves a normal program
        # (Schedule._normalized): asked once per step list, not per save or compile.
        self.normalizes: dict[tuple[str, ...], bool] = {}

    def _resolve(self, steps: tuple[str, ...]) -> ProofState:
        """The state after `steps`, on the current line (replayed where needed)."""
        common = 0
        while (common < len(steps) and common < len(self.line)
               and self.line[common][0] == steps[common]):
            common += 1
        state = self.line[common - 1][1] if common else self.root
        if common < len(self.line):
            del self.line[common:]
        for t in steps[common:]:
            res = self.derivation.run_tactic(t, state=state)
            if isinstance(res, StepError):  # it succeeded before: the session is broken
                raise ScheduleError(f"replaying step {t!r} of this branch failed: {res.message}")
            state = res.after
            self.line.append((t, state))
        return state

    def run(self, tactic: str, steps: tuple[str, ...]) -> ProofState:
        """Run `tactic` after `steps`; Coq's refusal raises DirectiveRefused."""
        if not self.session.alive:
            raise ScheduleError(f"schedule of {self.program.name}: its Coq session is closed "
                                "(the `with` block ended, or close() was called)")
        state = self._resolve(steps)
        res = self.derivation.run_tactic(tactic, state=state)
        if isinstance(res, StepError):
            raise DirectiveRefused(len(steps), tactic, " ".join(res.message.split()),
                                   res.details)
        self.line.append((tactic, res.after))
        return res.after


@dataclass(frozen=True)
class Schedule:
    """One state of a schedule: the program after `steps` (tactic sentences)."""

    live: _Live
    state: ProofState          # as observed after the last step
    steps: tuple[str, ...]
    # Lowering annotations, ("parallel", loop): how loops run, not what is computed.
    annotations: tuple[tuple, ...] = ()  # ("parallel", loop), ("unroll", loop, factor)

    # -- starting and observing ------------------------------------------------

    @classmethod
    def of(cls, program: Program, *, timeout: float = 120.0) -> Schedule:
        """Open a schedule of `program` (a Coq session, about half a second)."""
        if not isinstance(program, Program):
            raise ScheduleArgumentError("Schedule.of", "program", f"{program!r} is not a "
                                        "dsl.program(...)")
        live = _Live(program, timeout)
        first = live.run("reschedule.", ())
        return cls(live, first, ("reschedule.",))

    @property
    def program(self) -> Expr | None:
        """The current program as an AST (None if Coq printed one outside the grammar)."""
        return self.state.program

    @property
    def text(self) -> str:
        """The current program as Coq prints it."""
        return self.state.program_text or ""

    def close(self) -> None:
        """End the Coq session (every state of this schedule stops working), and those
        of the schedules `bound` made from it (a `with` block left their coqtop running)."""
        todo = [self.live]
        while todo:
            live = todo.pop()
            live.session.close()
            todo += live.branches

    def __enter__(self) -> Schedule:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- stepping ---------------------------------------------------------------

    def apply(self, tactic: str) -> Schedule:
        """Run any tactic of the library (`rw get_gen.`, `set_memory Ap GEMMINI_SPAD.`)."""
        t = D.text("apply", "tactic", tactic)
        command = _command_word(t)
        if command is not None:
            raise ScheduleArgumentError(
                "apply", "tactic", f"{command!r} is a Coq command, not a tactic: apply runs "
                "one step of the proof, which the schedule closes itself (Qed) and Coq "
                "then checks")
        gives_up = _GIVE_UP.search(t)
        if gives_up:
            raise ScheduleArgumentError(
                "apply", "tactic", f"{gives_up.group(0)!r} leaves a goal unproved; every step "
                "of a schedule is proved")
        if not t.endswith("."):
            t += "."
        try:
            after = self.live.run(t, self.steps)
        except ScriptSyntaxError as exc:  # the text, not Coq: a user's argument
            raise ScheduleArgumentError("apply", "tactic", f"{exc} (bullets and braces are "
                                        "sentences of their own: join tactics with ';')"
                                        ) from exc
        if after.program_text is None and t != "done.":
            # The goal `program = ?derived` was closed, shelved or given up: no program
            # is left to schedule, and the error would otherwise surface later, at a step
            # the user did not write.  The next step goes back to the state before it.
            raise ScheduleArgumentError(
                "apply", "tactic", f"{t!r} leaves no program to schedule (Coq ran it, and "
                "the goal program = ?derived was closed or put aside); a step rewrites the "
                "program and leaves the goal open, which the schedule closes itself "
                "(check_safe, done)")
        return Schedule(self.live, after, self.steps + (t,), self.annotations)

    def _names(self) -> D.Names:
        p = self.live.program
        return D.names_of(self.program, set(p.sizes) | {t for t, _ in p.inputs},
                          self.state.loop_aliases, self.state.shadowed_loops)

    def split(self, loop: str, factor: IxLike, outer: str, inner: str, *,
              tail: str = "guard") -> Schedule:
        """Split `loop` by `factor` into `outer` and `inner` (Halide's split).  `tail`:
        "guard" (the last tile guarded), "peel" (a guard-free main part and an
        epilogue) or "shift" (Halide's ShiftInward, where the semantics admit it)."""
        d, names = "split", self._names()
        i = D.loop(d, "loop", loop, names)
        k = D.factor(d, "factor", factor, names)
        io = D.fresh(d, "outer", outer, names, reuse=(i,))
        ii = D.fresh(d, "inner", inner, names, reuse=(i,))
        D.distinct(d, {"outer": io, "inner": ii})
        if tail not in D.TAILS:
            raise ScheduleArgumentError(d, "tail", f"{tail!r} is not one of {', '.join(D.TAILS)}")
        suffix = "" if tail == "guard" else f" {tail}"
        return self.apply(f"split {i} by {k} into {io} {ii}{suffix}.")

    def fuse(self, outer: str, inner: str, fused: str) -> Schedule:
        """Fuse `outer` and the loop `inner` directly inside it into one loop `fused`."""
        d, names = "fuse", self._names()
        i, j = D.loop(d, "outer", outer, names), D.loop(d, "inner", inner, names)
        D.distinct(d, {"outer": i, "inner": j})
        ij = D.fresh(d, "fused", fused, names, reuse=(i, j))
        return self.apply(f"fuse {i} {j} into {ij}.")

    def reorder(self, *loops: str) -> Schedule:
        """Put the nest of `loops` in this order, outermost first."""
        d, names = "reorder", self._names()
        if len(loops) < 2:
            raise ScheduleArgumentError(d, "loops", "give at least two loops")
        if len(loops) > 6:  # Coq's reorder notations: 2 to 6 names (Rewrites/Directives.v)
            raise ScheduleArgumentError(d, "loops", f"give at most six loops, got {len(loops)}")
        ls = [D.loop(d, f"loops[{k}]", x, names) for k, x in enumerate(loops)]
        D.distinct(d, {f"loops[{k}]": x for k, x in enumerate(ls)})
        return self.apply(f"reorder {' '.join(ls)}.")

    def tile(self, i: str, j: str, ki: IxLike, kj: IxLike, io: str, jo: str, ii: str,
             ji: str, *, partition: bool = False) -> Schedule:
        """Tile the nest `i`, `j` by `ki` x `kj`: loops `io jo ii ji`, outermost first;
        with `partition`, interior tiles carry no guards."""
        d, names = "tile", self._names()
        i, j = D.loop(d, "i", i, names), D.loop(d, "j", j, names)
        a, b = D.factor(d, "ki", ki, names), D.factor(d, "kj", kj, names)
        new = {k: D.fresh(d, k, v, names, reuse=(i, j))
               for k, v in (("io", io), ("jo", jo), ("ii", ii), ("ji", ji))}
        D.distinct(d, {"i": i, "j": j})
        D.distinct(d, new)
        tail = " partition" if partition else ""
        return self.apply(f"tile {i} {j} by {a} {b} into {new['io']} {new['jo']} "
                          f"{new['ii']} {new['ji']}{tail}.")

    def peel(self, i: str, j: str | None = None, *, into: tuple[str, str] | None = None
             ) -> Schedule:
        """Peel the first and last iteration off loop `i` (Halide's border handling;
        Exo's cut_loop), or the border of the nest `i`, `j`; `into` names the interior
        loops of a 2-D border, kept as one block that a later `tile` can find."""
        names = self._names()
        loops = [D.loop("peel", "i", i, names)]
        if j is not None:
            loops.append(D.loop("peel", "j", j, names))
            D.distinct("peel", {"i": loops[0], "j": loops[1]})
        elif into is not None:
            raise ScheduleArgumentError("peel", "into", "needs two loops (a 2-D border)")
        text = f"peel {' '.join(loops)}"
        if into is not None:
            if not isinstance(into, (tuple, list)) or len(into) != 2:   # "ab" read as a, b
                raise ScheduleArgumentError("peel", "into", f"{into!r}: give 2 names, the "
                                            "interior loops")
            new = [D.fresh("peel", f"into[{k}]", x, names, reuse=loops) for k, x in enumerate(into)]
            D.distinct("peel", {"into[0]": new[0], "into[1]": new[1]})
            text += f" into {new[0]} {new[1]}"
        return self.apply(text + ".")

    def stage(self, tensor: str, loop: str, buffer: str) -> Schedule:
        """Pack the block of `tensor` that loop `loop` reads into a buffer `buffer`
        placed just inside the loop (Exo's stage_mem), guarded at the block's edges.
        `tensor` is an input, or a let buffer of the program (an intermediate result:
        Coq's `stage_let`, decision #155)."""
        names = self._names()
        inputs = {t for t, _ in self.live.program.inputs}
        lets = set(names.buffers) - inputs
        if tensor not in inputs | lets:
            raise ScheduleArgumentError(
                "stage", "tensor", f"no input or let buffer named {tensor!r} (inputs: "
                f"{', '.join(sorted(inputs))}; let buffers: {', '.join(sorted(lets)) or 'none'})")
        i = D.loop("stage", "loop", loop, names)
        b = D.fresh("stage", "buffer", buffer, names)
        return self.apply(f"{'stage' if tensor in inputs else 'stage_let'} {tensor} at {i} "
                          f"as {b}.")

    def stage_rows(self, stage: object, loop: str, buffer: str) -> Schedule:
        """Compute the row stage `stage` (a function `(r, c) -> expression`, or Coq
        text) once per row into a buffer `buffer` at `loop`, whose body reads it at
        three consecutive rows and sums them (Halide's compute_at of a producer with
        a 3-row halo; Fig. 8/9 of the ATL paper).  See docs/directives.md."""
        names = self._names()
        g = D.stage_fun("stage_rows", "stage", stage, names)
        i = D.loop("stage_rows", "loop", loop, names)
        b = D.fresh("stage_rows", "buffer", buffer, names)
        return self.apply(f"stage_rows {g} at {i} into {b}.")

    def merge_guards(self) -> Schedule:
        """Join every stack of nested guards into one."""
        return self.apply("merge_guards.")

    def inline(self, buffer: str) -> Schedule:
        """Inline the let buffer `buffer` into its uses (Halide's compute_inline)."""
        b = D.buffer("inline", "buffer", buffer, self._names())
        return self.apply(f"inline {b}.")

    def sink(self, buffer: str, loop: str) -> Schedule:
        """Move the let `buffer` into `loop`, which it encloses."""
        names = self._names()
        b = D.buffer("sink", "buffer", buffer, names)
        i = D.loop("sink", "loop", loop, names)
        return self.apply(f"sink {b} into {i}.")

    def compute_at(self, buffer: str, loop: str) -> Schedule:
        """Compute the producer `buffer` inside `loop` of its consumer (Halide)."""
        names = self._names()
        b = D.buffer("compute_at", "buffer", buffer, names)
        i = D.loop("compute_at", "loop", loop, names)
        return self.apply(f"compute_at {b} {i}.")

    def name_buffer(self, pattern: str, buffer: str) -> Schedule:
        """Bind the first subterm matching the Coq pattern `pattern` (`_` for any part,
        e.g. "x _[ _ ] _[ _ + _ ]") as a let buffer `buffer`, so that the producer
        directives (compute_root, compute_at, sink) can move it: Halide's producers are
        named functions, and this is how a subexpression becomes one."""
        if not isinstance(pattern, str) or not pattern.strip():
            raise ScheduleArgumentError("name_buffer", "pattern", "empty")
        b = D.fresh("name_buffer", "buffer", buffer, self._names())
        return self.apply(f"name_buffer ({pattern.strip()}) as {b}.")

    def compute_root(self, buffer: str) -> Schedule:
        """Compute the producer `buffer` once, at the top of the program (Halide)."""
        b = D.buffer("compute_root", "buffer", buffer, self._names())
        return self.apply(f"compute_root {b}.")

    def rfactor(self, loop: str, lane: str, buffer: str) -> Schedule:
        """Halide's `f.update().rfactor(loop, lane)`: the reduction `loop` (a sum; from
        `lo`, lane u is its term lo + u) becomes the lanes, indexed by the new
        generation `lane`, of a let `buffer` that holds the partial sums of the sums
        enclosing it (in their order), summed over `loop` once at the end
        (coq/Rewrites/Rfactor.v).  After a split of the
        depth, `vectorize(lane)` then gives independent vector accumulators (either
        tail: the guard tail masks the last chunk's vectors only, decision #150);
        `rfactor` of a split's outer loop then `parallel(lane)` runs a reduction's
        chunks on threads."""
        d, names = "rfactor", self._names()
        k = D.loop(d, "loop", loop, names)
        u = D.fresh(d, "lane", lane, names)
        t = D.fresh(d, "buffer", buffer, names)
        D.distinct(d, {"lane": u, "buffer": t})
        return self.apply(f"rfactor {k} into {u} as {t}.")

    def vectorize(self, loop: str, isa: str = "native", into: str | None = None, *,
                  dtype: str | None = None) -> Schedule:
        """Vectorize the generation `loop` with `isa` ("avx2": 8 float32 lanes, "avx512":
        16, "avx2pd": 4 float64 lanes, "avx512pd": 8; "native": the better this CPU has,
        for `dtype`'s lanes, float32 unless given, targets/auto.py): full vectors
        and a masked tail, the lanes as the instructions of coq/Targets/AVX.v (Exo's
        divide_loop and replace).  Where no generation is named `loop`, the first SUM
        of that name is vectorized instead (Halide's vectorized reduction): a sum over
        vectors of each vector's lanes summed by `reduce_add`, a horizontal add (after
        `rfactor`, the final sum of the lanes: 2 horizontal adds instead of 32 scalar
        ones).  A program not in the lowering's normal form (an
        inlined producer leaves accesses into generations) is normalized first, as a
        step of its own: vectorized as it is, its loads would read from the producer's
        generation, which Coq accepts but no lowering takes.  `into`: the name of the
        vector loops (the full vectors' and the tail's; default `io` for a generation,
        Coq's `io0` under a loop of that name, and the loop's own name for a SUM)."""
        names = self._names()
        i = D.loop("vectorize", "loop", loop, names)
        name = ("" if into is None else
                f" into {D.fresh('vectorize', 'into', into, names, reuse=(i,))}")
        isa = D.isa_arg("vectorize", isa, dtype, _best)
        base = self
        if not self._normal() and self._normalized():
            base = self.apply("normalize.")
        out = base.apply(f"vectorize {i} with {isa}{name}.")
        kind = Gen if any(isinstance(x, Gen) and x.var == i for x in walk(base.program)) \
            else Sum
        what = "generations" if kind is Gen else "sums"
        same = sum(1 for x in walk(base.program) if isinstance(x, kind) and x.var == i)
        if same > 1:   # Coq's directive takes the first (pre-order): say what stays scalar
            warnings.warn(f"vectorize: {same} {what} are named {i}; the first was "
                          f"vectorized, the other {same - 1} stay scalar (rename_loop each "
                          "to vectorize it)", stacklevel=2)
        return out

    def unroll_time(self, factor: int) -> Schedule:
        """Unroll the first time iteration by `factor` (coq/Rewrites/Time.v,
        `titer_unroll`): `factor` consecutive steps, chained by lets named `v`, applied
        T / factor times after T mod factor single steps.  `inline("v")` then fuses the
        steps into one pass."""
        if isinstance(factor, bool) or not isinstance(factor, int) or factor < 1:
            raise ScheduleArgumentError("unroll_time", "factor",
                                        f"{factor!r} is not a positive integer")
        if not any(isinstance(n, Iter) for n in walk(self.program)):
            raise ScheduleArgumentError("unroll_time", "factor",
                                        "the program has no time iteration (ITER)")
        return self.apply(f"unroll_time {factor}.")

    def fission(self, loop: str) -> Schedule:
        """Split `loop` over the `<+>` in its body (Exo's fission): the guards, loops and
        then `loop` itself are distributed over the two operands, each copy keeping the
        loop names.  A split before it tiles both operands alike (C's copy with the
        product of a GEMM)."""
        i = D.loop("fission", "loop", loop, self._names())
        return self.apply(f"fission {i}.")

    def register_tile(self, i: str, j: str, mr: int, nr: int, isa: str, *,
                      into: tuple[str, str, str, str, str], buffer: str,
                      rows: str = "exact", dtype: str | None = None) -> Schedule:
        """The register tile of a matmul-like nest (`i` over `j` over a reduction, or a
        nest of three such as a convolution's): an `mr` x `nr` tile of `nr / lanes`
        vectors of the ISA's lanes, its value bound as `buffer`, the depth outside (Exo's
        divide_loop, reorder and stage_mem of the accumulator).  `into` names the
        micro-panel, row, strip, vector and lane loops.  `rows="exact"`: Coq refuses an
        extent of `i` that is not q * mr (a row block of an SGEMM); `rows="guard"`: any
        extent, the last micro-panel guarded (a convolution's output row).  `isa` may be
        "native" (the CPU's best vector ISA for `dtype`'s lanes, as `select_instr`'s
        default; "avx2pd" / "avx512pd" for float64)."""
        d, names = "register_tile", self._names()
        if rows not in ("exact", "guard"):
            raise ScheduleArgumentError(d, "rows", f"{rows!r} is not 'exact' or 'guard'")
        a, b = D.loop(d, "i", i, names), D.loop(d, "j", j, names)
        D.distinct(d, {"i": a, "j": b})
        isa = D.isa_arg(d, isa, dtype, _best)
        for arg, k in (("mr", mr), ("nr", nr)):
            if isinstance(k, bool) or not isinstance(k, int) or k <= 0:
                raise ScheduleArgumentError(d, arg, f"{k!r} is not a positive int (a register "
                                                    "tile is unrolled: its sizes are constants)")
        if isinstance(into, str) or not isinstance(into, (tuple, list)) or len(into) != 5:
            raise ScheduleArgumentError(d, "into", f"{into!r}: give 5 names: micro-panel, row, "
                                                   "strip, vector, lane")
        new = {f"into[{k}]": D.fresh(d, f"into[{k}]", x, names) for k, x in enumerate(into)}
        new["buffer"] = D.fresh(d, "buffer", buffer, names)
        D.distinct(d, new)
        loops = " ".join(new[f"into[{k}]"] for k in range(5))
        return self.apply(f"register_tile {a} {b} by {mr} {nr} lanes {D.ISAS[isa]} "
                          f"into {loops} as {new['buffer']}"
                          + (" guard." if rows == "guard" else "."))

    def select_instr(self, buffer: str, isa: str = "native", *,
                     dtype: str | None = None) -> Schedule:
        """The register tile `buffer` in `isa`'s instructions (Exo's replace): partial
        micro-tiles skipped, masked stores, broadcast x load products, `buffer` in vector
        registers.  Coq refuses a tile that is not an outer product of packed operands.
        `isa="native"`: the better of avx2 and avx512 this CPU has (with
        `dtype="float64"`, of avx2pd and avx512pd); the tile's lanes (register_tile) must
        be that library's."""
        b = D.buffer("select_instr", "buffer", buffer, self._names())
        isa = D.isa_arg("select_instr", isa, dtype, _best)
        # Coq's refusal of a mismatch names the tile's unmasked lanes, not the cause.
        built = [int(m.group(1)) for t in self.steps if (m := _TILE_LANES.match(t))
                 and m.group(2) == b]
        if built and built[-1] != D.ISAS[isa]:
            raise ScheduleArgumentError("select_instr", "isa", f"{isa} has {D.ISAS[isa]} "
                                        f"lanes, but register_tile built {b} with "
                                        f"{built[-1]}: give both the same isa")
        return self.apply(f"select_instr {b} with {isa}.")

    def parallel(self, loop: str) -> Schedule:
        """Run `loop`'s iterations on threads (Halide's parallel; Exo's
        parallelize_loop).  Legal only on a generation: its iterations write disjoint
        slices of the output by construction (targets/openmp.py, rule 3), while a
        summation's accumulate into the same storage.  The program is unchanged, so no
        proof is involved; `compile` checks that the lowering runs the loop in
        parallel, or says why not."""
        names = self._names()
        i = D.annotated_loop("parallel", "loop", loop, names)
        kinds = {type(x).__name__ for x in walk(self.program) if isinstance(x, (Gen, Sum))
                 and x.var == i}
        if "Sum" in kinds:
            raise AnnotationRefused(f"parallel {i}: loop {i} is a reduction (SUM): its "
                                    "iterations accumulate into the same storage")
        if ("parallel", i) in self.annotations:
            return self
        return Schedule(self.live, self.state, self.steps, self.annotations + (("parallel", i),))

    def replace(self, instr: str, *, every: bool = False, at: str | None = None) -> Schedule:
        """Exo's replace: rewrite the first subterm that is the specification of the
        instruction `instr` (coq/Targets/AVX.v, Gemmini.v: any registered `AtlInstr`)
        into a call of it (`use_instr`), or every such subterm (`every`, `use_instr_all`),
        or the one matching the Coq pattern `at`.  Coq checks the subterm is the
        specification; a subterm that is not refuses with Coq's message."""
        if not isinstance(instr, str) or not D.IDENT.fullmatch(instr):
            raise ScheduleArgumentError("replace", "instr", f"{instr!r} is not an identifier")
        if every and at is not None:
            raise ScheduleArgumentError("replace", "at", "give `at` or `every`, not both")
        at = None if at is None else D.text("replace", "at", at)
        if every:
            return self.apply(f"use_instr_all {instr}.")
        return self.apply(f"use_instr {instr}" + (f" at ({at})." if at else "."))

    def store_at(self, buffer: str, loop: str) -> Schedule:
        """Allocate the let buffer `buffer` once per iteration of the enclosing `loop`
        instead of at every evaluation of its let (Halide's store_at,
        Halide-semantics seed Sec. 8.4: the allocation moves to just inside a loop that
        still encloses every access).  Storage only: the program is unchanged, so
        nothing is proved; `compile` honours it or says why it cannot (the extents
        depend on a loop inside `loop`; a parallel loop lies between them)."""
        names = self._names()
        b = D.buffer("store_at", "buffer", buffer, names)
        i = D.annotated_loop("store_at", "loop", loop, names)
        if not _encloses(self.program, i, b):
            raise AnnotationRefused(f"store_at {b} {i}: no loop {i} encloses the let of {b} "
                                    "(the allocation must enclose every use)")
        kept = tuple(a for a in self.annotations if not (a[0] == "store_at" and a[1] == b))
        return Schedule(self.live, self.state, self.steps, kept + (("store_at", b, i),))

    def unroll(self, loop: str, factor: int = 8) -> Schedule:
        """Ask the C compiler to unroll `loop` by `factor` (`#pragma GCC unroll`, placed by
        `compile` before the loop in the emitted C; Halide's unroll, Exo's unroll_loop).
        A lowering annotation: what the program computes is unchanged."""
        i = D.annotated_loop("unroll", "loop", loop, self._names())
        if isinstance(factor, bool) or not isinstance(factor, int) or not 1 < factor <= 64:
            raise ScheduleArgumentError("unroll", "factor", f"{factor!r} is not an int in 2..64")
        ann = tuple(a for a in self.annotations if a[:2] != ("unroll", i))
        return Schedule(self.live, self.state, self.steps, ann + (("unroll", i, factor),))

    def bound(self, cond: Cond) -> Schedule:
        """Assume a size bound (`s.bound(n >= 16)`): a hypothesis the directives' side
        conditions may use, and a precondition the kernel checks at run time.  The
        derivation is restated with it and its steps replayed, in a new Coq session
        (a hypothesis cannot be added to an open derivation)."""
        if not isinstance(cond, Cond):
            raise ScheduleArgumentError("bound", "cond", f"{cond!r} is not a predicate over "
                                        "the sizes (write it as n >= 16)")
        p = self.live.program
        stray = sorted(pred_free_vars(cond.pred) - set(p.sizes))
        if stray:
            raise ScheduleArgumentError("bound", "cond", f"{', '.join(stray)} is not a size "
                                        f"of the program (sizes: {', '.join(p.sizes)})")
        live = _Live(replace(p, assume=p.assume + (cond.pred,)), self.live.timeout)
        self.live.branches.append(live)
        state = live.root
        for k, t in enumerate(self.steps):
            state = live.run(t, self.steps[:k])
        return Schedule(live, state, self.steps, self.annotations)

    def rw(self, lemma: str, *, at: str | None = None, reverse: bool = False) -> Schedule:
        """One library rewrite (`rw L [at pat]`), for what no directive says."""
        lemma = D.text("rw", "lemma", lemma)
        arrow = "<- " if reverse else ""
        if " " in lemma and not (lemma.startswith("(") and lemma.endswith(")")):
            lemma = f"({lemma})"  # an applied lemma is one argument of rw
        where = f" at ({at})" if at else ""
        return self.apply(f"rw {arrow}{lemma}{where}.")

    def simpl_guard(self) -> Schedule:
        return self.apply("simpl_guard.")

    def fuse_outputs(self) -> Schedule:
        """Sweep a program's two outputs with one loop (coq/Rewrites/Outputs.v): a
        generation or a sum (`SUM` or `x <+> SUM`, a tensor or a scalar) over the same
        range in each output becomes one SUM of pairs, each iteration adding into both
        outputs, so an input both outputs read is read once."""
        if not isinstance(distribute_outputs(self.program), Tuple):
            raise ScheduleArgumentError("fuse_outputs", "program",
                                        "the program has one output (a pair is needed)")
        return self.apply("fuse_outputs.")

    def rename_loop(self, loop: str, new: str) -> Schedule:
        names = self._names()
        i = D.loop("rename_loop", "loop", loop, names, printed=True)  # the annotations'
        held = D.loop("rename_loop", "loop", loop, names)            # the tactic's
        out = self.apply(f"rename_loop {held} into "
                         f"{D.fresh('rename_loop', 'new', new, names)}.")
        # another loop printed i remains (a sibling of the same name): the annotations
        # stay on it; not one that printed otherwise before (i0), whose name came back
        if i in loops_of(out.program) and i not in names.shadowed:
            return out
        moved = tuple((a[0], new if a[1] == i else a[1], *a[2:]) if a[0] != "store_at"
                      else (a[0], a[1], new if a[2] == i else a[2]) for a in out.annotations)
        return Schedule(out.live, out.state, out.steps, moved)

    # -- results -----------------------------------------------------------------

    def finished_steps(self) -> tuple[str, ...]:
        """The steps, ended by `check_safe.` and `done.` (added unless present), and
        by `normalize.` before them when the program is not yet in the lowering's normal
        form (an inlined producer leaves accesses into generations): a proved rewrite,
        chosen by the untrusted normal-form check only as to whether it is needed."""
        steps = self.steps
        if steps[-1] == "done.":
            return steps
        if steps[-1] != "check_safe.":
            if not self._normal() or (self._two_pass() and self._normalized()):
                steps += ("normalize.",)
            steps += ("check_safe.",)
        return steps + ("done.",)

    def _parts(self) -> tuple[Expr, ...]:
        parts = distribute_outputs(self.program)  # several outputs: each on its own
        return parts.items if isinstance(parts, Tuple) else (parts,)

    def _ranks(self) -> dict[str, int]:
        return {t: len(shape) for t, shape in self.live.program.inputs}

    def _normal(self) -> bool:
        if self.program is None:
            return False
        ranks = self._ranks()
        try:
            for x in self._parts():
                check_normal(x, ranks, rank_of(x, ranks) or 0)
        except CodegenError:
            return False
        return True

    def _two_pass(self) -> bool:
        """A tensor `<+>` the lowering would store in two passes (codegen/normal.py)."""
        return any(two_pass_tadd(x, self._ranks()) for x in self._parts())

    def _normalized(self) -> bool:
        """Whether `normalize` leaves a program in normal form: it fuses `GEN <+> GEN`
        into one loop (tadd_gen), but expands a split operand of `<+>` into accesses
        into the split that no lowering takes (tadd_expand); then the two passes stay."""
        known = self.live.normalizes.get(self.steps)
        if known is None:
            try:
                known = self.apply("normalize.")._normal()
            except ScheduleError:
                known = False
            self.live.normalizes[self.steps] = known
        return known

    def to_coq(self, *, finished: bool = True) -> str:
        """A standalone `.v` file that `coqc` checks on its own.  `finished`: ended by
        check_safe and done (proved in this session first, so a program whose bounds
        Coq cannot prove raises DirectiveRefused here)."""
        if not finished:
            return standalone(self.live.program, self.steps, closed=False)
        steps = self.finished_steps()
        if steps not in self.live.proved:   # once per branch, not per save or compile
            for k in range(len(self.steps), len(steps)):
                self.live.run(steps[k], steps[:k])
            self.live.proved.add(steps)
        return standalone(self.live.program, steps, closed=True)

    def save(self, path: str | Path) -> Path:
        """Write `to_coq()` to `path` atomically (never a half-written file), with a
        plain `open`'s mode; a path that cannot be written raises OutputPathError
        naming it."""
        out = Path(path)
        check_writable(out)
        write_text_atomic(out, self.to_coq())
        return out

    def checked(self, *, fix: Mapping[str, FixValue] | None = None,
                unsafe: bool = False, dtype: str | None = None) -> CheckedProgram:
        """The derived program, replayed from the standalone file by Coq and checked
        as `verisched compile` checks it (pipeline.check)."""
        text = self.to_coq()
        with tempfile.TemporaryDirectory(prefix="vs-schedule-") as tmp:
            path = Path(tmp) / f"{self.live.program.name}_schedule.v"
            path.write_text(text)
            derived = load(path, derived_name(self.live.program))
        return check(derived, fix=fix, unsafe=unsafe, dtype=dtype)

    def compile(self, target: str = "native", *, fix: Mapping[str, FixValue] | None = None,
                unsafe: bool = False, dtype: str | None = None) -> Kernel:
        """The scheduled kernel for `target` (default `native`: the ISA the schedule's
        instructions are in, or this CPU's best for an ISA-neutral one; targets/auto.py),
        callable with numpy arrays.  Each
        `parallel` annotation must be honoured by the target's lowering, or this
        raises AnnotationRefused naming the loop and why."""
        t = get_target(D.text("compile", "target", target))
        check_parallel_target(self.annotations, t)
        checked = self.checked(fix=fix, unsafe=unsafe, dtype=dtype)
        return build_annotated(checked, self.annotations, t)



# Coq's vernacular commands begin with a capital (Qed, Admitted, Abort, Axiom,
# Definition, Require, Set, ...), tactics do not (none of the library's does).  Some
# capitalised words may still begin a proof step: the controls that run the sentence
# after them (whose first word is then the one judged) and the queries, which change
# nothing.
_CONTROLS = frozenset({"Time", "Timeout", "Fail", "Instructions"})
_QUERIES = frozenset({"Show", "Check", "Print", "About", "Search", "Locate", "Compute"})
# Tactics that close a goal without a proof (Coq's `admit`, `give_up`): refused by name,
# as a side goal given up would otherwise fail only at the final Qed.
_GIVE_UP = re.compile(r"(?<![\w'])(?:admit|give_up)(?![\w'])")


def _command_word(sentence: str) -> str | None:
    """The first word of `sentence` where it is a Coq command rather than a tactic.
    A command in the middle of a proof would end it (`Qed.`, `Admitted.`: an anomaly in
    Coq 8.16 for a Derive), abandon it (`Abort.`, which left the session without a
    goal), or add to the environment (`Axiom`, caught only at the end by Print
    Assumptions); attributes (`#[local] ...`) introduce commands too, and a control
    (`Time Axiom ...`) does not hide one."""
    rest = sentence.strip()
    while True:
        if rest.startswith("#["):
            return rest[:rest.find("]") + 1] or rest
        m = re.match(r"([A-Za-z_][A-Za-z_0-9']*)\s*(?:\d+\s+)?", rest)
        if m is None or not m.group(1)[0].isupper() or m.group(1) in _QUERIES:
            return None
        if m.group(1) not in _CONTROLS:
            return m.group(1)
        rest = rest[m.end():]


def _encloses(e: Expr | None, loop: str, buffer: str) -> bool:
    """Whether some generation or sum named `loop` has a let of `buffer` inside it."""
    return e is not None and any(
        isinstance(x, (Gen, Sum)) and x.var == loop
        and any(isinstance(y, Let) and y.var == buffer for y in walk(x.body))
        for x in walk(e))


def _best(dtype: str) -> str:
    """The CPU's best vector library for `dtype`'s lanes (`isa="native"`)."""
    return best_vector_isa(dtype=dtype)


_TILE_LANES = re.compile(r"register_tile .* lanes (\d+) into .* as (\w+)")
