"""`verisched tune FILE.v --program NAME --target T --size n=.. -o OUTDIR`: autotune.

`--program NAME` names a derivation of FILE.v; its *original* program (the left
side of the `Derive`) is what is tuned, from scratch, and the derivation itself is
the hand-derived schedule the result is compared with (docs/decisions.md).  Every
candidate is proved by Coq; progress (proved, measured, refused, best so far) goes
to stderr, the summary to stdout.  A thin caller of verisched.tune.
"""

from __future__ import annotations

import argparse

from verisched import pipeline
from verisched.commands.common import (
    Progress,
    UsageError,
    directory_arg,
    guarded,
    ints,
    path_arg,
    positive_float,
    positive_int,
    seed_int,
)
from verisched.schedule import ScheduleError
from verisched.schedule.errors import ScheduleArgumentError
from verisched.tune import program_of, tune
from verisched.tune.api import UNTIMEABLE, timeable
from verisched.tune.executors import ExecutorError

# tune()'s argument names -> this command's flags, for its messages.
FLAGS = {"sizes": "--size", "target": "--target", "budget": "--budget", "trials": "--trials",
         "jobs": "--jobs", "ray": "--ray", "resume": "--resume", "out_dir": "--output",
         "seed": "--seed", "timeout": "--timeout"}


def run(args: argparse.Namespace) -> int:
    return int(guarded("tune", lambda: execute(args)))


def execute(args: argparse.Namespace) -> int:
    sizes = ints(args.size, "--size")
    if args.budget is None and args.trials is None:
        raise UsageError("give --budget SECONDS or --trials N")
    target = pipeline.get_target(args.target)
    if not timeable(target):   # said before the derivation is replayed
        raise UsageError(f"--target {target.name}: it {UNTIMEABLE}")
    target.check_runtime()
    progress = Progress(quiet=args.quiet)
    try:
        program = program_of(args.file, args.program, timeout=args.timeout)
        missing = [s for s in program.sizes if s not in sizes]
        if missing:
            raise UsageError(f"no value for size {', '.join(missing)} of {args.program}: pass "
                             f"--size {missing[0]}=INT (sizes: {', '.join(program.sizes)})")
        hand = None if args.no_hand else (args.file, args.program)
        res = tune(program, target=target.name, sizes=sizes, budget=args.budget,
                   trials=args.trials, jobs=args.jobs, ray=args.ray, resume=args.resume,
                   out_dir=args.output, seed=args.seed, hand=hand, timeout=args.timeout,
                   progress=progress)
    except ScheduleArgumentError as exc:
        if exc.directive == "tune" and exc.argument in FLAGS:
            raise UsageError(f"{FLAGS[exc.argument]}: {exc.why}") from None
        raise UsageError(str(exc)) from None
    except (ScheduleError, ExecutorError) as exc:
        raise UsageError(str(exc)) from None
    finally:
        progress.close()
    print(res.summary())
    if res.stopped == "interrupted":
        return 130
    return 0 if res.best is not None and (res.coq is None or res.coq.ok is not False) else 1


def register(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", type=path_arg, help="the .v file holding the derivation")
    parser.add_argument("--program", required=True,
                        help="a derivation of FILE.v: its original program is tuned, and "
                             "the derivation is the hand-derived baseline")
    parser.add_argument("--target", default="native", choices=pipeline.target_names(),
                        help="the target every candidate is built for (default: native, "
                             "the best ISA of this CPU, where the candidates are timed)")
    parser.add_argument("--size", action="append", default=[],
                        help="NAME=INT, the sizes candidates are timed at (repeatable, or "
                             "comma-separated: n=100,m=50)")
    parser.add_argument("--budget", type=positive_float, default=None,
                        help="seconds of search (Ctrl-C also stops it, keeping the log)")
    parser.add_argument("--trials", type=positive_int, default=None,
                        help="at most this many new candidates")
    parser.add_argument("--jobs", type=positive_int, default=None,
                        help="worker processes that prove candidates (default: cores - 1; "
                             "timing runs in this process)")
    parser.add_argument("--ray", default=None, metavar="ADDRESS",
                        help="prove candidates on Ray: 'auto' starts a local instance, else "
                             "the address of a cluster (pip install 'verisched[ray]')")
    parser.add_argument("--resume", default=None, metavar="LOG",
                        help="a tuning log (JSON lines) of an earlier run: its candidates "
                             "are given to the search and not measured again")
    parser.add_argument("-o", "--output", required=True, metavar="OUTDIR", type=directory_arg,
                        help="where the log, the winner (.v, .py) and the plot go")
    parser.add_argument("--seed", type=seed_int, default=0, help="seed of the sampler and inputs")
    parser.add_argument("--no-hand", action="store_true",
                        help="do not build the derivation itself for comparison")
    parser.add_argument("--timeout", type=positive_float, default=300.0, help="per Coq command, s")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress on stderr")
    parser.set_defaults(handler=run)
