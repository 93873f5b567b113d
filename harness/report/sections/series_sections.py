"""The sections of a release axis: each row's ratio across the releases in order, and where each change
began."""

from __future__ import annotations

from typing import Any

import pandas as pd

from harness.report.sections.context import SectionContext
from harness.report.writers import markdown
from harness.report.writers.document import Section, Value

_MARKS = {"slower": " ▼", "faster": " ▲", "same": " ↔", "failed": " ✗", "ran again": " ✓"}


def across_releases(ctx: SectionContext) -> list[Section]:
    view, analysis = ctx.view, ctx.analysis
    """Across releases (each row's ratio to the baseline, releases in order) and where each change began."""
    series = analysis.series
    if series is None:
        return []
    began = {(c.workload, c.dtype, c.knobs, c.after): c.verdict for c in series.changes}
    rows = []
    for entry in series.ratios.to_dict("records"):
        key = (entry["workload"], entry["dtype"], entry["knobs"])
        cells: list[Any] = [entry["workload"], entry["mode"], entry["knobs"]]
        for label in series.labels:
            ratio = entry[label]
            if ratio is None or pd.isna(ratio):
                cells.append("")
                continue
            mark = _MARKS.get(began.get((*key, label), ""), "")
            cells.append(Value(f"{ratio:.3f}{mark}", float(ratio), "number"))
        rows.append(tuple(cells))
    axis = "cuDNN" if series.axis.axis == "cudnn" else "torch"
    off = [markdown.inline(view.labels.get(c, c)) for c in series.axis.off_axis]
    intro = (
        f"Each row's time as a ratio to the baseline ({markdown.inline(series.baseline_label)}), the {axis} "
        "releases in order. "
        "▼ / ▲ marks the release where the row became slower / faster than the release before it (the same "
        "statistics as every verdict, the earlier release as the baseline); ↔ where other kernels ran at "
        "the same time; ✗ / ✓ where the row stopped / started running."
        + (f" Off the axis, in the tables below: {', '.join(off)}." if off else "")
    )
    across = Section(
        f"Across {axis} releases", intro, ("workload", "mode", "knobs", *series.labels), tuple(rows)
    )
    changes = Section(
        "Where each change began",
        "Each change, at the first pair of neighbouring releases between which the row changed: "
        "`row: release -> next release, what ran differently, ratio of the two`."
        if series.changes
        else "No row changed between two neighbouring releases.",
        ("change",) if series.changes else (),
        tuple((c.line(series.ratios["knobs"].nunique() > 1),) for c in series.changes),
    )
    return [across, changes]
