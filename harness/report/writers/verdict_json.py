"""verdict.json: the machine-readable verdict (``schemas/verdict.schema.json``)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import pandas as pd

from harness.report.analysis import stats
from harness.report.analysis.release_gate import Gate

VERDICT_SCHEMA_VERSION = 1


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
    families: list[dict[str, Any]] | None = None,
    per_torch: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """The machine-readable verdict (schemas/verdict.schema.json); ``families``: each candidate against the
    baseline, summed up by family (``report.families``); ``per_torch``: each torch build's cuDNN sources
    against that build's cell with the baseline's source (``report.per_torch``)."""
    return {
        **({"series": series} if series is not None else {}),
        **({"families": families} if families else {}),
        **({"per_torch": per_torch} if per_torch is not None else {}),
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
            "test": (
                "per row, its 'test': Mann-Whitney U, two-sided, on per-round medians (7 or more rounds a "
                "side); Welch's t on the logs of the round medians, 'same' by TOST (3 to 6 rounds); the raw "
                "samples of one process (one round)"
            ),
            "interval": (
                "per row, at its 'interval_level': a percentile bootstrap of the ratio of medians (Mann-"
                "Whitney, one round), Welch's 1 - 2 alpha interval of the ratio (3 to 6 rounds)"
            ),
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
