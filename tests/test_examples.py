"""Every script in examples/ runs as written: each schedules a program with the
Python directives, compiles it, and checks the kernel against numpy or the
reference interpreter itself (sizes that are not multiples of the factors).

Each example's derivation then gets its HTML report (verisched.report), made from the
replay and the C the example's own compile produced (no second replay), and rendered in
headless Chromium: every formula typeset, no KaTeX error, no console message."""

from __future__ import annotations

import runpy
from pathlib import Path
from typing import Any

import pytest
from conftest import requires_coq

EXAMPLES = sorted((Path(__file__).resolve().parents[1] / "examples").glob("*.py"))

# stem -> the ReportData of the last derivation the example compiled (test_example_runs
# fills it; test_example_report runs the example itself when run alone).
_REPORTS: dict[str, Any] = {}


def _run_recording(script: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """Run `script`, keeping what its last `Schedule.compile` replayed and rendered."""
    import verisched.schedule.annotations as annotations
    import verisched.schedule.state as state
    from verisched.report import from_derived

    seen: dict[str, Any] = {}

    def load(path: Any, name: str, **kw: Any) -> Any:
        seen["derived"] = state_load(path, name, **kw)
        seen["path"] = Path(path).name
        return seen["derived"]

    def render(lowered: Any) -> Any:
        seen["source"] = state_render(lowered)
        return seen["source"]

    state_load, state_render = state.load, annotations.render
    monkeypatch.setattr(state, "load", load)
    monkeypatch.setattr(annotations, "render", render)
    runpy.run_path(str(script), run_name="__main__")
    if "derived" not in seen:
        return None
    return from_derived(seen["derived"], f"{script.name} ({seen['path']})",
                        source=seen.get("source"))


@requires_coq
@pytest.mark.parametrize("script", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_example_runs(script: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                      capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    _REPORTS[script.stem] = _run_recording(script, monkeypatch)
    assert "checked against" in capsys.readouterr().out


@requires_coq
@pytest.mark.parametrize("script", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_example_report(script: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from report_browser import assert_renders, require_chromium

    from verisched.report import render_report, write_html

    monkeypatch.chdir(tmp_path)
    data = _REPORTS.get(script.stem) or _run_recording(script, monkeypatch)
    assert data is not None, f"{script.name} compiled no derivation"
    page = write_html(render_report(data), tmp_path / f"{script.stem}.html")
    html = page.read_text()
    assert data.trace["steps"] and f"Step {len(data.trace['steps'])}:" in html
    assert 'class="codehilite"' in html and "<details" in html
    require_chromium()
    assert_renders(page, tmp_path / f"{script.stem}.png")
