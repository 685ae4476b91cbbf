"""The body of every OpenMP parallel loop moved into a `static inline` function of its own.

GCC 12 drops `#pragma GCC unroll` from every loop inside a parallel region:
the region is moved into an outlined function and the loops' annotations do
not survive the move (measured on a two-loop probe: the serial function's
reduction unrolled four times, the same loop under `#pragma omp parallel
for` not at all; docs/decisions.md #113).  The micro-kernels' reductions
(codegen/core.py, REDUCTION_UNROLL) and the `unroll` directive's loops
(schedule/annotations.py) ask for unrolling with that pragma, so in an OpenMP
kernel they ran as written.  A loop inside a function that the region only
calls keeps its annotation (measured: unrolled whether GCC inlines the call
or not).

This is a rewrite of the emitted text, run when a kernel is rendered: the
lowering's own scopes are gone by then, so the free variables of a loop's
body are found from the declarations in the kernel's text.  It is
conservative: a body is left in place when any identifier in it is neither
declared inside it, nor declared (in a form this module reads) outside it,
nor a known global (helpers, intrinsics, OpenMP, the error flag), or when it
contains a jump (`break`, `continue`, `return`, `goto`).  What the loops
compute does not change: the body's statements move verbatim, the scalars
it reads from outside (sizes, loop variables, element counts) are passed by
value, which is what OpenMP's `firstprivate`/shared read amounts to, since
openmp.py rule 4 leaves a parallel body writing only through pointers; the
buffers it reads or writes are passed by address (a pointer as declared, a
fixed-size array on the stack as `T name[]`, unless the body takes its
`sizeof`), so every thread still works on the one shared buffer.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator
from dataclasses import dataclass, field

_IDENT = re.compile(r"\b[A-Za-z_]\w*\b")
# The scalar and pointer types the lowering declares locals with.
_TYPES = r"(?:int|int64_t|int32_t|int8_t|float|double|size_t|uintptr_t)"
_DECL = re.compile(rf"^((?:const )?{_TYPES}(?: \*| \*restrict | ))(\w+) = ")
# A one-dimensional array on the stack (a let buffer of fixed size, codegen/lets.py).
_ARRAY = re.compile(rf"^((?:const )?{_TYPES}) (\w+)\[[^\[\]]+\];$")
_FOR = re.compile(r"^for \((?:int|int64_t) (\w+) = .*\{$")
_TYPE_START = re.compile(rf"^(?:const |unsigned |signed |static )*(?:{_TYPES}|__m\w+|char)\b")
_COLLAPSE = re.compile(r"collapse\((\d+)\)")
_JUMPS = {"break", "continue", "return", "goto"}
# Identifiers a body may use without their being passed: C words, the types it
# names in casts, and the file's globals (templates/helpers.c.j2's `vs_` helpers,
# intrinsics and their types, OpenMP's API, limits.h).
_C_WORDS = {
    "if", "else", "for", "while", "do", "sizeof", "const", "restrict", "static", "inline",
    "void", "char", "short", "int", "long", "unsigned", "signed", "float", "double",
    "int8_t", "int16_t", "int32_t", "int64_t", "uint8_t", "uint32_t", "uint64_t",
    "uintptr_t", "size_t",
    "NULL", "INT_MAX", "INT_MIN", "INT64_MAX", "PTRDIFF_MAX", "memset", "memcpy", "abort",
}
_GLOBAL = re.compile(r"^(?:vs_\w+|VS_\w+|_mm\w*|__m\w+|_MM_\w+|omp_\w+|__builtin_\w+)$")


@dataclass
class Outlined:
    """A kernel body with its parallel loops' bodies moved out, and the functions
    they moved to (each a list of lines, to be placed before the kernel)."""

    body: list[str]
    helpers: list[list[str]] = field(default_factory=list)
    names: list[str] = field(default_factory=list)  # the helpers' function names


def _indent(s: str) -> int:
    return len(s) - len(s.lstrip())


def _scrub(s: str) -> str:
    """A line without its comments and character/string literals (no identifiers)."""
    s = re.sub(r"/\*.*?\*/", " ", s)
    s = re.sub(r"//.*", " ", s)
    return re.sub(r"\"(?:\\.|[^\"\\])*\"|'(?:\\.|[^'\\])*'", " ", s)


def _declared(text: str) -> tuple[dict[str, str], bool]:
    """Names a line (scrubbed and stripped) declares (name -> its declaration as a
    parameter), and whether it looks like a declaration this module cannot read."""
    m = _FOR.match(text)
    if m:
        return {m.group(1): f"int {m.group(1)}"}, False
    m = _DECL.match(text)
    if m:
        return {m.group(2): f"{m.group(1).rstrip()} {m.group(2)}".replace("* ", "*")}, False
    m = _ARRAY.match(text)
    if m:
        # Passed as `T name[]`, a pointer to the same storage: the loop's threads share
        # it, as they share the array itself under OpenMP.
        return {m.group(2): f"{m.group(1)} {m.group(2)}[]"}, False
    return {}, bool(_TYPE_START.match(text))


def _end_of_block(lines: list[str], start: int) -> int:
    """Index of the `}` closing the block opened at the end of `lines[start]`."""
    depth = 0
    for i in range(start, len(lines)):
        t = _scrub(lines[i])
        depth += t.count("{") - t.count("}")
        if depth == 0:
            return i
    raise ValueError("outline: unbalanced braces")


def _params(signature: str) -> dict[str, str]:
    """The kernel's parameters, name -> declaration, in order."""
    out: dict[str, str] = {}
    for part in signature.split(","):
        part = part.strip()
        if part:
            out[part.split()[-1].lstrip("*")] = part
    return out


def outline(name: str, signature: str, error_flag: str, body: list[str]) -> Outlined:
    """Move the body of every `#pragma omp parallel for` loop of a kernel (`body`, its
    lines) into a function `vs_<name>_p<k>` called from the loop.  Loops inside a
    moved body (fallback loops, openmp.py rule 6) are moved in turn, from the new
    function; `error_flag` is the kernel's global error variable."""
    res = Outlined(list(body))
    _outline_into(res, name, _params(signature), error_flag, itertools.count(1))
    return res


def _outline_into(res: Outlined, name: str, params: dict[str, str], error_flag: str,
                  counter: Iterator[int]) -> None:
    lines = res.body
    scopes: list[dict[str, str]] = [dict(params)]
    opaque: list[set[str]] = [set()]
    i = 0
    while i < len(lines):
        text = _scrub(lines[i]).strip()
        if text.startswith("#pragma omp parallel for"):
            done = _try_outline(res, i, name, scopes, opaque, error_flag, counter)
            if done is not None:
                i = done
                continue
        decls, unreadable = _declared(text)
        loop = _FOR.match(text) is not None  # its variable belongs to the block it opens
        if not loop:
            scopes[-1].update(decls)
            if unreadable:
                opaque[-1].update(_IDENT.findall(text.split("=")[0]))
        for ch in re.findall(r"[{}]", text):
            if ch == "{":
                scopes.append(decls if loop else {})
                opaque.append(set())
                loop = False
            elif len(scopes) > 1:
                scopes.pop()
                opaque.pop()
        i += 1


def _try_outline(res: Outlined, p: int, name: str, scopes: list[dict[str, str]],
                 opaque: list[set[str]], error_flag: str, counter: Iterator[int]) -> int | None:
    """Outline the parallel loop whose pragma is line `p`; the index to resume the
    scan at (just past the loop), or None if it is left in place."""
    lines = res.body
    m = _COLLAPSE.search(lines[p])
    depth = int(m.group(1)) if m else 1
    loop_vars: dict[str, str] = {}
    head = p + 1
    for d in range(depth):
        fm = _FOR.match(_scrub(lines[head + d]).strip())
        if fm is None:
            return None
        loop_vars[fm.group(1)] = f"int {fm.group(1)}"
    inner = head + depth - 1
    end = _end_of_block(lines, inner)
    outer_end = _end_of_block(lines, head)
    inside = lines[inner + 1:end]
    if not inside:
        return None
    visible: dict[str, str] = {}
    for s in scopes:
        visible.update(s)
    hidden = set().union(*opaque)
    local: set[str] = set()
    used: list[str] = []
    scrubbed = [_scrub(x).strip() for x in inside]
    for text in scrubbed:
        if text.startswith("#"):  # a pragma: no variables
            continue
        decls, unreadable = _declared(text)
        local.update(decls)
        if unreadable:
            local.update(_IDENT.findall(text.split("=")[0]))
        used.extend(_IDENT.findall(text))
    passed: dict[str, str] = {}
    joined = "\n".join(scrubbed)
    for ident in dict.fromkeys(used):
        if ident in _JUMPS:
            return None
        if ident in local:
            if ident in visible or ident in loop_vars or ident in hidden:
                return None  # a declaration shadowing an outer one: not read here
            continue
        if ident in loop_vars:
            passed[ident] = loop_vars[ident]
        elif ident in hidden:
            return None
        elif ident in visible:
            passed[ident] = visible[ident]
        elif not (ident in _C_WORDS or ident == error_flag or _GLOBAL.match(ident)):
            return None
        if ident in passed and "*" not in passed[ident] and _written(ident, joined):
            return None  # a scalar the body assigns would be a copy once passed
        if passed.get(ident, "").endswith("[]") and re.search(rf"\bsizeof\b\W*{ident}\b",
                                                               joined):
            return None  # an array's size is its pointer's size once passed
    fname = f"vs_{name}_p{next(counter)}"
    order = list(visible) + list(loop_vars)
    names = sorted(passed, key=order.index)
    base = _indent(inside[0])
    fn = Outlined([x[base:] if x[:base].strip() == "" else x.strip() for x in inside])
    # Loops inside (fallbacks) are outlined from the new function, whose scope is
    # exactly its parameters.
    _outline_into(fn, name, {n: passed[n] for n in names}, error_flag, counter)
    header = (f"static inline void {fname}({', '.join(passed[n] for n in names) or 'void'})"
              " {")
    res.helpers.extend(fn.helpers)
    res.names.extend(fn.names)
    res.helpers.append([header, *("  " + x if x else x for x in fn.body), "}"])
    res.names.append(fname)
    call = " " * base + f"{fname}({', '.join(names)});"
    lines[inner + 1:end] = [call]
    return outer_end - (end - inner - 2) + 1


def _written(ident: str, text: str) -> bool:
    """Does `text` assign the variable `ident` (not an element it points to)?"""
    v = re.escape(ident)
    return re.search(rf"(?<![\w\].>])\b{v}\s*(?:[-+*/%&|^]?=(?!=)|\+\+|--)"
                     rf"|(?:\+\+|--)\s*{v}\b", text) is not None
