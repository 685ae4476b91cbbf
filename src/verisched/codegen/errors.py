"""Errors raised by the lowering and the C targets.

Each names the step that failed and the cause, so a user replaying a
derivation can tell a schedule that is not yet normal (fix the derivation)
from a bad call (fix the arguments) from a broken toolchain (fix the machine).
"""

from __future__ import annotations


class CodegenError(Exception):
    """Base class: something went wrong between a derived term and a callable kernel."""


class NotNormalError(CodegenError):
    """The term is not in the normal form of the paper's Sec. 5.1; lowering refuses it
    rather than guess a storage layout for a tensor-valued leaf."""


class LowerError(CodegenError):
    """The term is normal but uses something the lowering does not support."""


class CompileError(CodegenError):
    """The C compiler is missing or rejected the generated file (kept for inspection)."""


class KernelCallError(CodegenError):
    """Arguments given to a compiled kernel do not fit its signature or its sizes."""


class PreconditionError(KernelCallError):
    """Sizes that break a hypothesis of the derivation: the kernel is not proved equal to
    the program there, so it refuses them (never a wrong result)."""


class UnsafeProgramError(CodegenError):
    """Coq's `check_safe` did not prove the program's accesses in bounds, and the caller
    did not ask for an unchecked kernel (`unsafe=True`)."""
