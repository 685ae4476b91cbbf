"""A derivation in the terminal, for a person: each step's tactic and what it changed.

`verisched demo` printed every step's whole program, on lines of up to 3,162
characters, with nothing marking what the step did.  Here each step shows the
smallest subterms it changed (report/diff.py's structural diff, the one the HTML
report highlights), pretty-printed within the console's width (at most 100
columns) and cut after a few lines; `full=True` adds the whole program.  Output
goes through `rich` (colour on a terminal, plain text in a pipe or a log); terms
are printed without markup, so a `[` in a program is never read as a style.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from typing import IO, Any

from rich.console import Console
from rich.text import Text

from verisched.pybridge.coqterm import idx_str, pred_str, pretty
from verisched.pybridge.derivation import same_program, traced_program
from verisched.pybridge.terms import Expr, PAnd, PBool, PCmp, is_idx
from verisched.report.diff import changed_paths, subterm

MAX_WIDTH = 100
# Lines of one changed subterm shown before it is cut.
MAX_LINES = 8
# Changed subterms shown per step before the rest are counted.
MAX_CHANGES = 3
# A changed subterm shorter than this is shown with its enclosing subterm.
MIN_CONTEXT = 12


def console(*, stderr: bool = False, file: IO[str] | None = None) -> Console:
    """A console at most MAX_WIDTH columns wide (a pipe gets MAX_WIDTH); `file` instead
    of stdout/stderr (a terminal when its isatty() says so)."""
    c = Console(stderr=stderr, file=file, highlight=False, soft_wrap=False)
    c.width = min(c.width, MAX_WIDTH) if c.is_terminal else MAX_WIDTH
    return c


def _text(node: Any, width: int) -> str:
    """A subterm as Coq notation within `width` columns."""
    if is_idx(node):
        return idx_str(node)
    if isinstance(node, (PBool, PCmp, PAnd)):
        return pred_str(node)
    return pretty(node, width=width)


def _wrap(text: str, width: int) -> str:
    """Each line of `text` broken at spaces to `width` columns, continuations indented
    by two more than the line they continue."""
    out: list[str] = []
    for line in text.splitlines() or [""]:
        lead = line[:len(line) - len(line.lstrip())]
        out.extend(textwrap.wrap(line, width, subsequent_indent=lead + "  ",
                                 break_long_words=False, break_on_hyphens=False) or [""])
    return "\n".join(out)


def _cut(text: str, lines: int) -> str:
    rows = text.splitlines() or [""]
    if len(rows) <= lines:
        return "\n".join(rows)
    return "\n".join(rows[:lines] + [f"... ({len(rows) - lines} more lines)"])


def show_step(out: Console, head: Text, old: Expr | None, new: Expr | None,
              after_text: str | None, unchanged: bool, side_goals: Sequence[str],
              full: bool = False) -> None:
    """One step: `head` (the tactic), then the subterms of `new` that differ from `old`,
    or Coq's own printing of the program when either is outside the AST's grammar;
    with `full`, the whole program after the step too."""
    width = out.width - 6
    out.print(head)
    if after_text is None:
        out.print("    no goals left: the derivation is finished", style="dim")
    elif unchanged:
        out.print("    program unchanged", style="dim")
    elif new is None or old is None:
        text = " ".join(after_text.split())
        out.print(Text(textwrap.indent(_cut(_wrap(text, width), MAX_LINES), "    ")))
    else:
        marks = _with_context(new, changed_paths(old, new), width)
        if marks == [()]:
            out.print("    rewrote the whole program:", style="dim")
        for p in marks[:MAX_CHANGES]:
            sub = _wrap(_text(subterm(new, p), width), width)
            out.print(Text(textwrap.indent(_cut(sub, MAX_LINES), "    "), style="yellow"))
        if len(marks) > MAX_CHANGES:
            out.print(f"    ... and {len(marks) - MAX_CHANGES} more changes", style="dim")
    for g in side_goals:
        out.print(Text(f"    side goal: {g}"))
    if full and new is not None:
        out.print(Text(textwrap.indent(_wrap(pretty(new, width=width), width), "      "),
                       style="dim"))


def _with_context(new: Expr, marks: list[tuple], width: int) -> list[tuple]:
    """The changed subterms widened to their smallest enclosing subterm of at least
    MIN_CONTEXT characters (a bare `f` says little: `f _[i - 1]` says where), without
    repeating a subterm inside another one shown."""
    out: list[tuple] = []
    for p in marks:
        while p and len(" ".join(_text(subterm(new, p), width).split())) < MIN_CONTEXT:
            p = p[:-1]
        if not any(p[:len(q)] == q for q in out):
            out = [q for q in out if q[:len(p)] != p] + [p]
    return out


def step_head(label: str, tactic: str, seconds: float) -> Text:
    """"LABEL TACTIC  (N ms)", the tactic in colour on a terminal."""
    head = Text(f"{label} ", style="bold")
    head.append(" ".join(tactic.split()), style="cyan")
    head.append(f"  ({seconds * 1000:.0f} ms)", style="dim")
    return head


def show_steps(out: Console, trace: dict[str, Any], *, full: bool = False) -> None:
    """Every step of a derivation's trace (pybridge's JSON trace): the tactic, its Coq
    time, and the subterms it changed; with `full`, the program after it too."""
    steps = trace.get("steps", [])
    for s in steps:
        before, after = s["before"], s["after"]
        show_step(out, step_head(f"step {s['step']}/{len(steps)}", s["tactic"],
                                 s.get("coq_seconds", 0.0)),
                  traced_program(before), traced_program(after), after["coq"],
                  same_program(before, after), after.get("side_goals", []), full)


class LiveSteps:
    """`on_step` for a replay (pybridge calls it with each derivation and step as Coq
    accepts it; pybridge never prints): "[NAME step k/n] TACTIC", then what the step
    changed, through `out`.  `totals` are the step counts of a static outline."""

    def __init__(self, out: Console, totals: dict[str, int], full: bool = False) -> None:
        self.out, self.totals, self.full = out, totals, full

    def __call__(self, d: Any, res: Any) -> None:
        if not hasattr(res, "after"):  # a step Coq refused: reported at the end
            return
        total = max(self.totals.get(d.name, 0), res.step)
        before, after = res.before, res.after
        show_step(self.out, step_head(f"[{d.name} step {res.step}/{total}]", res.tactic,
                                      res.coq_seconds),
                  before.program, after.program, after.program_text,
                  before.same_program(after), after.side_goals, self.full)
