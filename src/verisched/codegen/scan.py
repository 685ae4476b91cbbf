"""Questions about a whole term that decide which lowering rules apply.

Vector rules (loop splitting, reduction clipping) apply only to programs with
instruction calls or register memories, so a scalar program lowers exactly
as it always did on every target (docs/decisions.md #23); these scans say
which programs those are.
"""

from __future__ import annotations

from verisched.pybridge.terms import Guard, Instr, Let, Mem, any_node


def has_instr(e: object) -> bool:
    """Does the term contain an instruction call?"""
    return any_node(e, lambda x: isinstance(x, Instr))  # type: ignore[arg-type]


def has_guard(e: object) -> bool:
    """Does the term contain a guard outside instruction arguments (a guard inside an
    instruction's specification is the instruction's business)?"""
    return any_node(e, lambda x: isinstance(x, Guard),  # type: ignore[arg-type]
                    descend=lambda x: not isinstance(x, Instr))


def has_let(e: object) -> bool:
    """Does the term bind a buffer (a let outside instruction arguments)?"""
    return any_node(e, lambda x: isinstance(x, Let),  # type: ignore[arg-type]
                    descend=lambda x: not isinstance(x, Instr))


def has_vector_code(e: object) -> bool:
    """Does the term use instructions or a memory other than DRAM?"""
    return any_node(e, lambda x: isinstance(x, Instr)  # type: ignore[arg-type]
                    or isinstance(x, Mem) and x.memory != "DRAM")


def has_register_tile(e: object, memory: str) -> bool:
    """Does the term place a buffer in the register memory `memory` (a register tile,
    codegen/vector.py)?"""
    return any_node(e, lambda x: isinstance(x, Mem) and x.memory == memory)  # type: ignore[arg-type]
