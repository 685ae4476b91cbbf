"""Equality saturation for library idioms (LIAR), certified by Coq (issue 14).

`search(path, name, idioms="blas")` finds, in an e-graph of the program (egglog),
the cheapest equivalent program with BLAS calls (coq/Targets/Blas.v) and
writes the derivation Coq checked (docs/search.md)."""

from verisched.search.api import IDIOM_FAMILIES, SearchArgumentError, SearchResult, saturate, search
from verisched.search.certify import CertificateError, CertificateRefused
from verisched.search.egraph import SearchEncodingError
from verisched.search.kernel_file import KernelFileError, load_program

__all__ = ["IDIOM_FAMILIES", "CertificateError", "CertificateRefused", "KernelFileError",
           "SearchArgumentError", "SearchEncodingError", "SearchResult", "load_program",
           "saturate", "search"]
