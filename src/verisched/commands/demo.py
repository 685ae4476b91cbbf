"""`verisched demo`: the main job, end to end, on the flagship derivation.

The flagship is the tiled blur of the ATL paper (Sec. 8.1, Fig. 9): replay
its Coq derivation step by step (each tactic and the program it produced,
then Coq's verdict and the axioms it rests on), lower the derived program
to C with OpenMP, write the kernel and its header, compile it, run it on
random inputs at sizes that are not multiples of the tile sizes, and check
it against the reference interpreter evaluating the original algorithm.
The derivation is replayed once; every stage is a verisched.pipeline call.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

from rich.console import Console

from verisched import pipeline
from verisched.codegen.errors import CodegenError
from verisched.commands.common import Progress, directory_arg, positive_float
from verisched.commands.compile import report
from verisched.commands.terminal import console, show_steps
from verisched.pybridge.derivation import output_directory, write_json_atomic
from verisched.pybridge.errors import OutputPathError
from verisched.pybridge.session import REPO_ROOT

FLAGSHIP = REPO_ROOT / "coq" / "Examples" / "Blur.v"
DERIVATION = "blur_tiled"
# The ISA-neutral blur, built for the best ISA this CPU has (targets/auto.py).
TARGET = "native-openmp"
# Image 203 x 157 with 32 x 16 tiles: neither extent is a multiple of its tile.
SIZES = {"n": 203, "m": 157, "kn": 32, "km": 16}
THREADS = 2
WARM_CALLS = 20


def _banner(out: Console, text: str) -> None:
    out.print()
    out.rule(text, align="left", style="bold")


def run(args: argparse.Namespace) -> int:
    try:
        with output_directory(args.out) as out_dir:  # removed again if the run fails
            return _demo(out_dir, args.timeout, args.full)
    except (CodegenError, OSError, OutputPathError) as exc:
        print(f"verisched demo: {exc}", file=sys.stderr)
        return 1


def _demo(out_dir: Path, timeout: float, full: bool) -> int:
    started = time.perf_counter()
    out = console()
    _banner(out, f"1/3 replaying {FLAGSHIP.relative_to(REPO_ROOT)} :: {DERIVATION}")
    out.print("Each step is a rewrite Coq proves; shown: the tactic and the subterms it "
              "changed (--full: the whole program).")

    # Progress on stderr while Coq replays; a derivation already checked (the cache of
    # pipeline/cache.py, keyed by the file, the library and Coq) is not replayed again.
    progress = Progress(False)
    try:
        derived = pipeline.load(FLAGSHIP, DERIVATION, timeout=timeout, progress=progress)
    finally:
        progress.close()  # a failed replay leaves no live line behind
    show_steps(out, derived.trace, full=full)
    out.print(f"[bold green]{DERIVATION}: Coq accepted it[/] ({derived.steps} steps); "
              f"axioms: {', '.join(derived.axioms) or 'none'}")
    trace = out_dir / f"{DERIVATION}.json"
    write_json_atomic(trace, {"file": str(FLAGSHIP), "ok": True, "failure": None,
                              "derivations": [derived.trace]})
    out.print(f"trace written to {trace}")

    _banner(out, f"2/3 checking and lowering the derived program to C (target {TARGET})")
    checked = pipeline.check(derived)
    lowered = pipeline.lower(checked, TARGET)
    c_file, h_file = pipeline.render(lowered).write(out_dir / f"{DERIVATION}.c")
    out.print(f"wrote {c_file} and {h_file}: kernel {checked.name}, {lowered.summary}")
    report(checked)

    _banner(out, f"3/3 running on a {SIZES['n']} x {SIZES['m']} image, {SIZES['kn']} x "
            f"{SIZES['km']} tiles, {THREADS} threads; checking against the interpreter")
    kernel = pipeline.build(pipeline.render(lowered))[checked.name]
    kernel.set_threads(THREADS)  # type: ignore[attr-defined]
    inputs = pipeline.random_inputs(kernel, SIZES, seed=1)
    result = kernel.call(inputs, SIZES)
    times = []
    for _ in range(WARM_CALLS):
        t0 = time.perf_counter()
        kernel.call(inputs, SIZES, result)
        times.append((time.perf_counter() - t0) * 1000)
    ok = True
    t0 = time.perf_counter()
    verdicts = pipeline.verify(checked, inputs, SIZES, result)
    interp_ms = (time.perf_counter() - t0) * 1000 / max(1, len(verdicts))
    for v in verdicts:
        status = ("[green]OK[/]" if v.ok else "[bold red]MISMATCH[/]" if v.ok is False
                  else f"not checked ({v.note})")
        out.print(f"the kernel against the reference interpreter on the {v.what}: {status}")
        ok = ok and bool(v.ok)
    picked = getattr(kernel, "picked", "")
    out.print(f"kernel ({TARGET}{f', picked {picked}' if picked else ''}, {THREADS} threads): "
              f"median {statistics.median(times):.3f} ms "
              f"over {WARM_CALLS} warm calls (min {min(times):.3f} ms; the first, cold call "
              f"not counted); the interpreter: {interp_ms:.0f} ms per program; a shared "
              "machine's load moves these", markup=False)
    out.print(f"total {time.perf_counter() - started:.1f} s")
    _banner(out, "next")
    for line in NEXT:
        out.print(f"  {line}", markup=False)
    return 0 if ok else 1


# What to try after the demo (each one is a command documented in the README).
NEXT = (
    "see it as a page:  verisched report coq/Examples/Blur.v --derivation blur_tiled "
    "-o blur.html",
    "schedule it from Python (4 directives):  python examples/blur_tiled.py",
    "every step's whole program:  verisched demo --full",
    "against Halide:  verisched bench blur",
)


def register(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", default="out", type=directory_arg,
                        help="directory for the trace and the C")
    parser.add_argument("--timeout", type=positive_float, default=600.0,
                        help="per Coq command, seconds")
    parser.add_argument("--full", action="store_true",
                        help="print every step's whole program, not only what it changed")
    parser.set_defaults(handler=run)
