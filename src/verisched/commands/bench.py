"""`verisched bench NAME`: run benchmarks/bench_NAME.py from the source tree.

Benchmarks stay out of the installed package (they need peers such as
Halide or PyTorch that the library itself does not); each module there
exposes `main(argv) -> int`.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parents[3] / "benchmarks"


def available() -> list[str]:
    return sorted(p.stem.removeprefix("bench_") for p in BENCH_DIR.glob("bench_*.py"))


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
    return int(module.main(args.rest) or 0)


def register(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("name", help="benchmark name, e.g. blur, bridge")
    parser.add_argument("rest", nargs=argparse.REMAINDER, help="arguments for the benchmark")
    parser.set_defaults(handler=run)
