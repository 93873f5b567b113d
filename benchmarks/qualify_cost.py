"""Issue 19's proof: today's release qualification against the new one, same matrix, same GPU lease.

    python -m benchmarks.qualify_cost --matrix lab/evidence/qualify-cost/matrix.yaml --today .today \
        --work results/qualify-cost            # runs both, then prints
    git archive 3c2b42d reports/qualify-cost | tar -x -C /tmp     # the committed results (in git only)
    python -m benchmarks.qualify_cost --work /tmp/reports/qualify-cost   # prints from them

``--today``: a copy of the harness before issue 19 (``git archive acc8877 harness schemas | tar -x -C
.today``). Its ``qualify`` runs every round of the matrix (7) for every row with suite 0.5: a 2,000-sample
cap, 0.5 s of timed work before the noise target may stop sampling, a 200 us GPU sleep and a 256 MB L2
flush before each sample with the GPU idle while the host reads it, the fp64 numerics in every round,
and the exact Mann-Whitney test on 7+7 round medians. The new one is this checkout: ``qualify`` runs 3
rounds, then adds rounds (up to the matrix's) only for the rows still undecided, judged by Welch's t and
an equivalence test below 7 rounds; the suite (0.6 on) pipelines its samples, flushes the L2's size and
runs the numerics in a cell's first round, and suite 0.7 samples each measurement as long as its
process needs for half its wall time to be timed GPU work (``harness/suite/timing/share.py``).

Today's method runs first, then the new one, into ``WORK/today`` and ``WORK/new`` (reports beside them).
A run cut short (a device call's time limit) goes on where it stopped when the command is given again:
the harness keeps the valid results it finds. Printed from what the results recorded:

- GPU time per method: the sum of its suite processes' wall times (each result's ``run.wall_s``, from
  the process's start to its exit: the GPU is held that long), and the new method's share of today's;
- per process: the timed GPU work (the sum of its samples) as a share of its wall time;
- row by row: each method's verdict, ratio and rounds per side, and whether the verdicts agree.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

from harness.results import documents
from harness.suite.document import ResultDocument

METHODS = ("today", "new")


def run(method: str, matrix: Path, work: Path, today: Path) -> int:
    """One method's ``qualify`` into ``work``; its output appended to ``work/<method>.log``."""
    env, cwd = dict(os.environ), None
    if method == "today":  # run from the copy: 'python -m' puts the working folder first on sys.path
        env["PYTHONPATH"], cwd = str(today.resolve()), today.resolve()
    work = work.resolve()
    command = [sys.executable, "-m", "harness", "qualify", "--matrix", str(matrix.resolve())]
    command += ["--out", str(work / method), "--report-out", str(work / f"{method}-report")]
    work.mkdir(parents=True, exist_ok=True)
    print(f"# {method}: {' '.join(command)} (in {cwd or Path.cwd()})", flush=True)
    with open(work / f"{method}.log", "a") as log:
        done = subprocess.run(command, env=env, cwd=cwd, stdout=log, stderr=subprocess.STDOUT, check=False)
    return done.returncode


def timed_work(doc: ResultDocument) -> float:
    """The process's timed GPU work: the sum of its samples."""
    return sum(sum(m.get("samples_s", ())) for m in doc["measurements"] if m["status"] == "ok")


def process_order(doc: ResultDocument) -> tuple[int, str]:
    return doc["run"].get("round", 1), doc["cell"]["id"]


def processes(results: Path) -> list[tuple[str, int, float, float]]:
    """(cell, round, process wall s, timed GPU work s) of each result, by round and cell."""
    docs = sorted(documents.load(results).documents, key=process_order)
    return [(d["cell"]["id"], d["run"].get("round", 1), d["run"]["wall_s"], timed_work(d)) for d in docs]


def verdicts(report: Path) -> dict[tuple[str, str, str, str], dict[str, object]]:
    rows = json.loads((report / "verdict.json").read_text())["comparisons"]
    return {(r["group"], r["workload"], r["dtype"], r["knobs"]): r for r in rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--matrix", type=Path, help="run both methods on it first (omit: only print)")
    parser.add_argument("--today", type=Path, default=Path(".today"), help="the harness before issue 19")
    parser.add_argument("--work", type=Path, required=True, help="results and reports of both methods")
    args = parser.parse_args()
    if args.matrix is not None:
        for method in METHODS:
            code = run(method, args.matrix, args.work, args.today)
            print(f"# {method}: qualify exit {code}", flush=True)
            if code not in (0, 1):
                sys.exit(f"{method}'s qualify did not finish (exit {code}); give the command again to go on")

    print("## GPU time: the suite processes' wall times")
    spent = {}
    for method in METHODS:
        runs = processes(args.work / method)
        spent[method] = sum(p[2] for p in runs)
        shares = [p[3] / p[2] for p in runs]
        print(
            f"{method}: {len(runs)} processes, {spent[method] / 60:.2f} GPU-minutes; timed GPU work per "
            f"process: median {statistics.median(shares):.1%}, min {min(shares):.1%}, max {max(shares):.1%}; "
            f"in all {sum(p[3] for p in runs) / spent[method]:.1%}"
        )
        for cell, round_index, wall, timed in runs:
            print(f"    round {round_index} {cell}: {wall:6.1f} s, timed {timed:5.1f} s ({timed / wall:.1%})")
    print(f"new / today: {spent['new'] / spent['today']:.3f} of the GPU time")

    print("## Verdicts, row by row")
    rows = {method: verdicts(args.work / f"{method}-report") for method in METHODS}
    agree = 0
    print(
        "| candidate | workload | dtype | today | ratio | rounds | new | ratio | rounds | agree "
        "| baseline median today -> new |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for key in rows["today"]:
        a, b = rows["today"][key], rows["new"].get(key, {})
        same = a["verdict"] == b.get("verdict")
        agree += same
        print(
            f"| {key[0].split('_')[1]} | {key[1]} | {key[2]} | {a['verdict']} | {_ratio(a)} | {_rounds(a)} | "
            f"{b.get('verdict', 'absent')} | {_ratio(b)} | {_rounds(b)} | {'yes' if same else 'NO'} | "
            f"{_medians(a, b)} |"
        )
    print(f"verdicts agree in {agree} of {len(rows['today'])} rows")


def _ratio(row: dict[str, object]) -> str:
    ratio = row.get("ratio")
    return f"{ratio:.3f}" if isinstance(ratio, float) else ""


def _medians(a: dict[str, object], b: dict[str, object]) -> str:
    """The baseline's median under each method's timer: what the new sampling changed in the numbers."""
    x, y = a.get("median_baseline_s"), b.get("median_baseline_s")
    if not (isinstance(x, float) and isinstance(y, float)):
        return ""
    return f"{x * 1e6:.1f} -> {y * 1e6:.1f} us ({y / x:.3f})"


def _rounds(row: dict[str, object]) -> str:
    return f"{row.get('rounds_baseline', '')}+{row.get('rounds_candidate', '')}" if row else ""


if __name__ == "__main__":
    main()
