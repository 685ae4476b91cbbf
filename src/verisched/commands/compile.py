"""`verisched compile FILE.v --derivation NAME [--target TARGET] -o OUT.c`.

Replays the derivation in Coq, requires `check_safe` to have proved the
final program's accesses in bounds (or `--unsafe`), turns the section's
hypotheses over the kernel's sizes into preconditions, lowers for the target
and writes OUT.c and its header OUT.h, both atomically.  The kernel ABI:
inputs as const pointers, size parameters as int (both in the order of the
.v file), the output last; row-major.  A thin caller of verisched.pipeline.
"""

from __future__ import annotations

import argparse
from collections.abc import Collection
from pathlib import Path

from verisched import pipeline
from verisched.commands.common import (
    UsageError,
    add_program_args,
    checked_from_args,
    guarded,
    path_arg,
    target_for,
    writable_output,
)
from verisched.pybridge.literals import floored_note


def run(args: argparse.Namespace) -> int:
    def go() -> int:
        if Path(args.output).suffix == ".h":  # before Coq runs, not at the write
            raise UsageError(f"-o {args.output}: the C file cannot end in .h, where its "
                             f"header goes (write {Path(args.output).with_suffix('.c')})")
        # Both files the write makes, checked alike: the header too may be a directory,
        # read-only, or the .v file itself.
        writable_output(args.output, "-o", inputs=[args.file])
        writable_output(Path(args.output).with_suffix(".h"), f"-o {args.output} (its header)",
                        inputs=[args.file])
        checked = checked_from_args(args)
        target = target_for(args, checked)
        lowered = pipeline.lower(checked, target)
        c_file, h_file = pipeline.render(lowered).write(Path(args.output))
        print(f"wrote {c_file} and {h_file}: kernel {checked.name}, target {target.name}, "
              f"{lowered.summary}")
        hint = getattr(lowered.target, "build_hint", None)  # one outside the registry may lack it
        if hint is not None:
            print(f"to build it: {hint(c_file, getattr(lowered.kernel, 'dtype', None))}")
        report(checked, set(getattr(lowered.kernel, "config_params", ())))
        floored = floored_note(checked.program.expr, getattr(lowered.kernel, "dtype", None))
        if floored:
            print(floored)
        return 0

    return int(guarded("compile", go))


def report(checked: pipeline.CheckedProgram, configs: Collection[str] = ()) -> None:
    """The kernel's signature, preconditions and what it assumes without checking.
    `configs`: the lowered kernel's parameters of any sign (Gemmini's scale and ReLU
    flag, which the entry check does not hold to at least 1)."""
    p = checked.program
    print(f"signature: inputs {', '.join(t for t, _ in p.inputs) or 'none'}; sizes "
          f"{', '.join(p.sizes) or 'none'}" + (f"; fixed {dict(checked.fixed)}"
                                               if checked.fixed else ""))
    values = [a for a in p.sizes if a in configs]
    if values:
        print(f"sizes: {', '.join(a for a in p.sizes if a not in configs) or 'none'} each at "
              f"least 1 at a call (the entry check); {', '.join(values)} any int (values "
              "the instructions take)")
    elif p.sizes:
        # (one line of the demo's output: under 100 characters)
        print("sizes: each at least 1 at a call (the entry check), whatever the hypotheses "
              "allow")
    for c in p.preconditions:
        print(f"precondition (checked at every call): {c.name + ' : ' if c.name else ''}"
              f"{c.text}")
    for a in p.assumed:
        print(f"note: hypothesis {a} is assumed, not checked at run time")


def register(parser: argparse.ArgumentParser) -> None:
    add_program_args(parser)
    parser.add_argument("-o", "--output", required=True, type=path_arg,
                        help="C file to write (.h alongside)")
    parser.set_defaults(handler=run)
