"""`verisched bench NAME`: run benchmarks/bench_NAME.py from the source tree.

Benchmarks stay out of the installed package (they need peers such as
Halide or PyTorch that the library itself does not); each module there
exposes `main(argv) -> int`.
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import sys
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parents[3] / "benchmarks"


def available() -> list[str]:
    return sorted(p.stem.removeprefix("bench_") for p in BENCH_DIR.glob("bench_*.py"))


def describe(name: str) -> str:
    """One benchmark for `bench --help`: its summary line, peers and duration, read from
    the module's source with `ast` (importing it would import its peers)."""
    path = BENCH_DIR / f"bench_{name}.py"
    try:
        tree = ast.parse(path.read_text())
    except (OSError, SyntaxError) as exc:
        return f"  {name}: (cannot read {path.name}: {exc})"
    doc = (ast.get_docstring(tree) or "").strip().splitlines()
    summary = doc[0].split(":", 1)[-1].strip() if doc else ""
    consts: dict[str, str] = {}
    for node in tree.body:
        if (isinstance(node, ast.Assign) and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name)
                and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)):
            consts[node.targets[0].id] = node.value.value
    return (f"  {name}: {summary}\n      peers: {consts.get('PEERS', 'not stated')}; "
            f"duration: {consts.get('DURATION', 'not stated')}")


def run(args: argparse.Namespace) -> int:
    path = BENCH_DIR / f"bench_{args.name}.py"
    if not path.exists():
        names = ", ".join(available()) or "none"
        print(f"verisched bench: no benchmark {args.name!r} (available: {names})")
        return 2
    spec = importlib.util.spec_from_file_location(f"bench_{args.name}", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    # Registered before it runs: dataclasses (and pickling) look the module up by name.
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    try:
        return int(module.main(args.rest) or 0)
    except MemoryError:
        # Sizes that do not fit this machine (numpy refuses the allocation): a user's
        # choice, so a message rather than a traceback; what was written stays whole
        # (each output is written atomically, at the end).
        print(f"verisched bench {args.name}: out of memory at the sizes asked for "
              f"(see `verisched bench {args.name} --help`): choose smaller ones",
              file=sys.stderr)
        return 1


def register(parser: argparse.ArgumentParser) -> None:
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = ("benchmarks (run `verisched bench NAME --help` for each one's options):\n"
                     + "\n".join(describe(n) for n in available()))
    parser.add_argument("name", help="benchmark name: " + ", ".join(available()))
    parser.add_argument("rest", nargs=argparse.REMAINDER, help="arguments for the benchmark")
    parser.set_defaults(handler=run)
