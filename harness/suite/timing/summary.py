"""The summary statistics of a measurement's samples: standard library only, so the orchestrator recomputes
them from a result's raw samples with the same arithmetic and refuses a document whose stats disagree."""

from __future__ import annotations

import statistics

from harness.suite.document import Stats


def summarize(samples: list[float]) -> Stats:
    if len(samples) > 1:
        q1, median, q3 = statistics.quantiles(samples, n=4, method="inclusive")
    else:  # Python before 3.13 refuses quartiles of one value
        q1 = median = q3 = samples[0]
    mean = statistics.fmean(samples)
    stdev = statistics.stdev(samples) if len(samples) > 1 else 0.0
    return {
        "n": len(samples),
        "min": min(samples),
        "q1": q1,
        "median": median,
        "q3": q3,
        "max": max(samples),
        "mean": mean,
        "stdev": stdev,
        "rel_stdev": stdev / mean if mean > 0 else 0.0,
        "rel_iqr": (q3 - q1) / median if median > 0 else 0.0,
    }
