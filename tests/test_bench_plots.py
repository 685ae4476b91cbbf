"""The benchmarks' charts (benchmarks/_plots.py), drawn from small synthetic results and
from the committed ones, without timing anything: each renders to a PNG of sane size,
shows the spread over runs when samples were saved, labels its axes with units, and
writes a missing peer, a missing kernel or an n/a row on the chart (issue 15)."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("matplotlib")

from test_bench_helpers import BENCH, _load


@pytest.fixture(scope="module")
def pl():
    return _load("_plots")


@pytest.fixture(autouse=True)
def _close_figures():
    """pyplot keeps every figure these tests draw; close them after each test (a later
    test in the same worker would otherwise warn of more than 20 open figures)."""
    yield
    import matplotlib.pyplot as plt

    plt.close("all")


RUNS = [1.0, 1.1, 0.9, 1.3, 1.05]


def _runs(scale: float) -> list[float]:
    return [scale * r for r in RUNS]


def _png_ok(path: Path) -> tuple[int, int]:
    """PNG signature, a size between 10 KB and 3 MB, and the pixel size from IHDR."""
    raw = path.read_bytes()
    assert raw[:8] == b"\x89PNG\r\n\x1a\n"
    assert 10_000 < len(raw) < 3_000_000, len(raw)
    w, h = struct.unpack(">II", raw[16:24])
    assert 400 <= w <= 2000 and 300 <= h <= 1200, (w, h)
    return w, h


def _render(pl, fig, tmp_path: Path, stem: str) -> list[str]:
    texts = pl.texts(fig)
    _png_ok(pl.save_png(fig, tmp_path / f"{stem}.png"))
    for ax in fig.axes:
        if ax.get_visible() and ax.has_data():
            assert ax.get_xlabel() and ax.get_ylabel(), (stem, ax.get_title())
    return texts


def _has_whiskers(fig) -> bool:
    from matplotlib.container import ErrorbarContainer

    return any(isinstance(c, ErrorbarContainer) and c.lines[2]
               for ax in fig.axes for c in ax.containers)


def _notes(pl, fig) -> str:
    return "\n".join(t.get_text() for t in fig.texts if t.get_gid() == pl.NOTE_GID)


def _blur_data(halide: bool) -> dict:
    cols = ("ours-1t", "ours-par") + (("halide-1t", "halide-par") if halide else ())
    rows = ("two-stage", "fused", "tiled", "vec:blur_avx2")
    return {"size": [64, 64], "repeat": 5, "threads": 2, "copy_ms": 0.5,
            "median_ms": {r: {c: 1.0 + i for i, c in enumerate(cols)} for r in rows},
            "samples_ms": {r: {c: _runs(1.0 + i) for i, c in enumerate(cols)} for r in rows},
            "halide_note": "" if halide else "Halide is not installed",
            "vectorized": [{"origin": "BlurVec.v", "missing": None}]}


def test_blur_spread_labels_and_missing_halide(pl, tmp_path) -> None:
    fig = pl.blur(_blur_data(True))
    _render(pl, fig, tmp_path, "blur")
    assert _has_whiskers(fig)
    assert "peer missing" not in _notes(pl, fig)
    assert fig.axes[0].get_ylabel() == "time per call (ms)"
    fig = pl.blur(_blur_data(False))
    _render(pl, fig, tmp_path, "blur_nohalide")
    assert "peer missing: Halide is not installed" in _notes(pl, fig)


def _conv_data(ours: bool) -> dict:
    keys = ["torch-1t", "torch-2t", "torch_nhwc-1t", "torch_nhwc-2t"] + (
        ["ours-1t", "ours-2t"] if ours else [])
    return {"peak_gflops": {"1": 100.0, "2": 200.0}, "repeat": 5,
            "median_ms": {k: 10.0 for k in keys}, "samples_ms": {k: _runs(10) for k in keys},
            "ours_missing": None if ours else "Conv.v does not exist"}


def test_conv_legend_outside_the_axes(pl, tmp_path) -> None:
    fig = pl.conv(_conv_data(True), flops=1e9)
    _render(pl, fig, tmp_path, "conv")
    assert _has_whiskers(fig)
    fig.canvas.draw()
    ax = fig.axes[0]
    legend = ax.get_legend().get_window_extent()
    assert legend.y0 >= ax.get_window_extent().y1  # above the axes: it covers no line
    names = [t.get_text() for t in ax.get_legend().get_texts()]
    assert {"torch (NCHW)", "torch (NHWC, channels_last)", "ours"} <= set(names), names
    fig = pl.conv(_conv_data(False), flops=1e9)
    _render(pl, fig, tmp_path, "conv_noours")
    assert "no kernel of ours: Conv.v does not exist" in _notes(pl, fig)


def test_sgemm_bands_and_missing_kernel(pl, tmp_path) -> None:
    def prob(group, label, ours):
        keys = ["openblas-1t", "openblas-2t"] + (["ours-1t", "ours-2t"] if ours else [])
        return {"group": group, "label": label, "M": 64, "N": 64, "K": 64,
                "median_ms": {k: 0.01 for k in keys}, "samples_ms": {k: _runs(0.01) for k in keys}}

    for ours in (True, False):
        data = {"peak_gflops": {"1": 100.0, "2": 200.0}, "ours": "Sgemm.v:sgemm_avx2",
                "ours_missing": None if ours else "not run (--no-ours)",
                "problems": [prob(g, lab, ours) for g in ("square", "aspect")
                             for lab in ("a", "b", "c")]}
        fig = pl.sgemm(data)
        _render(pl, fig, tmp_path, f"sgemm_{ours}")
        assert any(c.__class__.__name__ == "PolyCollection" or "Fill" in c.__class__.__name__
                   for ax in fig.axes for c in ax.collections)
        assert ("no kernel of ours" in _notes(pl, fig)) is not ours


def _gemmini_data(exo: bool) -> dict:
    def res(impl, instrs, spad, note=""):
        return {"impl": impl, "instructions": instrs, "dram_to_spad_bytes": spad, "note": note}

    layers = []
    for i, name in enumerate(("fc", "res2 1x1", "res2 3x3")):
        rs = [res("ours", 1700 + i, 1600), res("ours panel", 1280, 800),
              res("ours staged", None, None, "n/a: hypothesis HKt excludes K=2048")
              if i == 0 else res("ours staged", 900, 30)]
        if exo:
            rs.append(res("exo", 1000, 1000) if i < 2 else
                      res("exo", None, None, "FAILED: out of scratchpad space"))
        layers.append({"name": name, "m": 4, "n": 1000, "k": 2048, "results": rs})
    return {"layers": layers, "exo_note": "" if exo else "Exo was not run"}


def test_gemmini_na_and_failed_peer_marked(pl, tmp_path) -> None:
    fig = pl.gemmini(_gemmini_data(True))
    texts = _render(pl, fig, tmp_path, "gemmini")
    na = [t.get_text() for t in fig.findobj(lambda a: getattr(a, "get_gid", None)
                                            and a.get_gid() == pl.NA_GID)]
    assert na.count("n/a") == 2  # one per panel
    assert na.count("Exo failed:\nno ratio") == 2
    assert "no spread" in _notes(pl, fig)
    assert "peer missing on res2 3x3: Exo FAILED" in _notes(pl, fig)
    assert "1.70" in texts  # value labels: vertical, one per bar
    fig = pl.gemmini(_gemmini_data(False))
    _render(pl, fig, tmp_path, "gemmini_noexo")
    assert "peer missing: Exo was not run" in _notes(pl, fig)


def test_idioms_and_polybench_ratio_spread(pl, tmp_path) -> None:
    rows = [{"name": "gemm", "median_ms": {"naive": 10.0, "found": 1.0},
             "samples_ms": {"naive": _runs(10), "found": _runs(1)[::-1]}},
            {"name": "axpy", "not_lowered": "no CBLAS call"}]
    fig = pl.idioms({"repeat": 5, "rows": rows})
    _render(pl, fig, tmp_path, "idioms")
    assert _has_whiskers(fig)
    # The whisker is the IQR of the per-round ratios, exactly (not stretched to the bar).
    ratios = [a / b for a, b in zip(_runs(10), _runs(1)[::-1], strict=True)]
    (seg,) = next(c for c in fig.axes[0].containers if hasattr(c, "has_yerr")
                  ).lines[2][0].get_segments()
    assert seg[:, 1] == pytest.approx(np.percentile(ratios, [25, 75]))
    assert "n/a axpy: not lowered: no CBLAS call" in _notes(pl, fig)
    rows = [{"name": "gemm", "median_ms": {"naive": 10.0, "ours": 2.0, "numpy": 1.0},
             "samples_ms": {"naive": _runs(10), "ours": _runs(2), "numpy": _runs(1)}},
            {"name": "jacobi-1d", "median_ms": {"naive": 1.0, "ours": 1.2},
             "samples_ms": {"naive": _runs(1), "ours": _runs(1.2)}}]
    fig = pl.polybench({"dataset": "MINI", "repeat": 5, "rows": rows})
    _render(pl, fig, tmp_path, "polybench")
    assert _has_whiskers(fig)
    assert "no OpenBLAS peer (no BLAS call computes the kernel): jacobi-1d" in _notes(pl, fig)


def test_reduce_ratio_bars_at_both_thread_counts(pl, tmp_path) -> None:
    rows = [{"name": "dot 65536",
             "median_ms": {"openblas 1t": 2.0, "ours 1t": 1.0, "openblas 2t": 1.0,
                           "ours 2t": 2.0},
             "samples_ms": {"openblas 1t": _runs(2), "ours 1t": _runs(1),
                            "openblas 2t": _runs(1), "ours 2t": _runs(2)}}]
    fig = pl.reduce({"threads": 2, "repeat": 5, "isa": "avx512", "rows": rows})
    _render(pl, fig, tmp_path, "reduce")
    assert _has_whiskers(fig)
    bars = [b.get_height() for c in fig.axes[0].containers if not hasattr(c, "has_yerr")
            for b in c]
    assert bars == pytest.approx([2.0, 0.5])


def test_tune_bands_and_missing_contender(pl, tmp_path) -> None:
    row = {"problem": "matvec", "sizes": {"n": 8}, "best_over_time": [[1.0, 2e-3], [2.0, 1e-3]],
           "ms": {"tuned": 1.0, "hand": 2.0}, "samples_ms": {"tuned": _runs(1), "hand": _runs(2)}}
    fig = pl.tune([row, dict(row, problem="chain")])
    _render(pl, fig, tmp_path, "tune")
    assert "matvec: no OpenBLAS timing" in _notes(pl, fig)
    assert "matvec: no untuned timing (no proved candidate)" in _notes(pl, fig)


def test_tune_names_the_peer_of_each_problem(pl, tmp_path) -> None:
    # blur's peer is Halide, conv's oneDNN: timed under "peer", named by the row
    row = {"problem": "blur", "target": "avx512", "peer": "Halide", "sizes": {"n": 8},
           "best_over_time": [[1.0, 2e-3]], "ms": {"tuned": 1.0, "hand": 2.0, "peer": 3.0,
                                                   "untuned": 4.0}}
    fig = pl.tune([row, dict(row, problem="conv", peer="oneDNN (torch)", ms={"tuned": 1.0})])
    _render(pl, fig, tmp_path, "tune_peer")
    assert "blur: no Halide timing" not in _notes(pl, fig)
    assert "conv: no oneDNN (torch) timing" in _notes(pl, fig)


def test_quartiles_and_round_ratios(pl) -> None:
    assert pl.quartiles([1, 2, 3, 4, 5]) == (2.0, 3.0, 4.0)
    assert pl.quartiles([]) is None
    assert pl.ratio_samples([2, 4], [1, 2]) == [2.0, 2.0]
    assert pl.ratio_samples([2, 4], [1]) is None
    # ms -> rate swaps the quartiles: the interval stays ordered
    assert pl.iqr_bounds([[1.0, 1.0, 2.0], None], lambda ms: 20 / ms) == [(20 / 1.5, 20.0),
                                                                         None]


@pytest.mark.parametrize("stem", ["blur", "conv", "sgemm", "gemmini", "idioms_bench",
                                  "polybench", "tune", "proofs", "reduce"])
def test_committed_results_redraw(pl, tmp_path, stem) -> None:
    """Every committed result redraws from its saved JSON (or, for results from before
    the bench wrote JSON, its markdown table), as `python benchmarks/_plots.py STEM`,
    each machine's (results/ and its subfolders, e.g. results/xeon/)."""
    dirs = [BENCH / "results", *sorted(d for d in (BENCH / "results").iterdir() if d.is_dir())]
    found = [d for d in dirs if (d / f"{stem}.json").exists() or (d / f"{stem}.md").exists()]
    if not found:
        pytest.skip(f"no committed {stem} result")
    for results in found[1:]:  # the other machines' tables redraw as well
        _render(pl, pl.figure_for(stem, results), tmp_path, f"{stem}-{results.name}")
    fig = pl.figure_for(stem, found[0])
    _render(pl, fig, tmp_path, stem)
    renderer = fig.canvas.get_renderer()
    legends = [*fig.legends, *(ax.get_legend() for ax in fig.axes if ax.get_legend())]
    for legend in legends:  # outside the axes: a legend covers no bar or line
        box = legend.get_window_extent(renderer)
        assert not any(box.overlaps(ax.get_window_extent(renderer)) for ax in fig.axes
                       if ax.get_visible()), stem
    if stem == "gemmini":
        assert "n/a" in pl.texts(fig)  # the staged schedule's excluded layers


def test_every_result_writer_stamps_its_commit() -> None:
    """Each script that writes benchmarks/results/* states the commit (one helper,
    _common.source_revision) in its markdown, and in its JSON when it writes one."""
    writers = [p for p in BENCH.glob("*.py") if not p.name.startswith("_")
               and ("write_outputs(" in p.read_text() or "OUT.write_text" in p.read_text())]
    assert {p.name for p in writers} >= {"bench_blur.py", "bench_conv.py", "bench_sgemm.py",
                                         "bench_gemmini.py", "bench_idioms.py",
                                         "bench_polybench.py", "bench_tune.py",
                                         "bench_proofs.py", "search_idioms.py",
                                         "bench_reduce.py"}
    for p in writers:
        text = p.read_text()
        assert "source_revision()" in text and "rev-parse" not in text, p.name
        if ".json" in text:
            assert '"commit": ' in text, p.name


def test_source_revision_marks_a_dirty_tree(tmp_path, monkeypatch) -> None:
    import subprocess

    cm = _load("_common")
    monkeypatch.delenv("VERISCHED_COMMIT", raising=False)
    git = ["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "f").write_text("a")
    subprocess.run([*git, "add", "f"], check=True)
    subprocess.run([*git, "commit", "-qm", "x"], check=True)
    head = subprocess.run([*git, "rev-parse", "--short", "HEAD"], capture_output=True,
                          text=True, check=True).stdout.strip()
    monkeypatch.setattr(cm, "REPO_ROOT", tmp_path)
    assert cm.source_revision() == head
    (tmp_path / "f").write_text("b")
    assert cm.source_revision() == f"{head} + uncommitted changes"
    monkeypatch.setenv("VERISCHED_COMMIT", "exported")
    assert cm.source_revision() == "exported"


def test_gemmini_value_labels_do_not_overlap(pl) -> None:
    """The committed Gemmini chart: no two value labels (or n/a marks) of one panel share
    a pixel, and the legend covers no axes (the defect issue 15 names)."""
    results = BENCH / "results"
    if not (results / "gemmini.md").exists():
        pytest.skip("no committed gemmini result")
    fig = pl.figure_for("gemmini", results)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    for ax in fig.axes:
        boxes = [t.get_window_extent(renderer) for t in ax.texts if t.get_text()]
        assert len(boxes) > 10
        for i, a in enumerate(boxes):
            for b in boxes[i + 1:]:
                assert not a.overlaps(b), (a, b)
        legend = fig.legends[0].get_window_extent(renderer)
        assert not legend.overlaps(ax.get_window_extent(renderer))


def test_replot_names_a_missing_result(pl, tmp_path, capsys) -> None:
    """A results directory without the named result is a clear error (exit 2, the
    stem and the directory named), not a traceback."""
    assert pl.main(["conv", "--results-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "conv" in err and str(tmp_path) in err
