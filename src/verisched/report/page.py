"""A `ReportData` as one self-contained HTML page.

Nothing is fetched when the page is viewed: KaTeX's script and style sheet are
inlined, its fonts (the woff2 files, which every current browser reads) become
data: URLs in the style sheet, the C is highlighted by Pygments into inline-styled
classes, and a benchmark plot is a data: URL.  KaTeX comes from the npm package,
vendored by `make katex` (the Makefile) into report/vendor/katex, or from
`$VERISCHED_KATEX_DIST` (a KaTeX `dist` folder).

KaTeX runs with `trust` limited to `\\htmlClass`, the one command the page needs
(to mark a changed subterm), and `throwOnError: false`, so a formula KaTeX cannot
typeset shows as a `.katex-error` element instead of stopping the page (the browser
test looks for those).
"""

from __future__ import annotations

import base64
import os
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from jinja2 import Environment, PackageLoader, select_autoescape
from markupsafe import Markup
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import CLexer

from verisched import __version__
from verisched.pybridge.coqterm import idx_str, parse_program, pred_str
from verisched.pybridge.derivation import same_program, traced_program
from verisched.pybridge.errors import TermParseError
from verisched.pybridge.terms import Expr, PAnd, PBool, PCmp, Var, is_idx

from .collect import ReportData, ReportError
from .diff import changed_paths, subterm, text_diff_html
from .latex import TexWriter, plain_width
from .layout import Layout, tex_span

QUOTED = 4             # the most changed subterms quoted beside their step
SHORT = 160            # the longest changed subterm quoted beside its step, in characters
VENDOR = Path(__file__).resolve().parent / "vendor"
_FONT_SRC = re.compile(r"src:url\((fonts/[^)]+\.woff2)\) format\(\"woff2\"\)[^;}]*")
# Tactics that name the lemma they rewrite with first: `rw L`, `rw (L args)`, ...
_LEMMA_TACTICS = re.compile(r"^(?:rw_all|rw|rewrite\s*!?|erewrite|use_instr_all|use_instr)"
                            r"\s*\(?\s*([A-Za-z_][\w']*(?:\.[A-Za-z_][\w']*)*)")


def katex_dist() -> Path:
    """KaTeX's `dist` folder: `$VERISCHED_KATEX_DIST`, or the one `make katex` vendors."""
    env = os.environ.get("VERISCHED_KATEX_DIST")
    dist = Path(env) if env else VENDOR / "katex"
    if not (dist / "katex.min.js").is_file():
        raise ReportError(f"KaTeX is not vendored ({dist} has no katex.min.js): run "
                          "`make katex` in the verisched checkout (npm ci of the katex "
                          "package), or set VERISCHED_KATEX_DIST to a KaTeX dist folder")
    return dist


@lru_cache(maxsize=4)
def katex_assets(dist: Path) -> tuple[str, str]:
    """(style sheet with woff2 fonts as data: URLs, script), both safe to inline."""
    css = (dist / "katex.min.css").read_text()

    def inline(m: re.Match[str]) -> str:
        data = base64.b64encode((dist / m.group(1)).read_bytes()).decode()
        return f'src:url(data:font/woff2;base64,{data}) format("woff2")'

    css = _FONT_SRC.sub(inline, css)
    js = (dist / "katex.min.js").read_text()
    # Inlined in <script>/<style>: a closing tag inside would end the element early.
    js = js.replace("</", "<\\/")
    css = css.replace("</", "<\\/")
    return css, js


@dataclass
class StepView:
    """One step as the page shows it."""

    number: int
    tactic: str
    lemma: str | None                      # the lemma (or instruction) the tactic names
    side_goals: list[str]
    messages: str
    seconds: float
    program_html: Markup | None = None     # the program after the step, laid out
    program_text: Markup | None = None     # Coq's printing (changes marked), outside the AST
    note: str = ""                         # unchanged, finished, ...
    changes: int = 0
    whole: bool = False                    # the step rewrote the program at its root

    @property
    def lemma_kind(self) -> str:
        """`instruction` for use_instr (it names an instruction, proved by conversion)."""
        return "instruction" if self.tactic.lstrip().startswith("use_instr") else "lemma"
    changed_tex: list[Markup] = field(default_factory=list)


def lemma_of(tactic: str) -> str | None:
    """The lemma (or instruction) a rewriting tactic names, if it names one."""
    m = _LEMMA_TACTICS.match(tactic.strip())
    return m.group(1) if m else None


def _parse(coq: str | None) -> Expr | None:
    if coq is None:
        return None
    try:
        return parse_program(coq)
    except TermParseError:
        return None


def _short(n: Any) -> bool:
    """Whether a changed subterm is small enough to quote beside the step."""
    if is_idx(n):
        return len(idx_str(n)) <= SHORT
    if isinstance(n, (PBool, PCmp, PAnd)):
        return len(pred_str(n)) <= SHORT
    return plain_width(n) <= SHORT


def step_views(trace: dict[str, Any]) -> list[StepView]:
    """Every step with its program laid out and its change against the previous one."""
    views = []
    for s in trace.get("steps", []):
        before, after = s["before"], s["after"]
        v = StepView(s["step"], s["tactic"], lemma_of(s["tactic"]), list(after["side_goals"]),
                     s.get("messages", ""), s.get("coq_seconds", 0.0))
        new, old = traced_program(after), traced_program(before)
        if after["coq"] is None:
            v.note = "no goals left: the derivation is finished"
        elif same_program(before, after):
            v.note = "program unchanged"
        if new is None and after["coq"] is not None:
            prev = " ".join(before["coq"].split()) if before["coq"] else None
            v.program_text = text_diff_html(prev, " ".join(after["coq"].split()))
        elif new is not None and not v.note:
            marks = changed_paths(old, new) if old is not None else []
            v.changes = len(marks)
            if marks == [()]:       # rewritten at the root: a highlight would cover it all
                v.whole = True
                marks = []
            v.program_html = Markup(Layout(marks, fold=bool(marks)).html(new))
            subs = [subterm(new, p) for p in marks]
            if subs and len(subs) <= QUOTED and all(_short(x) for x in subs):
                tw = TexWriter()
                v.changed_tex = [Markup(tex_span(tw.node(x))) for x in subs]
        views.append(v)
    return views


def _c_html(source: str) -> tuple[Markup, str]:
    """(highlighted C, its style sheet), by Pygments."""
    fmt = HtmlFormatter(cssclass="codehilite", linenos=False)
    return Markup(highlight(source, CLexer(), fmt)), fmt.get_style_defs(".codehilite")


def render_html(data: ReportData, *, bench_png: bytes | None = None) -> str:
    """The page for `data` (KaTeX must be vendored: see `katex_dist`)."""
    css, js = katex_assets(katex_dist())
    original = _parse(data.original) if data.original else None
    steps = data.trace.get("steps") or []
    first = steps[0].get("before") if steps else None
    start = original or (traced_program(first) if first else None)
    tw = TexWriter()
    c_html, c_css = _c_html(data.c_source) if data.c_source else (None, "")
    env = Environment(loader=PackageLoader("verisched.report", "templates"),
                      autoescape=select_autoescape(["html", "j2"]))
    tmpl = env.get_template("report.html.j2")
    verdict = data.trace.get("verdict") or {}
    return tmpl.render(
        d=data, version=__version__, katex_css=Markup(css), katex_js=Markup(js),
        pyg_css=Markup(c_css), c_html=c_html,
        original_html=Markup(Layout().html(start)) if start is not None else None,
        original_text=first.get("coq") if start is None and first else None,
        inputs=[Markup(tex_span(rf"{tw.expr(Var(n))} : " + _rank_tex(r)))
                for n, r in data.tensors],
        steps=step_views(data.trace), verdict=verdict,
        bench=base64.b64encode(bench_png).decode() if bench_png else None)


def _rank_tex(rank: int) -> str:
    return r"\mathbb{Z}^{" + str(rank) + r"} \to S" if rank else "S"
