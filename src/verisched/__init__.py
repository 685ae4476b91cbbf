"""verisched: derive tensor kernels by Coq-checked scheduling rewrites, lower them to C.

The public surface: `verisched.pipeline` (a derivation or a Python program to a
callable kernel, through Coq's checks), `verisched.pybridge` (the ATL AST, the Coq
session, derivations and replay, the reference interpreter) and the targets'
registry (`pipeline.TARGETS`).  Everything else is internal.
"""

__version__ = "0.1.0"
