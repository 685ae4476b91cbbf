"""`verisched demo`: the main job, end to end, on the flagship derivation.

The flagship is the tiled blur of the ATL paper (Sec. 8.1, Fig. 9): replay
its Coq derivation step by step (each tactic and the program it produced,
then Coq's verdict and the axioms it rests on), lower the derived program
to C with OpenMP, write the kernel and its header, compile it, run it on
random inputs at sizes that are not multiples of the tile sizes, and check
it against the reference interpreter evaluating the original algorithm.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from verisched.commands import compile as compile_cmd
from verisched.commands import replay as replay_cmd
from verisched.commands import run as run_cmd

REPO = Path(__file__).resolve().parents[3]
FLAGSHIP = REPO / "coq" / "Examples" / "Blur.v"
DERIVATION = "blur_tiled"
# Image 203 x 157 with 32 x 16 tiles: neither extent is a multiple of its tile.
SIZES = ["n=203", "m=157", "kn=32", "km=16"]


def _banner(text: str) -> None:
    print(f"\n== {text}", flush=True)


def run(args: argparse.Namespace) -> int:
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    common = dict(file=str(FLAGSHIP), derivation=DERIVATION, timeout=args.timeout)

    _banner(f"1/3 replaying {FLAGSHIP.relative_to(REPO)} :: {DERIVATION} "
            "(every step is a Coq-checked rewrite)")
    code = replay_cmd.run(argparse.Namespace(**common, json=str(out_dir / "blur_tiled.json")))
    if code:
        return code
    print(f"trace written to {out_dir / 'blur_tiled.json'}")

    _banner("2/3 lowering the derived program to C (target openmp)")
    from verisched.codegen.errors import CodegenError
    from verisched.targets import get_target

    lowering = argparse.Namespace(**common, target="openmp", dtype="float32", shape=[],
                                  kernel_name=None, fix=[], size=SIZES, input=[], seed=1,
                                  threads=2, fast_math=False, check=True,
                                  output=str(out_dir / "blur_tiled_out.npy"))
    try:
        target = get_target(lowering.target)
        dp, lowered = compile_cmd.lower_derivation(lowering, target.parallel)
        compile_cmd.write_kernel(dp, lowered, target.name, out_dir / "blur_tiled.c")
    except (CodegenError, OSError) as exc:
        print(f"verisched demo: {exc}")
        return 1

    _banner("3/3 compiling, running on a 203 x 157 image with 32 x 16 tiles, and checking "
            "against the reference interpreter")
    return run_cmd.execute(dp, lowered, target, lowering)


def register(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", default="out", help="directory for the trace, C and output")
    parser.add_argument("--timeout", type=float, default=600.0,
                        help="per Coq command, seconds")
    parser.set_defaults(handler=run)
