"""`verisched report` and verisched.report: the notation, the diff, the foldable layout,
the self-contained page, the refusals, and the pages of real derivations rendered in
headless Chromium (tests/report_browser.py).

The tiled blur's page is the documented example (docs/report.md); its screenshot is
docs/report-blur-tiled.png (rewritten when VERISCHED_UPDATE_SCREENSHOT=1).
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest
from conftest import requires_coq
from report_browser import assert_renders

from verisched import cli
from verisched.pybridge.coqterm import parse_program, to_coq
from verisched.pybridge.terms import (
    Concat,
    Flatten,
    Gen,
    Guard,
    IBin,
    IConst,
    IVar,
    Let,
    PadL,
    PAnd,
    PCmp,
    SBin,
    Split,
    Sum,
    TAdd,
    Transpose,
    TruncR,
    Var,
    gen,
    get,
    summ,
)
from verisched.report import ReportData, ReportError, render_report, write_html, write_report
from verisched.report.diff import changed_paths, text_diff_html
from verisched.report.latex import TexWriter
from verisched.report.layout import Layout
from verisched.report.page import lemma_of

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"
n, m, k, i, j = (IVar(x) for x in "nmkij")


def matmul() -> Gen:
    """C[i][j] = sum_k [k < m] A[i][k] * B[k][j]."""
    return gen("i", n, gen("j", n, summ("k", m, Guard(
        PCmp("<", k, m), SBin("*", get(Var("A"), i, k), get(Var("B"), k, j))))))


def every_construct() -> Let:
    """A term using each construct of the AST that the notation names."""
    v = Var("v")
    row = gen("j", m, get(v, i, j))
    reshaped = Concat(IConst(1), IBin("-", n, IConst(1)),
                      Transpose(n, m, Flatten(n, m, Split(IConst(4), n, PadL(IConst(2), n,
                                                                                  row)))),
                      TruncR(IBin("cdiv", n, IConst(4)), Var("buf")))
    body = gen("i", n, TAdd(Guard(PAnd(PCmp("<=", IConst(0), IBin("-", i, IConst(1))),
                                       PCmp("=", IBin("%", i, IConst(2)), IConst(0))),
                                  get(Var("buf"), IBin("/", i, IConst(2)))),
                            Sum("k", IConst(1), IBin("+", n, IConst(1)), get(v, i, k))))
    return Let("buf", reshaped, Let("out", body, TAdd(Var("out"), SBin("max", Var("out"),
                                                                         Var("out")))))


# -- the notation -----------------------------------------------------------------------


def test_notation_is_the_papers() -> None:
    tex = TexWriter().expr(matmul())
    assert r"\sum_{k=0}^{m - 1}" in tex                  # SUM with bounds
    assert r"[k < m] \cdot" in tex                        # Iverson bracket
    assert r"\;\middle|\; j < n" in tex and tex.startswith(r"\left[\,")   # comprehension
    assert "A[i, k]" in tex and r"\cdot B[k, j]" in tex
    every = TexWriter().expr(every_construct())
    for name in ("concat", "transpose", "flatten", "split", r"pad\_l", r"trunc\_r"):
        assert r"\operatorname{" + name + "}" in every, name
    assert r"\mathbf{let}\ \mathit{buf} =" in every and r"\mathbf{in}" in every
    assert r"\sum_{k=1}^{n}" in every                     # hi - 1 of n + 1 is n
    assert r"\left\lfloor i / 2 \right\rfloor" in every and r"\bmod" in every
    assert r"\left\lceil n / 4 \right\rceil" in every and r"\land" in every
    assert r"\max\left(" in every
    # a binder Coq printed as `_` (a count that did not let the bridge name it)
    blank = TexWriter().expr(Sum("_", IConst(0), IVar("n"), Var("c")))
    assert r"\sum_{\_=0}^{n - 1}" in blank


def test_diff_marks_the_smallest_changed_subtrees() -> None:
    old = matmul()
    assert changed_paths(old, old) == []
    # the guard's bound: only that index changes
    new = gen("i", n, gen("j", n, summ("k", m, Guard(
        PCmp("<", k, n), SBin("*", get(Var("A"), i, k), get(Var("B"), k, j))))))
    (path,) = changed_paths(old, new)
    assert path == (2, 2, 2, 0, 1)                        # Gen.body, Gen.body, Sum.body, pred
    # a different constructor: the whole node is the change
    swapped = gen("i", n, gen("j", n, summ("k", m, SBin("*", get(Var("A"), i, k),
                                                           get(Var("B"), k, j)))))
    assert changed_paths(old, swapped) == [(2, 2, 2)]
    tex = TexWriter(changed_paths(old, new)).expr(new)
    assert r"\htmlClass{vs-changed}{n}" in tex


def test_layout_folds_loops_and_buffers() -> None:
    big = every_construct()
    html = Layout().html(big)
    assert '<details class="loop" open>' in html and '<details class="buffer" open>' in html
    # in a step, only the blocks holding the change start open
    new = Let("buf", big.value, Let("out", big.body.value, Var("out")))
    marks = changed_paths(big, new)
    folded = Layout(marks, fold=True).html(new)
    assert '<details class="buffer">' in folded            # the unchanged buffer, closed
    assert "vs-changed" in folded


def test_lemma_names_and_the_text_diff() -> None:
    assert lemma_of("rw (gen_peel n (n - 1) (n - 2)).") == "gen_peel"
    assert lemma_of("rw_all Reshape.Defs.concat_get.") == "Reshape.Defs.concat_get"
    assert lemma_of("use_instr (gemmini_mvin_acc D).") == "gemmini_mvin_acc"
    assert lemma_of("tile yc xc by kn km into yo xo yi xi partition.") is None
    # a program outside the AST (a user definition applied): the changed tokens marked
    html = text_diff_html("(GEN [ y < n ] blur_x v x y)", "(GEN [ y < n ] blur_xg v x y)")
    assert '<mark class="vs-changed">blur_xg</mark>' in html and html.count("<mark") == 1
    assert str(text_diff_html(None, "a <+> b")) == "a &lt;+&gt; b"


# -- the page -------------------------------------------------------------------------------


def synthetic() -> ReportData:
    """A report's data without Coq: a two-step trace over every construct."""
    p0 = every_construct()
    p1 = Let("buf", p0.value, Let("out", p0.body.value, Var("out")))

    def state(e: object) -> dict:
        return {"coq": to_coq(e) if e is not None else None, "program": None,
                "parse_error": None, "side_goals": []}

    steps = [{"step": 1, "tactic": "rw (tadd_max_elim (X := S)).", "before": state(p0),
              "after": state(p1), "coq_seconds": 0.01, "messages": ""},
             {"step": 2, "tactic": "done.", "before": state(p1), "after": state(None),
              "coq_seconds": 0.001, "messages": ""}]
    verdict = {"accepted": True, "message": "Axioms:\nFunctionalExtensionality."
               "functional_extensionality_dep : forall ...",
               "axioms": ["FunctionalExtensionality.functional_extensionality_dep"]}
    return ReportData(file="t.v", derivation="t", derivations=["t"],
                      trace={"derivation": "t", "proof": "t_correct", "steps": steps,
                             "verdict": verdict},
                      original=to_coq(p0), sizes=["n", "m"], tensors=[["v", 2]],
                      hypotheses=["shaped [n; m] v", "0 < n"], safety=None, target="c",
                      c_source="void t(const float *v, int n, int m, float *out) {}\n")


def test_page_is_self_contained(tmp_path: Path) -> None:
    data = synthetic()
    assert ReportData.from_json(data.to_json()) == data
    plot = REPO / "benchmarks" / "results" / "blur.png"
    html = render_report(data, bench_png=plot)
    assert "data:font/woff2;base64," in html and "katex.min" not in html
    assert not re.search(r"""(src|href)=["']?(https?:)?//|url\((https?:)?//""", html)
    assert "data:image/png;base64," in html
    assert 'class="codehilite"' in html and "Print Assumptions t_correct" in html
    assert "<code>tadd_max_elim</code>" in html and "vs-changed" in html
    assert html.count('<details class="step"') == 2
    parse_program(data.original or "")  # the data round-trips through Coq's notation
    page = write_html(html, tmp_path / "t.html")
    assert_renders(page, tmp_path / "t.png", height=1600)


def test_a_program_outside_the_grammar_is_shown_as_coq_printed_it() -> None:
    """Where neither the original nor the first step's program parses, the page shows
    Coq's text; it showed the trace state's dict once the trace carried loop names."""
    st = {"coq": "(foo_unknown n (fun q => v q))", "loop_names": [], "program": None,
          "parse_error": "unknown", "side_goals": []}
    data = ReportData(file="t.v", derivation="t", derivations=["t"],
                      trace={"steps": [{"step": 1, "tactic": "reschedule.", "before": st,
                                        "after": st, "coq_seconds": 0.0, "messages": ""}],
                             "verdict": {}},
                      original=None, sizes=["n"], tensors=[["v", 1]], hypotheses=[],
                      safety=None)
    html = render_report(data)
    assert "foo_unknown n (fun q =&gt; v q)" in html and "loop_names" not in html


# -- the command's refusals -------------------------------------------------------------------


@pytest.mark.parametrize("args, message", [
    (["coq/Examples/Blur.v", "--derivation", "nope"],
     "has no derivation named 'nope'; its derivations: blur_two_stage, blur_fused, blur_tiled"),
    (["coq/Examples/Blur.v"], "has 3 derivations; choose one with --derivation: "
                              "blur_two_stage, blur_fused, blur_tiled"),
    (["no/such.v"], "no such file: no/such.v"),
    (["coq"], "coq is a directory, not a .v file"),
    (["coq/Examples/Blur.v", "--derivation", "blur_tiled", "--bench-png", "README.md"],
     "--bench-png README.md: not a PNG file"),
    (["coq/Examples/Blur.v", "--derivation", "blur_tiled", "--bench-png", "coq"],
     "--bench-png coq: a directory, not a PNG file"),
    (["coq/Examples/Blur.v", "--derivation", "blur_tiled", "--bench-png", "no.png"],
     "--bench-png no.png: no such benchmark plot"),
    (["coq/Examples/Blur.v", "--derivation", "blur_tiled", "--target", "nope"],
     "unknown target 'nope'"),
])
def test_refusals_are_one_line_and_write_nothing(args: list[str], message: str, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(REPO)
    out = tmp_path / "r.html"
    out.write_text("the previous report")
    assert cli.main(["report", *args, "-o", str(out)]) == 1
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert out.read_text() == "the previous report"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.html"]   # no temporary left


def test_unwritable_output_is_refused_before_coq(tmp_path: Path) -> None:
    with pytest.raises(ReportError, match="does not exist"):
        write_report(REPO / "coq/Examples/Blur.v", "blur_tiled", tmp_path / "no" / "r.html")
    with pytest.raises(ReportError, match=r"^-o .*: .*is a directory"):
        write_report(REPO / "coq/Examples/Blur.v", "blur_tiled", tmp_path)


# -- real derivations, in Chromium ---------------------------------------------------------------


def _python_blocks(md: Path) -> list[str]:
    return re.findall(r"```python\n(.*?)```", md.read_text(), re.S)


@requires_coq
def test_documented_example_blur_tiled(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    """docs/report.md's first example, as written: the tiled blur's report."""
    (tmp_path / "coq").symlink_to(REPO / "coq")
    monkeypatch.chdir(tmp_path)
    exec(_python_blocks(DOCS / "report.md")[0], {})
    assert capsys.readouterr().out.strip() == "blur_tiled.html True"
    page = tmp_path / "blur_tiled.html"
    html = page.read_text()
    assert html.count('<details class="step"') == 21
    assert "Print Assumptions blur_tiled_correct" in html
    assert "functional_extensionality_dep" in html and "check_safe" in html
    assert "<code>gen_tile2</code>" in html and "vs-changed" in html
    assert 'class="codehilite"' in html and "blur_tiled" in html
    shot = tmp_path / "report-blur-tiled.png"
    assert_renders(page, shot, width=1100, height=4200)
    if os.environ.get("VERISCHED_UPDATE_SCREENSHOT"):
        shutil.copyfile(shot, DOCS / "report-blur-tiled.png")


@requires_coq
def test_cli_report_with_plot(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                              capsys: pytest.CaptureFixture[str]) -> None:
    """The command end to end on a one-derivation file, with a benchmark plot."""
    monkeypatch.chdir(REPO)
    out = tmp_path / "fused.html"
    assert cli.main(["report", "coq/Examples/Pipeline.v", "-o", str(out), "--bench-png",
                     "benchmarks/results/blur.png"]) == 0
    cap = capsys.readouterr()
    assert "replaying coq/Examples/Pipeline.v :: fused in Coq" in cap.err
    assert f"wrote {out}" in cap.out
    html = out.read_text()
    assert "data:image/png;base64," in html and "Print Assumptions fused_correct" in html
    assert_renders(out, tmp_path / "fused.png")


@requires_coq
def test_a_step_coq_rejects_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    """A derivation Coq rejects gets no page: the step and Coq's message, on one line."""
    src = (REPO / "coq/Examples/Pipeline.v").read_text()
    bad = tmp_path / "Bad.v"
    bad.write_text(src.replace("    rw get_gen.\n    rw get_gen.\n", "    rw no_such_lemma.\n"))
    out = tmp_path / "bad.html"
    assert cli.main(["report", str(bad), "-o", str(out), "-q"]) == 1
    err = capsys.readouterr().err
    assert "rw no_such_lemma." in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1 and not out.exists()


@requires_coq
def test_stages_separately(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/report.md's second example: collect, keep as JSON, render without Coq."""
    (tmp_path / "coq").symlink_to(REPO / "coq")
    monkeypatch.chdir(tmp_path)
    code = _python_blocks(DOCS / "report.md")[1]
    exec(code, {})
    assert (tmp_path / "again.html").stat().st_size > 100_000
