"""One verdict per (group, workload, dtype, knobs) against the baseline.

Input is the long-form frame of ``frames.long_form``; a "group" is a cell of the matrix (or a side of an
ad-hoc ``compare``), each with one or more rounds (independent processes). ``stats.judge`` decides each
row; a row whose sides were timed differently, or on a busy host, is inconclusive whatever the test said,
and one the GPU ran at two speeds is slower or faster only where its switching between them cannot make
the change (``at_two_speeds``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypedDict, cast

import pandas as pd

from harness.report.analysis import ran_changes, stats
from harness.report.analysis.frames import NAMED, by_key, keys_of, mode, ran_name
from harness.suite.timing import windows


class TimingRow(TypedDict, total=False):
    """A row of the timing table: one (group, workload, dtype, knobs) against the baseline. A row with no
    comparison (a side measured nothing) holds the first part and its reason; read back from the table,
    a value it does not hold is NaN or None."""

    group: str
    workload: str
    dtype: str  # the precision mode's id, for programs
    mode: str  # its name for readers (precision.label): "fp32 (TF32 off)"
    knobs: str
    threshold_pct: float
    rounds_baseline: int
    rounds_candidate: int
    baseline_files: list[str]
    candidate_files: list[str]
    verdict: str | None
    reason: str
    median_baseline_s: float
    median_candidate_s: float
    center: str  # the statistic the ratio divides: what the test compares
    baseline_s: float | None
    candidate_s: float | None
    test: str
    interval_level: float
    ratio: float | None
    ci_low: float | None
    ci_high: float | None
    p_value: float | None
    basis: str
    what_ran: str | None
    ran_change: str | None
    ran_baseline: str | None
    ran_candidate: str | None
    timer_baseline: str
    timer_candidate: str
    clock: str | None
    spoiled: str | None
    two_speeds: str | None


def records(table: pd.DataFrame) -> list[TimingRow]:
    """The rows of a timing table (``timing``'s), each as a TimingRow."""
    return cast("list[TimingRow]", table.to_dict("records"))  # its columns are TimingRow's keys


def timing(
    frame: pd.DataFrame,
    baseline: str,
    groups: Sequence[str],
    threshold_pct: Callable[[str], float],
    alpha: float,
    samples: dict[tuple[str, str, str, str], list[float]],
) -> pd.DataFrame:
    """One row per (group, workload, dtype, knobs) with the verdict against ``baseline``."""
    measured = frame[frame["workload"].notna()] if "workload" in frame else frame.iloc[0:0]
    rows = []
    base_all = measured[measured["group"] == baseline]
    for group in groups:
        if group == baseline:
            continue
        mine_all = measured[measured["group"] == group]
        if mine_all.empty:
            continue  # no run of this group produced measurements: the gate reports its failed runs
        keys = list(dict.fromkeys([*keys_of(base_all), *keys_of(mine_all)]))
        base_of, mine_of = by_key(base_all), by_key(mine_all)
        for key in keys:
            base = base_of(key)
            mine = mine_of(key)
            rows.append(_one(group, key, base, mine, threshold_pct(key[0]), alpha, samples))
    columns = [
        "group",
        *NAMED,
        "verdict",
        "median_baseline_s",
        "median_candidate_s",
        "center",
        "baseline_s",
        "candidate_s",
        "test",
        "interval_level",
        "ratio",
        "ci_low",
        "ci_high",
        "p_value",
        "basis",
        "what_ran",
        "ran_change",
        "ran_baseline",
        "ran_candidate",
        "timer_baseline",
        "timer_candidate",
        "clock",
        "spoiled",
        "two_speeds",
        "rounds_baseline",
        "rounds_candidate",
        "threshold_pct",
        "reason",
        "baseline_files",
        "candidate_files",
    ]
    table: pd.DataFrame = pd.DataFrame(rows, columns=columns)
    return table


def _sample_key(file: str, key: tuple[str, str, str]) -> tuple[str, str, str, str]:
    return (file, *key)


def _one(
    group: str,
    key: tuple[str, str, str],
    base: pd.DataFrame,
    mine: pd.DataFrame,
    pct: float,
    alpha: float,
    samples: dict[tuple[str, str, str, str], list[float]],
) -> TimingRow:
    base_ok, mine_ok = base[base["status"] == "ok"], mine[mine["status"] == "ok"]
    workload, dtype, knobs = key
    row: TimingRow = {
        "group": group,
        "workload": workload,
        "dtype": dtype,
        "mode": mode(dtype, knobs),
        "knobs": knobs,
        "threshold_pct": pct,
        "rounds_baseline": len(base_ok),
        "rounds_candidate": len(mine_ok),
        "baseline_files": list(base_ok["file"]),
        "candidate_files": list(mine_ok["file"]),
    }
    if base_ok.empty or mine_ok.empty:
        return _not_compared(row, base, mine, base_ok.empty, mine_ok.empty)
    if len(base_ok) >= 2 and len(mine_ok) >= 2:
        result = stats.judge(list(base_ok["median_s"]), list(mine_ok["median_s"]), pct, alpha, "rounds")
    else:  # one process on a side: its raw samples stand in, process-to-process noise is not covered
        a = [x for f in base_ok["file"] for x in samples[_sample_key(f, key)]]
        b = [x for f in mine_ok["file"] for x in samples[_sample_key(f, key)]]
        result = stats.judge(a, b, pct, alpha, "samples")
    verdict, reason = result.verdict, result.reason
    timers = _timers(base_ok), _timers(mine_ok)
    if timers[0] != timers[1]:  # e.g. the graph capture failed on one side only
        verdict = "inconclusive"
        reason = (
            f"timed differently (baseline {timers[0]}, candidate {timers[1]}): a CUDA-graph replay leaves "
            f"out the per-kernel dispatch an eager call pays, so the ratio is not the library's; {reason}"
        )
    spoiled = stalled(base_ok, mine_ok)
    if spoiled:  # never a verdict from a busy host's timings, whatever the test said
        verdict = "inconclusive"
        reason = (
            f"busy host: {spoiled}; measure again with --fresh and nothing else running (load under the "
            "cores): a run again without it keeps this round"
        )
    verdict, reason, speeds = at_two_speeds(verdict, reason, result, two_speeds(base_ok, mine_ok, pct))
    ran, change = ran_changes.what_ran(base_ok, mine_ok)
    return {
        **row,
        "verdict": verdict,
        "median_baseline_s": float(base_ok["median_s"].median()),  # over rounds: each round's median
        "median_candidate_s": float(mine_ok["median_s"].median()),
        # what the ratio divides, by the statistic its test compares (shown beside it, never the medians)
        "center": result.center,
        "baseline_s": result.center_a,
        "candidate_s": result.center_b,
        "test": result.test,
        "interval_level": result.level,
        "ratio": result.ratio,
        "ci_low": result.ci_low,
        "ci_high": result.ci_high,
        "p_value": result.p_value,
        "basis": result.basis,
        "what_ran": ran,
        "ran_change": change,
        "ran_baseline": ran_name(base_ok),
        "ran_candidate": ran_name(mine_ok),
        "timer_baseline": timers[0],
        "timer_candidate": timers[1],
        "clock": _clock(base_ok, mine_ok),
        "spoiled": spoiled,
        "two_speeds": speeds,
        "reason": reason,
    }


def _not_compared(
    row: TimingRow, base: pd.DataFrame, mine: pd.DataFrame, base_unmeasured: bool, mine_unmeasured: bool
) -> TimingRow:
    """The row where a side has no ok measurement: missing, failed, or (unsupported on both) no verdict."""
    if base_unmeasured and mine_unmeasured:
        if set(base["status"]) | set(mine["status"]) <= {"unsupported"}:
            return {**row, "verdict": None}  # not defined here on either side: not a comparison
        return {**row, "verdict": "missing", "reason": "measured on neither side: " + _errors(base, mine)}
    if base_unmeasured:
        why = _errors(base, base.iloc[0:0]) if not base.empty else "the baseline has no such measurement"
        return {**row, "verdict": "missing", "reason": f"no baseline to compare with: {why}"}
    if mine.empty:
        return {**row, "verdict": "missing", "reason": "the candidate has no such measurement"}
    return {
        **row,
        "verdict": "failed",
        "reason": "ran in the baseline, not here: " + _errors(mine, mine.iloc[0:0]),
    }


def stalled(
    base: pd.DataFrame, mine: pd.DataFrame, sides: tuple[str, str] = ("baseline", "candidate")
) -> str | None:
    """Why a round of either side was timed on a busy or stalled host (the first one said), or None."""
    for side, rows in zip(sides, (base, mine), strict=True):
        if "stalled" in rows:
            found = [s for s in rows["stalled"] if isinstance(s, str) and s]
            if found:
                return f"{len(found)} of the {side}'s rounds ({found[0]})"
    return None


def two_speeds(
    base: pd.DataFrame, mine: pd.DataFrame, pct: float, sides: tuple[str, str] = ("baseline", "candidate")
) -> tuple[str, float] | None:
    """Where the GPU ran a row at two speeds (``windows.two_speeds``), said for the first round found, and
    the widest gap between its windows in any such round; None where no round did."""
    found: list[tuple[str, float]] = []
    for side, rows in zip(sides, (base, mine), strict=True):
        if "window_spread" not in rows or "power_capped" not in rows:
            continue  # a suite before windows
        columns = rows["window_spread"], rows["power_capped"], rows["round"]
        for spread, capped, round_ in zip(*columns, strict=True):
            if windows.two_speeds(spread, capped, pct):
                said = (
                    f"in the {side}'s round {round_} its windows came {spread:.1%} apart while the power "
                    f"limit held the clock ({int(capped)} samples dropped)"
                )
                found.append((said, float(spread)))
    if not found:
        return None
    return found[0][0], max(apart for _, apart in found)


def at_two_speeds(
    verdict: stats.Verdict, reason: str, result: stats.Comparison, speeds: tuple[str, float] | None
) -> tuple[stats.Verdict, str, str | None]:
    """A row's verdict and reason where the GPU ran it at two speeds (``two_speeds``: where, and the widest
    gap), and where it said that: slower or faster stands only where the switching cannot make the change.
    Welch's t (3 to 6 rounds a side) reads round medians as spread about one value, which a row at two
    speeds is not; the rank test (7 or more) assumes no shape. So the verdict stands where the ratio's
    whole interval lies beyond the gap, or where the rank test gave it."""
    if speeds is None:
        return verdict, reason, None
    said, apart = speeds
    low, high = result.ci_low, result.ci_high
    beyond = low is not None and high is not None and (low >= 1 + apart or high <= 1 / (1 + apart))
    if verdict in ("slower", "faster") and not (beyond or result.test == "mann-whitney"):
        return "inconclusive", f"{reason}; the GPU ran it at two speeds, {apart:.1%} apart: {said}", said
    return verdict, f"{reason}; the GPU ran it at two speeds: {said}", said


def _clock(base: pd.DataFrame, mine: pd.DataFrame) -> str | None:
    """The clock a CPU row's samples are in, on both sides ('+'-joined where they differ; None: a GPU's,
    or a suite before 0.17)."""
    if "clock" not in base or "clock" not in mine:
        return None
    clocks = sorted({str(c) for c in (*base["clock"], *mine["clock"]) if isinstance(c, str)})
    return "+".join(clocks) or None


def _timers(rows: pd.DataFrame) -> str:
    return "+".join(sorted({str(t) for t in rows["timer"]})) if "timer" in rows else "unknown"


def _errors(a: pd.DataFrame, b: pd.DataFrame) -> str:
    texts = [str(e) for e in pd.concat([a, b])["error"].dropna().unique()]
    return "; ".join(texts[:2]) or "no result"
