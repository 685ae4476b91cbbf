"""Lowering of derived ATL programs to C (paper Sec. 5-6).

`lower` turns a normal-form program into a C kernel body (lower.py);
`render_source` / `render_header` write the C file and header through the
jinja2 templates.  A program reaches this package as a
`program.KernelProgram`, built by verisched.pipeline; compiling and calling
kernels is the targets' business (verisched.targets), so this package never
imports them.
"""

from __future__ import annotations

from verisched.codegen.errors import (
    CodegenError,
    CompileError,
    KernelCallError,
    LowerError,
    NotNormalError,
    PreconditionError,
    UnsafeProgramError,
)
from verisched.codegen.lower import LoweredKernel, lower
from verisched.codegen.normal import check_normal
from verisched.codegen.program import KernelProgram
from verisched.codegen.render import render_header, render_source

__all__ = [
    "CodegenError", "CompileError", "KernelCallError", "LowerError", "NotNormalError",
    "PreconditionError", "UnsafeProgramError", "KernelProgram", "LoweredKernel", "lower",
    "check_normal", "render_source", "render_header",
]
