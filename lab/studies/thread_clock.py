"""Wall time against the thread's own CPU time on a busy CPU: does thread CPU time hold where wall does not?

    python -m lab.studies.thread_clock [--processes 4] [--neighbours 0 1 2] [--profile smoke]

For each round, for each neighbour count N (interleaved: 0, 1, 2, 0, 1, 2, ...), starts N CPU-bound
processes (``while True: pass``), runs one suite process of the profile on the CPU (the suite's own timer,
one intra-op thread, 5 windows a row), and stops them. Every CPU sample reads both clocks around the same
call (``harness/suite/timing/timer.py``): a measurement's ``stats`` are in the clock it is judged in
(``host.CPU_CLOCK``), ``thread_cpu_stats`` or ``wall_stats`` in the other, over the windows the suite
kept. Prints, per neighbour count and clock, how far a row's median
moves between the processes of one count (its spread: max / min - 1; what a verdict between two cells
measured alike has to see through) and how far from the quiet median (shift), the median and the worst
over rows, then each row. The load is the 1-minute average before each process. Standard library and
the harness; about 20 s a process on the 2-core machine.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SPIN = "while True: pass"
SUITE = [sys.executable, "-m", "harness.suite", "run", "--device", "cpu", "--time-budget-s", "0.2"]
KNOBS = '[{"cudnn_benchmark": false, "deterministic": false, "tf32": false}]'


def one_process(out: Path, profile: str, neighbours: int) -> tuple[dict[str, tuple[float, float]], float]:
    """The medians (thread CPU, wall) of each row of one suite process run beside ``neighbours`` spinners,
    and the load before it."""
    spinners = [subprocess.Popen([sys.executable, "-c", SPIN]) for _ in range(neighbours)]
    try:
        time.sleep(1.0)  # the spinners are running, the load average is not yet theirs
        load = os.getloadavg()[0]
        subprocess.run(
            [*SUITE, "--out", str(out), "--profile", profile, "--knobs", KNOBS],
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
    finally:
        for spinner in spinners:
            spinner.kill()
            spinner.wait()
    doc = json.loads(out.read_text())
    rows = {}
    for m in doc["measurements"]:
        if m["status"] == "ok" and m.get("clock"):
            wall = m["stats"] if m["clock"] == "wall" else m["wall_stats"]
            thread = m["stats"] if m["clock"] == "thread_cpu" else m["thread_cpu_stats"]
            rows[f"{m['workload']} {m['dtype']}"] = (thread["median"], wall["median"])
    return rows, load


def spread(values: list[float]) -> float:
    return max(values) / min(values) - 1


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m lab.studies.thread_clock")
    parser.add_argument("--processes", type=int, default=4, help="suite processes per neighbour count")
    parser.add_argument("--neighbours", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--profile", default="smoke")
    args = parser.parse_args()
    runs: dict[int, list[dict[str, tuple[float, float]]]] = {n: [] for n in args.neighbours}
    loads: dict[int, list[float]] = {n: [] for n in args.neighbours}
    began = time.perf_counter()
    with tempfile.TemporaryDirectory() as work:
        for index in range(args.processes):
            for n in args.neighbours:
                measured, load = one_process(Path(work) / f"p{index}n{n}.json", args.profile, n)
                runs[n].append(measured)
                loads[n].append(load)
    rows = [r for r in runs[args.neighbours[0]][0] if all(r in p for ps in runs.values() for p in ps)]
    quiet = args.neighbours[0]
    print(f"{os.cpu_count()} cores; {args.processes} suite processes per neighbour count, interleaved; ")
    print(f"profile {args.profile}, {len(rows)} rows; {time.perf_counter() - began:.0f} s in all")
    print("spread: a row's max / min - 1 over the processes of one count; shift: its median over them")
    print(f"against its median with {quiet} neighbours. p50 and max over rows.\n")
    print(f"{'neighbours':>10} {'load (each process)':>26}  {'clock':10} {'spread p50':>10} {'max':>7}")
    print(f"{'':>10} {'':>26}  {'':10} {'shift p50':>10} {'max':>7}")
    figures: dict[tuple[int, int], dict[str, tuple[float, float]]] = {}
    for n in args.neighbours:
        each = " ".join(f"{x:.1f}" for x in loads[n])
        for clock, name in ((0, "thread_cpu"), (1, "wall")):
            per_row = {}
            for r in rows:
                medians = [p[r][clock] for p in runs[n]]
                base = statistics.median(p[r][clock] for p in runs[quiet])
                per_row[r] = (spread(medians), statistics.median(medians) / base - 1)
            figures[(n, clock)] = per_row
            spreads = [s for s, _ in per_row.values()]
            shifts = [abs(s) for _, s in per_row.values()]
            print(
                f"{n:>10} {each:>26}  {name:10} {statistics.median(spreads):>9.1%} {max(spreads):>7.1%}"
                f"   shift {statistics.median(shifts):>6.1%} {max(shifts):>7.1%}"
            )
    print("\nper row: spread thread_cpu / wall at each neighbour count")
    print(f"{'row':26}" + "".join(f" {f'{n} beside':>17}" for n in args.neighbours))
    for r in rows:
        cells = "".join(
            f" {figures[(n, 0)][r][0]:>7.1%} /{figures[(n, 1)][r][0]:>7.1%}" for n in args.neighbours
        )
        print(f"{r:26}{cells}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
