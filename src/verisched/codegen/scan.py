"""Questions about a whole term that decide which lowering rules apply.

Vector rules (loop splitting, reduction clipping) apply only to programs with
instruction calls or register memories, so a scalar program lowers exactly
as it always did on every target (docs/decisions.md #23); these scans say
which programs those are.
"""

from __future__ import annotations

from verisched.pybridge.terms import Guard, Instr, Mem, is_idx


def has_instr(e: object) -> bool:
    """Does the term contain an instruction call?"""
    if isinstance(e, Instr):
        return True
    if isinstance(e, tuple):
        return any(has_instr(x) for x in e)
    if is_idx(e):
        return False
    fields = getattr(e, "__dataclass_fields__", None)
    return bool(fields) and any(has_instr(getattr(e, f)) for f in fields)


def has_guard(e: object) -> bool:
    """Does the term contain a guard?"""
    if isinstance(e, Guard):
        return True
    if is_idx(e) or isinstance(e, tuple):
        return False
    fields = getattr(e, "__dataclass_fields__", None)
    return bool(fields) and any(has_guard(getattr(e, f)) for f in fields)


def has_vector_code(e: object) -> bool:
    """Does the term use instructions or a memory other than DRAM?"""
    if isinstance(e, Instr) or isinstance(e, Mem) and e.memory != "DRAM":
        return True
    fields_ = getattr(e, "__dataclass_fields__", None)
    if isinstance(e, tuple):
        return any(has_vector_code(x) for x in e)
    return bool(fields_) and any(has_vector_code(getattr(e, f)) for f in fields_)
