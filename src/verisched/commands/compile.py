"""`verisched compile FILE.v --derivation NAME --target TARGET -o OUT.c`.

Targets: c, openmp, avx2, avx2-openmp, avx512, avx512-openmp (targets/);
the vector targets lower instruction calls and register memories
(codegen/vector.py) and compile with their ISA flags.

Replays the derivation through the bridge, checks the derived program is in
normal form (Sec. 5.1; end the derivation with `normalize`), lowers it
(Sec. 5.2, Fig. 3 and 6) and writes OUT.c and a header OUT.h next to it,
both atomically.  The kernel ABI: inputs as const pointers, size parameters
as int, the output last; row-major.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from verisched.codegen.errors import CodegenError


def shape_args(items: list[str]) -> dict:
    from verisched.codegen.fromcoq import parse_shape

    out = {}
    for it in items or []:
        if "=" not in it:
            raise CodegenError(f"--shape {it!r}: expected NAME=EXTENT,EXTENT,...")
        k, v = it.split("=", 1)
        out[k.strip()] = parse_shape(v)
    return out


def fixed_args(items: list[str]) -> dict[str, int]:
    out = {}
    for it in items or []:
        k, _, v = it.partition("=")
        try:
            out[k.strip()] = int(v)
        except ValueError as exc:
            raise CodegenError(f"--fix {it!r}: expected NAME=INT") from exc
    return out


def lower_derivation(args: argparse.Namespace, parallel: bool, isa=None):
    """Replay, then lower; shared with `verisched run`."""
    from verisched.codegen import lower
    from verisched.codegen.fromcoq import assumptions, load_derived

    dp = load_derived(args.file, args.derivation, shape_args(args.shape), timeout=args.timeout)
    fixed = fixed_args(args.fix)
    if fixed:
        from verisched.codegen.specialize import specialize

        # Proved for every value, so valid for these: constants fold into the code.
        dp.expr = specialize(dp.expr, fixed)
        dp.env = {k: tuple(specialize(i, fixed) for i in s) for k, s in dp.env.items()}
    name = args.kernel_name or args.derivation.replace("'", "_")
    sizes = [s for s in dp.sizes if s in _used_sizes(dp)]
    # The derivation's integer hypotheses (2 <= n) hold wherever the kernel may run
    # (checked at call time), so the generated code may rely on them.
    lowered = lower(dp.expr, dp.env, name=name, dtype=args.dtype, parallel=parallel,
                    sizes=sizes, assume=assumptions(dp, set(sizes)), isa=isa)
    if dp.safety_gap is not None:
        why = (f"{args.derivation}: accesses not proved in bounds ({dp.safety_gap}); "
               "the C kernel would read arrays unchecked")
        if not getattr(args, "allow_unproved_safety", False):
            raise CodegenError(f"refusing to compile {why}. End the derivation with check_safe "
                               "before done, or pass --allow-unproved-safety")
        print(f"WARNING: {why}; lowering anyway (--allow-unproved-safety)", file=sys.stderr)
    return dp, lowered


def _used_sizes(dp) -> set[str]:
    from verisched.codegen.fromcoq import idx_names
    from verisched.pybridge.terms import free_vars

    used = set(free_vars(dp.expr)) - set(dp.env)
    for s in dp.env.values():
        used |= idx_names(s)
    return used


def write_kernel(dp, lowered, target_name: str, out: Path) -> None:
    """Write OUT.c and OUT.h atomically and say what was written."""
    from verisched.codegen.render import render_header, render_source
    from verisched.targets.base import atomic_write

    header = out.with_suffix(".h")
    src = render_source([lowered], target_name)
    src = src.replace("#include <stdint.h>", f'#include <stdint.h>\n#include "{header.name}"', 1)
    atomic_write(header, render_header([lowered], out.name))
    atomic_write(out, src)
    print(f"wrote {out} and {header}: kernel {lowered.name}, target {target_name}, "
          f"{lowered.parallel_loops} parallel loop(s)")
    for hname, text in dp.unchecked:
        print(f"note: hypothesis {hname} : {text} is assumed, not checked at run time")


def run(args: argparse.Namespace) -> int:
    from verisched.targets import get_target

    if args.target == "gemmini":  # its own lowering and driver (targets/gemmini/cli.py)
        from verisched.targets.gemmini.cli import compile_command

        return compile_command(args)
    try:
        target = get_target(args.target)
        dp, lowered = lower_derivation(args, target.parallel, target.isa)
        write_kernel(dp, lowered, target.name, Path(args.output))
    except (CodegenError, OSError) as exc:
        print(f"verisched compile: {exc}", file=sys.stderr)
        return 1
    return 0


def add_common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", help="the .v file holding the derivation")
    parser.add_argument("--derivation", required=True, help="name given to Derive")
    from verisched.targets import TARGET_NAMES

    parser.add_argument("--target", default="c", choices=[*TARGET_NAMES, "gemmini"],
                        help="c, openmp, a vector target (avx2, avx512; -openmp for both), "
                             "or gemmini (gemmini.h calls, run on the functional simulator)")
    parser.add_argument("--dtype", default="float32", choices=["float32", "int32"])
    parser.add_argument("--shape", action="append", default=[],
                        help="input shape when no `shaped` hypothesis gives it: NAME=n,m")
    parser.add_argument("--kernel-name", default=None, help="C name (default: the derivation)")
    parser.add_argument("--fix", action="append", default=[],
                        help="fix a size parameter to a constant, e.g. a tile size: kn=64")
    parser.add_argument("--timeout", type=float, default=300.0, help="per Coq command, s")
    parser.add_argument("--allow-unproved-safety", action="store_true",
                        help="lower even if check_safe did not prove the final program's "
                             "accesses in bounds (prints a warning)")


def register(parser: argparse.ArgumentParser) -> None:
    add_common(parser)
    parser.add_argument("-o", "--output", required=True, help="C file to write (.h alongside)")
    parser.set_defaults(handler=run)
