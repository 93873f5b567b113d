"""The report's plots as PNG (matplotlib, imported only when a report is written).

Every figure is sized to its labels (an inch and more per heatmap column, a fixed height per row, release
labels turned 45 degrees) and the log axes get a few round ticks chosen to fit, so no two labels overlap.
"""

from __future__ import annotations

import base64
import io
import math
import re
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from harness.report.analysis.frames import with_mode
from harness.report.analysis.model import Analysis, View

MAX_DISTRIBUTIONS = 24  # round-median plots for the rows with the largest changes
MAX_HEATMAP_ROWS = (
    150  # rows with the largest changes; 150 rows make a 40-inch figure, 2000 one too tall to draw
)
DPI = 150  # readable text when the page scales the image down
CLIP = 1.25  # the heatmap's colors saturate at x1.25 either way: a 5 % change is a fifth of the scale
CMAP = "PuOr_r"  # ColorBrewer's purple-orange: diverging and readable with red-green color blindness
DECIDED = ("slower", "faster")  # the only verdicts the heatmap paints on the color scale
SAME = (1.0, 1.0, 1.0, 1.0)  # white: within the threshold, whatever the ratio's last digit
UNDECIDED = (0.85, 0.85, 0.85, 1.0)  # grey and hatched: inconclusive (or failed) is no color of a change
HATCH = "///"
COLUMN = 16  # characters per line of a heatmap column's label: fits the 1.35-inch column at 8 pt
MAX_SERIES = 12  # charts across releases: the workloads with the largest changes
MARKS = {"slower": "▼", "faster": "▲", "inconclusive": "?", "failed": "✗", "missing": "–"}
_CONTROL = re.compile(r"[\x00-\x1f\x7f\ud800-\udfff]")


@dataclass(frozen=True)
class Plot:
    kind: str  # "series", "heatmap" or "distribution": a section with that ``figure`` shows it
    caption: str
    png: str  # base64


def plots(view: View, analysis: Analysis) -> list[Plot]:
    """Each plot: the charts across releases, the time-ratio heatmap, the largest changes' round medians."""
    timing = analysis.timing
    if timing.empty or timing["ratio"].notna().sum() == 0:
        return []
    import matplotlib

    matplotlib.use("Agg")
    letters = view.letters
    # the heatmap paints only decided changes: with none (every row same, or undecided on a busy host) it
    # would be a screen of grey cells, so it is left out, and its section with it
    painted = timing["verdict"].isin(DECIDED).any()
    return [
        *(Plot("series", caption, png) for caption, png in _series(analysis)),
        *([Plot("heatmap", *_heatmap(view, timing, letters))] if painted else []),
        *(Plot("distribution", c, png) for c, png in _distributions(view, analysis, letters)),
    ]


def short_labels(labels: Sequence[str]) -> tuple[list[str], str]:
    """The groups' labels without the words all of them start with (returned second, to be said once):
    'installed / cuDNN wheel:9.12.0.46' and 'installed / cuDNN system:auto' are 'wheel:9.12.0.46' and
    'system:auto' under 'installed / cuDNN'."""
    words = [label.split(" ") for label in labels]
    n = 0  # the leading words all share, one word at least left to each
    while len(words) > 1 and all(len(w) > n + 1 and w[n] == words[0][n] for w in words):
        n += 1
    if not " ".join(words[0][:n]).strip():
        return list(labels), ""
    return [" ".join(w[n:]) for w in words], " ".join(words[0][:n])


def _wrapped(text: str, width: int = COLUMN, lines: int = 3) -> str:
    """``text`` in lines of at most ``width`` characters, at most ``lines`` of them (the last cut with …)."""
    out = textwrap.wrap(text, width, break_on_hyphens=False) or [""]
    if len(out) > lines:
        out = [*out[: lines - 1], out[lines - 1][: width - 1] + "…"]
    return "\n".join(out)


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
    ratios = with_mode(series.ratios)
    change = np.log(ratios[list(labels)].apply(pd.to_numeric, errors="coerce")).abs().max(axis=1)
    # each workload's largest change from the baseline orders the charts and picks those drawn
    largest = change.groupby(ratios["workload"]).max().sort_values(ascending=False, na_position="last")
    by_workload = dict(tuple(ratios.groupby("workload", sort=False)))
    for workload in largest.index[:MAX_SERIES]:  # a hostile folder of 10,000 workloads draws 12, not 10,000
        rows = by_workload[workload]
        # 0.42 inch a release: labels turned 45 degrees at 7 pt stay 0.3 inch apart, however many releases
        figure, axes = plt.subplots(figsize=(max(4.0, 0.42 * len(labels) + 1.5), 2.6))
        axes.axhline(1.0, color="#555555", linewidth=1)
        for row in rows.to_dict("records"):
            values = [float(row[label]) if row[label] is not None else math.nan for label in labels]
            name = _text(f"{row['mode']}" + (f" {row['knobs']}" if rows["knobs"].nunique() > 1 else ""))
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
        axes.set_xticks(
            range(len(labels)),
            [_text(x) for x in labels],
            rotation=45,
            ha="right",
            rotation_mode="anchor",
            fontsize=7,
        )
        axes.tick_params(axis="y", labelsize=7)
        axes.set_ylabel(_text(f"time / {series.baseline_label}"), fontsize=7)
        axes.set_title(_text(f"{workload} across releases"), fontsize=9)
        # beside the axes, not over the lines it names
        axes.legend(fontsize=7, frameon=False, loc="upper left", bbox_to_anchor=(1.01, 1.0))
        out.append((f"across releases: {workload}", _png(figure)))
    return out


def _text(text: object) -> str:
    """Text from results as matplotlib shows it: a "$" is a dollar (two would start a formula, whose
    parse error fails the whole plot), a control character or lone surrogate U+FFFD."""
    return _CONTROL.sub("\ufffd", str(text)).replace("$", r"\$")


def _lines(text: str) -> str:
    """``_text`` line by line: the line breaks a plot's own wrapping put in stay."""
    return "\n".join(_text(line) for line in text.split("\n"))


def _png(figure: Any) -> str:
    import matplotlib.pyplot as plt

    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=DPI, bbox_inches="tight")
    plt.close(figure)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


@dataclass(frozen=True)
class Heatmap:
    """What the heatmap draws: a row per workload and mode (and knobs), a column per candidate group."""

    rows: list[str]
    columns: list[str]  # each group's letter (as the tables name it) over its label, wrapped
    shared: str  # the words every group's label starts with: said once, over the columns
    ratios: Any  # rows x columns: candidate / baseline, NaN where a group has no such row
    verdicts: Any  # rows x columns: each cell's verdict
    colors: Any  # rows x columns x RGBA: the color scale for slower and faster cells only
    left_out: int  # rows beyond MAX_HEATMAP_ROWS, those with the smallest changes


def heatmap(view: View, timing: pd.DataFrame) -> Heatmap:
    rated = with_mode(timing[timing["ratio"].notna()]).copy()
    knobs = "" if rated["knobs"].nunique() == 1 else " " + rated["knobs"]  # one knob set: not on every row
    rated["row"] = rated["workload"] + " " + _modes(rated) + knobs
    ratios = rated.pivot_table(index="row", columns="group", values="ratio", aggfunc="first", sort=False)
    marks = rated.pivot_table(index="row", columns="group", values="verdict", aggfunc="first", sort=False)
    groups = [g for g in view.groups if g in ratios.columns]
    ratios, marks = ratios[groups].astype(float), marks.reindex(index=ratios.index, columns=groups)
    largest = np.abs(np.log(ratios)).max(axis=1).sort_values(ascending=False, na_position="last")
    kept = ratios.index.isin(largest.index[:MAX_HEATMAP_ROWS])  # in the tables' order
    ratios, marks = ratios[kept], marks[kept]
    short, shared = short_labels([view.labels.get(g, g) for g in groups])
    letters = view.letters
    values, verdicts = ratios.to_numpy(dtype=float), marks.to_numpy(dtype=object)
    return Heatmap(
        rows=[str(r) for r in ratios.index],
        columns=[f"{letters.get(g, g)}\n{_wrapped(s)}" for g, s in zip(groups, short, strict=True)],
        shared=shared,
        ratios=values,
        verdicts=verdicts,
        colors=colors(values, verdicts),
        left_out=len(kept) - int(kept.sum()),
    )


def _modes(rated: pd.DataFrame) -> pd.Series[str]:
    """Each row's mode by name; where two dtypes of one workload and knob set share a name (``tf32``, and
    ``fp32`` with the tf32 knob), its id beside it, so no two rows are drawn as one."""
    ids = rated.groupby(["workload", "mode", "knobs"], sort=False)["dtype"].transform("nunique")
    named: pd.Series[str] = rated["mode"].where(ids == 1, rated["mode"] + " [" + rated["dtype"] + "]")
    return named


def colors(ratios: Any, verdicts: Any) -> Any:
    """Each cell's RGBA: a slower or faster cell its ratio's color on the scale (clipped at CLIP either way),
    a same cell white, any other (inconclusive, failed) grey, whatever its ratio: a ratio of 1.3 that the
    test could not tell from noise must not look like a regression."""
    from matplotlib import colormaps
    from matplotlib.colors import TwoSlopeNorm

    limit = math.log2(CLIP)
    with np.errstate(divide="ignore", invalid="ignore"):
        shade = np.clip(np.log2(ratios), -limit, limit)
    words = np.asarray(verdicts).astype(str)
    out = np.empty((*np.shape(ratios), 4))
    out[...] = UNDECIDED
    decided = np.isin(words, DECIDED) & np.isfinite(shade)
    out[decided] = colormaps[CMAP](TwoSlopeNorm(0, -limit, limit)(shade[decided]))
    out[(words == "same") | ~np.isfinite(ratios)] = SAME  # no ratio: an empty cell
    return out


def _heatmap(view: View, timing: Any, letters: dict[str, str]) -> tuple[str, str]:
    """Time ratios (candidate / baseline, as the tables write them), each cell marked with its verdict and
    colored only where the verdict is slower or faster. The colors clip at CLIP either way, so a 5 % change
    stays visible beside a 7x one; numbers are exact. ``letters`` name the groups as the tables do."""
    import matplotlib.pyplot as plt
    from matplotlib.cm import ScalarMappable
    from matplotlib.colors import TwoSlopeNorm
    from matplotlib.patches import Patch, Rectangle

    grid = heatmap(view, timing)
    count, width = np.shape(grid.ratios)
    lines = max(c.count("\n") + 1 for c in grid.columns)
    # 1.35 inch a column holds COLUMN characters at 8 pt; 0.26 inch a row, 1.5 lines of 8 pt
    height = 1.8 + 0.14 * lines + 0.26 * count
    figure, axes = plt.subplots(figsize=(2.0 + 1.35 * width, height))
    axes.imshow(grid.colors, aspect="auto", interpolation="nearest")
    axes.xaxis.tick_top()  # column labels over the columns, as a table's header; the legend goes below
    axes.set_xticks(range(width), [_lines(c) for c in grid.columns], fontsize=8)
    if grid.shared:
        axes.xaxis.set_label_position("top")
        axes.set_xlabel(_text(f"{grid.shared} …"), fontsize=8)
    axes.set_yticks(range(count), [_text(r) for r in grid.rows], fontsize=8)
    axes.tick_params(length=0)
    limit = math.log2(CLIP)
    for (i, j), value in np.ndenumerate(grid.ratios):
        if not math.isfinite(value):
            continue
        verdict = str(grid.verdicts[i, j])
        if verdict not in DECIDED and verdict != "same":
            axes.add_patch(
                Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, hatch=HATCH, edgecolor="#b0b0b0", linewidth=0)
            )
        dark = verdict in DECIDED and abs(math.log2(value)) > 0.6 * limit  # white on the saturated ends
        axes.text(
            j,
            i,
            f"{value:.2f}{MARKS.get(verdict, '')}",
            ha="center",
            va="center",
            fontsize=8,
            color="white" if dark else "black",
        )
    scale = ScalarMappable(TwoSlopeNorm(0, -limit, limit), CMAP)
    bar = figure.colorbar(
        scale, ax=axes, ticks=[-limit, 0, limit], shrink=min(1.0, 3.5 / height), anchor=(0, 1)
    )
    bar.ax.set_yticklabels(
        [f"÷{CLIP:g} or less (faster)", "same time", f"×{CLIP:g} or more (slower)"], fontsize=8
    )
    bar.set_label("colored: ▼ slower and ▲ faster cells only", fontsize=8)
    axes.legend(
        handles=[
            Patch(facecolor=SAME, edgecolor="#999999", label="= same: white"),
            Patch(
                facecolor=UNDECIDED,
                edgecolor="#b0b0b0",
                hatch=HATCH,
                label="? inconclusive: grey, whatever its ratio (not a change)",
            ),
        ],
        loc="upper center",
        bbox_to_anchor=(0.5, 0.0),
        ncol=2,
        fontsize=8,
        frameon=False,
    )
    axes.set_title("time ratio, candidate / baseline (▼ slower, ▲ faster, ? inconclusive)", fontsize=9)
    more = f"; the {count} rows with the largest changes of {count + grid.left_out}" if grid.left_out else ""
    caption = (
        "time ratio heatmap: workloads x groups, only slower / faster cells colored (clipped at "
        f"×{CLIP:g}), inconclusive grey{more}"
    )
    return caption, _png(figure)


def log_ticks(low: float, high: float, most: int = 5) -> list[float]:
    """Round numbers from ``low`` to ``high`` for a log axis, spaced so their labels never meet: the
    coarsest of 1, 1-2-5, 1-2-3-5-7 and 1-1.5-2-3-4-5-6-8 per decade that gives three, every n-th of them
    where that is more than ``most``; an axis narrower than all of those gets evenly spaced round numbers."""
    if not (0 < low < high < math.inf):
        return []
    decades = range(math.floor(math.log10(low)), math.ceil(math.log10(high)) + 1)
    for subs in ((1,), (1, 2, 5), (1, 2, 3, 5, 7), (1, 1.5, 2, 3, 4, 5, 6, 8)):
        ticks = [t for k in decades for m in subs if low <= (t := float(f"{m}e{k}")) <= high]
        if len(ticks) >= 3:
            break
    else:
        from matplotlib.ticker import MaxNLocator

        ticks = [
            float(t)
            for t in MaxNLocator(4, steps=[1, 2, 2.5, 5, 10]).tick_values(low, high)
            if low <= t <= high
        ]
    return ticks[:: math.ceil(len(ticks) / most)] if ticks else []


def _tick(value: float, _: object = None) -> str:
    return f"{value:.0f}" if value >= 1e6 else f"{value:.6g}"


def _distributions(view: View, analysis: Analysis, letters: dict[str, str]) -> list[tuple[str, str]]:
    """Each group's per-round medians (what the test compares) on a log axis, with the baseline's median
    and the threshold band around it: for the rows with the largest changes."""
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter

    timing = with_mode(analysis.timing[analysis.timing["ratio"].notna()]).copy()
    timing["change"] = np.abs(np.log(timing["ratio"].astype(float)))
    keys = list(
        dict.fromkeys(
            (r.workload, r.dtype, r.knobs, r.mode)
            for r in timing.sort_values("change", ascending=False).itertuples()
        )
    )[:MAX_DISTRIBUTIONS]
    frame = analysis.frame
    ok = frame[frame["status"] == "ok"] if "status" in frame else frame
    short, _ = short_labels([view.labels.get(g, g) for g in view.groups])
    names = dict(zip(view.groups, short, strict=True))
    out = []
    for key in keys:
        rows = ok[(ok["workload"] == key[0]) & (ok["dtype"] == key[1]) & (ok["knobs"] == key[2])]
        medians = {g: [m * 1e6 for m in rows[rows["group"] == g]["median_s"]] for g in view.groups}
        medians = {g: m for g, m in medians.items() if m}
        if view.baseline not in medians or len(medians) < 2:
            continue
        base = float(np.median(medians[view.baseline]))
        pct = view.threshold_pct(key[0])
        band = 1 + pct / 100
        figure, axes = plt.subplots(figsize=(4.4, 0.9 + 0.38 * len(medians)))
        axes.axvspan(base / band, base * band, color="#dddddd", label=f"threshold: baseline median ±{pct:g}%")
        axes.axvline(base, color="#555555", linewidth=1, label="baseline median")
        named: set[str] = set()
        for y, (group, values) in enumerate(medians.items()):
            role = "baseline rounds" if group == view.baseline else "candidate rounds"
            axes.plot(
                values,
                [y] * len(values),
                "o",
                markersize=4,
                alpha=0.8,
                color="#5e3c99" if group == view.baseline else "#e66101",
                label="_" if role in named else role,  # one legend entry for each color
            )
            named.add(role)
        axes.set_xscale("log")
        low, high = axes.get_xlim()
        axes.xaxis.set_major_locator(FixedLocator(log_ticks(low, high)))
        axes.xaxis.set_major_formatter(FuncFormatter(_tick))
        axes.xaxis.set_minor_formatter(NullFormatter())
        axes.set_xlim(low, high)
        axes.set_yticks(
            range(len(medians)),
            [
                _text(f"{letters.get(g, g)}: {_cut(names[g])} ({len(v)} round{'s' * (len(v) != 1)})")
                for g, v in medians.items()
            ],
            fontsize=8,
        )
        axes.set_ylim(-0.6, len(medians) - 0.4)
        axes.set_xlabel("round median, µs per call (log scale)", fontsize=8)
        axes.tick_params(axis="x", labelsize=8)
        axes.set_title(_text(f"{key[0]} {key[3]}"), fontsize=9)
        axes.legend(fontsize=7, frameon=False, loc="upper left", bbox_to_anchor=(1.01, 1.0))
        out.append((f"round medians: {key[0]} {key[3]} {key[2]}", _png(figure)))
    return out


def _cut(text: str, most: int = 24) -> str:
    return text if len(text) <= most else text[: most - 1] + "…"
