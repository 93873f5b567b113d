"""What ``compare`` prints: its verdict rows, as pyperf prints a comparison ("56.8 us -> 382.4 us: 6.74x
slower"), in a terminal table, Markdown, CSV or JSON."""

from __future__ import annotations

import json
import math
from typing import Any, cast

import pandas as pd
from tabulate import tabulate

from harness import csvsafe
from harness.report.analysis import stats
from harness.report.analysis.row_verdicts import TimingRow
from harness.report.writers import markdown
from harness.report.writers.choices import Format, Sort

# "A -> B" are the times the ratio divides, by the row's test: geometric means of the round medians for
# Welch's t (3-6 rounds a side), their medians for Mann-Whitney (7 or more); "rounds" names the test
HEADERS = ["workload", "mode", "knobs", "A -> B", "change", "interval", "p", "rounds", "verdict"]
COLUMNS = [  # csv and json: the mode's id (dtype) for programs, its name (mode) beside it
    "workload",
    "dtype",
    "mode",
    "knobs",
    "verdict",
    "median_baseline_s",
    "median_candidate_s",
    "center",
    "baseline_s",
    "candidate_s",
    "test",
    "interval_level",
    "rounds_baseline",
    "rounds_candidate",
    "ratio",
    "ci_low",
    "ci_high",
    "p_value",
    "reason",
]


def comparison(
    timing: pd.DataFrame, fmt: Format = "table", only_changed: bool = False, sort: Sort = "name"
) -> str:
    """The judged rows: every one, or ``only_changed`` (not ``same``); in the report's order, or by
    ``ratio`` (the largest change first, slower or faster alike)."""
    rows = timing[timing["verdict"].notna()] if not timing.empty else timing
    if only_changed and not rows.empty:
        rows = rows[rows["verdict"] != "same"]
    if sort == "ratio" and not rows.empty:
        rows = rows.assign(size=[stats.change_size(r) for r in rows["ratio"]])
        rows = rows.sort_values("size", ascending=False, kind="stable").drop(columns="size")
    records = (
        [{c: _plain(r.get(c)) for c in COLUMNS} for r in rows.to_dict("records")] if not rows.empty else []
    )
    if fmt == "json":
        return json.dumps(records, indent=1)
    if fmt == "csv":
        return csvsafe.to_csv(pd.DataFrame(records, columns=COLUMNS))
    table = [_row(cast(TimingRow, r)) for r in records]  # COLUMNS are TimingRow's
    if fmt == "md":  # result text in a Markdown table goes through the one escape every report uses
        return markdown.table([list(row) for row in table], list(HEADERS))
    shown: str = tabulate(table, headers=HEADERS, disable_numparse=True, tablefmt="simple")
    return shown


def duration(seconds: float | None) -> str:
    if not stats.finite(seconds) or seconds is None:
        return "—"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.1f} {unit}"
    return f"{seconds / 1e-9:.1f} ns"


def _row(r: TimingRow) -> list[str]:
    interval = stats.interval_text(r["ci_low"], r["ci_high"])
    return [
        r["workload"],
        r["mode"],
        r["knobs"],
        f"{duration(r['baseline_s'])} -> {duration(r['candidate_s'])}",
        stats.change_words(r["ratio"]),
        interval,
        format(r["p_value"], ".2g") if stats.finite(r["p_value"]) else "",
        stats.rounds_text(r["rounds_baseline"], r["rounds_candidate"], r["test"]),
        str(r["verdict"]),  # judged rows only: every one has a verdict
    ]


def _plain(value: Any) -> Any:
    return None if isinstance(value, float) and not math.isfinite(value) else value
