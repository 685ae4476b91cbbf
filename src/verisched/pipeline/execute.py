"""Running a kernel on inputs, and checking it against the reference interpreter.

Shared by `verisched run`, the demo and the Python API: random inputs of the
kernel's own dtypes and shapes (or the caller's), and a comparison of its
output with the numpy interpreter (pybridge/interp.py) evaluating the derived
program (which checks the lowering) and the original program (which checks
the whole chain, proof, replay, parse and lowering, independently of Coq).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass

import numpy as np

from verisched.codegen.errors import KernelCallError
from verisched.pipeline.check import CheckedProgram
from verisched.pybridge.interp import InterpError, WidthOverflow, batch_elements, evaluate
from verisched.pybridge.terms import Expr, free_vars
from verisched.targets.base import Kernel


class MemoryLimitError(KernelCallError):
    """Sizes whose inputs and outputs do not fit in this machine's available memory."""


def random_inputs(kernel: Kernel, sizes: Mapping[str, int], seed: int = 0,
                  given: Mapping[str, np.ndarray] | None = None) -> dict[str, np.ndarray]:
    """Inputs for `kernel` at `sizes`: the `given` arrays, the others random (floats from
    a normal distribution; small integers, or int8's whole range)."""
    shapes, _ = kernel.extents(sizes)
    check_memory(kernel, sizes, given or {})
    rng = np.random.default_rng(seed)
    dtypes = kernel.input_dtypes()
    # Beside int8 data, int32 inputs are accumulator-width operands (a bias): wide values
    # exercise the saturating output path.  Elsewhere small integers keep sums exact.
    wide = 2**15 if any(dt == np.int8 for dt in dtypes.values()) else 6
    out: dict[str, np.ndarray] = {}
    for name, dt in dtypes.items():
        if given and name in given:
            out[name] = given[name]
        elif dt == np.int8:
            out[name] = rng.integers(-128, 128, size=shapes[name], dtype=np.int8)
        elif np.issubdtype(dt, np.integer):  # drawn in its own type: no int64 temporary
            out[name] = rng.integers(-wide, wide, size=shapes[name], dtype=dt)
        else:  # likewise no float64 temporary for a float32 input (check_memory's count)
            out[name] = rng.standard_normal(shapes[name], dtype=dt)
    return out


def _call_shapes(kernel: Kernel, sizes: Mapping[str, int]
                 ) -> tuple[dict[str, tuple[int, ...]], list[tuple[int, ...]]]:
    """The inputs' shapes by name and every output's shape, at `sizes`."""
    shapes, out_shape = kernel.extents(sizes)
    return shapes, [out_shape, *getattr(kernel, "more_shapes", lambda _s: [])(sizes)]


def _bytes(kernel: Kernel, shapes: Mapping[str, tuple[int, ...]],
           outs: list[tuple[int, ...]], given: Collection[str]) -> int:
    """Bytes of a call's inputs and outputs of these shapes, less the inputs named in
    `given` (already in memory)."""
    dtypes = kernel.input_dtypes()
    out_item = np.dtype(getattr(kernel, "dtype", np.float32)).itemsize
    total = sum(int(np.prod(s, dtype=object)) * np.dtype(dtypes[a]).itemsize
                for a, s in shapes.items() if a not in given)
    return total + _elements(outs) * out_item


def available_memory() -> int | None:
    """The kernel's estimate of memory a new allocation can take without swapping
    (`MemAvailable`), or None where /proc/meminfo does not say."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def reference_footprint(checked: CheckedProgram, sizes: Mapping[str, int],
                        in_elements: int, out_elements: int) -> int:
    """About the bytes `verify` needs at `sizes`, an estimate: the interpreter evaluates
    every loop of a program at once (pybridge/interp.py), so its largest intermediate is
    `batch_elements` 8-byte values, and a few are alive together (3 of them: measured
    peaks were 2.1x one for a tiled matmul, less for a blur), beside the inputs' and the
    outputs' 8-byte copies (two of each output: the reference and the compared window)."""
    progs = [checked.program.expr] + ([checked.original] if checked.original is not None
                                      else [])
    batch = max(batch_elements(e, sizes) for e in progs)
    return 8 * (3 * batch + in_elements + 2 * out_elements)


def _elements(shapes: Collection[tuple[int, ...]]) -> int:
    return sum(int(np.prod(s, dtype=object)) for s in shapes)


def _refuse_reference(name: str, sizes: Mapping[str, int], ref: int, need: int,
                      have: int) -> None:
    if need + ref > have:
        raise MemoryLimitError(
            f"{name}: the check against the reference interpreter needs about {_gib(ref)} "
            f"at sizes {dict(sizes)} (it evaluates every loop of the program at once), "
            f"beside {_gib(need)} for the kernel's inputs and outputs; this machine has "
            f"{_gib(have)} available: check at smaller sizes")


def check_memory(kernel: Kernel, sizes: Mapping[str, int], given: Collection[str] = (),
                 reference: CheckedProgram | None = None) -> None:
    """Refuse sizes whose inputs and outputs cannot fit in memory, before anything is
    allocated: numpy would fail with a traceback, or (Linux overcommits) succeed and
    get the process killed mid-call.  With `reference` (a `--check` to come), the
    interpreter's estimated memory (reference_footprint) is counted too."""
    have = available_memory()
    if have is None:
        return
    shapes, outs = _call_shapes(kernel, sizes)  # the kernel's extents, evaluated once
    need = _bytes(kernel, shapes, outs, given)
    if need > have:
        what = "the outputs and the inputs not given" if given else "the inputs and outputs"
        raise MemoryLimitError(f"{kernel.name}: sizes {dict(sizes)} need {_gib(need)} for "
                               f"{what}; this machine has {_gib(have)} available")
    if reference is not None:
        ref = reference_footprint(reference, sizes, _elements(shapes.values()),
                                  _elements(outs))
        _refuse_reference(kernel.name, sizes, ref, need, have)


def _gib(n: int) -> str:
    return f"{n / 2**30:.1f} GiB" if n >= 2**30 else f"{n / 2**20:.1f} MiB"


@dataclass(frozen=True)
class Verdict:
    """One comparison with the reference interpreter."""

    what: str            # "derived program" / "original program"
    ok: bool | None      # None: could not be evaluated (see note)
    note: str = ""


def verify(checked: CheckedProgram, inputs: Mapping[str, np.ndarray],
           sizes: Mapping[str, int], out: np.ndarray | tuple[np.ndarray, ...]
           ) -> list[Verdict]:
    """Compare `out` with the interpreter on the derived and the original program.
    Integer kernels must match exactly; float ones to their type's rounding (float32:
    1e-4 relative, float64: 1e-10).  A kernel with several outputs (a tuple) is right
    when every output is."""
    if isinstance(out, tuple):
        outs = out
        first = outs[0]
    else:
        outs, first = (out,), out
    have = available_memory()
    if have is not None:  # refused by its estimate, not killed by the kernel's OOM killer
        ref = reference_footprint(checked, sizes, _elements([a.shape for a in inputs.values()]),
                                  _elements([o.shape for o in outs]))
        _refuse_reference(checked.name, sizes, ref, 0, have)
    exact = np.issubdtype(first.dtype, np.integer)
    ref_t = np.int64 if exact else np.float64
    programs: list[tuple[str, Expr]] = [("derived program", checked.program.expr)]
    if checked.original is not None:
        programs.append(("original program", checked.original))
    verdicts = []
    for what, expr in programs:
        names = set(free_vars(expr)) - set(inputs)
        missing = sorted(names - set(sizes) - {t for t, _ in checked.derived.tensors})
        if missing:
            verdicts.append(Verdict(what, None, f"needs sizes {missing} the kernel does not "
                                    "take"))
            continue
        try:
            want = evaluate(expr, {k: v.astype(ref_t) for k, v in inputs.items()},
                            dict(sizes), ref_t)
        except WidthOverflow as exc:  # the kernel wrapped where the proof is over Z
            verdicts.append(Verdict(what, False, str(exc)))
            continue
        except InterpError as exc:
            verdicts.append(Verdict(what, None, f"the interpreter cannot evaluate it: {exc}"))
            continue
        wants = want if isinstance(want, tuple) else (want,)
        if len(wants) != len(outs):
            verdicts.append(Verdict(what, False, f"{len(wants)} outputs, the kernel gave "
                                    f"{len(outs)}"))
            continue
        ok = all(_same(o, w, exact, ref_t) for o, w in zip(outs, wants, strict=True))
        verdicts.append(Verdict(what, ok, "" if ok or not exact else _overflow_note(wants)))
    return verdicts


def _overflow_note(wants: tuple[np.ndarray, ...]) -> str:
    """Why an integer kernel may differ from the reference: a value beyond int32, where
    the kernel wraps (targets/base.py ROUNDING) and the proof, over Z, says nothing."""
    big = [w for w in wants if w.size and (w.max() > 2**31 - 1 or w.min() < -(2**31))]
    if not big:
        return ""
    worst = max((int(v) for w in big for v in (w.max(), w.min())), key=abs)
    return (f"the reference, over Z, holds {worst}, beyond int32: the kernel wraps modulo "
            "2^32 there, as its banner says, and the proof, over Z, does not cover it")


def _same(out: np.ndarray, want: np.ndarray, exact: bool, ref_t: type) -> bool:
    # ATL values are zero outside their extent: compare on the common window.
    full = np.zeros(out.shape, dtype=ref_t)
    if want.ndim == out.ndim:
        common = tuple(slice(0, min(a, b)) for a, b in zip(want.shape, out.shape,
                                                           strict=True))
        full[common] = want[common]
    if exact:
        if out.dtype == np.int8:
            # A CPU int8 kernel wraps on the store (targets/base.py ROUNDING["int8"]);
            # Gemmini's specification saturates first, so the wrap changes nothing there.
            full = full.astype(np.int8)
        return bool(np.array_equal(out, full))
    return float_agrees(out, full)


def float_agrees(out: np.ndarray, want: np.ndarray) -> bool:
    """A float kernel's output against the float64 reference, to the output type's
    rounding: float64 1e-10 relative, others (float32) 1e-4; absolutely, 1e-12 or 1e-5
    of the largest finite reference magnitude (a sum of many terms cancels).  That
    scale leaves infinities out, which would make every value "close"; NaNs and
    infinities (from inputs holding them) must appear where the reference has them,
    with the same sign."""
    if out.shape != want.shape:
        return False
    finite = np.abs(want[np.isfinite(want)])
    scale = max(1.0, float(finite.max(initial=0.0)))
    rtol, atol = (1e-10, 1e-12) if out.dtype == np.float64 else (1e-4, 1e-5)
    return bool(np.allclose(out, want, rtol=rtol, atol=atol * scale, equal_nan=True))
