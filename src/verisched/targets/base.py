"""Shared target machinery: compile generated C with the system compiler, cache
the shared object by content hash, load it with ctypes and call it safely.

A target (c.py, openmp.py) only chooses whether the lowering may mark loops
parallel and which compiler flags to add.  Everything a caller can get wrong
(array dtype, shape, contiguity, sizes) is checked here in Python before
control enters C, so bad input is an exception and never a crash.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from verisched.codegen.errors import CompileError, KernelCallError
from verisched.codegen.lower import LoweredKernel
from verisched.codegen.poly import evaluate
from verisched.codegen.render import render_harness, render_source
from verisched.codegen.vector import VectorISA

NP_DTYPES = {"float32": np.float32, "int32": np.int32}
CT_TYPES = {"float32": ctypes.c_float, "int32": ctypes.c_int32}
MAX_ELEMENTS = 2**31 - 1  # generated index arithmetic is C int


@dataclass(frozen=True)
class Target:
    """A code generation target: lowering policy plus compiler flags."""

    name: str
    parallel: bool
    extra_flags: tuple[str, ...] = ()
    # The vector instruction library (avx2.py, avx512.py); None for scalar C.
    isa: VectorISA | None = None

    def cflags(self, fast_math: bool = False) -> list[str]:
        flags = ["-std=c11", "-O3", "-march=native", "-fPIC", *self.extra_flags]
        if fast_math:
            flags.append("-ffast-math")
        return flags


def compiler() -> str:
    """The C compiler to use: $CC, else cc, else gcc."""
    cc = os.environ.get("CC") or next((c for c in ("cc", "gcc") if shutil.which(c)), "cc")
    path = shutil.which(cc)
    if path is None:
        raise CompileError(f"compile: C compiler {cc!r} not found (set CC or install gcc)")
    return path


def cache_dir() -> Path:
    d = Path(os.environ.get("VERISCHED_CACHE")
             or Path(tempfile.gettempdir()) / f"verisched-kernels-{os.getuid()}")
    d.mkdir(parents=True, exist_ok=True)
    return d


def atomic_write(path: Path, text: str) -> None:
    """Write via a temporary file in the same directory and rename, so readers and
    concurrent writers never see a half-written file."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _compiler_id(cc: str) -> str:
    try:
        out = subprocess.run([cc, "--version"], capture_output=True, text=True, timeout=30)
        return out.stdout.splitlines()[0] if out.stdout else cc
    except (OSError, subprocess.SubprocessError):
        return cc


def compile_c(source: str, flags: list[str], *, kind: str = "shared",
              extra_sources: tuple[str, ...] = ()) -> Path:
    """Compile `source` (plus `extra_sources`) to a shared object or executable in the
    cache; identical inputs reuse the cached artifact.  On failure the generated file
    stays in the cache and the error names it with the compiler's message."""
    cc = compiler()
    key = hashlib.sha256("\0".join([source, *extra_sources, *flags, kind, _compiler_id(cc)])
                         .encode()).hexdigest()[:24]
    d = cache_dir()
    suffix = ".so" if kind == "shared" else ".exe"
    artifact = d / f"vs_{key}{suffix}"
    if artifact.exists():
        return artifact
    srcs = []
    for k, text in enumerate((source, *extra_sources)):
        p = d / f"vs_{key}_{k}.c"
        atomic_write(p, text)
        srcs.append(str(p))
    tmp = d / f"vs_{key}.{os.getpid()}{suffix}.tmp"
    cmd = [cc, *flags, *(["-shared"] if kind == "shared" else []), *srcs, "-o", str(tmp), "-lm"]
    try:
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    except (OSError, subprocess.SubprocessError) as exc:
        raise CompileError(f"compile: could not run {cc}: {exc}; generated file kept at "
                           f"{srcs[0]}") from exc
    if res.returncode != 0:
        if tmp.exists():
            tmp.unlink()
        raise CompileError(f"compile: {cc} failed (exit {res.returncode}) on {srcs[0]}:\n"
                           f"{res.stderr.strip()}\ncommand: {' '.join(cmd)}")
    os.replace(tmp, artifact)
    return artifact


class CpuSupportError(KernelCallError):
    """The kernel uses instructions this CPU lacks: calling it would die of SIGILL."""


_CPU_FLAGS: frozenset[str] | None = None


def cpu_flags() -> frozenset[str]:
    """The CPU feature flags the OS reports (Linux /proc/cpuinfo: features the kernel
    has enabled, e.g. no avx512f when the OS does not save its registers)."""
    global _CPU_FLAGS
    if _CPU_FLAGS is None:
        flags: set[str] = set()
        try:
            with open("/proc/cpuinfo") as f:
                for line in f:
                    if line.startswith("flags"):
                        flags |= set(line.split(":", 1)[1].split())
                        break
        except OSError:
            flags = set(_probe_flags())
        _CPU_FLAGS = frozenset(flags)
    return _CPU_FLAGS


_PROBED = ("avx2", "fma", "avx512f")


def _probe_flags() -> list[str]:
    """Without /proc/cpuinfo: ask gcc's __builtin_cpu_supports in a tiny program."""
    checks = "\n".join(f'  if (__builtin_cpu_supports("{f}")) puts("{f}");' for f in _PROBED)
    src = ("#include <stdio.h>\nint main(void) {\n  __builtin_cpu_init();\n"
           f"{checks}\n  return 0;\n}}\n")
    try:
        exe = compile_c(src, ["-O0"], kind="exe")
        res = subprocess.run([str(exe)], capture_output=True, text=True, timeout=30)
    except (CompileError, OSError, subprocess.SubprocessError):
        return []
    return res.stdout.split()


def check_cpu(isa: VectorISA | None, what: str) -> None:
    """Refuse to run code for `isa` on a CPU without its features (never SIGILL)."""
    if isa is None:
        return
    missing = [f for f in isa.cpu_flags if f not in cpu_flags()]
    if missing:
        raise CpuSupportError(f"{what}: this CPU does not support target {isa.name} (missing "
                              f"CPU feature(s) {', '.join(missing)}); the kernel compiles but "
                              "cannot run here")


class Kernel:
    """A compiled kernel: call with numpy arrays (by input name) and integer sizes."""

    def __init__(self, lib: ctypes.CDLL, lowered: LoweredKernel, path: Path) -> None:
        self.lowered = lowered
        self.path = path
        self._lib = lib
        self._fn = getattr(lib, lowered.name)
        self._fn.restype = None
        ptr = ctypes.POINTER(CT_TYPES[lowered.dtype])
        self._fn.argtypes = ([ptr] * len(lowered.inputs) + [ctypes.c_int] * len(lowered.sizes)
                             + [ptr])
        self._err = ctypes.c_int.in_dll(lib, f"{lowered.name}_error")
        self.dtype = NP_DTYPES[lowered.dtype]

    @property
    def name(self) -> str:
        return self.lowered.name

    def set_threads(self, n: int) -> None:
        """Number of OpenMP threads for later calls (OpenMP target only)."""
        f = getattr(self._lib, "vs_set_num_threads", None)
        if f is None:
            raise KernelCallError(f"{self.name}: not an OpenMP kernel")
        f.argtypes = [ctypes.c_int]
        f(int(n))

    def extents(self, sizes: dict[str, int]) -> tuple[dict[str, tuple[int, ...]], tuple[int, ...]]:
        """Input and output extents for `sizes`, after checking them."""
        lw = self.lowered
        want = {a for a, _ in lw.sizes}
        if set(sizes) != want:
            missing, extra = sorted(want - set(sizes)), sorted(set(sizes) - want)
            raise KernelCallError(f"{self.name}: size parameters must be {sorted(want)}"
                                  f" (missing {missing}, unexpected {extra})")
        values: dict[str, int] = {}
        for a, c in lw.sizes:
            v = sizes[a]
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
                raise KernelCallError(f"{self.name}: size {a} must be an int, got {v!r}")
            if not 1 <= int(v) < 2**31:
                raise KernelCallError(f"{self.name}: size {a} = {v} must be positive "
                                      "(and fit in a C int)")
            values[c] = int(v)
        for text, f in lw.assumptions:
            if evaluate(f, values) < 0:
                raise KernelCallError(f"{self.name}: sizes {sizes} violate the assumption "
                                      f"{text} the kernel was generated under")
        ins = {}
        for a, _, dims in lw.inputs:
            ins[a] = tuple(evaluate(d, values) for d in dims)
            if any(x < 0 for x in ins[a]):
                raise KernelCallError(f"{self.name}: input {a} would have negative extents "
                                      f"{ins[a]} for sizes {sizes}")
        out = tuple(evaluate(d, values) for d in lw.out_dims)
        for shape, what in [(out, "output"), *((s, f"input {a}") for a, s in ins.items())]:
            if int(np.prod(shape, dtype=np.int64)) > MAX_ELEMENTS:
                raise KernelCallError(f"{self.name}: {what} of shape {shape} is too large")
        return ins, out

    def bind(self, inputs: dict[str, np.ndarray], sizes: dict[str, int], out: np.ndarray):
        """A zero-argument callable running the kernel on arrays checked once now, so a
        benchmark times the C code, not the argument checks.  The arrays must stay alive
        and unchanged in shape while it is used."""
        lw = self.lowered
        self.call(inputs, sizes, out)  # validates everything once (and warms up)
        ptr = self._fn.argtypes[0]
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
        return self.call(inputs or {}, sizes)

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

    def call(self, inputs: dict[str, np.ndarray], sizes: dict[str, int],
             out: np.ndarray | None = None) -> np.ndarray:
        """Run the kernel; every array is checked before entering C."""
        lw = self.lowered
        check_cpu(lw.isa if lw.uses_vectors else None, self.name)
        shapes, out_shape = self.extents(sizes)
        names = [a for a, _, _ in lw.inputs]
        if set(inputs) != set(names):
            raise KernelCallError(f"{self.name}: inputs must be {names}, got {sorted(inputs)}")
        args = []
        keep = []
        for a in names:
            arr = inputs[a]
            if not isinstance(arr, np.ndarray):
                raise KernelCallError(f"{self.name}: input {a} must be a numpy array")
            if arr.dtype != self.dtype:
                raise KernelCallError(f"{self.name}: input {a} has dtype {arr.dtype}, "
                                      f"expected {np.dtype(self.dtype)}")
            if arr.shape != shapes[a]:
                raise KernelCallError(f"{self.name}: input {a} has shape {arr.shape}, "
                                      f"expected {shapes[a]} for sizes {sizes}")
            arr = np.ascontiguousarray(arr)
            keep.append(arr)
            args.append(arr.ctypes.data_as(self._fn.argtypes[0]))
        if out is None:
            out = np.empty(out_shape, dtype=self.dtype)
        elif (not isinstance(out, np.ndarray) or out.dtype != self.dtype
              or out.shape != out_shape or not out.flags.c_contiguous):
            raise KernelCallError(f"{self.name}: out must be a C-contiguous "
                                  f"{np.dtype(self.dtype)} array of shape {out_shape}")
        self._check_overlap(inputs, keep, out)
        # Never hand C a null pointer, even for empty arrays.
        buf = out if out.size else np.empty(1, dtype=self.dtype)
        args += [int(sizes[a]) for a, _ in lw.sizes]
        args.append(buf.ctypes.data_as(self._fn.argtypes[0]))
        for k, arr in enumerate(keep):
            if arr.size == 0:
                stub = np.empty(1, dtype=self.dtype)
                keep.append(stub)
                args[k] = stub.ctypes.data_as(self._fn.argtypes[0])
        self._fn(*args)
        if self._err.value:
            raise KernelCallError(f"{self.name}: the kernel could not allocate a buffer")
        return out


def _same_buffer(a: np.ndarray, b: np.ndarray) -> bool:
    return a.ctypes.data == b.ctypes.data and a.nbytes == b.nbytes


def build(kernels: list[LoweredKernel], target: Target, *, fast_math: bool = False
          ) -> dict[str, Kernel]:
    """Compile a batch of lowered kernels into one shared object and load them."""
    source = render_source(kernels, target.name)
    path = compile_c(source, target.cflags(fast_math))
    try:
        lib = ctypes.CDLL(str(path))
    except OSError as exc:
        raise CompileError(f"load: cannot load {path}: {exc}") from exc
    return {k.name: Kernel(lib, k, path) for k in kernels}


SANITIZE_FLAGS = ["-std=c11", "-O1", "-g", "-fno-omit-frame-pointer",
                  "-fsanitize=address,undefined", "-fno-sanitize-recover=all"]


def build_sanitized(kernels: list[LoweredKernel], target: Target) -> Path:
    """Compile the kernels with a file-driven harness under ASan+UBSan (executable)."""
    source = render_source(kernels, target.name)
    flags = SANITIZE_FLAGS + list(target.extra_flags)
    return compile_c(source, flags, kind="exe", extra_sources=(render_harness(kernels),))


def run_sanitized(exe: Path, kernel: LoweredKernel, inputs: dict[str, np.ndarray],
                  sizes: dict[str, int], out_shape: tuple[int, ...]) -> np.ndarray:
    """Run one kernel in the sanitized harness; raise with the sanitizer report on error."""
    dtype = NP_DTYPES[kernel.dtype]
    check_cpu(kernel.isa if kernel.uses_vectors else None, kernel.name)
    with tempfile.TemporaryDirectory(prefix="vs_san_") as d:
        dp = Path(d)
        np.array([sizes[a] for a, _ in kernel.sizes], dtype=np.int32).tofile(dp / "sizes.bin")
        np.array([int(np.prod(out_shape, dtype=np.int64))], dtype=np.int64).tofile(
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
        return np.fromfile(dp / "out.bin", dtype=dtype).reshape(out_shape)
