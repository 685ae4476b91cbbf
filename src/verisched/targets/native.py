"""The C family of targets (c, openmp, avx2, avx512 and their OpenMP variants):
lowering through codegen/, one C file per batch of kernels, compiled with the
system compiler into a shared object and called through ctypes.

Everything a caller can get wrong (array dtype, shape, contiguity, sizes, the
derivation's preconditions, the CPU's features) is checked here in Python
before control enters C, so bad input is an exception and never a crash.
The members of the family differ only in data: whether loops may be marked
parallel (openmp.py says when that is sound), extra compiler flags, and the
vector instruction library (avx2.py, avx512.py).
"""

from __future__ import annotations

import ctypes
import os
import subprocess
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from verisched.codegen.errors import CompileError, KernelCallError, LowerError, PreconditionError
from verisched.codegen.hooks import TargetHooks
from verisched.codegen.lower import LoweredKernel, Lowering, lower
from verisched.codegen.poly import evaluate
from verisched.codegen.program import KernelProgram
from verisched.codegen.render import render_harness, render_header, render_source
from verisched.codegen.vector import VectorISA
from verisched.pybridge.instrs import InstrSpec, lookup, registered
from verisched.pybridge.terms import Instr, walk
from verisched.targets.base import (
    CSource,
    Kernel,
    Lowered,
    TargetUnavailable,
    banner,
    c_source_arg,
    check_buffers,
    check_input_names,
    check_int_exprs,
    infer_sizes,
    size_fits,
)
from verisched.targets.cpu import CpuSupportError, check_cpu
from verisched.targets.toolchain import compile_c, evict

NP_DTYPES = {"float32": np.float32, "float64": np.float64, "int32": np.int32, "int8": np.int8}
CT_TYPES = {"float32": ctypes.c_float, "float64": ctypes.c_double, "int32": ctypes.c_int32,
            "int8": ctypes.c_int8}


@dataclass(frozen=True)
class NativeTarget:
    """A member of the C family (implements targets.base.Target)."""

    name: str
    summary: str
    parallel: bool = False
    extra_flags: tuple[str, ...] = ()
    # The vector instruction library (avx2.py, avx512.py); None for scalar C.
    isa: VectorISA | None = None
    # The library of float64 kernels (avx2pd, avx512pd: decision #154); None: `isa`
    # serves every element type the target takes.
    isa_f64: VectorISA | None = None
    dtypes: tuple[str, ...] = ("float32", "float64", "int32", "int8")
    runs_on: str = "native"
    coq_scalar: str = "S"
    # A member's own lowering rules (codegen/hooks.py) instead of the vector rules, and
    # the instruction families they emit (docs/architecture.md: adding a target).
    hooks: Callable[[Lowering], TargetHooks] | None = None
    own_families: tuple[str, ...] = ()
    # Libraries the kernels link with (after the sources: `-lopenblas`).
    libs: tuple[str, ...] = ()
    # Set on the member `native` picked (targets/auto.py): its ISA ("avx512", "avx2",
    # "c") and why; stated in the summary, the C banner and on each kernel.
    picked: str = ""
    picked_why: str = ""

    @property
    def cache_name(self) -> str:
        """The name a cached lowering is keyed by (the pick included)."""
        return f"{self.name}={self.picked}" if self.picked else self.name

    @property
    def pick_note(self) -> str:
        return f"target {self.name} picked {self.picked}: {self.picked_why}" if self.picked \
            else ""

    @property
    def isas(self) -> tuple[VectorISA, ...]:
        """The vector libraries, one per element type (float32's first)."""
        return tuple(x for x in (self.isa, self.isa_f64) if x is not None)

    def isa_for(self, dtype: str) -> VectorISA | None:
        """The library a kernel of element type `dtype` is lowered with."""
        return self.isa_f64 if dtype == "float64" and self.isa_f64 is not None else self.isa

    @property
    def memories(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(x.memory for x in self.isas))

    @property
    def families(self) -> tuple[str, ...]:
        return tuple(x.family for x in self.isas) + self.own_families

    def instructions(self) -> tuple[InstrSpec, ...]:
        return tuple(s for s in registered().values() if s.family in self.families)

    def cflags(self, fast_math: bool = False) -> list[str]:
        flags = ["-std=c11", "-O3", "-march=native", "-fPIC", *self.extra_flags]
        if fast_math:
            flags.append("-ffast-math")
        return flags

    def build_hint(self, c_file: Path, dtype: str | None = None) -> str:
        """How to compile the C file written for this target into one's own program (the
        flags the kernels are built with here, less -fPIC; its libraries, and libm).
        `dtype`: the same flags for every element type (integer kernels wrap in their own
        arithmetic, codegen/ir.py WRAP_OPS, so they need no -fwrapv)."""
        flags = [f for f in self.cflags() if f != "-fPIC"]
        link = [*(["-fopenmp"] if "-fopenmp" in flags else []), *self.libs, "-lm"]
        return f"cc {' '.join(flags)} -c {c_source_arg(c_file)}; link with {' '.join(link)}"

    def check_runtime(self) -> None:
        if self.isa is not None:
            try:
                check_cpu(self.isa.cpu_flags, self.name, f"target {self.name}")
            except CpuSupportError as exc:
                raise TargetUnavailable(str(exc)) from exc

    def lower(self, program: KernelProgram) -> Lowered:
        calls = _calls(program)
        dtype = program.dtype or self._lanes_default(calls)
        if dtype not in self.dtypes:
            raise LowerError(f"target {self.name}: element type {dtype} is not supported "
                             f"({', '.join(self.dtypes)})")
        isa = self.isa_for(dtype)
        self._check_lanes_type(program.name, calls, dtype, isa)
        lw = lower(program.expr, program.env, name=program.name, dtype=dtype,
                   parallel=self.parallel, sizes=list(program.sizes), assume=program.assume(),
                   isa=isa, hooks=self.hooks, store_at=dict(program.store_at))
        loops = f"{lw.parallel_loops} parallel loop(s)" if self.parallel else "serial"
        if self.picked:
            loops = f"{self.pick_note}; {loops}"
        return Lowered(self, program, lw, loops)

    def _lanes_default(self, calls: dict[str, InstrSpec]) -> str:
        """The element type of a program given none: float64 where it calls the float64
        library's instructions (a derivation that vectorized with avx512pd computes in
        doubles), else the target's first."""
        if self.isa_f64 is not None and any(spec.family == self.isa_f64.family
                                            for spec in calls.values()):
            return "float64"
        return self.dtypes[0]

    def _check_lanes_type(self, name: str, calls: dict[str, InstrSpec], dtype: str,
                          isa: VectorISA | None) -> None:
        """A kernel whose instructions are this target's other element type's (an avx512_
        vector of 16 float lanes in a float64 kernel): refused here, saying which library
        the element type takes, rather than as an unknown family by the lowering."""
        others = {x.family for x in self.isas if x is not isa}
        for instr, spec in calls.items():
            if spec.family in others:
                fix = (f"vectorize (or select_instr) with {isa.family}" if isa is not None
                       else "a derivation without vector instructions")
                theirs = _lanes_dtype(self, spec.family)
                raise LowerError(
                    f"target {self.name}: {name} is a {dtype} kernel, but calls {instr}, an "
                    f"instruction of the {spec.family} library ({spec.lanes} lanes, for "
                    f"{theirs} kernels); for {dtype} use {fix}, or lower it as {theirs}")

    def render(self, lowered: Sequence[Lowered]) -> CSource:
        kernels = [x.kernel for x in lowered]
        others = sorted({x.target.cache_name for x in lowered if x.target != self})
        if others:
            raise LowerError(f"render: kernels lowered for {self.cache_name} and "
                             f"{', '.join(others)} cannot share a C file")
        notes = ([self.pick_note] if self.picked else []) + banner(lowered)
        return CSource(self, tuple(lowered), render_source(kernels, self.name, notes),
                       render_header(kernels, f"{lowered[0].name}.c", notes))

    def build(self, source: CSource, *, fast_math: bool = False) -> dict[str, Kernel]:
        progs = {x.name: x.program for x in source.lowered}
        built = load(source.c, [x.kernel for x in source.lowered], self, fast_math=fast_math)
        for name, k in built.items():
            k.program = progs[name]
            k.unsafe = progs[name].unsafe
        return dict(built)


def _calls(program: KernelProgram) -> dict[str, InstrSpec]:
    """The registered instructions `program` calls, by name, in first-call order."""
    return {x.name: spec for x in walk(program.expr)
            if isinstance(x, Instr) and (spec := lookup(x.name)) is not None}


def _lanes_dtype(target: NativeTarget, family: str) -> str:
    """The element type whose kernels `target` lowers with instruction family `family`."""
    return "float64" if target.isa_f64 is not None and family == target.isa_f64.family \
        else "float32"


def load(c_text: str, kernels: list[LoweredKernel], target: NativeTarget, *,
         fast_math: bool = False) -> dict[str, NativeKernel]:
    """Compile C text holding `kernels` into a shared object (cached) and load them.
    A cached object that does not load (truncated, corrupt) is evicted and rebuilt once."""
    flags = target.cflags(fast_math)
    path = compile_c(c_text, flags, libs=target.libs)
    try:
        lib = ctypes.CDLL(str(path))
    except OSError:
        evict(path)
        path = compile_c(c_text, flags, libs=target.libs)
        try:
            lib = ctypes.CDLL(str(path))
        except OSError as exc:
            raise CompileError(f"load: cannot load {path}: {exc}") from exc
    return {k.name: NativeKernel(lib, k, path, target.name, picked=target.picked)
            for k in kernels}


def build(kernels: list[LoweredKernel], target: NativeTarget, *, fast_math: bool = False
          ) -> dict[str, NativeKernel]:
    """Compile a batch of lowered kernels into one shared object and load them (the
    lower-level path the tests use; verisched.pipeline goes through the Target)."""
    return load(render_source(kernels, target.name), kernels, target, fast_math=fast_math)


class NativeKernel:
    """A compiled kernel loaded with ctypes: call it with numpy arrays (by input name)
    and integer sizes.  Implements targets.base.Kernel."""

    def __init__(self, lib: ctypes.CDLL, lowered: LoweredKernel, path: Path,
                 target: str = "c", program: KernelProgram | None = None, *,
                 picked: str = "") -> None:
        self.lowered = lowered
        # The ISA `native` picked for it ("" for a target named by its ISA).
        self.picked = picked
        self.path = path
        self.target = target
        self.program = program
        self.unsafe = bool(program and program.unsafe)
        self._lib = lib
        self._fn = getattr(lib, lowered.name)
        self._fn.restype = ctypes.c_int  # the call's own code (NAME_error: the thread's)
        # set_threads' setter and count, applied before each call (None: OpenMP's own)
        self._threads: tuple[Callable[[int], None], int] | None = None
        # The element pointer type, kept apart: argtypes[0] is an int where a kernel has
        # no input arrays, only sizes.
        ptr = self._ptr = ctypes.POINTER(CT_TYPES[lowered.dtype])
        self._fn.argtypes = ([ptr] * len(lowered.inputs) + [ctypes.c_int] * len(lowered.sizes)
                             + [ptr] * len(lowered.outputs))
        self.dtype = NP_DTYPES[lowered.dtype]
        # extents' results for sizes it accepted (a pure function of the sizes): a loop
        # calling a small kernel at the same sizes spent 60% of each call's Python
        # overhead (30 us) re-checking them; refusals are not kept, so each says why
        self._extents: dict[tuple[int, ...], tuple[dict[str, tuple[int, ...]],
                                                   tuple[int, ...]]] = {}

    @property
    def name(self) -> str:
        return self.lowered.name

    def input_dtypes(self) -> dict[str, np.dtype]:
        return {a: np.dtype(self.dtype) for a, _, _ in self.lowered.inputs}

    def set_threads(self, n: int) -> None:
        """Number of OpenMP threads for this kernel's later calls, from whichever Python
        thread (OpenMP target only), from 1 to `max_threads()`.  OpenMP keeps the count
        per calling OS thread and for every kernel it runs (`omp_set_num_threads`), so it
        is set again before each call of this kernel, in the calling thread: set once,
        it was ignored by calls from another thread and changed other kernels' teams.
        A call also leaves the calling thread's count at n.  A `bind` callable runs with
        the count of the thread it is called from: bind, and call, in one thread.
        libgomp takes an int and allocates every thread's state up front, so 2^31 - 1
        threads ended the process inside it ("Out of memory allocating 481036338272
        bytes") and a larger count was silently truncated."""
        f = getattr(self._lib, "vs_set_num_threads", None)
        if f is None:
            raise KernelCallError(f"{self.name}: not an OpenMP kernel")
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) \
                or not 1 <= n <= max_threads():
            raise KernelCallError(f"{self.name}: threads must be an integer from 1 to "
                                  f"{max_threads()} ({THREADS_RULE}), not {n!r}")
        f.argtypes = [ctypes.c_int]
        f(int(n))
        self._threads = (f, int(n))

    def extents(self, sizes: Mapping[str, int]
                ) -> tuple[dict[str, tuple[int, ...]], tuple[int, ...]]:
        """Input and output extents for `sizes`, after checking them."""
        lw = self.lowered
        want = {a for a, _ in lw.sizes}
        if set(sizes) != want:
            missing, extra = sorted(want - set(sizes)), sorted(set(sizes) - want)
            raise KernelCallError(f"{self.name}: size parameters must be {sorted(want)}"
                                  f" (missing {missing}, unexpected {extra}; a size is "
                                  "inferred only where it is by itself an input's extent)")
        for a, _ in lw.sizes:
            v = sizes[a]
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
                raise KernelCallError(f"{self.name}: size {a} must be an int, got {v!r}")
        key = tuple(int(sizes[a]) for a, _ in lw.sizes)
        if key in self._extents:
            ins, out = self._extents[key]
            return dict(ins), out
        # The derivation's own hypotheses first: they say why a size is refused.
        bad = self.program.violated({a: int(v) for a, v in sizes.items()}) \
            if self.program is not None else None
        if bad is not None:
            raise PreconditionError(f"{self.name}: sizes {dict(sizes)} violate the precondition "
                                    f"{bad.name + ' : ' if bad.name else ''}{bad.text}; the "
                                    "kernel is only proved equal to the program where it holds")
        values: dict[str, int] = {}
        for a, c in lw.sizes:
            v = sizes[a]
            if not size_fits(int(v)):
                # The proof's hypotheses may allow 0 (`0 <= T`); the C entry check does not
                # (the code relies on each size being at least 1): 0 is compiled in instead.
                zero = (f"; a kernel's sizes are at least 1 at a call, even where its proof "
                        f"allows 0: compile it with {a} fixed (`--fix {a}=0`, "
                        f"compile(fix={{'{a}': 0}}))" if int(v) == 0 else "")
                raise KernelCallError(f"{self.name}: size {a} = {v} must be positive "
                                      f"(and fit in a C int){zero}")
            values[c] = int(v)
        for text, f in lw.assumptions:
            if evaluate(f, values) < 0:
                raise KernelCallError(f"{self.name}: sizes {_named(sizes)} violate the "
                                      f"assumption {text} the kernel was generated under")
        check_int_exprs(self.name, lw.int_exprs, values, _named(sizes), lw.int_bounds)
        ins = {}
        for a, _, dims in lw.inputs:
            ins[a] = tuple(evaluate(d, values) for d in dims)
            if any(x < 0 for x in ins[a]):
                raise KernelCallError(f"{self.name}: input {a} would have negative extents "
                                      f"{ins[a]} for sizes {_named(sizes)}")
        out = tuple(evaluate(d, values) for d in lw.out_dims)
        # Loops run over int, and flat indices and element counts are 64-bit in the C
        # (codegen/cexpr.py): each extent must fit an int, the bytes a ptrdiff_t.
        item = np.dtype(self.dtype).itemsize
        more = [(tuple(evaluate(d, values) for d in dims), item, f"output {c}")
                for c, dims, _ in lw.more_outputs]
        check_buffers(self.name, [(out, item, "output"), *more,
                                  *((s, item, f"input {a}") for a, s in ins.items())])
        if len(self._extents) >= 64:   # a sweep over many sizes: start again (one
            self._extents.clear()       # operation, safe under calls from several threads)
        self._extents[key] = (dict(ins), out)
        return ins, out

    def bind(self, inputs: dict[str, np.ndarray], sizes: dict[str, int], out: np.ndarray):
        """A zero-argument callable running the kernel on arrays checked once now, so a
        benchmark times the C code, not the argument checks.  The arrays must stay alive
        and unchanged in shape while it is used."""
        lw = self.lowered
        if lw.more_outputs:
            raise KernelCallError(f"{self.name}: bind takes one output; this kernel has "
                                  f"{len(lw.outputs)} (call it instead)")
        self.call(inputs, sizes, out)  # validates everything once (and warms up)
        ptr = self._ptr
        arrays = [np.ascontiguousarray(inputs[a]) for a, _, _ in lw.inputs]
        args = [a.ctypes.data_as(ptr) for a in arrays]
        args += [int(sizes[a]) for a, _ in lw.sizes]
        args.append(out.ctypes.data_as(ptr))
        fn = self._fn

        def run(keep: list = arrays) -> None:  # `keep` holds any contiguous copies alive
            fn(*args)

        return run

    def __call__(self, inputs: dict[str, np.ndarray] | None = None, /, **sizes: int
                 ) -> np.ndarray:
        """Run on `inputs`; a size that is exactly an input's extent may be left out
        (`kernel({"v": img})` for a kernel over v : n x m), others are given by name."""
        ins = {} if inputs is None else inputs
        self._check_inputs(ins, sizes)  # a misnamed input is named, not as a missing size
        return self._run(ins, self.infer_sizes(ins, sizes))

    def _check_inputs(self, inputs: Mapping[str, object],
                      sizes: Mapping[str, object] | None = None) -> None:
        check_input_names(self.name, [a for a, _, _ in self.lowered.inputs], inputs, sizes)

    def infer_sizes(self, inputs: Mapping[str, np.ndarray], sizes: Mapping[str, int]
                    ) -> dict[str, int]:
        """`sizes` completed from the inputs' shapes (targets.base.infer_sizes)."""
        lw = self.lowered
        return infer_sizes(self.name, [(a, dims) for a, _, dims in lw.inputs], lw.sizes,
                           inputs, sizes)

    def _check_overlap(self, inputs: dict[str, np.ndarray], passed: list[np.ndarray],
                       out: np.ndarray) -> None:
        """The output may be an input's own buffer only where the lowering allows it
        (codegen/inplace.py: the kernel then updates it in place); any other overlap
        would let the kernel read values it already overwrote."""
        if out.size == 0:
            return
        for (a, _, _), arr in zip(self.lowered.inputs, passed, strict=False):
            if arr.size == 0 or not np.may_share_memory(arr, out):
                continue
            if a in self.lowered.inplace and _same_buffer(arr, out):
                continue
            how = ("may be the output only as the whole buffer" if a in self.lowered.inplace
                   else "cannot share memory with the output (this kernel is not in place "
                   "for it)")
            raise KernelCallError(f"{self.name}: input {a} {how}")

    def call(self, inputs: Mapping[str, np.ndarray], sizes: Mapping[str, int],
             out: np.ndarray | None = None) -> np.ndarray:
        """Run the kernel; every array is checked before entering C."""
        self._check_inputs(inputs)
        return self._run(inputs, sizes, out)

    def _run(self, inputs: Mapping[str, np.ndarray], sizes: Mapping[str, int],
             out: np.ndarray | None = None) -> np.ndarray:
        """`call` once the input names are checked (`__call__` checks them itself, with
        the sizes, before inferring any)."""
        lw = self.lowered
        if lw.isa is not None and lw.uses_vectors:
            check_cpu(lw.isa.cpu_flags, lw.isa.name, self.name)
        shapes, out_shape = self.extents(sizes)
        names = [a for a, _, _ in lw.inputs]
        args = []
        keep = []
        for a in names:
            arr = inputs[a]
            if arr.dtype != self.dtype:
                raise KernelCallError(f"{self.name}: input {a} has dtype {arr.dtype}, "
                                      f"expected {np.dtype(self.dtype)}")
            if arr.shape != shapes[a]:
                raise KernelCallError(f"{self.name}: input {a} has shape {arr.shape}, "
                                      f"expected {shapes[a]} for sizes {_named(sizes)}")
            arr = np.ascontiguousarray(arr)
            keep.append(arr)
            args.append(arr.ctypes.data_as(self._ptr))
        if out is None:
            out = np.empty(out_shape, dtype=self.dtype)
        elif (not isinstance(out, np.ndarray) or out.dtype != self.dtype
              or out.shape != out_shape or not out.flags.c_contiguous):
            raise KernelCallError(f"{self.name}: out must be a C-contiguous "
                                  f"{np.dtype(self.dtype)} array of shape {out_shape}")
        elif not out.flags.writeable:  # a read-only map, a view of bytes: C would write it
            raise KernelCallError(f"{self.name}: out is read-only (a read-only memory map, "
                                  "or a view of immutable memory); pass a writable array")
        self._check_overlap(inputs, keep, out)
        # The later outputs of a program with several: fresh arrays, returned with it.
        more = ([np.empty(x, dtype=self.dtype) for x in self.more_shapes(sizes)]
                if lw.more_outputs else [])
        args += [int(sizes[a]) for a, _ in lw.sizes]
        held = []
        for o in (out, *more):
            # Never hand C a null pointer, even for empty arrays.
            buf = o if o.size else np.empty(1, dtype=self.dtype)
            held.append(buf)
            args.append(buf.ctypes.data_as(self._ptr))
        for k, arr in enumerate(keep):
            if arr.size == 0:
                stub = np.empty(1, dtype=self.dtype)
                keep.append(stub)
                args[k] = stub.ctypes.data_as(self._ptr)
        if self._threads is not None:  # OpenMP's count is per OS thread: set here
            set_count, count = self._threads
            set_count(count)
        code = self._fn(*args)
        if code == 2:  # checked above, so a disagreement between the checks
            raise KernelCallError(f"{self.name}: the kernel refused sizes {dict(sizes)}: they "
                                  "break a precondition its C checks (nothing was written)")
        if code:
            raise KernelCallError(f"{self.name}: the kernel could not allocate a buffer "
                                  "(the output is invalid)")
        return (out, *more) if more else out

    def more_shapes(self, sizes: Mapping[str, int]) -> list[tuple[int, ...]]:
        """The shapes of the second and later outputs (a program with several), for
        sizes `extents` accepted."""
        values = {c: int(sizes[a]) for a, c in self.lowered.sizes}
        return [tuple(evaluate(d, values) for d in dims)
                for _, dims, _ in self.lowered.more_outputs]


THREADS_RULE = "4 per CPU, at least 4096"


def max_threads() -> int:
    """The most OpenMP threads a kernel is given: 4 per CPU of this machine, and at
    least 4096, far above any useful oversubscription, far below what libgomp cannot
    allocate."""
    return max(4096, 4 * (os.cpu_count() or 1))


def _named(sizes: Mapping[str, int]) -> str:
    """Sizes as a message shows them, `M=6, K=7`, as the command line writes them
    (a kernel whose sizes were all fixed at compile time has none: said so, not a
    message cut off after "for sizes")."""
    return ", ".join(f"{k}={v}" for k, v in sizes.items()) or "(none: all fixed)"


def _same_buffer(a: np.ndarray, b: np.ndarray) -> bool:
    return a.ctypes.data == b.ctypes.data and a.nbytes == b.nbytes


SANITIZE_FLAGS = ["-std=c11", "-O1", "-g", "-fno-omit-frame-pointer",
                  "-fsanitize=address,undefined", "-fno-sanitize-recover=all"]


def build_sanitized(kernels: list[LoweredKernel], target: NativeTarget) -> Path:
    """Compile the kernels with a file-driven harness under ASan+UBSan (executable)."""
    source = render_source(kernels, target.name)
    flags = SANITIZE_FLAGS + list(target.extra_flags)
    return compile_c(source, flags, kind="exe", extra_sources=(render_harness(kernels),),
                     libs=target.libs)


def run_sanitized(exe: Path, kernel: LoweredKernel, inputs: dict[str, np.ndarray],
                  sizes: dict[str, int], out_shape: tuple[int, ...] | list[tuple[int, ...]]
                  ) -> np.ndarray | tuple[np.ndarray, ...]:
    """Run one kernel in the sanitized harness; raise with the sanitizer report on error.
    `out_shape`: the output's shape, or a list of every output's (then a tuple comes
    back), as `NativeKernel.extents` gives them."""
    shapes = out_shape if isinstance(out_shape, list) else [out_shape]
    if len(shapes) != len(kernel.outputs):
        raise KernelCallError(f"{kernel.name}: {len(kernel.outputs)} output shapes needed")
    dtype = NP_DTYPES[kernel.dtype]
    if kernel.isa is not None and kernel.uses_vectors:
        check_cpu(kernel.isa.cpu_flags, kernel.isa.name, kernel.name)
    with tempfile.TemporaryDirectory(prefix="vs_san_") as d:
        dp = Path(d)
        np.array([sizes[a] for a, _ in kernel.sizes], dtype=np.int32).tofile(dp / "sizes.bin")
        np.array([int(np.prod(x, dtype=np.int64)) for x in shapes], dtype=np.int64).tofile(
            dp / "outcount.bin")
        for k, (a, _, _) in enumerate(kernel.inputs):
            np.ascontiguousarray(inputs[a], dtype=dtype).tofile(dp / f"in{k}.bin")
        env = dict(os.environ, ASAN_OPTIONS="detect_leaks=1:abort_on_error=0",
                   UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1")
        res = subprocess.run([str(exe), kernel.name, d], capture_output=True, text=True,
                             timeout=300, env=env)
        if res.returncode != 0:
            raise KernelCallError(f"sanitized run of {kernel.name} failed "
                                  f"(exit {res.returncode}):\n{res.stderr[-4000:]}")
        outs = tuple(np.fromfile(dp / f"out{k if k else ''}.bin", dtype=dtype).reshape(x)
                     for k, x in enumerate(shapes))
        return outs if isinstance(out_shape, list) else outs[0]
