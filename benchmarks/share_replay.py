"""Issue 19: replay committed GPU processes through the suite's share rule, as it stands now.

    git archive 3c2b42d reports/qualify-cost/session-28 | tar -x -C /tmp   # those results are in git only
    python -m benchmarks.share_replay /tmp/reports/qualify-cost/session-28/lease-3-suite-0.8/new

A model, not a measurement: a rule for how long each measurement samples (``harness/suite/share.py``)
can be weighed on the CPU before a GPU lease tests it. Each process is replayed row by row, in its order:
its start-up and each row's cost outside its sampling loop as they were measured, and each loop's timed
share as measured, taken to hold at any length. The rule then decides each row's timed work:

- a loop at least ``ShareAsk.min_loop_share`` timed whose GPU did not rest for the power limit: the
  floor its share asks (``ShareAsk.at``; its loop capped at the floor's budget), where that is above
  the matrix's ``min_time_s``;
- a loop under it, its GPU not resting: ``share.SHORT_LOOP_S`` of timed work, its loop at least
  ``measure.SHARE_CHECK_S`` and at most the matrix's lengths;
- any other row: what the matrix's lengths give, the row's loop as measured where it ran to them, and
  otherwise (a floor or a short loop stopped it) its loop share times the time budget.

What it cannot know: a loop's share that falls as the loop grows (short kernels did, in session 28's
lease 4), and a noise target met early. Printed per process: measured and replayed wall time and timed
share; then the sums.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from benchmarks.qualify_cost import process_order, timed_work
from harness.results import documents
from harness.suite import share
from harness.suite.document import ResultDocument
from harness.suite.measure import SHARE_CHECK_S


def replay(doc: ResultDocument, budget_s: float, min_time_s: float, target: float) -> tuple[float, float]:
    """(wall s, timed s) of ``doc``'s process under the share rule of this checkout."""
    rows = [m for m in doc["measurements"] if m["status"] == "ok"]
    suite_s = doc.get("duration_s") or 0.0
    outside_s = max(0.0, doc["run"]["wall_s"] - suite_s)  # interpreter start and exit
    now = [max(0.0, suite_s - sum(m.get("wall_s", 0.0) for m in rows))]  # start-up inside the suite
    process = share.TimedShare(target, len(rows), started=0.0, clock=lambda: now[0])
    for m in rows:
        timed_s, loop_s = sum(m["samples_s"]), m.get("sampling_wall_s") or 0.0
        fixed_s = max(0.0, m.get("wall_s", 0.0) - loop_s)
        loop_share = timed_s / loop_s if loop_s > 0 else 1.0
        rested = bool(m.get("power_rest_s"))
        if "timed_floor_s" in m or m.get("stop_reason") == "short_loop":  # what the matrix's lengths give
            loop_s = min(loop_s, budget_s) if "timed_floor_s" in m else budget_s
        ask = process.ask(budget_s)
        if ask is not None and not rested:
            floor_s, floor_budget_s = ask.at(loop_share)
            if loop_share < ask.min_loop_share:
                loop_s = min(loop_s, max(SHARE_CHECK_S, share.SHORT_LOOP_S / loop_share))
            elif floor_s > min_time_s:
                loop_s = min(floor_budget_s, floor_s / loop_share)
        timed_s = loop_s * loop_share
        now[0] += fixed_s + loop_s
        process.add(timed_s, loop_s, fixed_s + loop_s, rested)
    return now[0] + outside_s, process.timed_s


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="+", type=Path, help="results folders of GPU processes")
    parser.add_argument("--time-budget-s", type=float, default=1.0, help="the matrix's (suite default)")
    parser.add_argument("--min-time-s", type=float, default=0.5, help="the matrix's (suite default)")
    parser.add_argument("--timed-share", type=float, default=0.5, help="the plan's (default)")
    args = parser.parse_args()
    for folder in args.folders:
        docs = sorted(documents.load(folder).documents, key=process_order)
        print(f"## {folder}: {len(docs)} processes")
        print(f"{'round':>5} {'cell':<44} {'measured':>17} {'replayed':>17}")
        sums = [0.0, 0.0, 0.0, 0.0]
        for doc in docs:
            wall = doc["run"]["wall_s"]
            timed = timed_work(doc)
            new_wall, new_timed = replay(doc, args.time_budget_s, args.min_time_s, args.timed_share)
            for i, v in enumerate((wall, timed, new_wall, new_timed)):
                sums[i] += v
            print(
                f"{doc['run'].get('round', 1):>5} {doc['cell']['id']:<44} {wall:7.1f} s {timed / wall:6.1%}"
                f" {new_wall:7.1f} s {new_timed / new_wall:6.1%}"
            )
        print(
            f"in all: measured {sums[0] / 60:.2f} GPU-minutes, {sums[1] / sums[0]:.1%} timed; "
            f"replayed {sums[2] / 60:.2f} GPU-minutes, {sums[3] / sums[2]:.1%} timed"
        )


if __name__ == "__main__":
    main()
