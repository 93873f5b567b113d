"""Issue 19: can fewer rounds give the same verdicts? Resampling committed H100 rounds of suite 0.5.

    git archive ce74bb4 reports/qualify-cost/today | tar -x -C /tmp   # removed from the tree, in git there
    python -m lab.studies.early_verdicts [--trials 300] [--timed-prefix 0.5] [--today DIR]

Today a row's verdict needs 7 rounds (processes) per side: the exact Mann-Whitney U test on per-round
medians cannot reach p < 0.002 with fewer. ``harness.report.analysis.stats.judge`` now judges fewer rounds
(3 or more per side) by Welch's t on the logs of the round medians (slower/faster: significant and beyond the
threshold) and an equivalence test (TOST: same when the 1 - 2 alpha interval of the ratio lies inside
the threshold); ``qualify`` runs 3 rounds per side and adds rounds, up to 7, for the rows still
undecided. This resamples that rule, called exactly as the report calls it.

Data, all suite 0.5 on one H100 a lease: gpu-verdicts (3 cells x 7 rounds, session 25) and
qualify-cost/today (2 cells x 7 rounds, session 26, today's method in issue 19's proof). For each trial
the rounds used are drawn without replacement. Printed:
- agreement with the 7+7 Mann-Whitney verdicts of those two runs (each candidate against its baseline);
- A/A false positives: the baseline cell's 14 rounds (7 from each lease) split at random into two sides;
- planted changes: one side of such a split multiplied by 1.05 and by 1.10 (found = called slower;
  flagged = not called same, i.e. slower or inconclusive);
- the rounds each plan spends per row, against 7.

``--timed-prefix S``: each round's median is taken over the samples of its first S seconds of timed work
only, which is what a measurement that sampled S seconds would have kept: does shorter sampling cost
verdicts? (Suite 0.7 asks of each measurement only the timed work its process's share needs.)
"""

from __future__ import annotations

import argparse
import random
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import numpy as np

from harness.report.analysis import frames, stats
from harness.report.analysis.stats import Verdict
from harness.results import documents

REPO = Path(__file__).resolve().parents[2]
ALPHA, THRESHOLD = 0.002, 5.0
Key = tuple[str, str, str, str]  # group, workload, dtype, knobs
Plan = Callable[[list[float], list[float]], tuple[Verdict, int]]  # a verdict and the rounds a side it used


def sequential(a: list[float], b: list[float], start: int = 3, most: int = 7) -> tuple[Verdict, int]:
    """Verdict and rounds per side: 3, then one more per side while undecided, up to 7."""
    n = start
    while True:
        verdict = stats.judge(a[:n], b[:n], THRESHOLD, ALPHA).verdict
        if verdict != "inconclusive" or n >= most:
            return verdict, n
        n += 1


def prefix_median(samples: list[float], prefix_s: float) -> float:
    """The median of the samples up to the first ``prefix_s`` seconds of timed work (10 at least)."""
    timed = np.cumsum(samples)
    return float(np.median(samples[: max(10, int(np.searchsorted(timed, prefix_s)) + 1)]))


def rounds(folders: list[Path], prefix_s: float | None = None) -> dict[Key, list[float]]:
    loaded = documents.load_many(folders)
    if prefix_s is not None:
        for doc in loaded.documents:
            for m in doc["measurements"]:
                if m["status"] == "ok":
                    m["stats"]["median"] = prefix_median(m["samples_s"], prefix_s)
    frame = frames.long_form(loaded)
    ok = frame[frame["status"] == "ok"]
    out: dict[Key, list[float]] = {}
    for (group, workload, dtype, knobs), rows in ok.groupby(
        ["group", "workload", "dtype", "knobs"], sort=False
    ):
        out[(str(group), str(workload), str(dtype), str(knobs))] = [float(m) for m in rows["median_s"]]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=300)
    parser.add_argument("--timed-prefix", type=float, help="round medians of the first S s of timed work")
    parser.add_argument(
        "--today",
        type=Path,
        default=Path("/tmp/reports/qualify-cost/today"),
        help="session 26's qualify-cost/today results (git archive ce74bb4 reports/qualify-cost/today)",
    )
    args = parser.parse_args()
    rng = random.Random(20261123)
    runs = [
        sorted((REPO / "lab" / "evidence" / "gpu-verdicts").glob("results-shard*")),
        [args.today],
    ]
    rows: list[tuple[Key, list[float], list[float], Verdict]] = []  # key, baseline, candidate, 7+7 verdict
    aa_sides: list[dict[tuple[str, str, str], list[float]]] = []  # the baseline's rows, without the group
    for folders in runs:
        every_sample = rounds(folders)
        main_rounds = rounds(folders, args.timed_prefix) if args.timed_prefix else every_sample
        baseline = next(k[0] for k in main_rounds if "bundled" in k[0])
        for k, b in main_rounds.items():
            base = (baseline, *k[1:])
            a = main_rounds[base]
            if k[0] != baseline and len(a) >= 7 and len(b) >= 7:  # the verdict of every sample's medians
                reference = stats.judge(every_sample[base], every_sample[k], THRESHOLD, ALPHA).verdict
                rows.append((k, a, b, reference))
        aa_sides.append({k[1:]: v for k, v in main_rounds.items() if k[0] == baseline})
    print(
        f"{len(rows)} candidate rows of gpu-verdicts and qualify-cost/today (7+7 rounds each), "
        f"{args.trials} trials per row; round medians of "
        + (f"the first {args.timed_prefix:g} s of timed work" if args.timed_prefix else "every sample")
    )

    plans: dict[str, Plan] = {
        "3+3 only": lambda a, b: (stats.judge(a[:3], b[:3], THRESHOLD, ALPHA).verdict, 3),
        "sequential 3..7": sequential,
    }
    for name, plan in plans.items():
        agree: Counter[bool] = Counter()
        called: Counter[tuple[Verdict, Verdict]] = Counter()  # (reference, got)
        spent: list[int] = []
        for _key, a, b, reference in rows:
            for _ in range(args.trials):
                verdict, n = plan(rng.sample(a, len(a)), rng.sample(b, len(b)))
                agree[verdict == reference] += 1
                called[(reference, verdict)] += 1
                spent.append(n)
        total = sum(agree.values())
        wrong = sum(
            v for (ref, got), v in called.items() if got in ("slower", "faster", "same") and got != ref
        )
        print(
            f"{name}: agrees with the 7+7 verdict (every sample) in {agree[True] / total:.1%} of {total} "
            "trials; "
            f"a different decided verdict in {wrong / total:.2%}; rounds per side {np.mean(spent):.2f} of 7"
        )
        print("    (reference, got): " + ", ".join(f"{r}->{g} {v}" for (r, g), v in sorted(called.items())))

    pooled = {k: v + aa_sides[1].get(k, []) for k, v in aa_sides[0].items()}
    pooled = {k: v for k, v in pooled.items() if len(v) >= 14}
    print(f"A/A and planted changes: {len(pooled)} rows of the baseline cell with 14 rounds (two leases)")
    for name, plan in plans.items():
        for planted in (1.0, 1.05, 1.10):
            counts: Counter[Verdict] = Counter()
            spent = []
            for values in pooled.values():
                for _ in range(args.trials):
                    shuffled = rng.sample(values, len(values))
                    a, b = shuffled[:7], [x * planted for x in shuffled[7:14]]
                    verdict, n = plan(a, b)
                    counts[verdict] += 1
                    spent.append(n)
            total = sum(counts.values())
            what = (
                "false positives (slower or faster)" if planted == 1.0 else f"x{planted:.2f} found (slower)"
            )
            rate = (counts["slower"] + counts["faster"]) if planted == 1.0 else counts["slower"]
            flagged = "" if planted == 1.0 else f"flagged {1 - counts['same'] / total:.2%}; "
            print(
                f"  {name}, planted x{planted:.2f}: {what} {rate / total:.2%}; {flagged}"
                f"same {counts['same'] / total:.1%}, inconclusive {counts['inconclusive'] / total:.1%}; "
                f"rounds per side {np.mean(spent):.2f}"
            )
    for planted in (1.0, 1.05, 1.10):  # today's method on the same splits, for reference
        counts = Counter()
        for values in pooled.values():
            for _ in range(max(20, args.trials // 10)):  # the bootstrap makes each call slow
                shuffled = rng.sample(values, len(values))
                counts[
                    stats.judge(shuffled[:7], [x * planted for x in shuffled[7:14]], THRESHOLD, ALPHA).verdict
                ] += 1
        total = sum(counts.values())
        print(
            f"  today's 7+7 Mann-Whitney, planted x{planted:.2f}: "
            + ", ".join(f"{v} {n / total:.1%}" for v, n in counts.most_common())
        )


if __name__ == "__main__":
    main()
