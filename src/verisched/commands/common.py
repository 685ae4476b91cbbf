"""What `verisched compile` and `verisched run` share: the arguments naming a
derivation and a target, their parsing into typed values, and how a user's
mistake becomes one line on stderr and a non-zero exit (never a traceback).

Both commands are thin callers of verisched.pipeline: load -> check ->
lower -> render -> build.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from dataclasses import replace
from typing import TypeVar

from verisched import pipeline
from verisched.codegen.errors import CodegenError
from verisched.pybridge.coqterm import parse_index
from verisched.pybridge.errors import TermParseError
from verisched.pybridge.terms import Shape

T = TypeVar("T")


class UsageError(CodegenError):
    """A command-line argument that cannot be read."""


def pairs(items: list[str] | None, flag: str) -> dict[str, str]:
    """`NAME=VALUE` arguments of `flag`, in order."""
    out: dict[str, str] = {}
    for it in items or []:
        name, eq, value = it.partition("=")
        if not eq or not name.strip():
            raise UsageError(f"{flag} {it!r}: expected NAME=VALUE")
        out[name.strip()] = value.strip()
    return out


def ints(items: list[str] | None, flag: str) -> dict[str, int]:
    """`NAME=INT` arguments of `flag`."""
    out = {}
    for k, v in pairs(items, flag).items():
        try:
            out[k] = int(v)
        except ValueError:
            raise UsageError(f"{flag} {k}={v}: not an integer") from None
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


def add_program_args(parser: argparse.ArgumentParser) -> None:
    """The arguments naming a derivation, a target and how to check and build it."""
    parser.add_argument("file", help="the .v file holding the derivation")
    parser.add_argument("--derivation", required=True, help="name given to Derive")
    parser.add_argument("--target", default="c", choices=pipeline.target_names(),
                        help="; ".join(f"{t.name}: {t.summary}" for t in pipeline.TARGETS))
    parser.add_argument("--dtype", default=None,
                        help="element type (default: the target's; C targets: float32, "
                             "float64, int32)")
    parser.add_argument("--shape", action="append", default=[],
                        help="input shape when no `shaped` hypothesis gives it: NAME=n,m")
    parser.add_argument("--kernel-name", default=None, help="C name (default: the derivation)")
    parser.add_argument("--fix", action="append", default=[],
                        help="fix a size variable to a constant, e.g. a tile size: kn=64 (its "
                             "hypotheses are checked now; the constant folds into the code)")
    parser.add_argument("--store-at", action="append", default=[], metavar="BUF:LOOP",
                        help="allocate the let buffer BUF once per iteration of the enclosing "
                             "loop LOOP (Halide's store_at; storage only, nothing to prove)")
    parser.add_argument("--timeout", type=float, default=300.0, help="per Coq command, s")
    parser.add_argument("--unsafe", "--allow-unproved-safety", dest="unsafe",
                        action="store_true",
                        help="build even if check_safe did not prove the final program's "
                             "accesses in bounds (the kernel is marked UNSAFE)")


def store_at(items: list[str]) -> tuple[tuple[str, str], ...]:
    """`--store-at BUF:LOOP` arguments as (buffer, loop) pairs."""
    out: list[tuple[str, str]] = []
    for item in items:
        buf, sep, loop = item.partition(":")
        if not sep or not buf.strip().isidentifier() or not loop.strip().isidentifier():
            raise UsageError(f"--store-at {item}: expected BUF:LOOP, e.g. t:i")
        out.append((buf.strip(), loop.strip()))
    return tuple(out)


def checked_from_args(args: argparse.Namespace) -> pipeline.CheckedProgram:
    """Replay and check the derivation the arguments name (stages 1-2)."""
    derived = pipeline.load(args.file, args.derivation, timeout=args.timeout,
                            progress=lambda msg: print(msg + " ...", file=sys.stderr,
                                                       flush=True))
    checked = pipeline.check(derived, fix=ints(args.fix, "--fix"), shapes=shapes(args.shape),
                             unsafe=args.unsafe, name=args.kernel_name, dtype=args.dtype)
    places = store_at(getattr(args, "store_at", []))
    if places:
        checked = replace(checked, program=replace(checked.program, store_at=places))
    if checked.unsafe:
        print(f"WARNING: {checked.name}: accesses not proved in bounds "
              f"({checked.program.safety}); building it anyway (--unsafe)", file=sys.stderr)
    return checked


def guarded(command: str, fn: Callable[[], T]) -> T | int:
    """Run `fn`; a user's mistake (bad argument, failed proof, compiler error, bad
    input file) is printed as `verisched COMMAND: message` and exits 1."""
    try:
        return fn()
    except (CodegenError, OSError, ValueError) as exc:
        print(f"verisched {command}: {exc}", file=sys.stderr)
        return 1
