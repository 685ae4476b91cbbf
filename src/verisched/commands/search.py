"""`verisched search FILE.v --program NAME --idioms blas|avx2|gemmini [--steps N]
[--timeout S] [--costs liar|measured]`.

Equality saturation (egglog) finds the cheapest program equal to NAME with
library calls (LIAR's idiom recognition); Coq then replays the certificate
and NAME_found.v is written, a derivation coqc accepts.  Prints the program
found, the saturation steps, the e-graph's size and the time; progress goes
to stderr.  A node or time budget stops the saturation cleanly with the best
program so far, which is certified like any other.  Exit 1 when the file or
program cannot be read, 2 when Coq refuses the certificate (a bug in a rule).
"""

from __future__ import annotations

import argparse
import sys
import time

from verisched.commands.common import directory_arg, path_arg, positive_float, positive_int
from verisched.pybridge.coqterm import pretty
from verisched.schedule import ScheduleError
from verisched.search import (
    IDIOM_FAMILIES,
    CertificateError,
    KernelFileError,
    SearchArgumentError,
    SearchEncodingError,
    search,
)
from verisched.search.costs import CostError


def run(args: argparse.Namespace) -> int:
    def progress(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    start = time.monotonic()
    try:
        r = search(args.file, args.program, idioms=args.idioms, steps=args.steps,
                   nodes=args.nodes, timeout=args.timeout, out=args.out, costs=args.costs,
                   progress=None if args.quiet else progress)
    except (KernelFileError, SearchArgumentError, SearchEncodingError, CostError,
            OSError) as exc:
        print(f"verisched search: {exc}", file=sys.stderr)
        return 1
    except (CertificateError, ScheduleError) as exc:
        print(f"verisched search: no certificate: {exc}", file=sys.stderr)
        return 2
    print(f"program found ({r.name}):")
    print("  " + pretty(r.found).replace("\n", "\n  "))
    calls = ", ".join(f"{k} x {n}" for n, k in r.idioms.items())
    print(f"idioms: {calls}" if calls else
          f"idioms: none: no {args.idioms} idiom was found in {r.name}; the program found is "
          "the original, up to the rules' rewrites")
    print(f"saturation steps: {r.steps}{' (saturated)' if r.saturated else ''}")
    print(f"e-graph size: {r.enodes} e-nodes")
    model = "LIAR's model" if args.costs == "liar" else "LIAR's model, measured call costs"
    print(f"cost ({model}): {r.original_cost:.0f} -> {r.cost:.0f}")
    print(f"time: {r.seconds:.2f} s saturation, {time.monotonic() - start:.2f} s in all")
    if r.stopped:
        print(f"stopped at the {r.stopped}: the best program so far")
    bound = (f", then {len(r.bound)} operand(s) of calls bound to buffers (name_buffer)"
             if r.bound else "")
    print(f"certificate: {len(r.certificate)} rewrites{bound}, accepted by Coq: {r.path}")
    if r.lowering is not None:
        print(f"for the gemmini target: {r.lowering} (derivation {r.name}_scheduled: the "
              "loop unrolled into single instructions, accepted by Coq)")
    for t, shape in r.inferred:
        print(f"note: input {t} has no shape hypothesis in the file: its shape {shape}, read "
              f"off the loops that index it, is stated in the found derivation "
              f"(Hypothesis Hshape_{t} : shaped {shape} {t}.)")
    for hyp, text in r.left_out:
        print(f"note: hypothesis {hyp} : {text} is not restated in the found derivation "
              "(only shapes and conditions on the sizes are); it is proved without it")
    return 0


def register(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", type=path_arg,
                        help="a .v file declaring sizes, inputs and the program")
    parser.add_argument("--program", required=True, metavar="NAME",
                        help="the Definition to search")
    parser.add_argument("--idioms", default="blas", choices=IDIOM_FAMILIES,
                        help="the library whose idioms to look for: blas (CBLAS routines), "
                        "avx2 (our AVX2 instructions), gemmini (our Gemmini matmul, with "
                        "Glenside's im2col for convolutions); default blas")
    parser.add_argument("--steps", type=positive_int, default=10,
                        help="saturation steps at most (default 10)")
    parser.add_argument("--nodes", type=positive_int, default=50_000,
                        help="e-node budget (default 50000); the step that goes over it "
                        "is undone")
    parser.add_argument("--timeout", type=positive_float, default=60.0,
                        help="saturation time budget in seconds (default 60)")
    parser.add_argument("--costs", default="liar", choices=("liar", "measured"),
                        help="call costs of the extraction: LIAR's constants (default), or "
                        "measured on this CPU (each BLAS idiom against its own loop, "
                        "once, kept in verisched's cache directory)")
    parser.add_argument("--out", metavar="DIR", type=directory_arg,
                        help="where NAME_found.v goes (default: beside FILE)")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress on stderr")
    parser.set_defaults(handler=run)
