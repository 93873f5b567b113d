"""Figures from result files: A/A noise between two runs of one cell, and suite wall time per cell.

    python -m lab.studies.suite_figures aa A.json B.json      |median ratio - 1| over every measurement
    python -m lab.studies.suite_figures walltime R.json ...   wall time and the share spent in measured work

A/A: the same cell measured twice in separate processes; the target is a 95th percentile <= 1 %.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

from harness import jsonio


def _medians(path: Path) -> dict[tuple[str, str, str], float]:
    doc = jsonio.read(path)
    return {
        (m["workload"], m["dtype"], json.dumps(m["knobs"], sort_keys=True)): m["stats"]["median"]
        for m in doc["measurements"]
        if m["status"] == "ok"
    }


def aa(a: Path, b: Path) -> None:
    first, second = _medians(a), _medians(b)
    keys = sorted(first.keys() & second.keys())
    deviations = sorted(abs(second[k] / first[k] - 1) for k in keys)
    p95 = deviations[min(len(deviations) - 1, round(0.95 * (len(deviations) - 1)))]
    print(
        f"A/A over {len(keys)} measurements: |median ratio - 1| p50 {statistics.median(deviations):.3%}, "
        f"p95 {p95:.3%}, max {deviations[-1]:.3%}  (target p95 <= 1%: {'met' if p95 <= 0.01 else 'NOT met'})"
    )
    worst = sorted(keys, key=lambda k: abs(second[k] / first[k] - 1), reverse=True)[:8]
    for k in worst:
        print(
            f"  {k[0]:28} {k[1]:5} {second[k] / first[k] - 1:+.2%}  ({first[k] * 1e6:.1f} vs "
            f"{second[k] * 1e6:.1f} µs)"
        )


def walltime(paths: list[Path]) -> None:
    for path in paths:
        doc = jsonio.read(path)
        ok = [m for m in doc["measurements"] if m["status"] == "ok"]
        sampled = sum(sum(m["samples_s"]) for m in ok)
        sampling_wall = sum(m.get("sampling_wall_s", 0) for m in ok)
        print(
            f"{doc['cell']['id']}: wall {doc['duration_s']:.1f} s for {len(ok)} measurements "
            f"({len(doc['measurements']) - len(ok)} not measured); measured GPU work {sampled:.1f} s = "
            f"{sampled / doc['duration_s']:.1%} of the wall time; sampling loops {sampling_wall:.1f} s = "
            f"{sampling_wall / doc['duration_s']:.1%}"
        )


def main() -> None:
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="command", required=True)
    p_aa = sub.add_parser("aa")
    p_aa.add_argument("a", type=Path)
    p_aa.add_argument("b", type=Path)
    p_wall = sub.add_parser("walltime")
    p_wall.add_argument("results", type=Path, nargs="+")
    args = parser.parse_args()
    if args.command == "aa":
        aa(args.a, args.b)
    else:
        walltime(args.results)


if __name__ == "__main__":
    main()
