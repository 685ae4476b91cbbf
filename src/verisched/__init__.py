"""verisched: derive tensor kernels by Coq-checked scheduling rewrites, lower them to C.

The public surface is small: terms (the ATL AST), the bridge that drives Coq
derivations, and the lowering.  Everything else is internal.
"""

__version__ = "0.1.0"
