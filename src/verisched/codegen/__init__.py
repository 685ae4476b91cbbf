"""Lowering of derived ATL programs to C (paper Sec. 5-6) and compilation.

Usable directly on an AST (pybridge/terms.py):

    k = compile_kernel(expr, {"f": (IVar("n"),)}, target="openmp")
    y = k({"f": x}, n=100)
"""

from __future__ import annotations

from verisched.codegen.errors import (
    CodegenError,
    CompileError,
    KernelCallError,
    LowerError,
    NotNormalError,
)
from verisched.codegen.lower import LoweredKernel, lower
from verisched.codegen.normal import check_normal
from verisched.codegen.render import render_header, render_source
from verisched.pybridge.terms import Expr, Shape

__all__ = [
    "CodegenError", "CompileError", "KernelCallError", "LowerError", "NotNormalError",
    "LoweredKernel", "lower", "check_normal", "render_source", "render_header",
    "compile_kernel", "compile_kernels",
]


def compile_kernels(programs: list[tuple[str, Expr, dict[str, Shape]]], *, target: str = "c",
                    dtype: str = "float32", fast_math: bool = False) -> dict:
    """Lower and compile several (name, expr, env) programs into one shared object."""
    from verisched.targets import get_target
    from verisched.targets.base import build

    t = get_target(target)
    lowered = [lower(e, env, name=n, dtype=dtype, parallel=t.parallel, isa=t.isa)
               for n, e, env in programs]
    return build(lowered, t, fast_math=fast_math)


def compile_kernel(expr: Expr, env: dict[str, Shape], *, name: str = "kernel",
                   target: str = "c", dtype: str = "float32", fast_math: bool = False):
    """Lower, compile (cached by content) and load one kernel."""
    return compile_kernels([(name, expr, env)], target=target, dtype=dtype,
                           fast_math=fast_math)[name]
