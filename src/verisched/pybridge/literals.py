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


_F32_MAX = np.finfo(np.float32).max


def _shown(q: Fraction) -> str:
    """`q` for a message: a number of hundreds of digits cut to its ends."""
    t = str(q)
    return t if len(t) <= 40 else f"{t[:12]}...{t[-12:]} ({len(t)} characters)"


def _round_float32(q: Fraction) -> np.float32:
    """The float32 nearest to q, ties to even, decided by exact comparison.  Past the
    largest float32 the next candidate is 2^128 (an even significand, as IEEE 754's
    overflow rule has it): a q nearer to it than to the largest overflows.  (The
    largest itself raised OverflowError here, from its neighbour's Fraction(inf).)"""
    try:
        near_q = float(q)
    except OverflowError:  # beyond float64, so far beyond float32
        raise LiteralError(f"literal {_shown(q)} overflows float32") from None
    with np.errstate(over="ignore"):
        d = np.float32(near_q)  # within one float32 ulp of the answer, or infinite
        if not math.isfinite(float(d)):  # float(q) may have rounded up to the tie
            d = np.float32(math.copysign(_F32_MAX, near_q))
        near = (np.nextafter(d, np.float32(-np.inf), dtype=np.float32), d,
                np.nextafter(d, np.float32(np.inf), dtype=np.float32))
    cands: list[tuple[Fraction, int, np.float32 | None]] = []
    for c in near:
        if math.isfinite(float(c)):
            cands.append((Fraction(float(c)), int(c.view(np.uint32)) & 1, c))
        else:
            cands.append((Fraction(2**128) * (1 if c > 0 else -1), 0, None))
    _, _, best = min(cands, key=lambda t: (abs(t[0] - q), t[1]))
    if best is None:
        raise LiteralError(f"literal {_shown(q)} overflows float32")
    return np.float32(best)


def literal_value(num: int, den: int, dtype: np.dtype | type | str) -> np.generic:
    """`slit num den` in `dtype`, rounded by the policy above."""
    dt = np.dtype(dtype)
    if den <= 0:  # Coq's slit takes a positive denominator; text from elsewhere may not
        raise LiteralError(f"literal {num}/{den}: the denominator must be positive")
    q = Fraction(num, den)
    if dt == np.float64:
        try:
            v = float(q)  # Fraction.__float__ is correctly rounded, and raises past the range
        except OverflowError:
            v = math.inf
        if not math.isfinite(v):
            raise LiteralError(f"literal {_shown(q)} overflows float64")
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
    """C text of `slit num den` in `dtype`: the shortest decimal that reads back as the
    value rounded above (numpy's Dragon4, `unique=True`, in the type itself), so the C
    compiler's correctly rounded reading lands on it exactly; or an integer literal.
    Not a hexadecimal float, exact as it is: C++ has one only from C++17, and the
    kernel file builds as C++11 too (tests/test_cxx_build.py)."""
    dt = np.dtype(dtype)
    v = literal_value(num, den, dt)
    if dt == np.float32:
        return f"{np.format_float_scientific(v, unique=True)}f"
    if dt == np.float64:
        return np.format_float_scientific(v, unique=True)
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
