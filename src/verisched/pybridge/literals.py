"""Literal constants (`slit n d`, coq/Tensor/Scalar.v) in each element type.

Coq's meaning of a literal is exact: the rational n/d over R (`slit_R`), the floor of
n/d over Z (`slit_Z`).  A kernel computes in a machine type, so each consumer rounds
the exact value exactly once, here, with one stated policy (targets/base.py's ROUNDING
banner repeats it in every C file):

- float32 / float64: the rational rounded to the nearest representable value, ties to
  even (IEEE 754's default).  Computed from the exact fraction, never through a decimal
  string or a double first, so a float32 constant is not double-rounded.
- int32 / int8: floor(n / d), Coq's Z division; refused when it does not fit the type,
  since the kernel could not hold the value Coq means.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from verisched.pybridge.terms import Lit, walk


class LiteralError(ValueError):
    """A literal that the requested element type cannot represent as Coq means it."""


def _round_float32(q: Fraction) -> np.float32:
    """The float32 nearest to q, ties to even, decided by exact comparison."""
    d = np.float32(float(q))  # within one float32 ulp of the answer
    if not math.isfinite(float(d)):
        raise LiteralError(f"literal {q} overflows float32")
    lo = np.nextafter(d, np.float32(-np.inf), dtype=np.float32)
    hi = np.nextafter(d, np.float32(np.inf), dtype=np.float32)
    best = min((lo, d, hi), key=lambda c: (abs(Fraction(float(c)) - q),
                                           int(c.view(np.uint32)) & 1))
    return np.float32(best)


def literal_value(num: int, den: int, dtype: np.dtype | type | str) -> np.generic:
    """`slit num den` in `dtype`, rounded by the policy above."""
    dt = np.dtype(dtype)
    q = Fraction(num, den)
    if dt == np.float64:
        v = float(q)  # Fraction.__float__ is correctly rounded
        if not math.isfinite(v):
            raise LiteralError(f"literal {num}/{den} overflows float64")
        return np.float64(v)
    if dt == np.float32:
        return _round_float32(q)
    if np.issubdtype(dt, np.integer):
        v = num // den
        info = np.iinfo(dt)
        if not info.min <= v <= info.max:
            raise LiteralError(f"literal {num}/{den} (floor {v}) does not fit {dt.name}")
        return dt.type(v)
    raise LiteralError(f"no literal rounding rule for element type {dt.name}")


def literal_c(num: int, den: int, dtype: np.dtype | type | str) -> str:
    """C text of `slit num den` in `dtype`: a hexadecimal float literal (exact, so the
    C compiler does no rounding of its own) or an integer literal."""
    dt = np.dtype(dtype)
    v = literal_value(num, den, dt)
    if dt == np.float32:
        return f"{float(v).hex()}f"
    if dt == np.float64:
        return float(v).hex()
    ctype = _C_INT_TYPES.get(dt.name)
    if ctype is None:
        raise LiteralError(f"no C type for element type {dt.name}")
    return f"(({ctype}){int(v)})"


_C_INT_TYPES = {"int8": "int8_t", "int32": "int32_t", "int64": "int64_t"}


def floored_note(e: object, dtype: object) -> str | None:
    """A note naming the literals of `e` (`slit n d` whose d does not divide n) that an
    integer element type floors, as Coq's Z division does (`slit 1 4` is 0 in int32):
    what the proof says, and worth saying, since it is rarely what the writer of
    `0.25 * x` meant.  None for float types, or where every literal is whole."""
    if dtype is None or not np.issubdtype(np.dtype(dtype), np.integer):  # type: ignore[call-overload]
        return None
    seen = sorted({(x.num, x.den) for x in walk(e) if isinstance(x, Lit)  # type: ignore[arg-type]
                   and x.num % x.den})
    if not seen:
        return None
    return (f"note: in {np.dtype(dtype).name} a constant is floored, as Coq's Z division "  # type: ignore[call-overload]
            f"does (the proof's semantics): {', '.join(f'{n}/{d} is {n // d}' for n, d in seen)}")
