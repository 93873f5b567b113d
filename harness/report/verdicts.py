"""Verdicts per workload x dtype x knobs against the baseline, the numerics gate, and the release gate.

Input is the long-form frame of ``frames.long_form``; a "group" is a cell of the matrix (or a side of
an ad-hoc ``compare``), each with one or more rounds (independent processes). Output is data: the
CLI prints it and picks each outcome's exit code (``Policy``), the report renders it, and ``verdict.json``
stores it
(``schemas/verdict.schema.json``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import pandas as pd

from harness.report import stats
from harness.report.frames import KEYS, RAN_SEPARATOR, ran_name, short_kernel

VERDICT_SCHEMA_VERSION = 1
# Numerics gate (TorchDynamo's `same`): the candidate's error against fp64 may grow to multiplier x
# baseline error + tolerance / 10.
NUMERICS_MULTIPLIER = {"fp32": 2.0, "tf32": 2.0, "bf16": 3.0, "fp16": 3.0}
NUMERICS_TOLERANCE = {"fp32": 1e-4, "tf32": 1e-3, "bf16": 1e-2, "fp16": 1e-3}

SUMMARY_ROWS = 10  # per verdict in the gate's summary; the report lists every row
Outcome = Literal["pass", "pass-with-inconclusive", "regression", "infrastructure-failure"]
OUTCOMES: tuple[Outcome, ...] = ("pass", "pass-with-inconclusive", "regression", "infrastructure-failure")


@dataclass(frozen=True)
class Policy:
    """What the caller decides of a gate: each outcome's exit code (the report and verdict.json state it),
    and whether an inconclusive or missing row fails the gate."""

    exit_codes: Mapping[Outcome, int]
    strict: bool = False


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
        keys = list(dict.fromkeys([*_keys(base_all), *_keys(mine_all)]))
        for key in keys:
            base = _rows(base_all, key)
            mine = _rows(mine_all, key)
            rows.append(_one(group, key, base, mine, threshold_pct(key[0]), alpha, samples))
    columns = [
        "group",
        *KEYS,
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


def _keys(frame: pd.DataFrame) -> list[tuple[str, str, str]]:
    return list(dict.fromkeys(zip(frame["workload"], frame["dtype"], frame["knobs"], strict=True)))


def _rows(frame: pd.DataFrame, key: tuple[str, str, str]) -> pd.DataFrame:
    rows: pd.DataFrame = frame[
        (frame["workload"] == key[0]) & (frame["dtype"] == key[1]) & (frame["knobs"] == key[2])
    ]
    return rows


def _one(
    group: str,
    key: tuple[str, str, str],
    base: pd.DataFrame,
    mine: pd.DataFrame,
    pct: float,
    alpha: float,
    samples: dict[tuple[str, str, str, str], list[float]],
) -> dict[str, Any]:
    base_ok, mine_ok = base[base["status"] == "ok"], mine[mine["status"] == "ok"]
    row: dict[str, Any] = {
        "group": group,
        **dict(zip(KEYS, key, strict=True)),
        "threshold_pct": pct,
        "rounds_baseline": len(base_ok),
        "rounds_candidate": len(mine_ok),
        "baseline_files": list(base_ok["file"]),
        "candidate_files": list(mine_ok["file"]),
    }
    if base_ok.empty and mine_ok.empty:
        if set(base["status"]) | set(mine["status"]) <= {"unsupported"}:
            return {**row, "verdict": None}  # not defined here on either side: not a comparison
        return {**row, "verdict": "missing", "reason": "measured on neither side: " + _errors(base, mine)}
    if base_ok.empty:
        why = _errors(base, base.iloc[0:0]) if not base.empty else "the baseline has no such measurement"
        return {**row, "verdict": "missing", "reason": f"no baseline to compare with: {why}"}
    if mine_ok.empty:
        if mine.empty:
            return {**row, "verdict": "missing", "reason": "the candidate has no such measurement"}
        return {
            **row,
            "verdict": "failed",
            "reason": "ran in the baseline, not here: " + _errors(mine, mine.iloc[0:0]),
        }
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
    spoiled = _stalled(base_ok, mine_ok)
    if spoiled:  # never a verdict from a busy host's timings, whatever the test said
        verdict = "inconclusive"
        reason = f"busy host: {spoiled}; run again with nothing else running (load under the cores)"
    ran, change = _what_ran(base_ok, mine_ok)
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
        "reason": reason,
    }


def _stalled(base: pd.DataFrame, mine: pd.DataFrame) -> str | None:
    """Why a round of either side was timed on a busy or stalled host (the first one said), or None."""
    for side, rows in (("baseline", base), ("candidate", mine)):
        if "stalled" in rows:
            found = [s for s in rows["stalled"] if isinstance(s, str) and s]
            if found:
                return f"{len(found)} of the {side}'s rounds ({found[0]})"
    return None


def _what_ran(base: pd.DataFrame, mine: pd.DataFrame) -> tuple[str | None, str | None]:
    """Whether the same kernels (operators on a CPU) ran on both sides, and if not, what changed.

    ``same``; ``changed`` with "baseline -> candidate"; ``varies`` where one side's own rounds ran
    different things (autotuning may pick another algorithm per process); None where a side's results
    do not say (recorded before what_ran, or with it off)."""
    if "ran" not in base or "ran" not in mine or base["ran"].isna().any() or mine["ran"].isna().any():
        return None, None
    ran = {side: sorted(set(rows["ran"])) for side, rows in (("baseline", base), ("candidate", mine))}
    varying = [side for side, signatures in ran.items() if len(signatures) > 1]
    if varying:
        return "varies", f"what ran differs between the rounds of the {' and the '.join(varying)}"
    if ran["baseline"] == ran["candidate"]:
        return "same", None
    first = {side: rows.iloc[0] for side, rows in (("baseline", base), ("candidate", mine))}
    return "changed", _change(first["baseline"], first["candidate"])


def _change(a: pd.Series[Any], b: pd.Series[Any]) -> str:
    """The most telling difference first: the attention backend, cuDNN or not, the largest kernel.

    ``change_kind`` reads back the kind of change, which the report groups rows by."""
    if _recorded(a["attention_backend"]) != _recorded(b["attention_backend"]):
        return f"attention backend {_recorded(a['attention_backend'])} -> {_recorded(b['attention_backend'])}"
    top = _recorded(a.get("top_kernel")), _recorded(b.get("top_kernel"))
    kernels = (
        "largest kernel: " + _kernel_change(top[0], top[1])
        if top[0] != top[1] and isinstance(top[0], str) and isinstance(top[1], str)
        else None
    )
    if bool(a["cudnn_used"]) != bool(b["cudnn_used"]):
        kind = "cuDNN -> no cuDNN" if a["cudnn_used"] else "no cuDNN -> cuDNN"
        return f"{kind}, {kernels}" if kernels else kind
    if kernels:
        return kernels
    before, after = set(str(a["ran"]).split(RAN_SEPARATOR)), set(str(b["ran"]).split(RAN_SEPARATOR))
    return f"other kernels: {len(after - before)} new, {len(before - after)} gone"


def _kernel_change(a: str, b: str) -> str:
    """``a -> b`` by their short names; where those are alike (long generated names cut at the same
    place), from a little before the first character where the names differ."""
    short = short_kernel(a), short_kernel(b)
    if short[0] != short[1]:
        return f"{short[0]} -> {short[1]}"
    common = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
    start = max(0, common - 24)
    return f"…{a[start : start + 48]} -> …{b[start : start + 48]}"


def _recorded(value: Any) -> Any:
    """None for what a side did not record: pandas fills a missing cell with NaN, which equals nothing."""
    return value if _known(value) else None


def change_kind(change: str) -> str:
    """The kind of a ``_change`` text, to group rows by: an attention backend change whole (a side's
    backends may be a comma-joined list), else the words before its first "," or ":"."""
    if change.startswith("attention backend "):
        return change
    return re.split(r"[,:]", change, maxsplit=1)[0]


def _timers(rows: pd.DataFrame) -> str:
    return "+".join(sorted({str(t) for t in rows["timer"]})) if "timer" in rows else "unknown"


def _errors(a: pd.DataFrame, b: pd.DataFrame) -> str:
    texts = [str(e) for e in pd.concat([a, b])["error"].dropna().unique()]
    return "; ".join(texts[:2]) or "no result"


def numerics(frame: pd.DataFrame, baseline: str, groups: Sequence[str]) -> pd.DataFrame:
    """Per (group, workload, dtype, knobs): error drift against fp64, the dtype's tolerance, digests,
    determinism, NaNs, and the gate's reading of them.

    Worse (the gate fails) when the candidate has more NaNs than the baseline; or is beyond the tolerance
    its measurement recorded for its precision while every baseline round is within it (the switch made
    it so); or its error grew past ``NUMERICS_MULTIPLIER`` x the baseline's + ``NUMERICS_TOLERANCE`` / 10.
    Beyond tolerance on both sides is reported, not gated: the switch did not change it."""
    none: pd.DataFrame = pd.DataFrame()
    if "rel_rmse" not in frame:
        return none
    checked = frame[frame["digest"].notna()]
    base_all = checked[checked["group"] == baseline]
    rows = []
    for group in groups:
        if group == baseline:
            continue
        mine_all = checked[checked["group"] == group]
        for key in _keys(mine_all):
            base, mine = _rows(base_all, key), _rows(mine_all, key)
            if base.empty:
                continue
            dtype = key[1]
            a, b = base["rel_rmse"].max(), mine["rel_rmse"].max()  # the worst round counts
            allowed = NUMERICS_MULTIPLIER[dtype] * a + NUMERICS_TOLERANCE[dtype] / 10
            nan_a, nan_b = int(base["nan_count"].fillna(0).max()), int(mine["nan_count"].fillna(0).max())
            beyond = _beyond(base), _beyond(mine)
            tolerance = _tolerance(mine)
            verdict, reason = "ok", ""
            if nan_b > nan_a:
                verdict, reason = "worse", f"{nan_b} NaN outputs where the baseline has {nan_a}"
            elif beyond[1] and not beyond[0]:
                verdict = "worse"
                reason = (
                    f"beyond its tolerance: error vs fp64 {b:.2e} > {_scientific(tolerance)} in "
                    f"{beyond[1]} of {len(mine)} rounds; every baseline round is within it ({a:.2e})"
                )
            elif _known(a) and _known(b) and b > allowed:
                verdict = "worse"
                reason = (
                    f"error vs fp64 {b:.2e} > {NUMERICS_MULTIPLIER[dtype]:g} x {a:.2e} "
                    f"+ {NUMERICS_TOLERANCE[dtype] / 10:g}"
                )
            elif not (_known(a) and _known(b)):
                verdict, reason = "unchecked", "no fp64 reference on one side"
            elif beyond[0] and beyond[1]:
                reason = (
                    f"beyond its tolerance {_scientific(tolerance)} on both sides: not changed by the switch"
                )
            rows.append(
                {
                    "group": group,
                    **dict(zip(KEYS, key, strict=True)),
                    "numerics": verdict,
                    "reason": reason,
                    "rel_rmse_baseline": a,
                    "rel_rmse_candidate": b,
                    "allowed": allowed,
                    "tolerance": tolerance,
                    "beyond_tolerance": _sides(beyond),
                    "same_digest": set(mine["digest"]) == set(base["digest"])
                    and len(set(base["digest"])) == 1,
                    "repeatable_baseline": bool(base["bitwise_repeatable"].all()),
                    "repeatable_candidate": bool(mine["bitwise_repeatable"].all()),
                    "nan_baseline": nan_a,
                    "nan_candidate": nan_b,
                }
            )
    table: pd.DataFrame = pd.DataFrame(rows)
    return table


def beyond_tolerance(frame: pd.DataFrame, groups: Sequence[str]) -> pd.DataFrame:
    """Every measurement (baseline included) beyond the tolerance it recorded for its precision, or
    with NaN or Inf outputs: one row per (group, workload, dtype, knobs) with how many rounds were."""
    columns = ["group", *KEYS, "rounds_beyond", "rounds", "rel_rmse", "tolerance", "nan", "inf"]
    none: pd.DataFrame = pd.DataFrame(columns=columns)
    if "within_tolerance" not in frame:
        return none
    checked = frame[frame["within_tolerance"].notna()]
    rows = []
    for group in groups:
        mine_all = checked[checked["group"] == group]
        for key in _keys(mine_all):
            mine = _rows(mine_all, key)
            if _beyond(mine):
                rows.append(
                    {
                        "group": group,
                        **dict(zip(KEYS, key, strict=True)),
                        "rounds_beyond": _beyond(mine),
                        "rounds": len(mine),
                        "rel_rmse": mine["rel_rmse"].max(),
                        "tolerance": _tolerance(mine),
                        "nan": int(mine["nan_count"].fillna(0).max()),
                        "inf": int(mine["inf_count"].fillna(0).max()) if "inf_count" in mine else 0,
                    }
                )
    table: pd.DataFrame = pd.DataFrame(rows, columns=columns)
    return table


def _beyond(rows: pd.DataFrame) -> int:
    """Rounds whose measurement says it is beyond its tolerance (None: the result does not say)."""
    if "within_tolerance" not in rows:
        return 0
    return int((rows["within_tolerance"] == False).sum())  # noqa: E712 (None is neither)


def _tolerance(rows: pd.DataFrame) -> float | None:
    values = rows["tolerance"].dropna() if "tolerance" in rows else pd.Series(dtype=float)
    return float(values.max()) if not values.empty else None


def _sides(beyond: tuple[int, int]) -> str | None:
    return {(True, True): "both", (True, False): "baseline", (False, True): "candidate"}.get(
        (bool(beyond[0]), bool(beyond[1]))
    )


def _scientific(value: float | None) -> str:
    return f"{value:.0e}" if value is not None else "its tolerance"


def _known(value: Any) -> bool:
    return value is not None and not (isinstance(value, float) and math.isnan(value))


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
            lines.append(f"  {verdict.upper()}: {r.group} {r.workload} {r.dtype} [{r.knobs}]: {r.reason}")
        if len(rows) > SUMMARY_ROWS:
            lines.append(
                f"  ... and {len(rows) - SUMMARY_ROWS} more {verdict} rows (the report lists every row)"
            )
    if worse:
        for r in numerics_rows[numerics_rows["numerics"] == "worse"].head(10).itertuples():
            lines.append(f"  NUMERICS: {r.group} {r.workload} {r.dtype} [{r.knobs}]: {r.reason}")
    for r in beyond.head(10).itertuples() if beyond is not None else []:
        lines.append(
            f"  BEYOND TOLERANCE: {r.group} {r.workload} {r.dtype} [{r.knobs}]: "
            f"error vs fp64 {r.rel_rmse:.2e} > {_scientific(r.tolerance)} "
            f"in {r.rounds_beyond} of {r.rounds} rounds"
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
            f"; {unsure} rows are inconclusive or missing: NOT evidence of no change (--strict fails on them)"
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


def document(
    *,
    name: str,
    baseline: str,
    groups: Sequence[str],
    labels: dict[str, str],
    alpha: float,
    default_pct: float,
    timing_rows: pd.DataFrame,
    numerics_rows: pd.DataFrame,
    beyond_tolerance: pd.DataFrame,
    autotuning: pd.DataFrame,
    result: Gate,
    rounds: dict[str, int],
    series: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The machine-readable verdict (schemas/verdict.schema.json)."""
    return {
        **({"series": series} if series is not None else {}),
        "schema_version": VERDICT_SCHEMA_VERSION,
        "name": name,
        "outcome": result.outcome,
        "exit_code": result.exit_code,
        "baseline": baseline,
        "groups": [{"id": g, "label": labels.get(g, g), "rounds_ok": rounds.get(g, 0)} for g in groups],
        "settings": {
            "alpha": alpha,
            "regression_pct": default_pct,
            "confidence": stats.CONFIDENCE,
            "test": "Mann-Whitney U, two-sided, on per-round medians (raw samples when one round)",
            "interval": "percentile bootstrap of the ratio of medians",
        },
        "counts": result.counts,
        "numerics_worse": result.numerics_worse,
        "failed_runs": list(result.failed_runs),
        "comparisons": _records(
            timing_rows[timing_rows["verdict"].notna()] if not timing_rows.empty else timing_rows
        ),
        "numerics": _records(numerics_rows),
        "beyond_tolerance": _records(beyond_tolerance),
        "autotuning": _records(autotuning),
    }


def _records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    records = frame.to_dict(orient="records")
    return [
        {str(k): (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in r.items()}
        for r in records
    ]
