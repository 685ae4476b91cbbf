"""Gemmini's parameters and configuration state: placing config instructions.

Gemmini's instructions read configuration registers (Exo thesis Sec. 2.4 and
3.2.3: configuration state): the execute pipeline's dataflow and strides
(`config_ex`), one stride/scale per load id (`config_ld` for mvin, mvin2,
mvin3) and the store stride, activation and scale (`config_st`).  A config
instruction flushes the pipeline, so emitting one per instruction is slow;
the thesis hoists them by hand with `configwrite_at`, `reorder_stmts` and
`remove_loop`.  Here the lowering emits a *requirement marker* before every
instruction (register, value) and `place_configs` turns markers into config
instructions afterwards, on the structured C text, by this rule:

1. State is tracked per register; at the kernel's entry every register is
   unknown (another kernel may have run before).
2. A requirement whose value equals the tracked value emits nothing; any other
   emits the config instruction and updates the tracked value.
3. Hoisting: at a `for` loop, a register whose requirements inside the loop
   (at any depth) all ask for one value, written only with identifiers not
   declared inside the loop, is configured once before the loop (if the
   tracked value differs), so nothing inside re-emits it.  Applied at every
   loop from the outside in, an invariant config rises to the outermost loop
   where it is invariant, and one needed by the whole kernel to its entry.
4. A register required with several values inside a loop is unknown at the
   loop's head (the previous iteration may have changed it) and after it.
5. `if`/`else` bodies start from the state before them; afterwards a
   register keeps its value only if every branch (an absent `else` counts as
   a branch that changes nothing) ends with the same value.  Configs are not
   hoisted out of an `if` (that would execute them when the branch is not
   taken).

So the emitted code sets every register before its first use, and never
re-sets it to the value it holds on every path to that point.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

# Default configuration (include/gemmini_params.h; Gemmini README; Exo thesis Sec. 7.1).
DIM = 16
SPAD_ROWS = 4 * 4096
ACC_ROWS = 1024
MAX_BYTES = 64  # one mvin/mvout row moves at most this many bytes of DRAM data
ACC_BIT = 0x80000000
ACCUMULATE_BIT = 0x40000000
FULL_WIDTH_BIT = 0x20000000
GARBAGE_ADDR = "GARBAGE_ADDR"

MARK = "/*@gemmini-config "
_MARK_RE = re.compile(r"^\s*/\*@gemmini-config (\w+) (.*)@\*/$")
_FOR_RE = re.compile(r"^\s*for \(int (\w+) = ")
_DECL_RE = re.compile(
    r"^\s*(?:const\s+)?(?:int|unsigned|uint32_t|uint64_t|int32_t|int8_t|size_t|long|float)"
    r"\s*\*?\s*(\w+)\s*(?:=|;|\[)")
_IDENT_RE = re.compile(r"\b[A-Za-z_]\w*\b")

# Register -> the C of the config instruction setting it (the value is a tuple of C texts).
REGISTERS = ("ex", "ld0", "ld1", "ld2", "st")


def marker(reg: str, value: tuple[str, ...]) -> str:
    """The requirement marker the lowering emits before an instruction."""
    if reg not in REGISTERS:
        raise ValueError(f"unknown Gemmini configuration register {reg!r}")
    return f"{MARK}{reg} {'|'.join(value)}@*/"


def config_call(reg: str, value: tuple[str, ...]) -> str:
    """The config instruction writing `value` into `reg` (gemmini.h's names and argument order)."""
    if reg == "ex":
        # dataflow, activation, sys_shift, A_stride, A_transpose, B_transpose
        return f"gemmini_extended_config_ex({', '.join(value)})"
    if reg.startswith("ld"):
        # stride in bytes, scale, shrunk, id
        return f"gemmini_extended3_config_ld({', '.join(value)}, {reg[2]});"
    # stride in bytes, activation, scale
    return f"gemmini_extended_config_st({', '.join(value)});"


@dataclass
class _Node:
    """A C line, or a block `header { children }` (header "" for a bare scope)."""

    text: str
    children: list[_Node] | None = None
    indent: str = ""


@dataclass
class PlacementStats:
    """How many config instructions were placed, and how many requirements they served."""

    emitted: int = 0
    requirements: int = 0
    hoisted: int = 0
    per_register: dict[str, int] = field(default_factory=dict)


def _parse(lines: list[str]) -> list[_Node]:
    root: list[_Node] = []
    stack = [root]
    for line in lines:
        s = line.strip()
        indent = line[: len(line) - len(line.lstrip())]
        if s == "}":
            if len(stack) == 1:
                raise ValueError("place_configs: unbalanced '}' in generated code")
            stack.pop()
            continue
        if s.endswith("{"):
            node = _Node(s[:-1].rstrip(), [], indent)
            stack[-1].append(node)
            stack.append(node.children)  # type: ignore[arg-type]
            continue
        stack[-1].append(_Node(line.rstrip()))
    if len(stack) != 1:
        raise ValueError("place_configs: unbalanced '{' in generated code")
    return root


def _unparse(nodes: list[_Node], out: list[str]) -> None:
    for n in nodes:
        if n.children is None:
            out.append(n.text)
        else:
            out.append(f"{n.indent}{n.text} {{" if n.text else f"{n.indent}{{")
            _unparse(n.children, out)
            out.append(f"{n.indent}}}")


def _requirements(nodes: list[_Node], acc: dict[str, set[str]], declared: set[str]) -> None:
    for n in nodes:
        if n.children is None:
            m = _MARK_RE.match(n.text)
            if m:
                acc.setdefault(m.group(1), set()).add(m.group(2))
                continue
            d = _DECL_RE.match(n.text)
            if d:
                declared.add(d.group(1))
        else:
            f = _FOR_RE.match(n.text)
            if f:
                declared.add(f.group(1))
            _requirements(n.children, acc, declared)


def _emit_config(reg: str, value: str, indent: str, out: list[_Node], stats: PlacementStats
                 ) -> None:
    out.append(_Node(indent + config_call(reg, tuple(value.split("|")))))
    stats.emitted += 1
    stats.per_register[reg] = stats.per_register.get(reg, 0) + 1


def _forget_scoped(state: dict[str, str | None], declared: set[str]) -> None:
    """Forget values written with identifiers that go out of scope: the same text may
    denote another value where a later scope declares the name again."""
    for reg, value in state.items():
        if value is not None and set(_IDENT_RE.findall(value)) & declared:
            state[reg] = None


def _place(nodes: list[_Node], state: dict[str, str | None], stats: PlacementStats
           ) -> list[_Node]:
    out: list[_Node] = []
    k = 0
    while k < len(nodes):
        n = nodes[k]
        if n.children is None:
            m = _MARK_RE.match(n.text)
            if m is None:
                out.append(n)
            else:
                stats.requirements += 1
                reg, value = m.group(1), m.group(2)
                if state.get(reg) != value:
                    indent = n.text[: len(n.text) - len(n.text.lstrip())]
                    _emit_config(reg, value, indent, out, stats)
                    state[reg] = value
            k += 1
            continue
        if _FOR_RE.match(n.text):
            reqs: dict[str, set[str]] = {}
            declared: set[str] = set()
            _requirements([n], reqs, declared)
            for reg, values in sorted(reqs.items()):
                if len(values) == 1:
                    (value,) = values
                    idents = set(_IDENT_RE.findall(value))
                    if not idents & declared:
                        if state.get(reg) != value:
                            _emit_config(reg, value, n.indent, out, stats)
                            stats.hoisted += 1
                            state[reg] = value
                        continue
                state[reg] = None  # rule 4
            hoisted = {r for r, v in state.items() if r in reqs and v is not None}
            n.children = _place(n.children or [], state, stats)
            for reg in reqs:
                if reg not in hoisted:
                    state[reg] = None
            _forget_scoped(state, declared)
            out.append(n)
            k += 1
            continue
        if n.text.startswith("if ") or n.text.startswith("if("):
            branches = [n]
            if k + 1 < len(nodes) and nodes[k + 1].children is not None and \
                    nodes[k + 1].text.startswith("else"):
                branches.append(nodes[k + 1])
            ends = []
            for b in branches:
                st = dict(state)
                b.children = _place(b.children or [], st, stats)
                ends.append(st)
            if len(branches) == 1:
                ends.append(dict(state))
            for reg in set().union(*ends):
                vals = {e.get(reg) for e in ends}
                state[reg] = vals.pop() if len(vals) == 1 else None
            declared = set()
            _requirements(branches, {}, declared)
            _forget_scoped(state, declared)
            out.extend(branches)
            k += len(branches)
            continue
        # A bare scope or an else without its if: straight-line code.
        n.children = _place(n.children or [], state, stats)
        declared = set()
        _requirements([n], {}, declared)
        _forget_scoped(state, declared)
        out.append(n)
        k += 1
    return out


def place_configs(lines: list[str]) -> tuple[list[str], PlacementStats]:
    """Replace the requirement markers in `lines` by config instructions (rules above)."""
    stats = PlacementStats()
    tree = _place(_parse(lines), dict.fromkeys(REGISTERS), stats)
    out: list[str] = []
    _unparse(tree, out)
    return out, stats
