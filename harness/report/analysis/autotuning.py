"""cudnn_benchmark off against on within each group: what cuDNN's autotuner picked, and what it bought.

Where a group measured a workload x dtype with ``cudnn_benchmark`` both off and on (the other knobs
equal), the two are compared like a verdict row (per-round medians, the same test and threshold), with
"off" as the baseline (a busy host's rounds, or the GPU's two speeds, as there), and each side names the
kernel it ran: the autotuner may pick another algorithm, and may pick differently in each process.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pandas as pd

from harness.report.analysis import frames, row_verdicts, stats

COLUMNS = [
    "group",
    "workload",
    "dtype",
    "mode",
    "knobs",
    "verdict",
    "ratio",
    "ci_low",
    "ci_high",
    "p_value",
    "basis",
    "picked_off",
    "picked_on",
    "pick",
    "rounds_off",
    "rounds_on",
    "reason",
]


def compare(
    frame: pd.DataFrame,
    groups: Sequence[str],
    threshold_pct: Callable[[str], float],
    alpha: float,
    samples: dict[tuple[str, str, str, str], list[float]],
) -> pd.DataFrame:
    """One row per (group, workload, dtype, other knobs) measured with cudnn_benchmark off and on."""
    none: pd.DataFrame = pd.DataFrame(columns=COLUMNS)
    if frame.empty or "cudnn_benchmark" not in frame or "median_s" not in frame:
        return none
    ok = frame[(frame["status"] == "ok") & frame["workload"].notna()]
    rows = []
    for group in groups:
        mine = ok[ok["group"] == group]
        for (workload, dtype, deterministic, tf32), rows_of_key in mine.groupby(
            ["workload", "dtype", "deterministic", "tf32"], sort=False
        ):
            off = rows_of_key[rows_of_key["cudnn_benchmark"] == False]  # noqa: E712
            on = rows_of_key[rows_of_key["cudnn_benchmark"] == True]  # noqa: E712
            if off.empty or on.empty:
                continue
            pct, sides = threshold_pct(str(workload)), ("benchmark-off", "benchmark-on")
            if len(off) >= 2 and len(on) >= 2:
                result = stats.judge(list(off["median_s"]), list(on["median_s"]), pct, alpha, "rounds")
            else:
                a = [x for r in off.itertuples() for x in samples.get((r.file, workload, dtype, r.knobs), [])]
                b = [x for r in on.itertuples() for x in samples.get((r.file, workload, dtype, r.knobs), [])]
                result = stats.judge(a, b, pct, alpha, "samples")
            speeds = row_verdicts.two_speeds(off, on, pct, sides)
            verdict, reason, _ = row_verdicts.at_two_speeds(result.verdict, result.reason, result, speeds)
            spoiled = row_verdicts.stalled(off, on, sides)
            if spoiled:  # never a verdict from a busy host's timings, as in the verdict table
                verdict, reason = "inconclusive", f"busy host: {spoiled}"
            rows.append(
                {
                    "group": group,
                    "workload": workload,
                    "dtype": dtype,
                    "mode": frames.mode(dtype, f"tf32={int(bool(tf32))}"),
                    "knobs": f"deterministic={int(bool(deterministic))} tf32={int(bool(tf32))}",
                    "verdict": verdict,
                    "ratio": result.ratio,
                    "ci_low": result.ci_low,
                    "ci_high": result.ci_high,
                    "p_value": result.p_value,
                    "basis": result.basis,
                    "picked_off": frames.ran_name(off),
                    "picked_on": frames.ran_name(on),
                    "pick": _pick(off, on),
                    "rounds_off": len(off),
                    "rounds_on": len(on),
                    "reason": reason,
                }
            )
    table: pd.DataFrame = pd.DataFrame(rows, columns=COLUMNS)
    return table


def _pick(off: pd.DataFrame, on: pd.DataFrame) -> str | None:
    """``same`` where every round on both sides ran the same kernels, ``varies`` where the rounds of one
    side differ (the autotuner picked per process), ``changed`` where benchmarking picked other kernels."""
    if "ran" not in off or off["ran"].isna().any() or on["ran"].isna().any():
        return None
    a, b = set(off["ran"]), set(on["ran"])
    if len(a) > 1 or len(b) > 1:
        return "varies"
    return "same" if a == b else "changed"
