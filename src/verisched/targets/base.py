"""The Target protocol: what every code generation target provides.

A target is a library behind one interface (the Exo thesis's Sec. 3.2:
memories, instructions as specifications, code templates).  It states

- its name and the element types it computes in;
- the instruction specifications and memories it provides (registered with
  the instruction registry, pybridge/instrs.py, when its module is imported;
  their Coq definitions live in its Coq file, e.g. coq/Targets/AVX.v);
- how it lowers a checked program (codegen/program.py) to its own lowered
  form, renders that to C, and builds the C into callable kernels, natively
  (ctypes) or on a simulator;
- whether this machine can run its kernels (`check_runtime`: the CPU's
  features, or the simulator).

targets/registry.py holds the one list of targets; verisched.pipeline is the
only caller.  Adding a target is one Coq file, one Python module and one
registry line (docs/architecture.md walks through an example).
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from verisched.codegen.errors import KernelCallError
from verisched.codegen.ir import C_INT_MAX
from verisched.codegen.poly import Poly, evaluate
from verisched.codegen.program import KernelProgram
from verisched.pybridge.coqterm import idx_str
from verisched.pybridge.derivation import check_writable, write_texts_atomic
from verisched.pybridge.errors import OutputPathError
from verisched.pybridge.instrs import InstrSpec
from verisched.pybridge.terms import Lit, walk


class TargetUnavailable(KernelCallError):
    """This machine cannot run the target's kernels (a CPU feature or a tool is missing)."""


@dataclass(frozen=True)
class Lowered:
    """A program lowered for one target: the target (the object itself, so that a target
    outside the registry works too), its own lowered form (`kernel`:
    codegen.lower.LoweredKernel for the C family, a GemminiKernel for Gemmini), the
    program it came from and a one-line summary for the user."""

    target: Target
    program: KernelProgram
    kernel: Any
    summary: str = ""

    @property
    def name(self) -> str:
        return self.program.name


@dataclass(frozen=True)
class CSource:
    """A rendered C file and its header, for one or more kernels of one target."""

    target: Target
    lowered: tuple[Lowered, ...]
    c: str
    header: str

    def write(self, out: str | Path) -> tuple[Path, Path]:
        """Write OUT (the C file, including its header by name) and the header next to it
        (OUT with suffix .h), atomically and both or neither; returns both paths.  Both
        paths are checked first (OutputPathError names the one that cannot be written:
        a missing directory, a directory, a read-only file)."""
        out = Path(out)
        header = out.with_suffix(".h")
        if header == out:  # OUT.h: the header would overwrite the C file
            raise OutputPathError(f"{out}: the C file cannot end in .h, where its header "
                                  f"goes (write {out.with_suffix('.c')})")
        for path in (out, header):
            check_writable(path)
        include = f'#include "{header.name}"\n'
        c = self.c
        marker = "#include <stdint.h>\n"
        c = c.replace(marker, marker + include, 1) if marker in c else include + c
        # The header's comment names the file written, not the default it was rendered
        # with (the first kernel's name; a header that names no file is left as it is).
        default = f"{self.lowered[0].name}.c" if self.lowered else ""
        h = self.header.replace(f"declarations for {default}.", f"declarations for {out.name}.",
                                1)
        # Both or neither: a C file and a header from different runs do not match.
        write_texts_atomic([(header, h), (out, c)])
        return out, header


def c_source_arg(c_file: Path) -> str:
    """The C file as a build hint passes it to `cc -c`: quoted for a shell, and with
    `-x c` where the name does not say C (`-o kernel`), or cc would take it for a linker
    input and build nothing.  One rule for every target's `build_hint`."""
    lang = "" if str(c_file).endswith(".c") else "-x c "
    return lang + shlex.quote(str(c_file))


def size_fits(value: int, signed: bool = False) -> bool:
    """Whether a kernel's size argument takes `value`: a C int, and (an extent, unless
    `signed`: a parameter such as Gemmini's output scale) at least 1.  One rule for every
    kernel's call (native.py, gemmini/build.py) and for the tuner's sizes."""
    return (-C_INT_MAX - 1 if signed else 1) <= value <= C_INT_MAX


def check_int_exprs(kernel: str, int_exprs: Sequence[tuple[str, Poly]],
                    values: Mapping[str, int], shown: str,
                    bounds: Sequence[tuple[str, Poly]] = ()) -> None:
    """The Python side of a kernel's entry check on the int expressions over its sizes
    and the bounds of its int arithmetic with loop variables (codegen.lower.entry_check,
    which the C does too): the first that leaves C int is named, with its value.
    `values` are keyed by the sizes' C names; `shown` is how the message shows them."""
    for text, f in int_exprs:
        v = evaluate(f, values)
        if not size_fits(v, signed=True):
            raise KernelCallError(f"{kernel}: at sizes {shown} the C's {text} is {v}, beyond "
                                  "the int its loops and indices use")
    for text, f in bounds:
        v = evaluate(f, values)
        if v > C_INT_MAX:
            raise KernelCallError(f"{kernel}: at sizes {shown} the C's int arithmetic inside "
                                  f"its loops reaches up to {text} = {v}, beyond the int its "
                                  "loops and indices use")


def check_buffers(kernel: str, buffers: Sequence[tuple[tuple[int, ...], int, str]]) -> None:
    """The Python side of a kernel's entry check on its buffers (codegen.lower.entry_check,
    `vs_cbytes`): each (extents, bytes per element, what) has extents that fit a C int,
    the loops' type, and a byte count that fits a ptrdiff_t, as any real array's does.
    The first that does not is named."""
    for shape, item, what in buffers:
        if any(x > C_INT_MAX for x in shape) or \
                int(np.prod(shape, dtype=object)) * item > 2**63 - 1:
            raise KernelCallError(f"{kernel}: {what} of shape {shape} is too large (its "
                                  "extents must fit a C int, its bytes a ptrdiff_t)")


def check_input_names(kernel: str, names: Sequence[str], inputs: Mapping[str, object],
                      sizes: Mapping[str, object] | None = None) -> None:
    """The inputs' names, and that each is a numpy array: a misnamed input is named,
    not reported later as a missing size or a missing file.  An array passed where the
    dict belongs (`kernel(x)`), or inputs passed as keywords (`kernel(A=a)`, where the
    keywords are sizes), are named as such."""
    keyed = [a for a in names if a in (sizes or {})]
    if keyed:
        shown = ", ".join(f"{a!r}: ..." for a in names)
        what = (f"input {keyed[0]} given as a keyword argument" if len(keyed) == 1 else
                f"inputs {', '.join(keyed)} given as keyword arguments")
        raise KernelCallError(f"{kernel}: {what}, where keywords are sizes; pass the "
                              f"inputs as a dict: {kernel}({{{shown}}})")
    if not isinstance(inputs, Mapping):
        raise KernelCallError(f"{kernel}: the inputs are a dict from name to numpy array "
                              f"({', '.join(names) or 'none'}), got {type(inputs).__name__}")
    if set(inputs) != set(names):
        raise KernelCallError(f"{kernel}: inputs must be {list(names)}, got "
                              f"{sorted(inputs, key=repr)}")  # keys of any type
    for a in names:
        if not isinstance(inputs[a], np.ndarray):
            raise KernelCallError(f"{kernel}: input {a} must be a numpy array, got "
                                  f"{type(inputs[a]).__name__}")


def infer_sizes(kernel: str, inputs_dims: Sequence[tuple[str, Sequence[Poly]]],
                size_names: Sequence[tuple[str, str]], inputs: Mapping[str, np.ndarray],
                sizes: Mapping[str, int]) -> dict[str, int]:
    """`sizes` completed from the inputs' shapes, for every target's `__call__`: a size
    parameter (ATL name, C name) that is, by itself, the extent of some input's axis
    takes that axis's length.  Sizes given are kept (the call then checks the shapes
    against them); two inputs that disagree on a size not given are refused, naming
    both; a size that is no input's extent must be given."""
    seen: dict[str, tuple[int, str]] = {}
    for a, dims in inputs_dims:
        arr = inputs.get(a)
        if not isinstance(arr, np.ndarray):
            continue  # check_input_names reports it
        if arr.ndim != len(dims):  # said now: a size it would give would be missing
            raise KernelCallError(f"{kernel}: input {a} is a {arr.ndim}-d array, "
                                  f"expected {len(dims)}-d")
        for k, d in enumerate(dims):
            for atl, c in size_names:
                if atl in sizes or d != Poly.var(c):
                    continue
                v, where = int(arr.shape[k]), f"{a} axis {k}"
                if atl in seen and seen[atl][0] != v:
                    raise KernelCallError(
                        f"{kernel}: inputs disagree on size {atl}: {seen[atl][1]} has "
                        f"length {seen[atl][0]}, {where} has {v}")
                seen.setdefault(atl, (v, where))
    return {**{atl: v for atl, (v, _) in seen.items()}, **sizes}


@runtime_checkable
class Kernel(Protocol):
    """A compiled kernel, callable from Python on numpy arrays.

    `call(inputs, sizes)` checks everything a caller can get wrong (names, dtypes,
    shapes, sizes, the preconditions) before control enters C or the simulator."""

    name: str
    target: str
    program: KernelProgram | None

    def extents(self, sizes: Mapping[str, int]
                ) -> tuple[dict[str, tuple[int, ...]], tuple[int, ...]]:
        """Input and output extents for `sizes`, after checking them."""
        ...

    def input_dtypes(self) -> dict[str, np.dtype]:
        """The numpy dtype each input must have."""
        ...

    def call(self, inputs: Mapping[str, np.ndarray], sizes: Mapping[str, int],
             out: np.ndarray | None = None) -> np.ndarray:
        ...

    def __call__(self, inputs: Mapping[str, np.ndarray] | None = None, /,
                 **sizes: int) -> np.ndarray:
        ...


@runtime_checkable
class Target(Protocol):
    """A code generation target (see the module docstring)."""

    name: str
    summary: str
    dtypes: tuple[str, ...]       # element types; the first is the default
    memories: tuple[str, ...]     # memories it places buffers in, besides DRAM
    families: tuple[str, ...]     # instruction families it emits (name prefixes)
    parallel: bool                # marks OpenMP-safe loops parallel
    runs_on: str                  # "native" (ctypes) or "simulator"
    coq_scalar: str               # Coq's element type of its programs ("S": generic)

    def instructions(self) -> tuple[InstrSpec, ...]:
        """The specifications of the instructions it provides."""
        ...

    def check_runtime(self) -> None:
        """Raise TargetUnavailable when this machine cannot run its kernels."""
        ...

    def lower(self, program: KernelProgram) -> Lowered:
        ...

    def render(self, lowered: Sequence[Lowered]) -> CSource:
        ...

    def build(self, source: CSource, *, fast_math: bool = False) -> dict[str, Kernel]:
        """Compile (cached by content) and load: kernel name -> callable kernel."""
        ...


# What each element type means against the proof, which is over the generic scalar
# (ATL's Scalar class: real numbers or integers).  Stated in every generated file.
ROUNDING = {
    "float32": "IEEE-754 binary32, each + * / rounded to nearest in program order (the "
               "proof is over the reals, so a derived order of additions may round "
               "differently from the original's)",
    "float64": "IEEE-754 binary64 (C double), each + * / rounded to nearest in program "
               "order (the proof is over the reals, so a derived order of additions may "
               "round differently from the original's)",
    "int32": "two's-complement 32-bit integers, + and * wrapping modulo 2^32 on overflow "
             "(computed in uint32_t, defined whatever the build flags; INT32_MIN / -1 "
             "wraps to INT32_MIN); exact while no value overflows (the proof is over Z)",
    "int8": "int8 inputs and outputs, computed in int32 (temporaries, accumulators, let "
            "buffers); a value stored into an int8 output wraps modulo 2^8, so an output "
            "is the exact Z result whenever that lies in [-128, 127], exact while no int32 "
            "value overflows (one that does wraps, in uint32_t arithmetic; Gemmini: int32 "
            "accumulators, see its header for saturation)",
}


# How a literal constant's exact value becomes the kernel's (pybridge/literals.py).
LITERAL_POLICY = {
    "float32": "the nearest binary32, ties to even (in the C, a decimal that reads back exactly)",
    "float64": "the nearest binary64, ties to even (in the C, a decimal that reads back exactly)",
    "int32": "the floor of the quotient, as Coq's Z division",
    "int8": "the floor of the quotient, as Coq's Z division",
}


def banner(lowered: Sequence[Lowered]) -> list[str]:
    """Comment lines stating each kernel's provenance, preconditions and, loudly, a
    kernel whose bounds safety Coq did not prove."""
    out: list[str] = []
    for lw in lowered:
        p = lw.program
        if p.unsafe:
            out.append(f"UNSAFE {p.name}: array accesses NOT proved in bounds ({p.safety}); "
                       "built with unsafe=True")
        elif p.safety:
            out.append(f"{p.name}: {p.safety}")
        shapes = "; ".join(f"{a}: {' x '.join(idx_str(i) for i in shp) or 'scalar'}"
                           for a, shp in p.inputs)
        if shapes:  # the header's declarations say only the outputs' extents
            out.append(f"{p.name} reads {shapes} (row-major)")
        configs = set(getattr(lw.kernel, "config_params", ()))  # Gemmini's: any sign
        extents = [a for a in p.sizes if a not in configs]
        if extents:  # lower.entry_check: every size is checked to be at least 1
            out.append(f"{p.name} requires each of its sizes {', '.join(extents)} to be at "
                       "least 1")
        for c in p.preconditions:
            out.append(f"{p.name} requires {c.name} : {c.text}" if c.name
                       else f"{p.name} requires {c.text}")
        for text, _ in getattr(lw.kernel, "requirements", ()):  # checked as the above
            out.append(f"{p.name} requires {text}")
        for a in p.assumed:
            out.append(f"{p.name} assumes (not checked): {a}")
        ints = [text for text, _ in getattr(lw.kernel, "int_exprs", ())]
        if ints:  # checked with the preconditions (error 2): lower.entry_check
            out.append(f"{p.name} requires, its loops being int, each of {', '.join(ints)} "
                       "to be an int")
        tops = [text for text, _ in getattr(lw.kernel, "int_bounds", ())]
        if tops:  # likewise
            out.append(f"{p.name} requires each of {', '.join(tops)} to be at most INT_MAX "
                       "(they bound its int arithmetic inside its loops)")
        dt = getattr(lw.kernel, "dtype", None)
        if dt in ROUNDING:
            out.append(f"{p.name} computes in {dt}: {ROUNDING[dt]}")
        lits = sorted({(n.num, n.den) for n in walk(p.expr) if isinstance(n, Lit)})
        if lits:
            shown = ", ".join(f"{a}/{b}" if b != 1 else str(a) for a, b in lits[:6])
            more = f" and {len(lits) - 6} more" if len(lits) > 6 else ""
            out.append(f"{p.name}'s constants {shown}{more} are Coq's exact rationals "
                       f"(slit), each rounded once to {LITERAL_POLICY.get(dt, dt)}")
    return [line.replace("*/", "* /") for line in out]
