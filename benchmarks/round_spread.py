"""Issue 19: does a row's spread between rounds shrink when each round samples longer?

    git archive 3c2b42d reports/qualify-cost | tar -x -C /tmp     # qualify-cost/new is in git only
    python -m benchmarks.round_spread reports/qualify-cost/today /tmp/reports/qualify-cost/new

For each committed results folder: every row with 3 or more rounds, and the standard deviation of the
logs of its round medians (in %) where each round's median is taken over its first 0.25, 0.5 or 1 s of
timed work, or over every sample. The verdicts rest on that spread (``harness.report.stats``); if it does
not shrink with the sampling length, a measurement need sample no longer than other reasons ask.
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

import numpy as np

from benchmarks.early_verdicts import prefix_median
from harness.results import documents

PREFIXES: tuple[float | None, ...] = (0.25, 0.5, 1.0, None)


def spread(folder: Path) -> dict[tuple[str, str, str], list[float]]:
    """Row -> the log-spread (%) of its round medians at each of PREFIXES."""
    rounds: dict[tuple[str, str, str], list[list[float]]] = {}
    for doc in documents.load(folder).documents:
        for m in doc["measurements"]:
            if m["status"] == "ok":
                key = (doc["cell"]["id"], m["workload"], m["dtype"])
                rounds.setdefault(key, []).append(m["samples_s"])
    out = {}
    for key, sampled in rounds.items():
        if len(sampled) >= 3:
            out[key] = [
                100
                * float(np.std(np.log([prefix_median(s, p) if p else np.median(s) for s in sampled]), ddof=1))
                for p in PREFIXES
            ]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="+", type=Path)
    args = parser.parse_args()
    head = " ".join(f"{f'{p:g} s' if p else 'all':>7}" for p in PREFIXES)
    for folder in args.folders:
        rows = spread(folder)
        print(f"## {folder}: {len(rows)} rows; sd of log round medians (%), by timed work sampled")
        print(f"{'cell':42} {'workload':26} {'dtype':5} {head}")
        for (cell, workload, dtype), values in sorted(rows.items()):
            print(f"{cell[:42]:42} {workload:26} {dtype:5} " + " ".join(f"{v:7.2f}" for v in values))
        means = [statistics.mean(v[i] for v in rows.values()) for i in range(len(PREFIXES))]
        print(f"{'mean over rows':74} " + " ".join(f"{v:7.3f}" for v in means))


if __name__ == "__main__":
    main()
