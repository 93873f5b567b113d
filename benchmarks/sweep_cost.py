"""What a release sweep cost, read from its results: GPU-minutes per release (cell) and per row.

    python -m benchmarks.sweep_cost lab/evidence/release-atlas/remaining-path [MORE_RESULTS_DIRS ...]

Per cell: its rounds, the processes' wall time (``run.wall_s``: the whole process, a wheel cell's first
round including the release's install into the cache), and what of that was the suite's own start (importing
torch, the cuDNN probe). Per row (workload x dtype): the measurement's own wall time (``wall_s``: inputs,
warm-up, what ran, sampling) summed over every process of the folders. A process's time outside its
measurements (start-up, numerics) is per process, not per row.
"""

from __future__ import annotations

import argparse
import statistics
from collections import defaultdict
from pathlib import Path

from tabulate import tabulate

from harness import jsonio
from harness.results import folder


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="+", type=Path)
    args = parser.parse_args()
    cells: dict[str, list[dict[str, float]]] = defaultdict(list)
    rows: dict[tuple[str, str], float] = defaultdict(float)
    for directory in args.folders:
        for path in folder.result_files(directory):
            doc = jsonio.read(path)
            label = (
                doc["cell"]["cudnn"] if isinstance(doc["cell"]["cudnn"], str) else str(doc["cell"]["cudnn"])
            )
            start = sum(doc.get("setup_s", {}).values())
            cells[f"{directory.name}: {label}"].append(
                {"round": doc["run"].get("round", 1), "wall": doc["run"]["wall_s"], "start": start}
            )
            for m in doc["measurements"]:
                rows[(m["workload"], m["dtype"])] += m.get("wall_s") or 0.0
    table = []
    for name, runs in cells.items():
        first = [r["wall"] for r in runs if r["round"] == 1]
        later = [r["wall"] for r in runs if r["round"] > 1]
        table.append(
            [
                name,
                len(runs),
                f"{sum(r['wall'] for r in runs) / 60:.2f}",
                f"{first[0]:.1f}" if first else "",
                f"{statistics.median(later):.1f}" if later else "",
                f"{statistics.median(r['start'] for r in runs):.1f}",
            ]
        )
    total = sum(r["wall"] for runs in cells.values() for r in runs)
    print(
        tabulate(
            table,
            headers=["cell", "rounds", "GPU-min", "round 1 s", "later rounds s (median)", "start s (median)"],
        )
    )
    print(f"\n{len(cells)} cells, {sum(map(len, cells.values()))} processes, {total / 60:.1f} GPU-minutes\n")
    print(
        tabulate(
            [[w, d, f"{s / 60:.2f}"] for (w, d), s in sorted(rows.items(), key=lambda kv: -kv[1])],
            headers=["workload", "dtype", "GPU-min (all processes)"],
        )
    )


if __name__ == "__main__":
    main()
