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

from verisched import pipeline
from verisched.codegen.errors import CodegenError
from verisched.commands.compile import report
from verisched.commands.replay import _print_step
from verisched.pybridge.derivation import write_json_atomic
from verisched.pybridge.session import REPO_ROOT

FLAGSHIP = REPO_ROOT / "coq" / "Examples" / "Blur.v"
DERIVATION = "blur_tiled"
TARGET = "openmp"
# Image 203 x 157 with 32 x 16 tiles: neither extent is a multiple of its tile.
SIZES = {"n": 203, "m": 157, "kn": 32, "km": 16}
THREADS = 2
WARM_CALLS = 20


def _banner(text: str) -> None:
    print(f"\n== {text}", flush=True)


def run(args: argparse.Namespace) -> int:
    try:
        return _demo(Path(args.out), args.timeout)
    except (CodegenError, OSError) as exc:
        print(f"verisched demo: {exc}", file=sys.stderr)
        return 1


def _demo(out_dir: Path, timeout: float) -> int:
    out_dir.mkdir(parents=True, exist_ok=True)
    _banner(f"1/3 replaying {FLAGSHIP.relative_to(REPO_ROOT)} :: {DERIVATION} "
            "(every step is a Coq-checked rewrite)")
    derived = pipeline.load(FLAGSHIP, DERIVATION, timeout=timeout, on_step=_print_step)
    print(f"{DERIVATION}: Coq accepted it ({derived.steps} steps); axioms: "
          f"{', '.join(derived.axioms) or 'none'}")
    trace = out_dir / f"{DERIVATION}.json"
    write_json_atomic(trace, {"file": str(FLAGSHIP), "ok": True, "failure": None,
                              "derivations": [derived.trace]})
    print(f"trace written to {trace}")

    _banner(f"2/3 checking and lowering the derived program to C (target {TARGET})")
    checked = pipeline.check(derived)
    lowered = pipeline.lower(checked, TARGET)
    c_file, h_file = pipeline.render(lowered).write(out_dir / f"{DERIVATION}.c")
    print(f"wrote {c_file} and {h_file}: kernel {checked.name}, {lowered.summary}")
    report(checked)

    _banner(f"3/3 compiling, running on a {SIZES['n']} x {SIZES['m']} image with "
            f"{SIZES['kn']} x {SIZES['km']} tiles on {THREADS} threads, and checking against "
            "the reference interpreter")
    kernel = pipeline.build(pipeline.render(lowered))[checked.name]
    kernel.set_threads(THREADS)  # type: ignore[attr-defined]
    inputs = pipeline.random_inputs(kernel, SIZES, seed=1)
    out = kernel.call(inputs, SIZES)
    times = []
    for _ in range(WARM_CALLS):
        t0 = time.perf_counter()
        kernel.call(inputs, SIZES, out)
        times.append((time.perf_counter() - t0) * 1000)
    print(f"{checked.name} [{TARGET}] output shape {out.shape}: median of {WARM_CALLS} warm "
          f"calls {statistics.median(times):.3f} ms (first, cold call not counted)")
    ok = True
    for v in pipeline.verify(checked, inputs, SIZES, out):
        status = "OK" if v.ok else "MISMATCH" if v.ok is False else f"not checked ({v.note})"
        print(f"check against the reference interpreter on the {v.what}: {status}")
        ok = ok and bool(v.ok)
    return 0 if ok else 1


def register(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", default="out", help="directory for the trace and the C")
    parser.add_argument("--timeout", type=float, default=600.0,
                        help="per Coq command, seconds")
    parser.set_defaults(handler=run)
