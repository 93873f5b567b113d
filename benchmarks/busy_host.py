"""The main job on a quiet host and beside two CPU-bound jobs: its time, its rounds and its verdicts.

    python -m benchmarks.busy_host run --set loaded --runs 5 --out lab/evidence/busy-host/runs.jsonl
    python -m benchmarks.busy_host run --set quiet --runs 5 --out lab/evidence/busy-host/runs.jsonl
    python -m benchmarks.busy_host table lab/evidence/busy-host/runs.jsonl

``run`` runs README's main job (``qualify`` of the default ``matrix.yaml``: both cells on the CPU, 3
rounds, up to 11 for undecided rows) ``--runs`` times, each into a fresh folder, and appends one JSON line
a run to ``--out``: its wall time, exit code, the rounds it ran, its verdict counts, whether it stopped
early and why, the clock its rows were timed in, and the 1-minute load before and after. ``--set
loaded`` first starts ``--neighbours`` CPU-bound processes (``while True: pass``) and waits
``--settle-s`` for the load average to take them in, and stops them at the end; ``--set quiet`` first
waits up to ``--wait-s`` for the load to drop under ``--quiet-below`` (the load each run saw is in its
line either way). ``table`` prints the runs. About 2 to 4 minutes a run on the 2-core machine.
``--repo`` runs another checkout's harness on its own ``matrix.yaml`` (a worktree of an earlier commit),
so two versions can take turns; each line also gives the seconds its processes took (their results'
``duration_s``) and how many, which tells the suite's time from the orchestration's around it.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

SPIN = "while True: pass"
REPO = Path(__file__).resolve().parent.parent


def qualify(repo: Path) -> list[str]:
    return [sys.executable, "-m", "harness", "qualify", "--matrix", str(repo / "matrix.yaml")]


@contextmanager
def neighbours(count: int, settle_s: float) -> Iterator[None]:
    """``count`` CPU-bound processes beside what runs inside, the load average given ``settle_s`` to see
    them."""
    spinners = [subprocess.Popen([sys.executable, "-c", SPIN]) for _ in range(count)]
    try:
        if count:
            time.sleep(settle_s)
        yield
    finally:
        for spinner in spinners:
            spinner.kill()
            spinner.wait()


def processes_s(results: Path) -> tuple[int, float]:
    """How many result files ``results`` holds and the seconds their processes took."""
    durations = []
    for path in results.glob("*.r*.json.gz"):
        with gzip.open(path, "rt", encoding="utf-8") as f:
            durations.append(float(json.load(f).get("duration_s") or 0.0))
    return len(durations), sum(durations)


def one_run(work: Path, label: str, neighbours_count: int, repo: Path = REPO) -> dict[str, Any]:
    """One qualify of ``repo``'s default matrix into ``work``, as its JSON line."""
    load_before = os.getloadavg()[0]
    started = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime())
    began = time.perf_counter()
    done = subprocess.run(
        [*qualify(repo), "--out", str(work / "results"), "--report-out", str(work / "report")],
        capture_output=True,
        text=True,
        cwd=repo,
    )
    wall_s = time.perf_counter() - began
    load_after = os.getloadavg()[0]
    verdict_file = work / "report" / "verdict.json"
    verdict = json.loads(verdict_file.read_text()) if verdict_file.exists() else {}
    rows = verdict.get("comparisons", [])
    rounds = [int(p.name.split(".r")[-1].split(".")[0]) for p in (work / "results").glob("*.r*.json.gz")]
    stopped = re.search(r"stopped after (round 1|\d+ rounds): (.*)", done.stdout)
    processes, seconds = processes_s(work / "results")
    counts: dict[str, int] = {}
    for row in rows:
        counts[str(row["verdict"])] = counts.get(str(row["verdict"]), 0) + 1
    return {
        "set": label,
        "neighbours": neighbours_count,
        "started": started,
        "wall_s": round(wall_s, 1),
        "processes": processes,
        "processes_s": round(seconds, 1),
        "exit_code": done.returncode,
        "rounds": max(rounds, default=0),
        "verdicts": counts,
        "stopped": stopped.group(0) if stopped else None,
        "clock": sorted({str(r.get("clock")) for r in rows}),
        "load_before": round(load_before, 2),
        "load_after": round(load_after, 2),
        "last_lines": done.stdout.strip().splitlines()[-3:] + done.stderr.strip().splitlines()[-3:],
    }


def run(args: argparse.Namespace) -> int:
    count = args.neighbours if args.set == "loaded" else 0
    if args.set == "quiet":
        deadline = time.monotonic() + args.wait_s
        while os.getloadavg()[0] >= args.quiet_below and time.monotonic() < deadline:
            time.sleep(10)
    with neighbours(count, args.settle_s):
        for _ in range(args.runs):
            with tempfile.TemporaryDirectory() as work:
                line = one_run(Path(work), args.label or args.set, count, args.repo.resolve())
            with open(args.out, "a", encoding="utf-8") as out:
                out.write(json.dumps(line, sort_keys=True) + "\n")
            print(_row(line), flush=True)
    return 0


def _row(line: dict[str, Any]) -> str:
    verdicts = ", ".join(f"{n} {v}" for v, n in sorted(line["verdicts"].items())) or "none"
    stop = f"stopped after {line['rounds']}" if line["stopped"] else "ran on"
    inside = (
        f"{line['processes_s']:>7.1f} {line['processes']:>3}" if "processes_s" in line else f"{'':>7} {'':>3}"
    )
    return (
        f"{line['set']:8} {line['neighbours']:>2} {line['started']:19} {line['wall_s']:>7.1f} {inside} "
        f"{line['rounds']:>6} {stop:17} {line['exit_code']:>4}  {line['load_before']:>5.2f} "
        f"{line['load_after']:>5.2f}  {'+'.join(line['clock']):10} {verdicts}"
    )


def table(args: argparse.Namespace) -> int:
    lines = [json.loads(text) for text in Path(args.file).read_text().splitlines() if text.strip()]
    print(
        f"{'set':8} {'jobs':>2} {'started (UTC)':19} {'wall s':>7} {'proc s':>7} {'n':>3} {'rounds':>6} "
        f"{'':17} {'exit':>4}  "
        f"{'load before/after':>11}  {'clock':10} verdicts (22 rows)"
    )
    for line in lines:
        print(_row(line))
    for label in dict.fromkeys(line["set"] for line in lines):
        mine = [line for line in lines if line["set"] == label]
        walls = [line["wall_s"] for line in mine]
        same = sum(line["verdicts"].get("same", 0) == 22 for line in mine)
        stopped = sum(bool(line["stopped"]) for line in mine)
        print(
            f"{label}: {len(mine)} runs, wall {min(walls):.0f} to {max(walls):.0f} s (median "
            f"{statistics.median(walls):.0f}), all 22 rows same in {same}, stopped early in {stopped}"
        )
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.busy_host")
    sub = parser.add_subparsers(dest="command", required=True)
    runner = sub.add_parser("run")
    runner.add_argument("--set", choices=["quiet", "loaded"], required=True)
    runner.add_argument("--runs", type=int, default=5)
    runner.add_argument("--label", help="the set's name in the table (default: --set)")
    runner.add_argument("--neighbours", type=int, default=2)
    runner.add_argument("--settle-s", type=float, default=60.0)
    runner.add_argument("--quiet-below", type=float, default=0.5)
    runner.add_argument("--wait-s", type=float, default=600.0)
    runner.add_argument("--out", type=Path, required=True)
    runner.add_argument(
        "--repo", type=Path, default=REPO, help="the checkout whose harness runs (default: this)"
    )
    printer = sub.add_parser("table")
    printer.add_argument("file", type=Path)
    args = parser.parse_args()
    return run(args) if args.command == "run" else table(args)


if __name__ == "__main__":
    sys.exit(main())
