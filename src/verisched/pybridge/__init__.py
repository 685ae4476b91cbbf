"""The bridge between Python and the Coq library.

Public surface (everything else in this package is internal):

- `CoqSession`: a coqtop process with the Verisched library loaded;
- `Derivation`, `ProofState`, `StepOk`, `StepError`, `FinishResult`:
  stepping through a `Derive` (LeanDojo-style results);
- `replay_file`: replay and record every derivation of a .v file;
- `parse_program`, `to_coq`, `pretty`: ATL terms to and from Coq text;
- `evaluate`: the numpy reference interpreter;
- the exceptions in `errors`.
"""

from .coqterm import parse_program, pretty, to_coq
from .derivation import Derivation, FinishResult, ProofState, StepError, StepOk
from .errors import (
    BridgeError,
    CoqCrashedError,
    CoqNotFoundError,
    CoqStartupError,
    CoqTimeoutError,
    LibraryNotBuiltError,
    OutputPathError,
    ScriptSyntaxError,
    SourceFileError,
    TermParseError,
    UnknownDerivationError,
)
from .interp import evaluate
from .replay import replay_file
from .session import CoqSession

__all__ = [
    "BridgeError", "CoqCrashedError", "CoqNotFoundError", "CoqSession", "CoqStartupError",
    "CoqTimeoutError", "Derivation", "FinishResult", "LibraryNotBuiltError", "OutputPathError",
    "ProofState", "ScriptSyntaxError", "SourceFileError", "StepError", "StepOk",
    "TermParseError", "UnknownDerivationError", "evaluate",
    "parse_program", "pretty", "replay_file", "to_coq",
]
