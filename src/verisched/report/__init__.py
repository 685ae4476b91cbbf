"""HTML derivation reports: a derivation as a person reads it, in one self-contained page.

The page shows the original program in the paper's notation (sums, Iverson
brackets, named reshape operators, typeset by KaTeX), every step with its tactic,
the lemma it names, its side conditions and the program after it with the changed
subterm highlighted, then Coq's verdict (`Print Assumptions`), the generated C
(highlighted by Pygments) and, when given, a benchmark plot.  `verisched report`
is the command; from Python:

    >>> from verisched.report import write_report
    >>> write_report("coq/Examples/Blur.v", "blur_tiled", "blur_tiled.html")  # doctest: +SKIP
    PosixPath('blur_tiled.html')

Two stages (collect.py, page.py): the replay in Coq gives a `ReportData`, plain JSON
that can be kept and rendered again (`render_report`) without Coq.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from verisched.codegen.errors import LowerError
from verisched.pipeline import get_target
from verisched.pybridge.derivation import check_writable, write_text_atomic
from verisched.pybridge.errors import OutputPathError

from .collect import ReportData, ReportError, collect, from_derived, pick_derivation
from .page import katex_dist, render_html

__all__ = ["ReportData", "ReportError", "collect", "from_derived", "katex_dist", "pick_derivation",
           "render_report", "write_html", "write_report"]


def render_report(data: ReportData, *, bench_png: str | Path | None = None) -> str:
    """The page's HTML for collected data (no Coq involved)."""
    png = Path(bench_png).read_bytes() if bench_png is not None else None
    return render_html(data, bench_png=png)


def write_report(path: str | Path, derivation: str | None = None,
                 out: str | Path = "report.html", *, target: str | None = None,
                 bench_png: str | Path | None = None, timeout: float = 300.0,
                 progress: Callable[[str], None] | None = None,
                 on_step: Callable[..., None] | None = None) -> Path:
    """Replay `derivation` of the .v file `path` in Coq and write its report to `out`.

    `derivation` may be left out when the file has one.  Every mistake a caller can
    make (the file, the derivation's name, an unwritable `out`, a missing plot, KaTeX
    not vendored) raises ReportError before Coq starts; `out` is written atomically,
    so it is never left half-written.  `target` is the C target (default: the first
    that provides what the program uses, `c` for plain ATL).  `progress(message)` is
    told when Coq starts, `on_step(derivation, step)` sees every replayed step.
    """
    out = Path(out)
    name, _ = pick_derivation(Path(path), derivation)
    preflight(out, bench_png, target, inputs=(path, bench_png))
    if progress:
        progress(f"replaying {path} :: {name} in Coq")
    data = collect(path, derivation, target=target, timeout=timeout, on_step=on_step)
    return write_html(render_report(data, bench_png=bench_png), out)


def preflight(out: Path, bench_png: str | Path | None = None,
              target: str | None = None, inputs: Sequence[str | Path | None] = ()) -> None:
    """What can be checked before the replay: the output path (not one of the `inputs`:
    the .v file, the plot), the plot, the target, KaTeX."""
    try:
        check_writable(out, inputs=inputs)
    except OutputPathError as exc:
        raise ReportError(f"-o {out}: {exc}") from None
    if bench_png is not None:
        png = Path(bench_png)
        if png.is_dir():
            raise ReportError(f"--bench-png {png}: a directory, not a PNG file")
        if not png.is_file():
            raise ReportError(f"--bench-png {png}: no such benchmark plot")
        if png.read_bytes()[:8] != b"\x89PNG\r\n\x1a\n":
            raise ReportError(f"--bench-png {png}: not a PNG file")
    if target is not None:
        try:
            get_target(target)
        except LowerError as exc:
            raise ReportError(str(exc)) from None
    katex_dist()


def write_html(html: str, out: str | Path) -> Path:
    """Write `html` to `out` atomically, with the mode a plain write would give it."""
    return write_text_atomic(out, html)
