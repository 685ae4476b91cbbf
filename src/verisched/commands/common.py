"""What `verisched compile` and `verisched run` share: the arguments naming a
derivation and a target, their parsing into typed values, and how a user's
mistake becomes one line on stderr and a non-zero exit (never a traceback).

Both commands are thin callers of verisched.pipeline: load -> check ->
lower -> render -> build.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import replace
from fractions import Fraction
from pathlib import Path
from typing import TextIO, TypeVar

from verisched import pipeline
from verisched.codegen.errors import CodegenError
from verisched.codegen.ir import kernel_name_problem
from verisched.pybridge.coqterm import parse_index
from verisched.pybridge.derivation import check_writable, unmakeable_directory
from verisched.pybridge.errors import BridgeError, OutputPathError, TermParseError
from verisched.pybridge.replay import Signature, outline_file
from verisched.pybridge.terms import Shape

T = TypeVar("T")


class UsageError(CodegenError):
    """A command-line argument that cannot be read."""


def positive_int(text: str) -> int:
    """An argparse type: an integer of at least 1 (a count of threads, steps, jobs)."""
    return _positive(text, int)


def thread_count(text: str) -> int:
    """An argparse type: OpenMP threads, 1 to targets.native.max_threads() (libgomp
    ended the process on 2^31 - 1 after the replay, with no word from us)."""
    from verisched.targets.native import THREADS_RULE, max_threads

    n = _positive(text, int)
    if n > max_threads():
        raise argparse.ArgumentTypeError(f"{text!r}: at most {max_threads()} threads "
                                         f"({THREADS_RULE})")
    return n


def seed_int(text: str) -> int:
    """An argparse type: a random seed, an integer of 0 or more (numpy's generators
    refuse a negative one, with a message that named no flag)."""
    return _positive(text, int, least=0)


def positive_float(text: str) -> float:
    """An argparse type: a number of seconds above 0 (a zero or negative limit would
    time out every Coq command, after starting the session)."""
    return _positive(text, float)


def nonnegative_float(text: str) -> float:
    """An argparse type: seconds or milliseconds of 0 or more (a wait that may be
    skipped: `bench --quiet-wait 0`)."""
    return _positive(text, float, least=0.0)


def _positive(text: str, kind: Callable[[str], T], least: float | None = None) -> T:
    """`text` as `kind`, above 0 (or at least `least`), and finite; written plainly
    (`plain_number`)."""
    try:
        value = kind(text) if plain_number(text) else None
    except ValueError:
        value = None
    ok = value is not None and value < math.inf and (  # type: ignore[operator]
        value > 0 if least is None else value >= least)  # type: ignore[operator]
    if not ok:
        what = "an integer" if kind is int else "a number"
        bound = "above 0" if least is None else f"of {least:g} or more"
        raise argparse.ArgumentTypeError(f"{text!r}: expected {what} {bound}")
    return value  # type: ignore[return-value]


def dtype_arg(text: str) -> str:
    """An argparse type for --dtype: an empty one (`"$T"` with T unset) is refused by
    its flag, where it was silently read as the target's default."""
    if not text.strip():
        raise argparse.ArgumentTypeError(f"{text!r}: the element type is empty")
    return text.strip()


def path_arg(text: str) -> str:
    """An argparse type for a file argument (a `.v` file, `-o`, `--json`): an empty
    one (`"$F"` with F unset) is refused by its flag, where it would have been read as
    the current directory, or dropped as no output at all."""
    if not text.strip():
        raise argparse.ArgumentTypeError(f"{text!r}: the path is empty")
    return text


def existing_file(text: str) -> str:
    """An argparse type for an input file that must be there (`bench --ours-file`): a
    misspelt one is refused by its flag before anything runs, not read as "no kernel of
    ours yet" after minutes of timing the peers alone."""
    path_arg(text)
    if not Path(text).is_file():
        why = "is a directory" if Path(text).is_dir() else "does not exist"
        raise argparse.ArgumentTypeError(f"{text}: {why}")
    return text


def directory_arg(text: str) -> Path:
    """An argparse type for an output directory (`search --out`, `tune -o`, `bench
    --out-dir`): it may be missing, to be made with its parents later, but it must be
    makeable and writable, which is checked when the arguments are read and not after
    a run of minutes, and without creating anything (pybridge's unmakeable_directory)."""
    why = unmakeable_directory(text)
    if why is not None:
        shown = text if text.strip() else repr(text)  # an empty one is seen as ''
        raise argparse.ArgumentTypeError(f"{shown}: cannot create it ({why})")
    return Path(text)


def pairs(items: list[str] | None, flag: str) -> dict[str, str]:
    """`NAME=VALUE` arguments of `flag`, in order.  A name given twice with two values
    (`--size M=5 ... --size M=6`, easy to leave in a long command line or a script) is
    refused rather than resolved silently by its last value; the same value twice is
    harmless and accepted."""
    out: dict[str, str] = {}
    for it in items or []:
        name, eq, value = it.partition("=")
        if not eq or not name.strip():
            raise UsageError(f"{flag} {it!r}: expected NAME=VALUE")
        name, value = name.strip(), value.strip()
        if out.get(name, value) != value:
            raise UsageError(f"{flag} {name}: given twice, as {out[name]} and as {value}")
        out[name] = value
    return out


def split_commas(items: list[str] | None) -> list[str]:
    """`n=100,m=50` as two arguments.  An empty piece beside a comma ("n=1,") is
    dropped, while an empty argument stays, for pairs() to refuse."""
    return [part for it in items or [] for part in it.split(",") if part.strip() or it == part]


def ints(items: list[str] | None, flag: str, bools: Collection[str] = ()) -> dict[str, int]:
    """`NAME=INT` arguments of `flag`; one argument may hold several, comma-separated
    (`--size n=100,m=50`, as `--shape` writes a shape): an integer has no comma, so the
    split is never ambiguous.  A name in `bools` (a size that is a Coq boolean, such as
    Gemmini's ReLU flag) also takes `true`/`false`, as the section writes it; the kernel
    takes it as 1/0."""
    out = {}
    for k, v in pairs(split_commas(items), flag).items():
        if k in bools and v.lower() in ("true", "false"):
            out[k] = int(v.lower() == "true")
            continue
        n = decimal_int(v)
        if n is None:
            kind = f"{k} is a boolean (true, false, 1 or 0)" if k in bools else \
                "not an integer (ASCII digits, maybe a sign)"
            raise UsageError(f"{flag} {k}={v}: {kind}")
        out[k] = n
    return out


def plain_number(text: str) -> bool:
    """Is `text` written as a C or shell user writes a number: ASCII, no `_`?  Python's
    int() and float() also take `1_000` and other scripts' digits (`١٢`), which a number
    typed on a command line is far likelier to be by mistake than on purpose."""
    return text.isascii() and "_" not in text


def decimal_int(text: str) -> int | None:
    """`text` as an integer: ASCII digits, maybe a sign (`plain_number`)."""
    t = text.strip()
    body = t[1:] if t[:1] in "+-" else t
    return int(t) if body and plain_number(body) and body.isdigit() else None


def size_hint(name: str, bools: Collection[str] = ()) -> str:
    """How to pass size `name` on the command line, for a message asking for it."""
    return f"--size {name}={'true|false' if name in bools else 'INT'}"


def fixes(items: list[str] | None) -> dict[str, int | Fraction]:
    """`--fix NAME=VALUE` arguments: an integer (a size, or a scalar input), or a decimal
    or fraction for a scalar input (`alpha=1.5`, `c=1/3`), kept exact; `true`/`false`
    for a Coq bool flag (a bool, which `check` refuses for anything else).  Comma-separated
    as `--size` takes them (`--fix mc=96,kc=256`): no number has a comma."""
    out: dict[str, int | Fraction] = {}
    for k, v in pairs(split_commas(items), "--fix").items():
        if v.strip() in ("true", "false"):  # a Coq bool flag (act=true), as --size takes it
            out[k] = v.strip() == "true"
            continue
        n = decimal_int(v)
        if n is not None:
            out[k] = n
            continue
        try:
            if not plain_number(v):
                raise ValueError(v)
            out[k] = Fraction(v.strip())
        except (ValueError, ZeroDivisionError):
            raise UsageError(f"--fix {k}={v}: not a number (an integer for a size; a "
                             "decimal or n/d also for a scalar input)") from None
    return out


def shapes(items: list[str] | None) -> dict[str, Shape]:
    """`--shape NAME=n,m` arguments: extents as index expressions."""
    out = {}
    for k, v in pairs(items, "--shape").items():
        try:
            out[k] = tuple(parse_index(d) for d in v.replace(";", ",").split(",") if d.strip())
        except TermParseError as exc:
            raise UsageError(f"--shape {k}={v}: {exc}") from None
    return out


def kernel_name_arg(text: str) -> str:
    """--kernel-name: refused by argparse, before the replay, where C could not use it."""
    why = kernel_name_problem(text)
    if why is not None:
        raise argparse.ArgumentTypeError(f"{text!r} {why}")
    return text


def add_program_args(parser: argparse.ArgumentParser) -> None:
    """The arguments naming a derivation, a target and how to check and build it."""
    parser.add_argument("file", type=path_arg, help="the .v file holding the derivation")
    parser.add_argument("--derivation", required=True, help="name given to Derive")
    parser.add_argument("--target", default=None, choices=pipeline.target_names(),
                        help="default: c, or where the program is in a target's instruction "
                             "form (avx512, gemmini, ...) that target; "
                             + "; ".join(f"{t.name}: {t.summary}" for t in pipeline.TARGETS))
    parser.add_argument("--dtype", default=None, type=dtype_arg,
                        help="element type (default: the target's; C targets: float32, "
                             "float64, int32, int8)")
    parser.add_argument("--shape", action="append", default=[],
                        help="input shape when no `shaped` hypothesis gives it: NAME=n,m")
    parser.add_argument("--kernel-name", default=None, type=kernel_name_arg,
                        help="C name (default: the derivation)")
    parser.add_argument("--fix", action="append", default=[],
                        help="fix a size variable to a constant, e.g. a tile size: kn=64 (its "
                             "hypotheses are checked now; the constant folds into the code), "
                             "or a scalar input to a number: alpha=1.5 (repeatable, or "
                             "comma-separated: mc=96,kc=256)")
    parser.add_argument("--store-at", action="append", default=[], metavar="BUF:LOOP",
                        help="allocate the let buffer BUF once per iteration of the enclosing "
                             "loop LOOP (Halide's store_at; storage only, nothing to prove)")
    parser.add_argument("--timeout", type=positive_float, default=300.0,
                        help="per Coq command, s")
    parser.add_argument("-q", "--quiet", action="store_true",
                        help="no progress on stderr (replay steps, cache use)")
    parser.add_argument("--unsafe", "--allow-unproved-safety", dest="unsafe",
                        action="store_true",
                        help="build even if check_safe did not prove the final program's "
                             "accesses in bounds (the kernel is marked UNSAFE)")


def store_at(items: list[str]) -> tuple[tuple[str, str], ...]:
    """`--store-at BUF:LOOP` arguments as (buffer, loop) pairs."""
    out: dict[str, str] = {}
    for item in items:
        buf, sep, loop = item.partition(":")
        if not sep or not buf.strip().isidentifier() or not loop.strip().isidentifier():
            raise UsageError(f"--store-at {item}: expected BUF:LOOP, e.g. t:i")
        buf, loop = buf.strip(), loop.strip()
        if buf in out and out[buf] != loop:  # the last one silently won
            raise UsageError(f"--store-at {item}: buffer {buf} is already stored at "
                             f"{out[buf]} (--store-at {buf}:{out[buf]}); give one loop per "
                             "buffer")
        out[buf] = loop
    return tuple(out.items())


class Progress:
    """Progress of a long job on stderr, never on stdout (which carries results), through
    `rich` (terminal.py's console, at most 100 columns).

    On a terminal, the steps of a replay (`pipeline.derive.ReplayStep`) are one live
    line, a bar, "k/n" and "NAME: TACTIC", redrawn in place (no refresh thread:
    it is redrawn when a step arrives); in a log (stderr not a terminal) a step is
    printed when it is the first or the last, every tenth of the way, or 10 s after the
    last line, so a long replay is never silent and a short one does not flood the
    log.  Other messages are printed as lines, as they are.  `quiet` prints nothing.
    pybridge and pipeline never print: they call this object (a plain
    `Callable[[str], None]`), so the layering holds."""

    def __init__(self, quiet: bool = False, stream: TextIO | None = None) -> None:
        from verisched.commands.terminal import console

        self.quiet = quiet
        self.out = console(stderr=True, file=stream)
        self.tty = self.out.is_terminal
        self.live = None       # the rich Progress of the steps under way (terminal)
        self.task = None
        self.last = 0.0        # when the last line was printed (logs)

    def __call__(self, message: str) -> None:
        if self.quiet:
            return
        step, total = getattr(message, "step", None), getattr(message, "total", None)
        if step is None or total is None:
            self.close()
            self._line(message)
            return
        if self.tty:  # the bar shows k/n: "NAME: TACTIC" beside it
            name = getattr(message, "derivation", "")
            tactic = str(message).split(f"step {step} of {total}: ", 1)[-1]
            self._live(f"{name}: {tactic}" if name else str(message), step, total)
            if step >= total:
                self.close()
            return
        every = max(1, -(-total // 10))
        if step in (1, total) or step % every == 0 or time.monotonic() - self.last >= 10:
            self._line(message)

    def _live(self, text: str, step: int, total: int) -> None:
        from rich.progress import BarColumn, MofNCompleteColumn, TextColumn
        from rich.progress import Progress as Bar

        if self.live is None:
            self.live = Bar(BarColumn(bar_width=12), MofNCompleteColumn(),
                            TextColumn("{task.description}", markup=False),
                            console=self.out, auto_refresh=False, transient=False)
            self.live.start()
            self.task = self.live.add_task("", total=total)
        width = max(20, self.out.width - 24)  # the bar and the count take about 20
        self.live.update(self.task, completed=step, total=total,
                         description=text if len(text) <= width else text[:width - 3] + "...")
        self.live.refresh()

    def _line(self, text: str) -> None:
        self.out.print(text, markup=False, highlight=False)
        self.last = time.monotonic()

    def close(self) -> None:
        """End the live line (before any other output); it stays as the last step."""
        if self.live is not None:
            self.live.stop()
            self.live = self.task = None


def checked_from_args(args: argparse.Namespace) -> pipeline.CheckedProgram:
    """Replay and check the derivation the arguments name (stages 1-2).  Every
    argument is read before the replay, so a typo costs no Coq time."""
    fix, shp = fixes(args.fix), shapes(args.shape)
    places = store_at(getattr(args, "store_at", []))
    progress = Progress(quiet=getattr(args, "quiet", False))
    try:
        derived = pipeline.load(args.file, args.derivation, timeout=args.timeout,
                                progress=progress)
    finally:
        progress.close()
    checked = pipeline.check(derived, fix=fix, shapes=shp, unsafe=args.unsafe,
                             name=args.kernel_name, dtype=args.dtype)
    if places:
        checked = replace(checked, program=replace(checked.program, store_at=places))
    if checked.unsafe:
        print(f"WARNING: {checked.name}: accesses not proved in bounds "
              f"({checked.program.safety}); building it anyway (--unsafe)", file=sys.stderr)
    return checked


def target_for(args: argparse.Namespace, checked: pipeline.CheckedProgram) -> pipeline.Target:
    """`--target`, or without it `pipeline.default_target`: plain C for an ISA-neutral
    program, else the target of the program's instruction form, which is said on stderr
    (a derivation in AVX-512's instructions is built for avx512 rather than refused by
    c, which cannot take it; decision #125)."""
    if args.target is not None:
        return pipeline.get_target(args.target)
    found = pipeline.default_target(checked.program.expr)
    if found is None:
        raise UsageError(f"{checked.name}: no target provides every instruction and memory "
                         f"it uses; pass --target (targets: {', '.join(pipeline.target_names())})")
    if any(pipeline.needs(checked.program.expr)) and not getattr(args, "quiet", False):
        print(f"note: no --target given: {checked.name} is in {found.name}'s instruction "
              f"form, so target {found.name}", file=sys.stderr)
    return found


def section_signature(args: argparse.Namespace) -> Signature | None:
    """What the section around the named derivation declares (its size variables and
    tensors), read from the file without Coq; None when the file cannot be read so (the
    replay then reports why).  A superset of the kernel's: its sizes and inputs are
    those the derived program uses."""
    try:
        outline = outline_file(args.file).get(args.derivation)
    except (BridgeError, OSError):
        return None
    return outline.signature if outline else None


def writable_output(path: str | Path, flag: str, inputs: Sequence[str | Path | None] = ()
                    ) -> None:
    """Refuse an output path that could not be written (pybridge's check_writable: a
    missing directory, a directory, a read-only file) before any Coq or compiler time
    is spent on a result that could not be saved, and one that is one of the command's
    `inputs` (the .v file, an input array), which the write would destroy."""
    try:
        check_writable(path, inputs=inputs)
    except OutputPathError as exc:
        raise UsageError(f"{flag} {path}: {exc}") from None


def guarded(command: str, fn: Callable[[], T]) -> T | int:
    """Run `fn`; a user's mistake (bad argument, failed proof, compiler error, bad
    input file) is printed as `verisched COMMAND: message` and exits 1."""
    try:
        return fn()
    except (CodegenError, OSError, ValueError) as exc:
        print(f"verisched {command}: {exc}", file=sys.stderr)
        return 1
    except MemoryError as exc:  # numpy's says how much it could not allocate
        print(f"verisched {command}: out of memory ({exc or 'no detail'}); try smaller "
              "sizes", file=sys.stderr)
        return 1
