"""The `verisched` command line.

Each subcommand lives in its own module under `verisched.commands` and is
imported only when used, so a missing optional dependency of one command
(Halide, PyTorch) never breaks another.  A module provides
`register(subparsers)` and the handler it installs returns an exit code.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.metadata
import shutil
import subprocess
import sys

from verisched.pybridge.coqterm import RECURSION_LIMIT, deep_enough

# (subcommand, module under verisched.commands, one-line help)
COMMANDS: list[tuple[str, str, str]] = [
    ("demo", "demo", "derive the flagship kernel, emit C, compile, run and check it"),
    ("replay", "replay", "replay a derivation script step by step"),
    ("check", "check", "build the proofs and print the assumptions report"),
    ("compile", "compile", "lower a derived program to C"),
    ("run", "run", "compile a derived program and run it on inputs"),
    ("bench", "bench", "run a benchmark from benchmarks/"),
    ("report", "report", "write a derivation as a self-contained HTML page"),
    ("search", "search", "find library idioms by equality saturation, certified by Coq"),
    ("tune", "tune", "search a program's schedules by measurement, every candidate proved"),
]


def version() -> str:
    """The installed package's version, and the Coq the proofs are checked with (found
    on PATH, or said to be missing: `make proofs` installs it)."""
    try:
        ours = importlib.metadata.version("verisched")
    except importlib.metadata.PackageNotFoundError:
        ours = "(not installed: run from a source tree)"
    coq = shutil.which("coqc")
    if coq is None:
        coq_text = "coqc not found"
    else:
        try:
            out = subprocess.run([coq, "--print-version"], capture_output=True, text=True,
                                 timeout=30).stdout.split()
            coq_text = f"Coq {out[0]}" if out else "coqc (version unknown)"
        except (OSError, subprocess.SubprocessError):
            coq_text = "coqc (version unknown)"
    return f"verisched {ours} ({coq_text}; Python {sys.version.split()[0]})"


class _Version(argparse.Action):
    """`--version`, computed only when asked (it runs coqc)."""

    def __init__(self, option_strings: list[str], dest: str = argparse.SUPPRESS,
                 **kw: object) -> None:
        super().__init__(option_strings, dest, nargs=0, help="print the version and exit")

    def __call__(self, parser: argparse.ArgumentParser, *a: object) -> None:
        print(version())
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="verisched", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action=_Version)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, module, help_text in COMMANDS:
        try:
            mod = importlib.import_module(f"verisched.commands.{module}")
        except ModuleNotFoundError as exc:
            if exc.name != f"verisched.commands.{module}":
                raise
            continue  # command not implemented yet
        mod.register(sub.add_parser(name, help=help_text))
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "handler", None):
        parser.print_help()
        return 2
    deep_enough()  # terms are walked recursively (pybridge.coqterm.RECURSION_LIMIT)
    try:
        return int(args.handler(args) or 0)
    except KeyboardInterrupt:  # Ctrl-C: a line, not pexpect's traceback (exit as a shell)
        print(f"verisched {args.command}: interrupted", file=sys.stderr)
        return 130
    except RecursionError:
        print(f"verisched {args.command}: the program is nested more deeply than "
              f"{RECURSION_LIMIT:,} levels, past what its walks over terms can take",
              file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
