"""The verdict rows against the baseline, with each side's host time per call, and the rows grouped by
what changed in what ran."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from harness.report.analysis import frames, stats
from harness.report.analysis.frames import KEYS
from harness.report.analysis.model import Analysis, View
from harness.report.analysis.ran_changes import change_kind
from harness.report.sections import table_values
from harness.report.sections.context import SectionContext, listed
from harness.report.writers import markdown
from harness.report.writers.document import VERDICT_ORDER, Section, TableCell, verdict

# what every verdict row's numbers are, said once where the rows are shown (and in the Method section)
STATISTIC_NOTE = (
    "Each side's time is what its row's test compares, and the ratio divides exactly those two times: "
    "with 3 to 6 rounds a side (**Welch**), the geometric mean of the round medians, with the 1 − 2α "
    "interval of the ratio (99.6 % at α = 0.002); with 7 or more (**MW**, the Mann-Whitney U test), the "
    "median of the round medians, with a 99 % bootstrap interval; with one round a side (**samples**), "
    "that process's median sample. A time links to the result file of the round nearest it."
)


def verdicts(ctx: SectionContext) -> list[Section]:
    """The verdict rows, the most worrying first, then each side's host time per call."""
    view, analysis, letters = ctx.view, ctx.analysis, ctx.letters
    timing = analysis.timing
    if timing.empty or timing["verdict"].notna().sum() == 0:
        return [Section("Verdicts", "No comparison: no measurement succeeded on both sides.")]
    judged = timing[timing["verdict"].notna()].copy()
    judged["order"] = judged["verdict"].map(VERDICT_ORDER)
    judged = judged.sort_values(["order", "ratio"], ascending=[True, False])
    recorded = "what_ran" in judged and judged["what_ran"].notna().any()  # results made with what_ran
    one_knob_set = judged["knobs"].nunique() == 1  # then stated once, above the table
    sides = _sides(analysis.frame)
    rows = tuple(_verdict_row(r, sides, ctx, recorded, one_knob_set) for r in judged.itertuples())
    legend = "; ".join(
        f"**{letters[g]}** = {markdown.inline(view.labels.get(g, g))}"
        + (" (baseline)" if g == view.baseline else "")
        for g in view.groups
    )
    section = Section(
        "Verdicts against the baseline",
        legend
        + f". {STATISTIC_NOTE}"
        + (
            f" Every row ran with knobs {markdown.code(str(judged['knobs'].iloc[0]))}."
            if one_knob_set
            else ""
        ),
        (
            "workload",
            "mode",
            *([] if one_knob_set else ["knobs"]),
            "vs",
            "verdict",
            "time ratio",
            "interval",
            "baseline",
            "candidate",
            "p",
            "rounds",
            *(["what ran"] if recorded else []),
            "why",
        ),
        rows,
        plots_after=True,
        filterable=True,
    )
    host = _host_section(view, analysis, ctx.out_dir, letters, ctx.extracts)
    return [section, *([host] if host else [])]


def _sides(frame: pd.DataFrame) -> dict[Any, pd.DataFrame]:
    """Each side's rounds of each row, split once: a mask over the whole frame per row was quadratic."""
    ok = frame[frame["status"] == "ok"] if "workload" in frame else frame.iloc[0:0]
    return dict(iter(ok.groupby(["group", *KEYS], sort=False, dropna=False))) if not ok.empty else {}


def _verdict_row(
    r: Any, sides: dict[Any, pd.DataFrame], ctx: SectionContext, recorded: bool, one_knob_set: bool
) -> tuple[TableCell, ...]:
    """One verdict row: the row, the verdict and its numbers, each side's time linked to its round."""
    key = (r.workload, r.dtype, r.knobs)
    base = _center_entry(sides.get((ctx.view.baseline, *key)), r.baseline_s)
    mine = _center_entry(sides.get((r.group, *key)), r.candidate_s)
    out_dir, extracts = ctx.out_dir, ctx.extracts
    return (
        r.workload,
        r.mode,
        *([] if one_knob_set else [r.knobs]),
        ctx.letters.get(r.group, r.group),
        verdict(r.verdict),
        table_values.number(r.ratio, ".3f"),
        stats.interval_text(r.ci_low, r.ci_high),
        table_values.time(base[0], base[1], out_dir, base[2], extracts) if base else "—",
        table_values.time(mine[0], mine[1], out_dir, mine[2], extracts) if mine else "—",
        table_values.number(r.p_value, ".2g"),
        stats.rounds_text(r.rounds_baseline, r.rounds_candidate, r.test),
        *([_ran_text(r.what_ran, r.ran_change, r.ran_baseline)] if recorded else []),
        "" if r.verdict == "same" else (r.reason or ""),
    )


def _center_entry(rows: pd.DataFrame | None, center: Any) -> tuple[float, str, Any] | None:
    """A side's time as its row's test compares it (``center``, what the ratio divides), linked to the
    result file of the round nearest it; ``rows``: that side's ok rounds of the row."""
    if rows is None or rows.empty or not stats.finite(center):
        return None
    distance = (rows["median_s"] - center).abs().to_numpy(dtype=float)
    row = rows.iloc[int(np.nanargmin(distance))]  # the first nearest, as idxmin (an ok round has a median)
    return float(center), str(row["file"]), row.get("measurement")


def _ran_text(ran: Any, change: Any, baseline: Any) -> str:
    if ran == "same":
        return f"same: {baseline}" if isinstance(baseline, str) else "same kernels"
    return str(change) if ran in ("changed", "varies") else ""


def _host_section(
    view: View,
    analysis: Analysis,
    out_dir: Path,
    letters: dict[str, str],
    extracts: dict[str, tuple[str, int]],
) -> Section | None:
    frame = analysis.frame
    if "host_s" not in frame or frame["host_s"].isna().all():
        return None
    ok = frame[(frame["status"] == "ok") & frame["host_s"].notna()]
    rows = []
    for (group, workload, dtype, knobs), runs in ok.groupby(["group", *KEYS], sort=False):
        run = frames.lower_median_row(runs, "host_s")  # one file's own value
        rows.append(
            (
                workload,
                frames.mode(dtype, knobs),
                knobs,
                letters.get(group, group),
                table_values.time(run["median_s"], run["file"], out_dir, run.get("measurement"), extracts),
                table_values.time(run["host_s"], run["file"], out_dir, run.get("measurement"), extracts),
                table_values.number(run["host_s"] / run["median_s"], ".2f"),
            )
        )
    if "device" in ok and (ok["device"] == "cpu").all():  # no device: both times are the CPU's
        return Section(
            "Host time per call",
            "Wall time per call over blocks of back-to-back calls (warm caches), beside the per-call time "
            "the verdicts compare (each call timed alone, in the suite's CPU clock) of the same round. On a "
            "CPU both are host time: a ratio well above 1 marks calls slower back to back (caches, memory "
            "bandwidth) or a block the host stalled.",
            ("workload", "mode", "knobs", "group", "per call", "back to back", "back to back / per call"),
            tuple(rows),
            level=3,
        )
    return Section(
        "Host time per call",
        "Host wall time per call over blocks of back-to-back calls (warm L2, "
        "synchronized only at block ends), beside the device time of the same round. A ratio well above 1 "
        "marks a host-bound workload, where framework overhead rather than cuDNN sets the pace.",
        ("workload", "mode", "knobs", "group", "device time", "host time", "host / device"),
        tuple(rows),
        level=3,
    )


def what_changed(ctx: SectionContext) -> list[Section]:
    return listed(_what_changed(ctx.analysis, ctx.letters))


def _what_changed(analysis: Analysis, letters: dict[str, str]) -> Section | None:
    """Rows grouped by what changed in what ran: a dispatch change reads apart from a slower kernel."""
    timing = analysis.timing
    if timing.empty or "what_ran" not in timing:
        return None
    changed = timing[timing["what_ran"].isin(["changed", "varies"])]
    if changed.empty:
        return None
    rows = []
    # grouped by the kind of change; the detail shows where all rows of a kind share it
    kinds = changed["ran_change"].astype(str).map(change_kind)
    for kind, group in changed.groupby(kinds, sort=False):
        details = group["ran_change"].unique()
        change = details[0] if len(details) == 1 else kind
        verdicts = ", ".join(f"{n} {v}" for v, n in group["verdict"].value_counts().items())
        where = ", ".join(
            f"{r.workload} {r.mode} ({letters.get(r.group, r.group)})" for r in group.head(6).itertuples()
        )
        rows.append(
            (
                str(change),
                len(group),
                verdicts,
                where + (f" and {len(group) - 6} more" if len(group) > 6 else ""),
            )
        )
    same = int((timing["what_ran"] == "same").sum())
    return Section(
        "What changed",
        f"Rows whose sides ran different kernels (operators on a CPU), grouped by the change; {same} rows "
        "ran the same kernels on both sides, so their verdicts are about those kernels' speed. A changed "
        "row's verdict is about the change: another backend or algorithm chosen, not one kernel slower.",
        ("what ran, baseline -> candidate", "rows", "verdicts", "rows (group)"),
        tuple(rows),
    )
