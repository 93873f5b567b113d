"""The report's plots as PNG (matplotlib, imported only when a report is written)."""

from __future__ import annotations

import base64
import io
import math
from typing import Any

import numpy as np

from harness.report.model import Analysis, View

MAX_DISTRIBUTIONS = 24  # sample-distribution plots for the rows with the largest changes


def plots(view: View, analysis: Analysis) -> list[tuple[str, str]]:
    """(caption, base64 PNG) of each plot: the speedup heatmap, then the largest changes' distributions."""
    timing = analysis.timing
    if timing.empty or timing["ratio"].notna().sum() == 0:
        return []
    import matplotlib

    matplotlib.use("Agg")
    letters = view.letters
    return [_heatmap(view, timing, letters), *_distributions(view, analysis, letters)]


def _png(figure: Any) -> str:
    import matplotlib.pyplot as plt

    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=90, bbox_inches="tight")
    plt.close(figure)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def _heatmap(view: View, timing: Any, letters: dict[str, str]) -> tuple[str, str]:
    import matplotlib.pyplot as plt
    from matplotlib.colors import TwoSlopeNorm

    rated = timing[timing["ratio"].notna()].copy()
    rated["row"] = rated["workload"] + " " + rated["dtype"] + " " + rated["knobs"].str.replace("cudnn_", "")
    table = rated.pivot_table(index="row", columns="group", values="ratio", aggfunc="first", sort=False)
    table = table[[g for g in view.groups if g in table.columns]]
    speedup = np.log2(1 / table.to_numpy(dtype=float))
    limit = max(0.1, float(np.nanmax(np.abs(speedup))) if speedup.size else 0.1)
    figure, axes = plt.subplots(figsize=(2.2 + 1.1 * len(table.columns), 1.2 + 0.22 * len(table)))
    image = axes.imshow(speedup, cmap="RdYlGn", norm=TwoSlopeNorm(0, -limit, limit), aspect="auto")
    axes.set_xticks(range(len(table.columns)), [f"{letters.get(g, g)}" for g in table.columns])
    axes.set_yticks(range(len(table)), list(table.index), fontsize=7)
    for (i, j), value in np.ndenumerate(table.to_numpy(dtype=float)):
        if math.isfinite(value):
            axes.text(j, i, f"{1 / value:.2f}", ha="center", va="center", fontsize=6)
    figure.colorbar(image, ax=axes, label="log2 speedup vs baseline")
    axes.set_title("speedup vs baseline (baseline time / candidate time)", fontsize=9)
    return "speedup heatmap: groups x workloads", _png(figure)


def _distributions(view: View, analysis: Analysis, letters: dict[str, str]) -> list[tuple[str, str]]:
    import matplotlib.pyplot as plt

    timing = analysis.timing[analysis.timing["ratio"].notna()].copy()
    timing["change"] = np.abs(np.log(timing["ratio"].astype(float)))
    keys = list(
        dict.fromkeys(
            (r.workload, r.dtype, r.knobs) for r in timing.sort_values("change", ascending=False).itertuples()
        )
    )[:MAX_DISTRIBUTIONS]
    frame = analysis.frame
    out = []
    for key in keys:
        data, names = [], []
        for group in view.groups:
            files = frame[
                (frame["group"] == group)
                & (frame["status"] == "ok")
                & (frame["workload"] == key[0])
                & (frame["dtype"] == key[1])
                & (frame["knobs"] == key[2])
            ]["file"]
            pooled = [x * 1e6 for f in files for x in analysis.samples.get((f, *key), [])]
            if pooled:
                data.append(pooled)
                names.append(f"{letters.get(group, group)} ({len(files)} rounds)")
        if not data:
            continue
        figure, axes = plt.subplots(figsize=(3.6, 2.4))
        axes.boxplot(data, orientation="horizontal", showfliers=False, whis=(5, 95))
        axes.set_yticks(range(1, len(names) + 1), names, fontsize=7)
        axes.set_xlabel("µs per call (whiskers 5-95%)", fontsize=7)
        axes.tick_params(axis="x", labelsize=7)
        axes.set_title(f"{key[0]} {key[1]}", fontsize=8)
        out.append((f"samples: {key[0]} {key[1]} {key[2]}", _png(figure)))
    return out
