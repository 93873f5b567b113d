"""What recording what ran costs a cell: the suite with and without its profiled call, side by side.

    python -m benchmarks.what_ran_cost [--device cuda] [--profile smoke] [--dtypes bf16] [--pairs 2]

Each pair runs the same suite twice in fresh processes, once with the profiled call and once with
``--no-what-ran``, in alternating order; it prints each process's wall time, the median extra time per
cell and per measurement, and the sum of the ``profile_s`` the results record.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _run(out: Path, args: argparse.Namespace, what_ran: bool) -> tuple[float, int, float]:
    command = [
        sys.executable,
        "-m",
        "harness.suite",
        "run",
        "--out",
        str(out),
        "--device",
        args.device,
        "--profile",
        args.profile,
        "--dtypes",
        args.dtypes,
        "--time-budget-s",
        str(args.time_budget_s),
        "--no-numerics",
        *([] if what_ran else ["--no-what-ran"]),
    ]
    start = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True)
    wall = time.perf_counter() - start
    doc = json.loads(out.read_text())
    recorded = [m["what_ran"]["profile_s"] for m in doc["measurements"] if "what_ran" in m]
    return wall, len(doc["measurements"]), sum(recorded)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--profile", default="smoke")
    parser.add_argument("--dtypes", default="fp32")
    parser.add_argument("--time-budget-s", type=float, default=0.2)
    parser.add_argument("--pairs", type=int, default=2)
    args = parser.parse_args()
    on, off, profiled = [], [], []
    with tempfile.TemporaryDirectory() as scratch:
        for pair in range(args.pairs):
            for what_ran in (True, False) if pair % 2 == 0 else (False, True):
                wall, count, recorded = _run(Path(scratch) / "r.json", args, what_ran)
                (on if what_ran else off).append(wall)
                if what_ran:
                    profiled.append(recorded)
                print(
                    f"pair {pair + 1}: {'with' if what_ran else 'without':7} what_ran: {wall:7.2f} s "
                    f"({count} measurements" + (f", profile_s sum {recorded:.2f} s)" if what_ran else ")")
                )
    with_s, without_s = statistics.median(on), statistics.median(off)
    extra = with_s - without_s
    print(
        f"{args.device} {args.profile} {args.dtypes}: median wall with {with_s:.2f} s, "
        f"without {without_s:.2f} s: "
        f"+{extra:.2f} s per cell ({extra / without_s:+.1%}), +{extra / count * 1e3:.0f} ms per measurement; "
        f"recorded profile_s {statistics.median(profiled):.2f} s"
    )


if __name__ == "__main__":
    main()
