"""`verisched run FILE.v --derivation NAME --size n=100 ...`: compile and run.

Inputs come from .npy files (`--input v=img.npy`) or are random; with
`--check` the output is compared with the reference interpreter
(pybridge/interp.py) on the same inputs.  Sizes are checked against the
derivation's integer hypotheses first: the kernel is only proved equal to
the program where they hold.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from verisched.codegen.errors import CodegenError
from verisched.commands.compile import add_common, lower_derivation


def _kv(items: list[str], what: str) -> dict[str, str]:
    out = {}
    for it in items or []:
        if "=" not in it:
            raise CodegenError(f"--{what} {it!r}: expected NAME=VALUE")
        k, v = it.split("=", 1)
        out[k.strip()] = v.strip()
    return out


def run(args: argparse.Namespace) -> int:
    from verisched.targets import get_target

    if args.target == "gemmini":  # built and run on the simulator (targets/gemmini/cli.py)
        from verisched.targets.gemmini.cli import run_command

        return run_command(args)
    try:
        target = get_target(args.target)
        dp, lowered = lower_derivation(args, target.parallel, target.isa)
    except (CodegenError, OSError, ValueError) as exc:
        print(f"verisched run: {exc}", file=sys.stderr)
        return 1
    return execute(dp, lowered, target, args)


def execute(dp, lowered, target, args: argparse.Namespace) -> int:
    """Build, call on inputs, and with --check compare with the interpreter."""
    from verisched.codegen.fromcoq import check_conditions
    from verisched.targets.base import NP_DTYPES, build

    try:
        sizes = {}
        for k, v in _kv(args.size, "size").items():
            try:
                sizes[k] = int(v)
            except ValueError as exc:
                raise CodegenError(f"--size {k}={v}: not an integer") from exc
        from verisched.commands.compile import fixed_args

        check_conditions(dp, {**sizes, **fixed_args(args.fix)})
        kernel = build([lowered], target, fast_math=args.fast_math)[lowered.name]
        shapes, _ = kernel.extents({k: sizes[k] for k, _ in lowered.sizes if k in sizes}
                                   if set(sizes) >= {k for k, _ in lowered.sizes} else sizes)
        dtype = NP_DTYPES[lowered.dtype]
        files = _kv(args.input, "input")
        rng = np.random.default_rng(args.seed)
        inputs = {}
        for name, shape in shapes.items():
            if name in files:
                inputs[name] = np.load(files[name])
            elif dtype == np.int32:
                inputs[name] = rng.integers(-5, 6, size=shape).astype(dtype)
            else:
                inputs[name] = rng.standard_normal(shape).astype(dtype)
        if args.threads and target.parallel:
            kernel.set_threads(args.threads)
        used = {k: sizes[k] for k, _ in lowered.sizes}
        t0 = time.perf_counter()
        out = kernel.call(inputs, used)
        dt = time.perf_counter() - t0
    except (CodegenError, OSError, ValueError) as exc:
        print(f"verisched run: {exc}", file=sys.stderr)
        return 1
    print(f"{lowered.name} [{target.name}] output shape {out.shape}, {dt * 1000:.3f} ms")
    if args.output:
        np.save(args.output, out)
        print(f"saved {args.output}")
    else:
        print(np.array2string(out, threshold=20, precision=4))
    if args.check:
        from verisched.pybridge.interp import evaluate

        ref_t = np.float64 if dtype == np.float32 else np.int64
        ok = True
        # The derived program checks the lowering; the original algorithm checks the
        # whole chain (proof, replay, parse, lowering) independently of Coq.
        programs = [("derived program", dp.expr)]
        if dp.original is not None:
            programs.append(("original algorithm", dp.original))
        for what, expr in programs:
            want = evaluate(expr, {k: v.astype(ref_t) for k, v in inputs.items()}, sizes, ref_t)
            full = np.zeros(out.shape, dtype=ref_t)
            common = tuple(slice(0, min(a, b))
                           for a, b in zip(want.shape, out.shape, strict=False))
            if want.ndim == out.ndim:
                full[common] = want[common]
            same = (np.array_equal(out, full) if dtype == np.int32
                    else np.allclose(out, full, rtol=1e-4, atol=1e-5 * max(1.0, np.abs(full).max(
                        initial=0.0))))
            print(f"check against the reference interpreter on the {what}:",
                  "OK" if same else "MISMATCH")
            ok = ok and same
        return 0 if ok else 1
    return 0


def register(parser: argparse.ArgumentParser) -> None:
    add_common(parser)
    parser.add_argument("--size", action="append", default=[], help="NAME=INT (repeatable)")
    parser.add_argument("--input", action="append", default=[], help="NAME=file.npy")
    parser.add_argument("--seed", type=int, default=0, help="seed for random inputs")
    parser.add_argument("--threads", type=int, default=0, help="OpenMP threads")
    parser.add_argument("--fast-math", action="store_true", help="compile with -ffast-math")
    parser.add_argument("--check", action="store_true",
                        help="compare with the reference interpreter")
    parser.add_argument("-o", "--output", default=None, help="save the output as .npy")
    parser.set_defaults(handler=run)
