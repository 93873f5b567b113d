"""The release gate: the rows' and the numerics' verdicts and the failed runs, read as one outcome, with
the summary a person reads. The caller's ``Policy`` picks each outcome's exit code."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import pandas as pd

from harness.report.analysis import stats
from harness.report.analysis.numerics_verdicts import scientific

SUMMARY_ROWS = 10  # per verdict in the gate's summary; the report lists every row
Outcome = Literal["pass", "pass-with-inconclusive", "regression", "infrastructure-failure"]
OUTCOMES: tuple[Outcome, ...] = ("pass", "pass-with-inconclusive", "regression", "infrastructure-failure")


@dataclass(frozen=True)
class Policy:
    """What the caller decides of a gate: each outcome's exit code (the report and verdict.json state it),
    and whether an inconclusive or missing row fails the gate."""

    exit_codes: Mapping[Outcome, int]
    strict: bool = False


@dataclass(frozen=True)
class Gate:
    outcome: Outcome
    exit_code: int  # the policy's for the outcome
    counts: dict[str, int]
    numerics_worse: int
    failed_runs: tuple[str, ...]
    lines: tuple[str, ...]  # the summary a person reads


def gate(
    timing_rows: pd.DataFrame,
    numerics_rows: pd.DataFrame,
    failed_runs: Sequence[str],
    policy: Policy,
    beyond: pd.DataFrame | None = None,
) -> Gate:
    """A regression (timing, a workload that stopped running, or numerics), else an infrastructure failure
    when a run failed, else a pass. A regression outranks a failed run: re-running will not clear it.
    Measurements ``beyond`` their tolerance are listed; ``numerics`` already made worse those the switch
    put there."""
    judged = timing_rows[timing_rows["verdict"].notna()] if not timing_rows.empty else timing_rows
    counts: dict[str, int] = {
        v: int((judged["verdict"] == v).sum()) if not judged.empty else 0 for v in stats.VERDICTS
    }
    worse = int((numerics_rows["numerics"] == "worse").sum()) if not numerics_rows.empty else 0
    lines = [
        "verdicts: "
        + ", ".join(f"{counts[v]} {v}" for v in stats.VERDICTS)
        + f"; numerics: {worse} worse than the baseline"
        + (f", {len(beyond)} beyond their tolerance" if beyond is not None and not beyond.empty else "")
    ]
    for verdict in ("slower", "failed", "faster", "inconclusive", "missing"):
        rows = _by_size(judged[judged["verdict"] == verdict]) if not judged.empty else judged
        for r in rows.head(SUMMARY_ROWS).itertuples():
            lines.append(f"  {verdict.upper()}: {r.group} {r.workload} {r.mode} [{r.knobs}]: {r.reason}")
        if len(rows) > SUMMARY_ROWS:
            lines.append(
                f"  ... and {len(rows) - SUMMARY_ROWS} more {verdict} rows (the verdict table has them all)"
            )
    if worse:
        for r in numerics_rows[numerics_rows["numerics"] == "worse"].head(10).itertuples():
            lines.append(f"  NUMERICS: {r.group} {r.workload} {r.mode} [{r.knobs}]: {r.reason}")
    for r in beyond.head(10).itertuples() if beyond is not None else []:
        lines.append(
            f"  BEYOND TOLERANCE: {r.group} {r.workload} {r.mode} [{r.knobs}]: "
            f"error vs fp64 {r.rel_rmse:.2e} > {scientific(r.tolerance)} "
            f"in {r.rounds_beyond} of {r.rounds} round{'s' * (r.rounds != 1)}"
            + (f", {r.nan} NaN" if r.nan else "")
            + (f", {r.inf} Inf" if r.inf else "")
        )
    if beyond is not None and len(beyond) > 10:
        lines.append(f"  ... {len(beyond) - 10} more beyond their tolerance (the report lists them)")
    for run in failed_runs:
        lines.append(f"  RUN FAILED: {run}")
    regression = counts["slower"] + counts["failed"] + worse
    unsure = counts["inconclusive"] + counts["missing"]
    outcome: Outcome
    if regression or (policy.strict and unsure):
        outcome = "regression"
    elif failed_runs:
        outcome = "infrastructure-failure"
    elif unsure:
        outcome = "pass-with-inconclusive"
    else:
        outcome = "pass"
    code = policy.exit_codes[outcome]
    lines.append(
        f"outcome: {outcome} (exit {code})"
        + (
            f"; {unsure} row{' is' if unsure == 1 else 's are'} inconclusive or missing: NOT evidence of no "
            "change (--strict fails on them)"
            if outcome == "pass-with-inconclusive"
            else ""
        )
    )
    return Gate(outcome, code, counts, worse, tuple(failed_runs), tuple(lines))


def _by_size(rows: pd.DataFrame) -> pd.DataFrame:
    """The largest change first (slower or faster alike); rows without a ratio keep their order, last."""
    size = [stats.change_size(r) for r in rows["ratio"]] if "ratio" in rows else []
    ordered: pd.DataFrame = rows.assign(_size=size).sort_values("_size", ascending=False, kind="stable")
    kept: pd.DataFrame = ordered.drop(columns="_size")
    return kept
