"""The report's plots as PNG (matplotlib, imported only when a report is written)."""

from __future__ import annotations

import base64
import io
import math
import re
from typing import Any

import numpy as np
import pandas as pd

from harness.report.model import Analysis, View

MAX_DISTRIBUTIONS = 24  # round-median plots for the rows with the largest changes
DPI = 150  # readable text when the page scales the image down
CLIP = 1.25  # the heatmap's colors saturate at x1.25 either way: a 5 % change is a fifth of the scale
CMAP = "PuOr_r"  # ColorBrewer's purple-orange: diverging and readable with red-green color blindness
MAX_SERIES = 12  # charts across releases: the workloads with the largest changes
MARKS = {"slower": "▼", "faster": "▲", "inconclusive": "?", "failed": "✗", "missing": "–"}
_CONTROL = re.compile(r"[\x00-\x1f\x7f\ud800-\udfff]")


def plots(view: View, analysis: Analysis) -> list[tuple[str, str]]:
    """(caption, base64 PNG) of each plot: the time-ratio heatmap, then the largest changes' round medians."""
    timing = analysis.timing
    if timing.empty or timing["ratio"].notna().sum() == 0:
        return []
    import matplotlib

    matplotlib.use("Agg")
    letters = view.letters
    return [*_series(analysis), _heatmap(view, timing, letters), *_distributions(view, analysis, letters)]


def _series(analysis: Analysis) -> list[tuple[str, str]]:
    """Along the release axis: per workload family, each row's time ratio to the baseline against the
    release, the releases in order; ▼ / ▲ where a change began."""
    series = analysis.series
    if series is None or series.ratios.empty:
        return []
    import matplotlib.pyplot as plt

    labels = series.labels
    began = {(c.workload, c.dtype, c.knobs, c.after): c.verdict for c in series.changes}
    out = []
    ratios = series.ratios
    change = np.log(ratios[list(labels)].apply(pd.to_numeric, errors="coerce")).abs().max(axis=1)
    # each workload's largest change from the baseline orders the charts and picks those drawn
    largest = change.groupby(ratios["workload"]).max().sort_values(ascending=False, na_position="last")
    kept = set(largest.index[:MAX_SERIES])  # a hostile folder of 10,000 workloads draws 12 charts, not 10,000
    for workload, rows in ratios[ratios["workload"].isin(kept)].groupby("workload", sort=False):
        figure, axes = plt.subplots(figsize=(max(4.0, 0.42 * len(labels) + 1.5), 2.6))
        axes.axhline(1.0, color="#555555", linewidth=1)
        for row in rows.to_dict("records"):
            values = [float(row[label]) if row[label] is not None else math.nan for label in labels]
            name = _text(f"{row['dtype']}" + (f" {row['knobs']}" if rows["knobs"].nunique() > 1 else ""))
            (line,) = axes.plot(range(len(labels)), values, "o-", markersize=3, linewidth=1.2, label=name)
            for i, label in enumerate(labels):
                key = (str(workload), str(row["dtype"]), str(row["knobs"]), label)
                mark = MARKS.get(began.get(key, ""), "")
                if mark and not math.isnan(values[i]):
                    axes.annotate(
                        mark,
                        (i, values[i]),
                        textcoords="offset points",
                        xytext=(0, 5),
                        ha="center",
                        fontsize=8,
                        color=line.get_color(),
                    )
        axes.set_xticks(range(len(labels)), [_text(x) for x in labels], rotation=45, ha="right", fontsize=7)
        axes.tick_params(axis="y", labelsize=7)
        axes.set_ylabel(_text(f"time / {series.baseline_label}"), fontsize=7)
        axes.set_title(_text(f"{workload} across releases"), fontsize=9)
        axes.legend(fontsize=7, frameon=False)
        out.append((f"across releases: {workload}", _png(figure)))
    return out


def _text(text: object) -> str:
    """Text from results as matplotlib shows it: a "$" is a dollar (two would start a formula, whose
    parse error fails the whole plot), a control character or lone surrogate U+FFFD."""
    return _CONTROL.sub("\ufffd", str(text)).replace("$", r"\$")


def _png(figure: Any) -> str:
    import matplotlib.pyplot as plt

    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=DPI, bbox_inches="tight")
    plt.close(figure)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def _heatmap(view: View, timing: Any, letters: dict[str, str]) -> tuple[str, str]:
    """Time ratios (candidate / baseline, as the tables write them), each cell marked with its verdict.
    The colors clip at CLIP either way, so a 5 % change stays visible beside a 7x one; numbers are exact."""
    import matplotlib.pyplot as plt
    from matplotlib.colors import TwoSlopeNorm

    rated = timing[timing["ratio"].notna()].copy()
    knobs = "" if rated["knobs"].nunique() == 1 else " " + rated["knobs"]  # one knob set: not on every row
    rated["row"] = rated["workload"] + " " + rated["dtype"] + knobs
    ratios = rated.pivot_table(index="row", columns="group", values="ratio", aggfunc="first", sort=False)
    marks = rated.pivot_table(index="row", columns="group", values="verdict", aggfunc="first", sort=False)
    groups = [g for g in view.groups if g in ratios.columns]
    ratios, marks = ratios[groups], marks.reindex(index=ratios.index, columns=groups)
    values = ratios.to_numpy(dtype=float)
    limit = math.log2(CLIP)
    shade = np.clip(np.log2(values), -limit, limit)
    figure, axes = plt.subplots(figsize=(2.6 + 1.2 * len(groups), 1.4 + 0.26 * len(ratios)))
    image = axes.imshow(shade, cmap=CMAP, norm=TwoSlopeNorm(0, -limit, limit), aspect="auto")
    axes.set_xticks(range(len(groups)), [_text(letters.get(g, g)) for g in groups], fontsize=9)
    axes.set_yticks(range(len(ratios)), [_text(r) for r in ratios.index], fontsize=8)
    for (i, j), value in np.ndenumerate(values):
        if math.isfinite(value):
            mark = MARKS.get(str(marks.iat[i, j]), "")
            dark = abs(shade[i, j]) > 0.6 * limit  # white on the saturated ends, black elsewhere
            axes.text(
                j,
                i,
                f"{value:.2f}{mark}",
                ha="center",
                va="center",
                fontsize=8,
                color="white" if dark else "black",
            )
    bar = figure.colorbar(image, ax=axes, ticks=[-limit, 0, limit])
    bar.ax.set_yticklabels(
        [f"÷{CLIP:g} or less (faster)", "same time", f"×{CLIP:g} or more (slower)"], fontsize=8
    )
    axes.set_title("time ratio, candidate / baseline (▼ slower, ▲ faster, ? inconclusive)", fontsize=9)
    return "time ratio heatmap: workloads x groups, colors clipped at ×1.25", _png(figure)


def _distributions(view: View, analysis: Analysis, letters: dict[str, str]) -> list[tuple[str, str]]:
    """Each group's per-round medians (what the test compares) on a log axis, with the baseline's median
    and the threshold band around it: for the rows with the largest changes."""
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter, LogLocator

    timing = analysis.timing[analysis.timing["ratio"].notna()].copy()
    timing["change"] = np.abs(np.log(timing["ratio"].astype(float)))
    keys = list(
        dict.fromkeys(
            (r.workload, r.dtype, r.knobs) for r in timing.sort_values("change", ascending=False).itertuples()
        )
    )[:MAX_DISTRIBUTIONS]
    frame = analysis.frame
    ok = frame[frame["status"] == "ok"] if "status" in frame else frame
    out = []
    for key in keys:
        rows = ok[(ok["workload"] == key[0]) & (ok["dtype"] == key[1]) & (ok["knobs"] == key[2])]
        medians = {g: [m * 1e6 for m in rows[rows["group"] == g]["median_s"]] for g in view.groups}
        medians = {g: m for g, m in medians.items() if m}
        if view.baseline not in medians or len(medians) < 2:
            continue
        base = float(np.median(medians[view.baseline]))
        band = 1 + view.threshold_pct(key[0]) / 100
        figure, axes = plt.subplots(figsize=(4.4, 0.9 + 0.38 * len(medians)))
        axes.axvspan(
            base / band, base * band, color="#dddddd", label=f"baseline ±{view.threshold_pct(key[0]):g}%"
        )
        axes.axvline(base, color="#555555", linewidth=1)
        for y, (group, values) in enumerate(medians.items()):
            axes.plot(
                values,
                [y] * len(values),
                "o",
                markersize=4,
                alpha=0.8,
                color="#5e3c99" if group == view.baseline else "#e66101",
            )
        axes.set_xscale("log")
        axes.xaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        axes.xaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
        axes.xaxis.set_minor_formatter(FuncFormatter(lambda value, _: ""))
        axes.set_yticks(
            range(len(medians)),
            [_text(f"{letters.get(g, g)} ({len(v)} rounds)") for g, v in medians.items()],
            fontsize=8,
        )
        axes.set_ylim(-0.6, len(medians) - 0.4)
        axes.set_xlabel("round median, µs per call (log scale)", fontsize=8)
        axes.tick_params(axis="x", labelsize=8)
        axes.set_title(_text(f"{key[0]} {key[1]}"), fontsize=9)
        out.append((f"round medians: {key[0]} {key[1]} {key[2]}", _png(figure)))
    return out
