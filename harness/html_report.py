"""One self-contained HTML page: the report's sections as sortable tables, plots embedded as PNG.

No network, no external script or stylesheet: the page opens from a mail attachment or an artifact
store as it is. A click on a column header sorts by it (numbers by value, via ``data-sort``).
"""

from __future__ import annotations

import base64
import html
import io
import math
import re
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from harness.report import Analysis, Section, View

MAX_DISTRIBUTIONS = 24  # sample-distribution plots for the rows with the largest changes

STYLE = """
body{font:14px/1.45 system-ui,sans-serif;margin:2em;max-width:1600px;color:#1b1b1b}
table{border-collapse:collapse;margin:.6em 0 1.6em;font-size:12.5px}
th,td{border:1px solid #ccd;padding:3px 7px;vertical-align:top;text-align:left}
th{background:#eef;cursor:pointer;user-select:none;position:sticky;top:0}
th.sorted-asc::after{content:" ▲"} th.sorted-desc::after{content:" ▼"}
tr:nth-child(even) td{background:#fafaff} pre{background:#f4f4f8;padding:.8em;overflow:auto}
.v-slower{color:#b00020;font-weight:600}.v-faster{color:#006b2e;font-weight:600}.v-inconclusive{color:#9a6700}
.v-failed,.v-missing{color:#b00020} img{max-width:100%;border:1px solid #dde}
figure{display:inline-block;margin:.4em;vertical-align:top} figcaption{font-size:12px;color:#555}
"""

SCRIPT = """
document.querySelectorAll('table.sortable').forEach(function (table) {
  table.querySelectorAll('th').forEach(function (th, column) {
    th.addEventListener('click', function () {
      var body = table.tBodies[0], rows = Array.from(body.rows);
      var ascending = !th.classList.contains('sorted-asc');
      table.querySelectorAll('th').forEach(function (h) { h.classList.remove('sorted-asc', 'sorted-desc'); });
      th.classList.add(ascending ? 'sorted-asc' : 'sorted-desc');
      function key(row) {
        var cell = row.cells[column], raw = cell.getAttribute('data-sort');
        if (raw !== null && raw !== '' && !isNaN(Number(raw))) return [0, Number(raw)];
        return [1, cell.textContent.trim().toLowerCase()];
      }
      rows.sort(function (a, b) {
        var x = key(a), y = key(b), order = x[0] - y[0];
        if (!order) order = x[1] < y[1] ? -1 : (x[1] > y[1] ? 1 : 0);
        return ascending ? order : -order;
      });
      rows.forEach(function (row) { body.appendChild(row); });
    });
  });
});
"""

_UNITS = {"s": 1.0, "ms": 1e-3, "µs": 1e-6}


def page(
    title: str, header: str, sections: list[Section], view: View, analysis: Analysis, letters: dict[str, str]
) -> str:
    parts = [f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>{_e(title)}</title>",
             f"<style>{STYLE}</style></head><body><h1>{_e(title)}</h1>", _markdownish(header)]  # fmt: skip
    plots = _plots(view, analysis, letters)
    for section in sections:
        parts.append(f"<h{section.level + 0}>{_e(section.title)}</h{section.level + 0}>")
        if section.intro:
            parts.append(f"<p>{_markdownish(section.intro)}</p>")
        if section.headers:
            parts.append(_table(section))
        if section.title.startswith("Verdicts") and plots:
            parts.append(plots)
    parts.append(f"<script>{SCRIPT}</script></body></html>")
    return "\n".join(parts)


def _table(section: Section) -> str:
    head = "".join(f"<th>{_e(h)}</th>" for h in section.headers)
    body = []
    for row in section.rows:
        cells = []
        for value in row:
            sort = _sort_key(value)
            attribute = f" data-sort='{sort}'" if sort is not None else ""
            verdict = _verdict_class(value)
            css = f" class='v-{verdict}'" if verdict else ""
            cells.append(f"<td{attribute}{css}>{_cell(value)}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return f"<table class='sortable'><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _verdict_class(value: Any) -> str | None:
    """The CSS class of a verdict cell ('▼ slower' -> 'slower'); None for anything else, so no text from a
    result file ever reaches an attribute (a GPU name or warning may start with a glyph too)."""
    if not isinstance(value, str) or value[:1] not in tuple("▼▲=?✗–"):
        return None
    word = value.split()[-1]
    return word if re.fullmatch(r"[a-z][a-z-]{0,31}", word) else None


def _href(target: str) -> str:
    """A link target that can only be a relative path: a scheme-like first segment gets './' before it."""
    return _e(f"./{target}" if ":" in target.split("/", 1)[0] else target)


def _cell(value: Any) -> str:
    from harness.report import Link

    if isinstance(value, Link):
        return f"<a href='{_href(value.href)}'>{_e(value.text)}</a>"
    if isinstance(value, list):
        return " ".join(_cell(v) for v in value)
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return _e(str(value)).replace("\n", "<br>")


def _sort_key(value: Any) -> float | None:
    """A number to sort by: durations in seconds, plain numbers as they are."""
    from harness.report import Link

    text = value.text if isinstance(value, Link) else value
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        return float(text)
    if not isinstance(text, str):
        return None
    match = re.fullmatch(r"([-+]?[0-9.]+(?:e[-+]?[0-9]+)?)\s*(s|ms|µs)?", text.strip())
    if not match:
        return None
    try:
        return float(match.group(1)) * _UNITS.get(match.group(2) or "s", 1.0)
    except ValueError:
        return None


def _markdownish(text: str) -> str:
    """The few Markdown marks the report's prose uses: **bold**, `code`, a fenced block."""
    escaped = _e(text)
    escaped = re.sub(r"```\n(.*?)\n```", lambda m: f"<pre>{m.group(1)}</pre>", escaped, flags=re.S)
    escaped = re.sub(r"\*\*(.+?)\*\*", r"<b>\1</b>", escaped)
    escaped = re.sub(r"`([^`]+)`", r"<code>\1</code>", escaped)
    return escaped.replace("\n\n", "<br><br>")


def _e(text: str) -> str:
    return html.escape(text, quote=True)


# -- plots -------------------------------------------------------------------------------------


def _plots(view: View, analysis: Analysis, letters: dict[str, str]) -> str:
    timing = analysis.timing
    if timing.empty or timing["ratio"].notna().sum() == 0:
        return ""
    import matplotlib

    matplotlib.use("Agg")
    figures = [_heatmap(view, timing, letters), *_distributions(view, analysis, letters)]
    return "<h3>Plots</h3>" + "".join(
        f"<figure><img alt='{_e(caption)}' src='data:image/png;base64,{data}'><figcaption>{_e(caption)}</figcaption></figure>"
        for caption, data in figures
    )


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
    keys = list(dict.fromkeys(
        (r.workload, r.dtype, r.knobs) for r in timing.sort_values("change", ascending=False).itertuples()
    ))[:MAX_DISTRIBUTIONS]  # fmt: skip
    frame = analysis.frame
    out = []
    for key in keys:
        data, names = [], []
        for group in view.groups:
            files = frame[(frame["group"] == group) & (frame["status"] == "ok") & (frame["workload"] == key[0])
                          & (frame["dtype"] == key[1]) & (frame["knobs"] == key[2])]["file"]  # fmt: skip
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
