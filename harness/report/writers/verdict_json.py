"""verdict.json: the machine-readable verdict (``schemas/verdict.schema.json``)."""

from __future__ import annotations

import math

import pandas as pd

from harness.report.analysis import stats
from harness.report.analysis.families import to_json as families_json
from harness.report.analysis.model import Analysis, View

VERDICT_SCHEMA_VERSION = 1


def document(view: View, analysis: Analysis) -> dict[str, object]:
    """The machine-readable verdict (schemas/verdict.schema.json) of ``analysis``: the gate, every judged
    row, and where the analysis has them the release axis (``series``), each candidate against the
    baseline summed up by family (``families``), and each torch build's cuDNN sources against that build's
    cell with the baseline's source (``per_torch``)."""
    name, baseline, groups, labels = view.name, view.baseline, view.groups, view.labels
    alpha, default_pct, result = view.alpha, view.default_pct, analysis.gate
    timing_rows = analysis.timing
    rounds = {g: sum(d["status"] == "ok" for d, _ in e) for g, e in analysis.docs.items()}
    series = analysis.series.to_json() if analysis.series is not None else None
    families = families_json(analysis.families)
    per_torch = analysis.per_torch.to_json() if analysis.per_torch is not None else None
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
        "numerics": _records(analysis.numerics),
        "beyond_tolerance": _records(analysis.beyond_tolerance),
        "autotuning": _records(analysis.autotuning),
    }


def _records(frame: pd.DataFrame) -> list[dict[str, object]]:
    records = frame.to_dict(orient="records")
    return [
        {str(k): (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in r.items()}
        for r in records
    ]
