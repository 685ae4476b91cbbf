"""In-place kernels: the output may be passed as an input it starts as a copy of.

A program `C <+> X` (BLAS's C += A·B) lowers to "copy C into the output, then
accumulate X into it".  A caller that wants C updated in place, as BLAS does
with beta = 1, would otherwise pay a full extra pass over C for that copy.
When every read of an input of the output's shape is such an identity copy
(`out[e] = C[e]`, at the same index, possibly with a bounds check), the copy
is skipped if the caller passed that input's own buffer as the output: each
skipped store would write the value already there, and no other statement
reads the input, so no read sees a value the kernel wrote.  Other stores are
kept: a zero store means the program's value there is zero, which it then
writes over the input, as it should.  The lowering writes a position with `=`
once, before any `+=` to it, except after clearing the whole output with
`memset`, so a kernel that starts with one is never in place.  The check is
made on the emitted C, so it holds for whatever the lowering produced.
`restrict` stays valid: in the aliased case the input is never accessed.

In general (gemm's `beta * C <+> A·B`, an elementwise update), an input may be the
output when every statement that reads it is a plain store `out[E] = f(...);` whose
reads of the input are all at that same index `E` (the same C text, so the same
element at that moment): the lowering writes each position with `=` once, before any
`+=` to it, so when that store runs the element it reads has not been overwritten,
and no other statement reads the input.  Such a kernel is emitted twice, chosen by a
run-time test of the pointers: the aliased copy reads the input through the output
pointer (`out[E] = f(out[E])`), so `restrict` holds in both; at most one input per
kernel gets this form (each would double the body again).
"""

from __future__ import annotations

import re
from collections.abc import Callable


def _copy_stmt(out: str, src: str) -> re.Pattern[str]:
    """`out[e] = src[e];` or `out[e] = ((c) ? src[e] : zero);`, at the line's end."""
    o, s = re.escape(out), re.escape(src)
    return re.compile(rf"(?P<stmt>{o}\[(?P<e>[^\[\]]+)\] = "
                      rf"(?:{s}\[(?P=e)\]|\(\((?P<cond>.+)\) \? {s}\[(?P=e)\] : [^;]+\));)$")


_PREFIX = re.compile(r"\s*(?:if \(.*\) )?")


def allow_inplace(lines: list[str], out: str, candidates: list[tuple[str, str]],
                  fresh: Callable[[str], str]) -> tuple[str, ...]:
    """Rewrite `lines` (a kernel body) so that each candidate input (ATL name, C
    name; same extents as the output) whose every read is an identity copy into
    the output skips those copies when passed as the output; returns the ATL
    names of those inputs."""
    if any(line.lstrip().startswith(f"memset({out},") for line in lines):
        return ()  # the output is cleared before the copies, which must then run
    allowed = list(_copies(lines, out, candidates, fresh))
    if not allowed:
        for atl, c in candidates:
            if _elementwise(lines, out, c):
                flag = fresh(f"inplace_{c}")
                uses = re.compile(rf"\b{re.escape(c)}\[")
                aliased = [uses.sub(f"{out}[", line) for line in lines]
                body = [f"  const int {flag} = (const void *){out} == (const void *){c};",
                        f"  if ({flag}) {{", *("  " + x for x in aliased), "  } else {",
                        *("  " + x for x in lines), "  }"]
                lines[:] = body
                allowed.append(atl)
                break
    return tuple(allowed)


def _elementwise(lines: list[str], out: str, c: str) -> bool:
    """Is every use of `c` a read `c[E]` inside a store `out[E] = ...;` at the same `E`
    (the general in-place form; see the module docstring)?"""
    name = re.compile(rf"\b{re.escape(c)}\b")
    store = re.compile(rf"^{re.escape(out)}\[(?P<e>[^\[\]]+)\] = (?P<rhs>.*);$")
    own = re.compile(rf"\b{re.escape(out)}\[")
    seen = False
    for line in lines:
        if not name.search(line):
            continue
        text = line.strip()
        pre = _PREFIX.match(text)
        head = pre.end() if pre else 0
        m = store.match(text[head:])
        if m is None or name.search(text[:head]):
            return False
        rhs, e = m.group("rhs"), m.group("e")
        if own.search(rhs):
            # `out[E] = vs_iadd(out[E], ...)`: an integer kernel's `+=` (its wrapping
            # add, codegen/ir.py WRAP_OPS), not the one plain store of a position
            return False
        for hit in name.finditer(rhs):
            idx = _bracket(rhs, hit.end())
            if idx is None or idx != e:
                return False
        seen = True
    return seen


def _bracket(text: str, at: int) -> str | None:
    """The text inside the brackets opening at `text[at]`, or None."""
    if at >= len(text) or text[at] != "[":
        return None
    depth = 0
    for k in range(at, len(text)):
        depth += (text[k] == "[") - (text[k] == "]")
        if depth == 0:
            return text[at + 1:k]
    return None


def _copies(lines: list[str], out: str, candidates: list[tuple[str, str]],
            fresh: Callable[[str], str]) -> list[str]:
    """The identity-copy form: skip the copies when the input is the output."""
    allowed = []
    for atl, c in candidates:
        uses = re.compile(rf"\b{re.escape(c)}\[")
        stmt = _copy_stmt(out, c)
        hits = []
        ok = True
        for k, line in enumerate(lines):
            if not uses.search(line):
                continue
            m = stmt.search(line)
            if (m is None or _PREFIX.fullmatch(line[:m.start()]) is None
                    or not _balanced(m.group("cond") or "")):
                ok = False
                break
            hits.append((k, m.start(), m.group("cond")))
        if not ok or not hits:
            continue
        flag = fresh(f"inplace_{c}")
        for k, at, cond in hits:
            # `out[e] = (c ? src[e] : 0)` writes a zero where c fails (a guard, or a
            # bounds check): in place, only the copying half is skipped.
            skip = f"!{flag}" if cond is None else f"!{flag} || !({cond})"
            line = lines[k]
            lines[k] = f"{line[:at]}{{ if ({skip}) {line[at:]} }}"
        lines.insert(1, f"  const int {flag} = (const void *){out} == (const void *){c};")
        allowed.append(atl)
    return allowed


def _balanced(text: str) -> bool:
    """Parentheses nest properly: the condition is one expression, not a slice
    across a nested conditional."""
    depth = 0
    for ch in text:
        depth += (ch == "(") - (ch == ")")
        if depth < 0:
            return False
    return depth == 0
