"""Issue 32 (6): how long the command line takes to answer ``--help``, the first thing a person runs.

    python -m benchmarks.cli_startup [--runs 10] [COMMAND ...]

Prints, for ``--help`` and each ``COMMAND --help`` (default: report, compare, run), the median and the
range of ``--runs`` fresh ``python -m harness`` processes, wall time from start to exit. A figure, not a
test: tests/test_cli_help.py checks instead that the parser loads none of the heavy libraries.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def seconds(args: list[str], runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "harness", *args], cwd=REPO, capture_output=True, check=True)
        times.append(time.perf_counter() - start)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("commands", nargs="*", default=["report", "compare", "run"])
    args = parser.parse_args()
    for command in [[], *([c] for c in args.commands)]:
        times = seconds([*command, "--help"], args.runs)
        print(
            f"python -m harness {' '.join([*command, '--help'])}: median {statistics.median(times):.3f} s "
            f"(min {min(times):.3f}, max {max(times):.3f}, {args.runs} runs)"
        )


if __name__ == "__main__":
    main()
