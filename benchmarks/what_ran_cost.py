"""What recording what ran costs a cell: the suite with and without its profiled call, side by side.

    python -m benchmarks.what_ran_cost [--device cuda] [--profile smoke] [--dtypes bf16] [--pairs 2]

Each pair runs the same suite twice in fresh processes, once with the profiled call and once with
``--no-what-ran``, in alternating order. It prints each process's wall time, the median extra time per
cell and per measurement, the sum of the ``profile_s`` the results record, and whether the profiled
calls moved the timings that follow them: |median ratio - 1| between the two runs of a pair, as A/A.
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _run(out: Path, args: argparse.Namespace, what_ran: bool) -> tuple[float, dict[str, float], float]:
    command = [
        sys.executable, "-m", "harness.suite", "run", "--out", str(out), "--device", args.device,
        "--profile", args.profile, "--dtypes", args.dtypes, "--time-budget-s", str(args.time_budget_s),
        "--no-numerics", *([] if what_ran else ["--no-what-ran"]),
    ]  # fmt: skip
    start = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True)
    wall = time.perf_counter() - start
    doc = json.loads(out.read_text())
    recorded = sum(m["what_ran"]["profile_s"] for m in doc["measurements"] if "what_ran" in m)
    medians = {
        f"{m['workload']} {m['dtype']}": m["stats"]["median"] for m in doc["measurements"] if "stats" in m
    }
    return wall, medians, recorded


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--profile", default="smoke")
    parser.add_argument("--dtypes", default="fp32")
    parser.add_argument("--time-budget-s", type=float, default=0.2)
    parser.add_argument("--pairs", type=int, default=2)
    args = parser.parse_args()
    walls: dict[bool, list[float]] = {True: [], False: []}
    profiled: list[float] = []
    deviations: list[float] = []
    plain: list[dict[str, float]] = []  # every run without the profiled call: the A/A reference
    with tempfile.TemporaryDirectory() as scratch:
        for pair in range(args.pairs):
            medians: dict[bool, dict[str, float]] = {}
            for what_ran in (True, False) if pair % 2 == 0 else (False, True):
                wall, medians[what_ran], recorded = _run(Path(scratch) / "r.json", args, what_ran)
                walls[what_ran].append(wall)
                if what_ran:
                    profiled.append(recorded)
                print(
                    f"pair {pair + 1}: {'with' if what_ran else 'without':7} what_ran: {wall:7.2f} s "
                    f"({len(medians[what_ran])} measurements"
                    + (f", profile_s sum {recorded:.2f} s)" if what_ran else ")")
                )
            plain.append(medians[False])
            both = medians[True].keys() & medians[False].keys()
            deviations += [abs(medians[True][k] / medians[False][k] - 1) for k in both]
    with_s, without_s = statistics.median(walls[True]), statistics.median(walls[False])
    extra, count = with_s - without_s, len(both)
    print(
        f"{args.device} {args.profile} {args.dtypes}: median wall with {with_s:.2f} s, "
        f"without {without_s:.2f} s: +{extra:.2f} s per cell ({extra / without_s:+.1%}), "
        f"+{extra / count * 1e3:.0f} ms per measurement; "
        f"recorded profile_s {statistics.median(profiled):.2f} s"
    )
    print(f"timings with against without the profiled call: {_spread(deviations)}")
    reference = [abs(b[k] / a[k] - 1) for a, b in itertools.pairwise(plain) for k in a.keys() & b.keys()]
    if reference:
        print(f"A/A, without it in both processes, for reference: {_spread(reference)}")


def _spread(deviations: list[float]) -> str:
    ordered = sorted(deviations)
    p95 = ordered[round(0.95 * (len(ordered) - 1))]
    return (
        f"|median ratio - 1| over {len(ordered)} pairs: p50 {statistics.median(ordered):.2%}, p95 {p95:.2%}"
    )


if __name__ == "__main__":
    main()
