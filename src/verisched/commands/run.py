"""`verisched run FILE.v --derivation NAME --size n=100 ...`: compile and run.

Inputs come from .npy files (`--input v=img.npy`) or are random; with
`--check` the output is compared with the reference interpreter
(pybridge/interp.py) on the same inputs, evaluating both the derived program
and the original one.  The kernel refuses sizes that break the derivation's
hypotheses: it is only proved equal to the program where they hold.  A thin
caller of verisched.pipeline; a Gemmini kernel runs on the simulator and its
counters are printed.
"""

from __future__ import annotations

import argparse
import io
import re
import sys
import time
from fractions import Fraction
from pathlib import Path

import numpy as np

from verisched import pipeline
from verisched.commands.common import (
    UsageError,
    add_program_args,
    checked_from_args,
    fixes,
    guarded,
    ints,
    pairs,
    path_arg,
    section_signature,
    seed_int,
    size_hint,
    target_for,
    thread_count,
    writable_output,
)
from verisched.pybridge.derivation import write_text_atomic
from verisched.pybridge.errors import TermParseError
from verisched.pybridge.hypotheses import parse_shaped
from verisched.pybridge.literals import floored_note
from verisched.pybridge.replay import Signature
from verisched.pybridge.terms import IVar


def run(args: argparse.Namespace) -> int:
    return int(guarded("run", lambda: execute(args)))


def execute(args: argparse.Namespace, checked: pipeline.CheckedProgram | None = None) -> int:
    """Build, call on inputs, and with --check compare with the interpreter.  The
    arguments (sizes, inputs, the target's CPU) are checked before the replay."""
    signature = section_signature(args) if checked is None else None
    files = _input_arrays(args.input)
    if args.output:
        # The names the output is saved under (one output or several: not known
        # before the replay), not the name as given (`-o dd` writes dd.npy).
        for final in dict.fromkeys(_final_name(args.output, k) for k in (1, 2)):
            writable_output(final, "-o", inputs=[getattr(args, "file", None),
                                                 *pairs(args.input, "--input").values()])
    if checked is None and args.target is not None:  # refused before the replay
        pipeline.get_target(args.target).check_runtime()
    if checked is None and signature is None:  # not readable statically: the replay says
        checked = checked_from_args(args)      # why, or which sizes are booleans
    bools = signature.bools if signature is not None else checked.derived.bools
    sizes = ints(args.size, "--size", bools)
    fixed = fixes(args.fix)  # a size given both ways must agree: which would win is a guess
    clash = [k for k in sizes if k in fixed and fixed[k] != sizes[k]]
    if clash:
        k = clash[0]
        raise UsageError(f"--size {k}={sizes[k]} and --fix {k}={fixed[k]} disagree "
                         "(give the size once)")
    if checked is None:
        sizes = _check_args_early(args, signature, sizes, fixed, files)
    checked = checked or checked_from_args(args)
    target = target_for(args, checked)
    if args.threads and not target.parallel:  # before the compile, not after it
        raise UsageError(f"--threads: target {target.name} is not parallel (pick one that "
                         "is with --target)")
    missing = [s for s in checked.program.sizes if s not in sizes]
    if missing:
        raise UsageError(f"no value for size {', '.join(missing)} of kernel {checked.name}: "
                         f"pass {size_hint(missing[0], checked.derived.bools)} (sizes: "
                         f"{', '.join(checked.program.sizes)})")
    unused = set(sizes) - set(checked.program.sizes) - set(checked.fixed)
    extra = sorted(unused - set(checked.derived.sizes))
    if extra:
        raise UsageError(f"--size {', '.join(extra)}: not a size of kernel {checked.name} "
                         f"(sizes: {', '.join(checked.program.sizes) or 'none'})")
    if unused:  # a size of the section the derived program does not use
        print(f"note: --size {', '.join(sorted(unused))} ignored: kernel {checked.name} "
              f"does not take it (sizes: {', '.join(checked.program.sizes) or 'none'})",
              file=sys.stderr)
    sizes = {s: sizes[s] for s in checked.program.sizes}
    target.check_runtime()
    kernel = pipeline.compile_checked(checked, target, fast_math=args.fast_math)
    floored = floored_note(checked.program.expr, getattr(kernel, "dtype", None))
    if floored:
        print(floored)
    taken = kernel.input_dtypes()
    stray = sorted(set(files) - set(taken))
    if stray:  # a tensor of the section the derived program does not read
        raise UsageError(f"--input {', '.join(stray)}: not an input of kernel {checked.name} "
                         f"(inputs: {', '.join(taken) or 'none'})")
    for name, arr in files.items():  # converting silently could lose precision
        if arr.dtype != taken[name]:
            way = (f"convert the file, or build the kernel with --dtype {arr.dtype}"
                   if arr.dtype.name in target.dtypes and args.dtype != arr.dtype.name
                   else f"convert the file; target {target.name}'s element types: "
                   f"{', '.join(target.dtypes)}")
            raise UsageError(f"--input {name}: {_article(arr.dtype.name)} {arr.dtype} array, "
                             f"but kernel {checked.name} takes {np.dtype(taken[name])} ({way})")
    if args.check:  # the interpreter's memory too, before any input is drawn
        pipeline.check_memory(kernel, sizes, files, reference=checked)
    inputs = pipeline.random_inputs(kernel, sizes, args.seed, files)
    if args.threads:
        set_threads = getattr(kernel, "set_threads", None)
        if set_threads is None or not target.parallel:
            raise UsageError(f"--threads: target {target.name} is not parallel")
        set_threads(args.threads)
    native = target.runs_on != "simulator"  # ctypes on this CPU
    if native:
        kernel.call(inputs, sizes)  # a cold call first: the figure below is a warm one
    t0 = time.perf_counter()
    out = kernel.call(inputs, sizes)
    dt = time.perf_counter() - t0
    when = "second call" if native else f"one run on the {target.runs_on}, not a timing"
    outs = out if isinstance(out, tuple) else (out,)
    shapes = ", ".join(str(o.shape) for o in outs)
    picked = getattr(kernel, "picked", "")  # what `native` chose (targets/auto.py)
    label = f"{target.name} picked {picked}" if picked else target.name
    print(f"{checked.name} [{label}] output shape{'s' if len(outs) > 1 else ''} "
          f"{shapes}, {dt * 1000:.3f} ms ({when})")
    counters = getattr(kernel, "counters", None)
    if counters:
        print("counters: " + ", ".join(f"{k} {v}" for k, v in counters.items() if v))
    if args.output:
        print(f"saved {_save(args.output, outs)}")
    else:
        for o in outs:
            print(np.array2string(o, threshold=20, precision=4))
    if not args.check:
        return 0
    ok = True
    for v in pipeline.verify(checked, inputs, sizes, out):
        status = ("OK" if v.ok else f"MISMATCH{f' ({v.note})' if v.note else ''}"
                  if v.ok is False else f"not checked ({v.note})")
        print(f"check against the reference interpreter on the {v.what}: {status}")
        ok = ok and v.ok is not False
    return 0 if ok else 1


def _input_arrays(items: list[str]) -> dict[str, np.ndarray]:
    """The `--input NAME=FILE.npy` arrays; a file that is not one readable array is
    refused by its argument."""
    out = {}
    for name, path in pairs(items, "--input").items():
        try:
            arr = np.load(path, allow_pickle=False)
        except (OSError, ValueError, EOFError) as exc:
            why = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
            if "Object arrays" in why:  # a .npy of Python objects: read only by unpickling
                why = "an array of Python objects, which is never unpickled"
            elif "pickle" in why:  # numpy reads an unknown format as a pickle
                why = "not a .npy file"
            if re.search(r",\s*[A-Za-z_][\w']*=", path) and not Path(path).exists():
                # `--size n=1,m=2` takes a list; a path may hold a comma, so this does not
                why += "; give each array its own --input, as in --input A=a.npy --input B=b.npy"
            raise UsageError(f"--input {name}={path}: cannot read it as a .npy array "
                             f"({why})") from None
        if not isinstance(arr, np.ndarray):  # an .npz archive holds several
            raise UsageError(f"--input {name}={path}: an .npz archive; give one .npy array")
        out[name] = arr
    return out


def _final_name(path: str, count: int) -> str:
    """The file `-o path` saves `count` outputs in (_save's rule)."""
    suffix = ".npz" if count > 1 else ".npy"
    if suffix == ".npz" and path.endswith(".npy"):
        path = path[:-len(".npy")]
    return path if path.endswith(suffix) else path + suffix


def _save(path: str, outs: tuple[np.ndarray, ...]) -> str:
    """Save the output(s) atomically, named as numpy names them (`.npy` appended to a
    name without it; several outputs as out0, out1, ... in an `.npz`, whose name takes
    `.npz` in place of a `.npy` the user wrote, not after it): no half-written file is
    left if the write fails."""
    final = _final_name(path, len(outs))
    buf = io.BytesIO()
    if len(outs) > 1:
        np.savez(buf, **{f"out{k}": o for k, o in enumerate(outs)})
    else:
        np.save(buf, outs[0])
    write_text_atomic(final, buf.getvalue())
    return final


def _check_args_early(args: argparse.Namespace, signature: Signature,
                      sizes: dict[str, int], fixed: dict[str, int | Fraction],
                      files: dict[str, np.ndarray]) -> dict[str, int]:
    """Refuse a missing or unknown --size, and an --input that names no tensor, before
    Coq runs, from the section's declarations read statically: the kernel takes a
    subset of its size variables (those its program uses), so every one is asked for
    now (one the kernel turns out not to take is ignored after the replay, with a note)
    and a name outside them is never a size; likewise its inputs are among the
    section's tensors.  A size that is by itself an extent of an --input array (its
    `shaped [n; m] v` hypothesis) is taken from the array, as the Python API does;
    returns the sizes completed so.  `signature` is section_signature's."""
    unknown = [k for k in files if k not in signature.tensors]
    if unknown:
        raise UsageError(f"--input {', '.join(unknown)}: not a tensor of derivation "
                         f"{args.derivation} (tensors: "
                         f"{', '.join(signature.tensors) or 'none'})")
    section = signature.sizes
    inferred = {k: v for k, v in _sizes_from_inputs(signature, files).items()
                if k not in sizes}
    if inferred:
        if not args.quiet:
            print("note: from the --input arrays' shapes: "
                  + ", ".join(f"{k}={v}" for k, v in inferred.items()), file=sys.stderr)
        sizes = {**sizes, **inferred}
    missing = [s for s in section if s not in sizes and s not in fixed]
    extra = [s for s in sizes if s not in section]
    # Both said at once: `--size m=5` for a derivation of size n alone is likely one
    # mistake (a misspelt size), not two.
    unknown = (f"--size {', '.join(extra)}: not a size of derivation {args.derivation}"
               if extra else "")
    if missing:
        raise UsageError(f"no value for size {', '.join(missing)} of derivation "
                         f"{args.derivation}: pass {size_hint(missing[0], signature.bools)} "
                         f"(sizes: {', '.join(section)}){'; ' + unknown if unknown else ''}")
    if extra:
        raise UsageError(f"{unknown} (sizes: {', '.join(section) or 'none'})")
    return sizes


def _sizes_from_inputs(signature: Signature, files: dict[str, np.ndarray]) -> dict[str, int]:
    """Sizes read off the given arrays: where the section says `shaped [d0; d1; ...] v`
    and some d_k is a size by itself, v's axis k gives it.  Two arrays that disagree on
    a size are refused, naming both (a shape that disagrees with a given --size is
    refused by the kernel's own check)."""
    found: dict[str, tuple[int, str]] = {}
    for _, prop in signature.hypotheses:
        try:
            shaped = parse_shaped(prop)
        except TermParseError:
            continue  # an extent the bridge cannot read: the replay will say
        if shaped is None or shaped[0] not in files:
            continue
        name, dims = shaped
        arr = files[name]
        if arr.ndim != len(dims):
            raise UsageError(f"--input {name}: a {arr.ndim}-d array, but the section "
                             f"says {prop}")
        for k, d in enumerate(dims):
            if not isinstance(d, IVar) or d.name not in signature.sizes:
                continue
            v, where = int(arr.shape[k]), f"{name} axis {k}"
            if d.name in found and found[d.name][0] != v:
                raise UsageError(f"--input: the arrays disagree on size {d.name}: "
                                 f"{found[d.name][1]} has length {found[d.name][0]}, "
                                 f"{where} has {v}")
            found.setdefault(d.name, (v, where))
    return {d: v for d, (v, _) in found.items()}


def register(parser: argparse.ArgumentParser) -> None:
    add_program_args(parser)
    parser.add_argument("--size", action="append", default=[],
                        help="NAME=INT (repeatable, or comma-separated: n=100,m=50)")
    parser.add_argument("--input", action="append", default=[],
                        help="NAME=file.npy; a size that is by itself an extent of the "
                             "array (`shaped [n; m] NAME`) is read from its shape")
    parser.add_argument("--seed", type=seed_int, default=0, help="seed for random inputs")
    parser.add_argument("--threads", type=thread_count, default=None, help="OpenMP threads")
    parser.add_argument("--fast-math", action="store_true", help="compile with -ffast-math")
    parser.add_argument("--check", action="store_true",
                        help="compare with the reference interpreter")
    parser.add_argument("-o", "--output", default=None, type=path_arg,
                        help="save the output as .npy (several outputs: one .npz of "
                        "out0, out1, ...)")
    parser.set_defaults(handler=run)


def _article(word: str) -> str:
    return "an" if word[:1] in "aeiou" else "a"
