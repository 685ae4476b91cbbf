"""Render a lowered Gemmini kernel to C, build it against the simulator and run it.

The simulator's state and counters are per process, so a kernel runs as a
small program (the template's driver: sizes and input files on the command
line, the output written to a file) rather than through ctypes; the
counters come back through sim.run_program.  Builds are cached by content
hash, as the C targets' are (targets/base.py).
"""

from __future__ import annotations

import hashlib
import tempfile
from dataclasses import dataclass
from pathlib import Path

import jinja2
import numpy as np

from verisched.codegen.errors import KernelCallError
from verisched.codegen.poly import evaluate
from verisched.targets.base import atomic_write, cache_dir
from verisched.targets.gemmini.lower import GemminiKernel
from verisched.targets.gemmini.sim import GemminiSimError, compile_program, run_program

_ENV = jinja2.Environment(
    loader=jinja2.FileSystemLoader(str(Path(__file__).resolve().parent / "templates")),
    undefined=jinja2.StrictUndefined, keep_trailing_newline=True, autoescape=False)

NP_TYPES = {"int8_t": np.int8, "int32_t": np.int32}


def signature(k: GemminiKernel) -> str:
    """The kernel ABI: inputs (const pointers), size parameters (int), output last."""
    parts = [f"const {t} *restrict {c}" for _, c, _, t in k.inputs]
    parts += [f"int {c}" for _, c in k.sizes]
    parts.append(f"{k.out_ctype} *restrict {k.out_cname}")
    return ", ".join(parts)


def render(k: GemminiKernel, harness: bool = True) -> str:
    """The C file: helpers, the kernel and (with `harness`) a file-driven main."""
    args = ", ".join([c for _, c, _, _ in k.inputs] + [c for _, c in k.sizes] + [k.out_cname])
    return _ENV.get_template("gemmini_kernel.c.j2").render(
        k=k, signature=signature(k), harness=harness, extents=k.counts_c,
        out_count=k.counts_c[k.out_cname], assumptions=k.assumptions_c, args=args)


def build(k: GemminiKernel) -> Path:
    """Compile the kernel and its driver against the simulator (cached by content)."""
    src = render(k)
    key = hashlib.sha256(src.encode()).hexdigest()[:24]
    d = cache_dir() / "gemmini"
    d.mkdir(parents=True, exist_ok=True)
    exe = d / f"vs_{key}.exe"
    if exe.exists():
        return exe
    c_file = d / f"vs_{key}.c"
    atomic_write(c_file, src)
    return compile_program([c_file], exe, cflags=["-O2", "-DVERISCHED_GEMMINI_DRIVER"])


@dataclass
class GemminiResult:
    out: np.ndarray
    counters: dict[str, int]


def shapes(k: GemminiKernel, sizes: dict[str, int]) -> tuple[dict[str, tuple[int, ...]],
                                                            tuple[int, ...]]:
    """Input and output extents for `sizes` (ATL names), after checking them."""
    want = {a for a, _ in k.sizes}
    if set(sizes) != want:
        raise KernelCallError(f"{k.name}: size parameters must be {sorted(want)}, got "
                              f"{sorted(sizes)}")
    values = {c: int(sizes[a]) for a, c in k.sizes}
    for a, _ in k.sizes:
        if a not in k.config_params and not 1 <= int(sizes[a]) < 2**31:
            raise KernelCallError(f"{k.name}: size {a} = {sizes[a]} must be positive")
    for text, f in k.assumptions:
        if evaluate(f, values) < 0:
            raise KernelCallError(f"{k.name}: sizes {sizes} violate the assumption {text}")
    ins = {a: tuple(evaluate(x, values) for x in d) for a, _, d, _ in k.inputs}
    return ins, tuple(evaluate(x, values) for x in k.out_dims)


def run(k: GemminiKernel, inputs: dict[str, np.ndarray], sizes: dict[str, int],
        exe: Path | None = None) -> GemminiResult:
    """Run the kernel on the simulator; check every input's dtype and shape first."""
    ins, out_shape = shapes(k, sizes)
    exe = exe or build(k)
    with tempfile.TemporaryDirectory(prefix="vs-gemmini-") as tmp:
        files = []
        for a, _, _, t in k.inputs:
            arr = inputs.get(a)
            if arr is None:
                raise KernelCallError(f"{k.name}: missing input {a}")
            if arr.dtype != NP_TYPES[t] or arr.shape != ins[a]:
                raise KernelCallError(f"{k.name}: input {a} must be {np.dtype(NP_TYPES[t])} of "
                                      f"shape {ins[a]}, got {arr.dtype} {arr.shape}")
            p = Path(tmp) / f"{a}.bin"
            p.write_bytes(np.ascontiguousarray(arr).tobytes())
            files.append(str(p))
        out_file = Path(tmp) / "out.bin"
        argv = [str(sizes[a]) for a, _ in k.sizes] + files + [str(out_file)]
        res = run_program(exe, argv, timeout=1800)
        if res.returncode != 0:
            raise GemminiSimError(f"run: {k.name} failed on the simulator (exit "
                                  f"{res.returncode}): {res.sim_error or res.stderr[-2000:]}")
        out = np.frombuffer(out_file.read_bytes(), dtype=NP_TYPES[k.out_ctype])
        return GemminiResult(out.reshape(out_shape).copy(), res.counters)
