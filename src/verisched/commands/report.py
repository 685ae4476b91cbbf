"""`verisched report FILE.v [--derivation NAME] -o report.html [--bench-png PLOT.png]`.

Replays the derivation in Coq and writes one self-contained HTML page (KaTeX, its
fonts and the plot inlined; nothing fetched when it is viewed): the original program
in the paper's notation, each step with its tactic, lemma, side conditions and the
program after it with the change highlighted, Coq's verdict and the generated C.
Everything a user can get wrong (the file, the derivation's name, the output path,
the plot) is reported in one line before Coq starts; the page is written atomically.
A thin caller of verisched.report.
"""

from __future__ import annotations

import argparse
import sys
import time

from verisched.commands.common import path_arg, positive_float
from verisched.report import ReportError, write_report


def run(args: argparse.Namespace) -> int:
    t0 = time.perf_counter()

    def step(d: object, res: object) -> None:
        n = getattr(res, "step", None)
        if n is not None and not args.quiet:
            print(f"  step {n}: {getattr(res, 'tactic', '')}", file=sys.stderr, flush=True)

    try:
        out = write_report(args.file, args.derivation, args.output, target=args.target,
                           bench_png=args.bench_png, timeout=args.timeout,
                           progress=None if args.quiet else
                           lambda m: print(m + " ...", file=sys.stderr, flush=True),
                           on_step=step)
    except (ReportError, OSError, ValueError) as exc:
        print(f"verisched report: {exc}", file=sys.stderr)
        return 1
    print(f"wrote {out} ({out.stat().st_size // 1024} KiB, "
          f"{time.perf_counter() - t0:.1f} s)")
    return 0


def register(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", type=path_arg,
                        help="a .v file containing Derive ... SuchThat ... derivations")
    parser.add_argument("--derivation", metavar="NAME",
                        help="the derivation to report on (needed when the file has several)")
    parser.add_argument("-o", "--output", required=True, metavar="OUT.html", type=path_arg,
                        help="the HTML page to write")
    parser.add_argument("--target", default=None,
                        help="target of the generated C (default: c, or the first target "
                             "that provides the program's instructions)")
    parser.add_argument("--bench-png", metavar="PLOT.png", type=path_arg,
                        help="a benchmark plot to embed at the end")
    parser.add_argument("--timeout", type=positive_float, default=300.0,
                        help="per-command limit in seconds for Coq (default 300)")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress on stderr")
    parser.set_defaults(handler=run)
