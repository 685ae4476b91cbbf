"""The benchmarks' charts, drawn from the saved results alone (results/STEM.json).

Each bench writes a JSON result and calls the function here with it, so a chart
can be redrawn from a committed result without timing anything again:

    PYTHONPATH=src python benchmarks/_plots.py blur conv   # results/blur.png, conv.png

Every chart shows the spread over the timed runs as error bars (or a band) from
the 25th to the 75th percentile of the per-run samples (decisions #69: the
interquartile range; one disturbed run on a shared machine does not stretch it,
as it would a min-max bar).  Ratios of two variants take the IQR of the per-round
ratios: the variants are timed round-robin, so round i of each saw the same load.
A result saved before samples were kept is drawn without bars and says so.  A
missing optional peer, a missing kernel of ours and an n/a row are written ON the
chart (figure texts with gid NOTE_GID, which the tests look for).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as cm  # noqa: E402

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

NOTE_GID = "verisched-note"
NA_GID = "verisched-na"
SPREAD = "bars: median, whiskers: 25th-75th percentile of the runs"
NO_SPREAD = "spread not recorded in this result (saved before per-run samples were kept)"


def quartiles(samples: Sequence[float] | None) -> tuple[float, float, float] | None:
    """(25th, 50th, 75th percentile) of the runs, or None when none were saved."""
    if not samples:
        return None
    q1, q2, q3 = np.percentile(np.asarray(samples, dtype=float), [25, 50, 75])
    return float(q1), float(q2), float(q3)


def ratio_samples(num: Sequence[float] | None, den: Sequence[float] | None
                  ) -> list[float] | None:
    """Per-round ratios num[i] / den[i] of two round-robin variants (same rounds)."""
    if not num or not den or len(num) != len(den):
        return None
    return [a / b for a, b in zip(num, den, strict=True) if b > 0]


def iqr_bounds(samples: Sequence[Sequence[float] | None],
               transform: Callable[[float], float] = float) -> list[tuple[float, float] | None]:
    """(low, high) of each sample set's interquartile range, mapped through `transform`
    (e.g. ms -> GFLOP/s, which swaps the quartiles); None where no samples were saved."""
    out: list[tuple[float, float] | None] = []
    for s in samples:
        q = quartiles(s)
        out.append(None if q is None else
                   tuple(sorted((transform(q[0]), transform(q[2])))))  # type: ignore[misc]
    return out


def whiskers(ax: Axes, xs: Sequence[float], bounds: Sequence[tuple[float, float] | None],
             capsize: float = 2) -> bool:
    """Draw each interval [low, high] as a whisker at its x, exactly where it lies (a
    ratio of medians may fall outside the IQR of the per-round ratios: the whisker is
    not stretched to reach the bar).  False when there was nothing to draw."""
    pts = [(x, b) for x, b in zip(xs, bounds, strict=True) if b is not None]
    if not pts:
        return False
    x = [p[0] for p in pts]
    lo = np.array([p[1][0] for p in pts])
    hi = np.array([p[1][1] for p in pts])
    ax.errorbar(x, (lo + hi) / 2, yerr=(hi - lo) / 2, fmt="none", ecolor="black",
                elinewidth=0.8, capsize=capsize)
    return True


def note(fig: Figure, lines: Sequence[str], y: float = 0.01) -> None:
    """Notes at the foot of the figure (missing peers, n/a rows, how spread is shown);
    the caller leaves room for them with tight_layout(rect=...)."""
    text = "\n".join(lines)
    if text:
        fig.text(0.01, y, text, ha="left", va="bottom", fontsize=7, wrap=True, gid=NOTE_GID)


def foot(n_lines: int, height: float = 4.0) -> float:
    """The fraction of a `height`-inch-high figure that `n_lines` of notes need."""
    return min(0.04 + 0.035 * n_lines, 0.4) * 4.0 / height


def texts(fig: Figure) -> list[str]:
    """Every text drawn on a figure (titles, labels, notes, value labels): for tests."""
    return [t.get_text() for t in fig.findobj(lambda a: hasattr(a, "get_text"))]


# ---------------------------------------------------------------------------
# bench blur


BLUR_COLS = ("ours-1t", "halide-1t", "ours-par", "halide-par")


def blur(data: dict) -> Figure | None:
    """Median time per schedule and column, IQR whiskers; the image copy as the floor."""
    plt = cm.pyplot()
    if plt is None:
        return None
    med: dict[str, dict[str, float]] = data["median_ms"]
    samples: dict[str, dict[str, list[float]]] = data.get("samples_ms") or {}
    n, m = data["size"]
    T = data["threads"]
    fig, ax = plt.subplots(figsize=(9, 4.6))
    keys = list(med)
    cols = [c for c in BLUR_COLS if any(c in med[k] for k in keys)]
    width = 0.8 / max(len(cols), 1)
    for j, c in enumerate(cols):
        vals = [med[k].get(c, np.nan) for k in keys]
        xs = [i + (j - (len(cols) - 1) / 2) * width for i in range(len(keys))]
        ax.bar(xs, vals, width, label=c)
        whiskers(ax, xs, iqr_bounds([samples.get(k, {}).get(c) for k in keys]))
    ax.axhline(data["copy_ms"], color="grey", linestyle="--", linewidth=0.8,
               label="image copy (memory floor, 1t)")
    ax.set_xticks(range(len(keys)), keys, fontsize=8)
    ax.set_xlabel("schedule (vec:NAME: a BlurVec.v derivation; tile+vec: Halide alone)")
    ax.set_ylabel("time per call (ms)")
    ax.set_title(f"3x3 blur {n}x{m} float32: verisched vs Halide (par = {T} threads)",
                 fontsize=10)
    ax.legend(fontsize=7, ncol=len(cols) + 1, loc="lower center", bbox_to_anchor=(0.5, 1.06),
              frameon=False)
    lines = [SPREAD + f" ({data['repeat']} interleaved runs)" if samples else NO_SPREAD]
    if data.get("halide_note") or not any(c.startswith("halide") for c in cols):
        lines.append("peer missing: " + (data.get("halide_note")
                                         or "Halide was not run: no Halide bars"))
    lines += [f"no vectorized kernel of ours: {v['missing']}"[:160]
              for v in data.get("vectorized", []) if v.get("missing")]
    note(fig, lines)
    fig.tight_layout(rect=(0, foot(len(lines)), 1, 1))
    return fig


# ---------------------------------------------------------------------------
# bench conv


# bench conv's peer variants, as the legend names them.
WHO_LABEL = {"torch": "torch (NCHW)", "torch_nhwc": "torch (NHWC, channels_last)"}


def conv(data: dict, flops: float) -> Figure | None:
    """GFLOP/s per thread count, IQR whiskers, the measured FMA peak dashed; the
    legend sits below the axes so it covers no bar or line."""
    plt = cm.pyplot()
    if plt is None:
        return None
    med: dict[str, float] = data["median_ms"]
    samples: dict[str, list[float]] = data.get("samples_ms") or {}
    peak = {int(k): v for k, v in data["peak_gflops"].items()}
    ts = sorted(peak)
    whos = [w for w in ("torch", "torch_nhwc", "ours") if any(f"{w}-{t}t" in med for t in ts)]
    fig, ax = plt.subplots(figsize=(6.5, 4.6))
    width = 0.7 / max(len(whos), 1)

    def gf(ms: float) -> float:
        return flops / ms / 1e6

    for j, who in enumerate(whos):
        keys = [f"{who}-{t}t" for t in ts]
        vals = [gf(med[k]) if k in med else np.nan for k in keys]
        xs = [i + (j - (len(whos) - 1) / 2) * width for i in range(len(ts))]
        ax.bar(xs, vals, width, label=WHO_LABEL.get(who, who))
        whiskers(ax, xs, iqr_bounds([samples.get(k) for k in keys], gf), capsize=3)
    for i, t in enumerate(ts):
        ax.hlines(peak[t], i - 0.45, i + 0.45, colors="grey", linestyles="dashed",
                  label="measured FMA peak" if i == 0 else None)
    ax.set_xticks(range(len(ts)), [f"{t} thread(s)" for t in ts])
    ax.set_xlabel("threads")
    ax.set_ylabel("GFLOP/s (higher is better)")
    ax.set_ylim(0, max(peak.values()) * 1.12)
    ax.set_title(data.get("title", "3x3 conv") + (": NO derived kernel, torch only"
                                                   if data.get("ours_missing") else
                                                   ": ours vs torch"), fontsize=10)
    ax.legend(fontsize=8, ncol=3, loc="lower center", bbox_to_anchor=(0.5, 1.07), frameon=False)
    lines = [SPREAD + f" ({data['repeat']} interleaved runs)" if samples else NO_SPREAD]
    if data.get("ours_missing"):
        lines.append(f"no kernel of ours: {data['ours_missing']}"[:200])
    if data.get("peer_missing"):
        lines.append(f"peer missing: {data['peer_missing']}")
    note(fig, lines)
    fig.tight_layout(rect=(0, foot(len(lines)), 1, 1))
    return fig


# ---------------------------------------------------------------------------
# bench sgemm


def sgemm(data: dict) -> Figure | None:
    """GFLOP/s over the square and aspect sweeps, a shaded IQR band per line."""
    plt = cm.pyplot()
    if plt is None:
        return None
    peak = {int(k): v for k, v in data["peak_gflops"].items()}
    T = max(peak)
    probs = data["problems"]
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.8))
    has_samples = any(p.get("samples_ms") for p in probs)
    for ax, group in zip(axes, ("square", "aspect"), strict=True):
        rs = [p for p in probs if p["group"] == group]
        if not rs:
            ax.set_visible(False)
            continue
        x = np.arange(len(rs))
        flops = [2.0 * p["M"] * p["N"] * p["K"] for p in rs]
        for t, style in ((1, "-"), (T, "--")):
            if t == T and T == 1 and style == "--":
                continue
            for who, marker in (("openblas", "o"), ("ours", "s")):
                key = f"{who}-{t}t"
                if key not in rs[0]["median_ms"]:
                    continue
                vals = [f / p["median_ms"][key] / 1e6 for f, p in zip(flops, rs, strict=True)]
                line, = ax.plot(x, vals, style, marker=marker, markersize=4,
                                label=f"{'OpenBLAS' if who == 'openblas' else 'ours'} {t}t")
                qs = [quartiles((p.get("samples_ms") or {}).get(key)) for p in rs]
                if all(q is not None for q in qs):
                    ax.fill_between(x, [f / q[2] / 1e6 for f, q in zip(flops, qs, strict=True)],
                                    [f / q[0] / 1e6 for f, q in zip(flops, qs, strict=True)],
                                    color=line.get_color(), alpha=0.2, linewidth=0)
            ax.axhline(peak[t], color="grey", linestyle=style, linewidth=0.8)
            ax.text(0 if t == 1 else len(rs) - 1, peak[t], f"FMA peak {t}t", fontsize=7,
                    ha="left" if t == 1 else "right", va="bottom", color="grey")
        ax.set_xticks(x, [p["label"] for p in rs], fontsize=8)
        ax.set_xlabel("M = N = K" if group == "square" else "M / N  (K = 512, M·N = 512²)")
        ax.set_ylabel("GFLOP/s (higher is better)")
        ax.set_ylim(0, max(peak.values()) * 1.15)
    missing = data.get("ours_missing")
    fig.suptitle("SGEMM float32: " + (f"ours ({data.get('ours')}) vs OpenBLAS" if not missing
                                      else "OpenBLAS only (NO derived kernel)"), fontsize=10)
    handles, labels = next(ax for ax in axes if ax.get_visible()).get_legend_handles_labels()
    fig.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, 0.95), ncol=4,
               fontsize=8, frameon=False)
    lines = [("lines: median, bands: 25th-75th percentile of the runs" if has_samples
              else NO_SPREAD)]
    if missing:
        lines.append(f"no kernel of ours: {missing}"[:200])
    note(fig, lines)
    fig.tight_layout(rect=(0, foot(len(lines)), 1, 0.9))
    return fig


# ---------------------------------------------------------------------------
# bench gemmini (simulator counters: deterministic, so there is no spread to show)


GEMMINI_LABELS = {"ours": "ours (derived, per-tile)",
                  "ours panel": "ours panel (derived, with bias)",
                  "ours staged": "ours staged (derived, with bias)",
                  "loop_ws (ours)": "loop_ws (derived; CPU-issued instructions)",
                  "loop_conv_ws (ours)": "loop_conv_ws (derived, with bias, no im2col; "
                                         "CPU-issued)",
                  "im2col on chip (ours)": "im2col on chip (derived, with bias)"}
GEMMINI_COLORS = {"ours": "tab:blue", "ours panel": "tab:green", "ours staged": "tab:olive",
                  "loop_ws (ours)": "tab:purple", "loop_conv_ws (ours)": "tab:brown",
                  "im2col on chip (ours)": "tab:cyan"}


def gemmini(data: dict) -> Figure | None:
    """Counters relative to Exo's per layer (absolute counts, log scale, without Exo).
    Value labels are vertical inside the top of each bar (no overlap between the narrow
    neighbours); a bar over the axis is clipped and labelled at the top with an arrow;
    an n/a row is a hatched stub labelled n/a."""
    plt = cm.pyplot()
    if plt is None:
        return None
    layers = data["layers"]
    by = [{r["impl"]: r for r in lay["results"]} for lay in layers]
    have_exo = any(r.get("exo", {}).get("instructions") for r in by)
    impls = [i for i in GEMMINI_LABELS if any(i in r for r in by)]
    names = [lay["name"] for lay in layers]
    # The two panels one above the other: each bar's vertical value label needs about
    # 0.1 in of width, which side by side (13 in for both) ten layers of six bars lacked.
    fig, axes = plt.subplots(2, 1, figsize=(13, 10.2))
    x = np.arange(len(names))
    width = 0.84 / max(len(impls), 1)
    top = 2.0
    na_notes: list[str] = []
    for ax, key, what in ((axes[0], "instructions", "instructions"),
                          (axes[1], "dram_to_spad_bytes", "DRAM->scratchpad bytes")):
        for n_i, impl in enumerate(impls):
            xs = x + (n_i - (len(impls) - 1) / 2) * width
            for xi, rs, lay in zip(xs, by, layers, strict=True):
                r = rs.get(impl)
                if r is None:
                    continue
                e = rs.get("exo", {})
                if r.get(key) is None:  # n/a: the derivation's hypotheses exclude the layer
                    ax.bar(xi, 0.12 if have_exo else 1, width, color="white",
                           edgecolor=GEMMINI_COLORS[impl], hatch="////", linewidth=0.6)
                    ax.text(xi, 0.14 if have_exo else 1.2, "n/a", rotation=90, ha="center",
                            va="bottom", fontsize=7, color="black", gid=NA_GID)
                    if key == "instructions":
                        na_notes.append(f"n/a {impl} on {lay['name']}: "
                                        f"{r.get('note', '').removeprefix('n/a: ')}")
                    continue
                if have_exo and not e.get(key):
                    continue  # Exo failed on this layer: marked once below
                v = r[key] / e[key] if have_exo else float(r[key])
                shown = min(v, top) if have_exo else v
                ax.bar(xi, shown, width, color=GEMMINI_COLORS[impl])
                if have_exo:
                    label = f"{v:.2f}" + (" ↑" if v > top else "")
                    inside = shown > 0.35  # a short bar gets its label above it
                    ax.text(xi, shown - 0.03 if inside else shown + 0.02, label,
                            rotation=90, ha="center", va="top" if inside else "bottom",
                            fontsize=6, color="white" if inside else "black")
        if have_exo:
            for xi, rs, lay in zip(x, by, layers, strict=True):
                if not rs.get("exo", {}).get(key):
                    ax.text(xi, 1.05, "Exo failed:\nno ratio", ha="center", va="bottom",
                            fontsize=7, color="tab:red", gid=NA_GID)
                    if key == "instructions":
                        na_notes.append(f"peer missing on {lay['name']}: Exo "
                                        + (rs.get("exo", {}).get("note") or "was not run"))
        ax.set_xlim(-0.6, len(names) - 0.4)
        ax.set_xticks(x, names, rotation=35, ha="right", fontsize=8)
        ax.set_xlabel("ResNet-50 layer (batch 4)")
        if have_exo:
            ax.axhline(1.0, color="k", lw=0.8)
            ax.set_ylim(0, top)
            ax.set_ylabel(f"{what} / Exo's (ratio; below 1: fewer)")
        else:
            ax.set_yscale("log")
            ax.set_ylabel(f"{what} (count)" if key == "instructions" else f"{what} (bytes)")
        ax.set_title(what, fontsize=10)
    for impl in impls:
        axes[0].bar([np.nan], [np.nan], color=GEMMINI_COLORS[impl], label=GEMMINI_LABELS[impl])
    handles, labels = axes[0].get_legend_handles_labels()
    # More than four rows' labels do not fit one line of the figure's width: two lines.
    fig.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, 0.975),
               ncol=len(impls) if len(impls) <= 4 else -(-len(impls) // 2), fontsize=8,
               frameon=False)
    fig.suptitle("Gemmini, ResNet-50 batch 4, simulator counters"
                 + (" relative to Exo" if have_exo else ", ours only"), fontsize=11)
    lines = ["simulator counters are deterministic: one run per layer, no spread to show"]
    if not have_exo:
        lines.append("peer missing: " + (data.get("exo_note") or "Exo was not run")
                     + " (absolute counts, log scale)")
    lines += na_notes
    note(fig, lines)
    fig.tight_layout(rect=(0, foot(len(lines), fig.get_figheight()), 1,
                           0.93 if len(impls) <= 4 else 0.91))
    return fig


def gemmini_from_md(text: str) -> dict:
    """gemmini.md's table as bench_gemmini's JSON result (a result from before the bench
    wrote JSON): the columns the chart uses, and each row's note."""
    layers: dict[str, dict] = {}
    for r in md_rows(text):
        m, n, k = (int(v) for v in r["M x N x K"].split(" x "))
        lay = layers.setdefault(r["layer"], {"name": r["layer"], "m": m, "n": n, "k": k,
                                             "results": []})
        lay["results"].append({"impl": r["impl"], "note": r["note"],
                               **{key: int(r[col]) if r[col].isdigit() else None
                                  for key, col in (("instructions", "instrs"),
                                                   ("dram_to_spad_bytes", "DRAM->spad B"))}})
    ran_exo = any(x["impl"] == "exo" for lay in layers.values() for x in lay["results"])
    return {"layers": list(layers.values()), "exo_note": "" if ran_exo else "Exo was not run"}


# ---------------------------------------------------------------------------
# bench idioms and bench polybench: time ratios per kernel, log scale


def _ratio_bars(ax: Axes, xs: np.ndarray, rows: list[dict], num: str, den: str, width: float,
                label: str) -> list[str]:
    """Bars of median(num) / median(den) per row, whiskers from the per-round ratios;
    returns the names of the rows without this ratio."""
    vals, samp, missing = [], [], []
    for r in rows:
        med = r.get("median_ms", {})
        if med.get(num) and med.get(den):
            vals.append(med[num] / med[den])
        else:
            vals.append(np.nan)
            missing.append(r["name"])
        s = r.get("samples_ms", {})
        samp.append(ratio_samples(s.get(num), s.get(den)))
    ax.bar(xs, vals, width, label=label)
    whiskers(ax, xs, iqr_bounds(samp))
    return missing


def _plain_log(plt: Any, ax: Axes) -> None:
    """A log y axis labelled 0.2, 0.5, 1, 2, 5, 10, ... (plain numbers, not 10^k)."""
    ticker = plt.matplotlib.ticker
    plain = ticker.FuncFormatter(lambda v, _: f"{v:g}")
    ax.set_yscale("log")
    ax.yaxis.set_minor_locator(ticker.LogLocator(subs=(2.0, 5.0)))
    ax.yaxis.set_major_formatter(plain)
    ax.yaxis.set_minor_formatter(plain)


def _log_ratio_axis(plt: Any, ax: Axes) -> None:
    """A log ratio axis with the line at 1, from below the lowest bar."""
    _plain_log(plt, ax)
    ax.axhline(1, color="black", linewidth=0.8)
    from matplotlib.container import ErrorbarContainer

    lows = [b.get_height() for b in ax.patches]  # and the whiskers' lower ends
    for c in ax.containers:
        if isinstance(c, ErrorbarContainer):
            lows += [float(seg[:, 1].min()) for seg in c.lines[2][0].get_segments()]
    lo = min([v for v in lows if np.isfinite(v) and v > 0] + [1.0])
    ax.set_ylim(bottom=min(0.9, lo * 0.7))


def idioms(data: dict) -> Figure | None:
    """Speedup of the found program (CBLAS calls) over naive C per kernel."""
    plt = cm.pyplot()
    if plt is None:
        return None
    rows = data["rows"]
    fig, ax = plt.subplots(figsize=(9, 4.2))
    xs = np.arange(len(rows))
    _ratio_bars(ax, xs, rows, "naive", "found", 0.6, "naive C time / found time")
    for x, r in zip(xs, rows, strict=True):
        if r.get("not_lowered"):
            ax.text(x, 1.05, "n/a:\nnot\nlowered", ha="center", va="bottom", fontsize=7,
                    gid=NA_GID)
    _log_ratio_axis(plt, ax)
    ax.set_xlim(-0.6, len(rows) - 0.4)
    ax.set_xticks(xs, [r["name"] for r in rows], rotation=25, ha="right", fontsize=8)
    ax.set_xlabel("kernel (examples/search/liar_blas.v)")
    ax.set_ylabel("speedup over naive C (x, time ratio)")
    ax.set_title("verisched search: found programs (CBLAS) vs naive C", fontsize=10)
    has = any(r.get("samples_ms") for r in rows)
    lines = [(SPREAD.replace("median", "ratio of medians") + " (per-round ratios, "
              f"{data.get('repeat', '?')} interleaved runs)") if has else NO_SPREAD]
    lines += [f"n/a {r['name']}: not lowered: {r['not_lowered']}"[:160]
              for r in rows if r.get("not_lowered")]
    note(fig, lines)
    fig.tight_layout(rect=(0, foot(len(lines)), 1, 1))
    return fig


def polybench(data: dict) -> Figure | None:
    """naive / derived and OpenBLAS / derived per kernel; kernels with no BLAS peer are
    marked on the chart."""
    plt = cm.pyplot()
    if plt is None:
        return None
    rows = data["rows"]
    fig, ax = plt.subplots(figsize=(9.5, 4.4))
    xs = np.arange(len(rows))
    _ratio_bars(ax, xs - 0.2, rows, "naive", "ours", 0.4, "naive / derived")
    no_peer = _ratio_bars(ax, xs + 0.2, rows, "numpy", "ours", 0.4, "OpenBLAS / derived")
    for x, r in zip(xs, rows, strict=True):
        if r["name"] in no_peer:
            ax.text(x + 0.2, 1.03, "no BLAS\npeer", ha="center", va="bottom", fontsize=7,
                    gid=NA_GID)
    _log_ratio_axis(plt, ax)
    ax.set_xlim(-0.6, len(rows) - 0.4)
    ax.set_xticks(xs, [r["name"] for r in rows], rotation=20, fontsize=8)
    ax.set_xlabel("PolyBench kernel")
    ax.set_ylabel("time ratio (x); above 1: derived faster")
    ax.set_title(", ".join(x for x in (f"PolyBench {data.get('dataset', '')}".strip(),
                                       "float64", data.get("cpu")) if x), fontsize=9)
    ax.legend(fontsize=8, ncol=2, loc="lower center", bbox_to_anchor=(0.5, 1.07), frameon=False)
    has = any(r.get("samples_ms") for r in rows)
    lines = [(SPREAD.replace("median", "ratio of medians") + " (per-round ratios, "
              f"{data.get('repeat', '?')} interleaved runs)") if has else NO_SPREAD]
    if no_peer:
        lines.append("no OpenBLAS peer (no BLAS call computes the kernel): "
                     + ", ".join(no_peer))
    note(fig, lines)
    fig.tight_layout(rect=(0, foot(len(lines)), 1, 1))
    return fig


def reduce(data: dict) -> Figure | None:
    """OpenBLAS / ours per problem, at 1 thread and at the multi-threaded count."""
    plt = cm.pyplot()
    if plt is None:
        return None
    rows, T = data["rows"], data.get("threads", 2)
    fig, ax = plt.subplots(figsize=(8, 4.2))
    xs = np.arange(len(rows))
    _ratio_bars(ax, xs - 0.2, rows, "openblas 1t", "ours 1t", 0.4, "1 thread")
    _ratio_bars(ax, xs + 0.2, rows, f"openblas {T}t", f"ours {T}t", 0.4, f"{T} threads")
    ax.axhline(1.0, color="black", linewidth=0.8)
    _log_ratio_axis(plt, ax)
    ax.set_xlim(-0.6, len(rows) - 0.4)
    ax.set_xticks(xs, [r["name"] for r in rows], fontsize=8)
    ax.set_xlabel("problem (dot: length; gemv: rows x columns)")
    ax.set_ylabel("OpenBLAS time / ours (x); above 1: ours faster")
    ax.set_title(", ".join(x for x in ("rfactor idioms vs OpenBLAS, float32", data.get("isa"),
                                       data.get("cpu")) if x), fontsize=9)
    ax.legend(fontsize=8, ncol=2, loc="lower center", bbox_to_anchor=(0.5, 1.07), frameon=False)
    lines = [SPREAD.replace("median", "ratio of medians") + " (per-round ratios, "
             f"{data.get('repeat', '?')} interleaved runs)"]
    note(fig, lines)
    fig.tight_layout(rect=(0, foot(len(lines)), 1, 1))
    return fig


# ---------------------------------------------------------------------------
# bench tune


TUNE_PEERS = (("hand", "--", "grey", "hand schedule"), ("peer", ":", "black", "peer"),
              ("untuned", "-.", "tab:brown", "untuned"))
TUNE_COLS = 3


def tune(rows: list[dict]) -> Figure | None:
    """Best-so-far time over the search per problem; the final timings as lines with an
    IQR band; a missing contender is named on the chart."""
    plt = cm.pyplot()
    if plt is None:
        return None
    # At most TUNE_COLS panels a row (six side by side made a 3630-pixel-wide chart).
    ncols = min(TUNE_COLS, len(rows))
    nrows = -(-len(rows) // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(5.5 * ncols, 4.6 * nrows), squeeze=False)
    for ax in axes.flat[len(rows):]:
        ax.set_visible(False)
    lines: list[str] = []
    has = any(r.get("samples_ms") for r in rows)
    for ax, r in zip(axes.flat[:len(rows)], rows, strict=True):
        xs, ys, best = [], [], None
        for t, v in sorted(r["best_over_time"]):
            best = v if best is None else min(best, v)
            xs.append(t)
            ys.append(best * 1e3)
        ax.step(xs, ys, where="post", color="tab:blue", label="tuned, best so far (search)")
        samples = r.get("samples_ms") or {}
        for k, style, color, label in (("tuned", "-", "tab:blue", "tuned"), *TUNE_PEERS):
            if k == "peer":   # results saved before blur and conv named OpenBLAS "numpy"
                k = "peer" if "peer" in r["ms"] else "numpy"
                label = r.get("peer", "OpenBLAS")
            ms = r["ms"].get(k)
            if not ms:
                lines.append(f"{r['problem']}: no {label} timing"
                             + (" (no proved candidate)" if k in ("tuned", "untuned") else ""))
                continue
            ax.axhline(ms, ls=style, color=color, lw=1, label=f"{label} (final median)")
            q = quartiles(samples.get(k))
            if q is not None:
                ax.axhspan(q[0], q[2], color=color, alpha=0.15, linewidth=0)
        _plain_log(plt, ax)
        ax.set_xlabel("tuning time (s)")
        ax.set_ylabel("time per call (ms)")
        on = f" on {r['target']}" if r.get("target") else ""
        ax.set_title(f"{r['problem']}{on} {r['sizes']}", fontsize=10)
        ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.24), ncol=2,
                  frameon=False)
    lines.insert(0, "lines: final median; bands: 25th-75th percentile of the final runs"
                 if has else NO_SPREAD)
    note(fig, lines)
    fig.tight_layout(rect=(0, foot(len(lines), fig.get_figheight()), 1, 1))
    return fig


# ---------------------------------------------------------------------------
# Redrawing from a saved result


# ---------------------------------------------------------------------------
# bench proofs


def proofs(data: dict, top: int = 25) -> Figure | None:
    """The costliest files' least user and system time, stacked (the baseline's
    beside), with the fixed cost every coqc pays (the probe's) as a line and each
    build's CPU time against the goal below."""
    plt = cm.pyplot()
    if plt is None:
        return None
    per_file: dict[str, dict[str, list[float]]] = data["least_per_file"]
    ours = per_file["ours"]
    base = per_file.get("baseline")
    names = sorted(ours, key=lambda f: -sum(ours[f]))[:top][::-1]
    height = 0.32 * len(names) + 2.4
    fig, ax = plt.subplots(figsize=(9, height))
    h = 0.4 if base else 0.8
    off = h / 2 if base else 0.0
    ys = np.arange(len(names))
    u = [ours[n][0] for n in names]
    ax.barh(ys + off, u, h, label="user", color="#4C72B0")
    ax.barh(ys + off, [ours[n][1] for n in names], h, left=u, label="system", color="#DD8452")
    if base:
        bu = [base.get(n, (0.0, 0.0))[0] for n in names]
        ax.barh(ys - off, bu, h, label=f"user at {data['baseline']}", color="#A6BDDB")
        ax.barh(ys - off, [base.get(n, (0.0, 0.0))[1] for n in names], h, left=bu,
                label=f"system at {data['baseline']}", color="#FDD0A2")
    fixed = data["probe"]["user"] + data["probe"]["sys"]
    ax.axvline(fixed, color="0.3", linestyle="--", linewidth=1,
               label=f"a coqc's fixed cost ({fixed:.2f} s)")
    ax.set_yticks(ys, [n.removeprefix("coq/") for n in names], fontsize=8)
    ax.set_xlabel("CPU seconds per file (user + system, the least over the builds)")
    ax.set_ylabel("Coq file (coq/...)")
    ax.set_title(f"make proofs from clean: the {len(names)} costliest files", fontsize=10)
    ax.legend(fontsize=7, ncol=3, loc="lower center", bbox_to_anchor=(0.5, 1.04),
              frameon=False)
    lines = []
    for label, bs in data["builds"].items():
        cpus = ", ".join(f"{b['cpu']:.1f}" for b in bs)
        lines.append(f"{label}: builds of {cpus} s of CPU (goal {data['goal_s']:.0f} s)")
    note(fig, lines)
    fig.tight_layout(rect=(0, foot(len(lines), height), 1, 1))
    return fig


def _conv_flops(data: dict) -> float:
    if "flops" in data:
        return float(data["flops"])
    import bench_conv as bc  # an older result: the layer is the bench's fixed one

    return 2.0 * bc.BATCH * bc.CO * bc.CI * bc.KH * bc.KW * bc.HO * bc.WO


def md_rows(text: str) -> list[dict[str, str]]:
    """The first markdown table of a result, as one dict per row (header -> cell)."""
    lines = [ln.strip() for ln in text.splitlines() if ln.startswith("| ")]
    header = [c.strip() for c in lines[0].strip("|").split("|")]
    out = []
    for ln in lines[1:]:
        cells = [c.strip() for c in ln.strip("|").split("|")]
        if len(cells) == len(header) and not all(set(c) <= {"-", ":"} for c in cells):
            out.append(dict(zip(header, cells, strict=True)))
    return out


def _ms(cell: str) -> float | None:
    try:
        return float(cell)
    except ValueError:
        return None


def polybench_from_md(text: str) -> dict:
    """polybench.md's table as bench_polybench's JSON result (medians only)."""
    rows = []
    for r in md_rows(text):
        med = {k: _ms(r[c]) for k, c in (("naive", "naive ms"), ("ours", "derived ms"),
                                         ("numpy", "OpenBLAS ms"))}
        rows.append({"name": r["kernel"], "median_ms": {k: v for k, v in med.items() if v}})
    dataset = next((w.strip("`") for w in text.split() if w.strip("`") in
                    ("MINI", "SMALL", "MEDIUM", "LARGE", "EXTRALARGE")), "")
    return {"dataset": dataset, "rows": rows}


def idioms_from_md(text: str) -> dict:
    """idioms_bench.md's table as bench_idioms's JSON result (medians only)."""
    rows = []
    for r in md_rows(text):
        last = r["outputs = interpreter"]
        row: dict = {"name": r["kernel"]}
        if last.startswith("not lowered: "):
            row["not_lowered"] = last.removeprefix("not lowered: ")
        else:
            row["median_ms"] = {"naive": _ms(r["naive C ms"]), "found": _ms(r["found ms"])}
        rows.append(row)
    return {"rows": rows}


def figure_for(stem: str, results_dir: Path = cm.RESULTS_DIR) -> Figure | None:
    """The chart of results/STEM from its saved result alone (no timing); from the
    markdown table for a result saved before the bench wrote JSON."""
    from_md = {"gemmini": gemmini_from_md, "polybench": polybench_from_md,
               "idioms_bench": idioms_from_md}
    if stem in from_md and not (results_dir / f"{stem}.json").exists():
        return {"gemmini": gemmini, "polybench": polybench, "idioms_bench": idioms}[stem](
            from_md[stem]((results_dir / f"{stem}.md").read_text()))
    data = json.loads((results_dir / f"{stem}.json").read_text())
    draw: dict[str, Callable] = {"blur": blur, "sgemm": sgemm, "gemmini": gemmini,
                                 "idioms_bench": idioms, "polybench": polybench,
                                 "tune": tune, "conv": lambda d: conv(d, _conv_flops(d)),
                                 "proofs": proofs, "reduce": reduce}
    return draw[stem](data)


def save_png(fig: Figure, path: Path) -> Path:
    """Write the figure alone (write_outputs writes it with its markdown)."""
    return cm.save_figure(fig, path)


def main(argv: list[str] | None = None) -> int:
    import argparse

    ap = argparse.ArgumentParser(description="Redraw benchmark charts from saved results.")
    ap.add_argument("stems", nargs="+", help="blur conv sgemm gemmini idioms_bench "
                                             "polybench tune proofs reduce")
    ap.add_argument("--results-dir", default=str(cm.RESULTS_DIR))
    args = ap.parse_args(argv)
    d = Path(args.results_dir)
    missing = [s for s in args.stems
               if not (d / f"{s}.json").exists() and not (d / f"{s}.md").exists()]
    if missing:
        print(f"_plots: no saved result for {', '.join(missing)} in {d} (run `verisched bench "
              f"{missing[0]} --out-dir {d}` first)", file=sys.stderr)
        return 2
    for stem in args.stems:
        fig = figure_for(stem, d)
        if fig is None:
            print("matplotlib missing: no chart", file=sys.stderr)
            return 1
        print(f"wrote {save_png(fig, d / f'{stem}.png')}")
        cm.close_figure(fig)
    return 0


if __name__ == "__main__":
    sys.exit(main())
