"""Issue 19, measured first: can fewer rounds give the same verdicts? Resampling the committed H100 rounds.

    python -m benchmarks.early_verdicts [--trials 300]

Today a row's verdict needs 7 rounds (processes) per side: the exact Mann-Whitney U test on per-round
medians cannot reach p < 0.002 with fewer. The candidate here tests the per-round medians' logarithms
with Welch's t (slower/faster: significant and beyond the threshold, as today) and an equivalence test
(TOST: same when the 1 - 2 alpha interval of the ratio lies inside the threshold), which can decide with 3
rounds per side where the rounds agree closely; a sequential plan runs 3 rounds per side and adds rounds
(up to 7) only for the rows still undecided.

Data: gpu-verdicts-suite-0.3 (3 cells x 7 rounds, one H100 per lease) and gpu-verdicts-aa (the baseline
cell, 7 more rounds), both suite 0.3 so that the A/A splits mix rounds of one timer. For each resampling
trial the rounds used are drawn without replacement. Printed:
- agreement with the 7+7 Mann-Whitney verdicts of gpu-verdicts-suite-0.3 (B and C against A), per plan;
- A/A false positives: the 14 rounds of the baseline cell split at random into two sides;
- planted changes: one side of such a split multiplied by 1.05 and by 1.10 (found = called slower);
- the rounds each plan spends per row, against 7.
"""

from __future__ import annotations

import argparse
import math
import random
from collections import Counter
from pathlib import Path

import numpy as np
from scipy import stats as scistats

from harness.report import frames, stats
from harness.results import documents

REPO = Path(__file__).resolve().parent.parent
ALPHA, THRESHOLD = 0.002, 5.0


def welch(a: list[float], b: list[float], alpha: float = ALPHA, pct: float = THRESHOLD) -> str:
    x, y = np.log(a), np.log(b)
    diff = float(y.mean() - x.mean())
    va, vb = x.var(ddof=1) / len(x), y.var(ddof=1) / len(y)
    se = math.sqrt(va + vb)
    bound = math.log(1 + pct / 100)
    if se == 0:
        return "same" if abs(diff) < bound else ("slower" if diff > 0 else "faster")
    df = (va + vb) ** 2 / (va**2 / (len(x) - 1) + vb**2 / (len(y) - 1))
    p = 2 * scistats.t.sf(abs(diff) / se, df)
    ratio = round(math.exp(diff), stats.RATIO_DIGITS)
    if p < alpha and ratio >= round(1 + pct / 100, stats.RATIO_DIGITS):
        return "slower"
    if p < alpha and ratio <= round(1 / (1 + pct / 100), stats.RATIO_DIGITS):
        return "faster"
    half = scistats.t.ppf(1 - alpha, df) * se  # TOST at alpha: the 1 - 2 alpha interval inside the bounds
    if -bound < diff - half and diff + half < bound:
        return "same"
    return "inconclusive"


def sequential(a: list[float], b: list[float], start: int = 3, most: int = 7) -> tuple[str, int]:
    """Verdict and rounds per side: 3, then one more per side while undecided, up to 7."""
    n = start
    while True:
        verdict = welch(a[:n], b[:n]) if n < most else stats.judge(a[:n], b[:n], THRESHOLD, ALPHA).verdict
        if verdict != "inconclusive" or n >= most:
            return verdict, n
        n += 1


def rounds(folders: list[Path]) -> dict[tuple[str, str, str, str], list[float]]:
    frame = frames.long_form(documents.load_many(folders))
    ok = frame[frame["status"] == "ok"]
    out: dict[tuple[str, str, str, str], list[float]] = {}
    for (group, workload, dtype, knobs), rows in ok.groupby(
        ["group", "workload", "dtype", "knobs"], sort=False
    ):
        out[(str(group), str(workload), str(dtype), str(knobs))] = [float(m) for m in rows["median_s"]]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=300)
    args = parser.parse_args()
    rng = random.Random(20261123)
    verdicts = sorted((REPO / "reports" / "gpu-verdicts-suite-0.3").glob("results-shard*"))
    main_rounds = rounds(verdicts)
    aa_rounds = rounds([REPO / "reports" / "gpu-verdicts-aa" / "results"])
    baseline = next(k[0] for k in main_rounds if "bundled" in k[0])
    rows = [(k, main_rounds[(baseline, *k[1:])], v) for k, v in main_rounds.items() if k[0] != baseline]
    rows = [(k, a, b) for k, a, b in rows if len(a) >= 7 and len(b) >= 7]
    print(
        f"{len(rows)} candidate rows of gpu-verdicts-suite-0.3 (7+7 rounds each), "
        f"{args.trials} trials per row"
    )

    plans = {"welch 3+3": lambda a, b: (welch(a[:3], b[:3]), 3), "sequential 3..7": sequential}
    for name, plan in plans.items():
        agree, called, spent = Counter(), Counter(), []
        for _key, a, b in rows:
            reference = stats.judge(a, b, THRESHOLD, ALPHA).verdict
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
            f"{name}: agrees with the 7+7 verdict in {agree[True] / total:.1%} of {total} trials; "
            f"a different decided verdict in {wrong / total:.2%}; rounds per side {np.mean(spent):.2f} of 7"
        )
        print("    (reference, got): " + ", ".join(f"{r}->{g} {v}" for (r, g), v in sorted(called.items())))

    pooled = {k: v + aa_rounds.get(k, []) for k, v in main_rounds.items() if k[0] == baseline}
    pooled = {k: v for k, v in pooled.items() if len(v) >= 14}
    print(f"A/A and planted changes: {len(pooled)} rows of the baseline cell with 14 rounds (two leases)")
    for name, plan in plans.items():
        for planted in (1.0, 1.05, 1.10):
            counts, spent = Counter(), []
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
            print(
                f"  {name}, planted x{planted:.2f}: {what} {rate / total:.2%}; "
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
