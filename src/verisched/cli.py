"""The `verisched` command line.

Each subcommand lives in its own module under `verisched.commands` and is
imported only when used, so a missing optional dependency of one command
(Halide, PyTorch) never breaks another.  A module provides
`register(subparsers)` and the handler it installs returns an exit code.
"""

from __future__ import annotations

import argparse
import importlib
import sys

# (subcommand, module under verisched.commands, one-line help)
COMMANDS: list[tuple[str, str, str]] = [
    ("demo", "demo", "derive the flagship kernel, emit C, compile, run and check it"),
    ("replay", "replay", "replay a derivation script step by step"),
    ("check", "check", "build the proofs and print the assumptions report"),
    ("compile", "compile", "lower a derived program to C"),
    ("run", "run", "compile a derived program and run it on inputs"),
    ("bench", "bench", "run a benchmark from benchmarks/"),
]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="verisched", description=__doc__.splitlines()[0])
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
    return int(args.handler(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
