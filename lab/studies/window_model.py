"""What a window rule would give, modeled on measured window medians (issue 45).

    python -m lab.studies.window_model [--medians lab/evidence/quiet-cheap-h100/lease-h/medians.csv]
        [--first H2-0.15 --second H3-0.15] [--rule LEAST,MOST,TARGET ...] [--inflation 1.0,1.1,1.2]
        [--repeats 20]

From two processes' window medians of every row (``lab.studies.quiet_cheap export``'s medians.csv), each
row's window noise is split in two: a part common to both processes (a window's place in the pass,
which an A/A does not see) and a part each process draws anew (``sigma_e``, from the differences of the
two processes' same windows). A row's windows are then drawn in two simulated processes under the rule
of ``harness/suite/timing/windows.py`` (at least LEAST windows, then another while the relative standard error
of their mean is above TARGET, up to MOST), the drawn part scaled by ``--inflation`` (a shorter window
is noisier), and the A/A p95 of |mean ratio - 1| and the mean windows a row are printed. The model is
checked by its own first line: the rule 3,3,0 (suite 0.15's) against the measured A/A of the windows'
mean. A model, not a measurement: the lease's processes say what the rule gives.
"""

from __future__ import annotations

import argparse
import csv
import math
import random
import statistics
from pathlib import Path


def noise(medians: Path, first: str, second: str) -> tuple[list[tuple[float, float]], float]:
    """Each row's (sigma_e, sigma_c), relative, and the measured A/A p95 of the windows' mean."""
    rows, measured = [], []
    with medians.open(newline="") as f:
        for row in csv.DictReader(f):
            a = [float(x) for x in row[f"{first}:windows_us"].split()]
            b = [float(x) for x in row[f"{second}:windows_us"].split()]
            if len(a) < 2 or len(a) != len(b):
                continue
            mean = statistics.fmean(a + b)
            a, b = [x / mean for x in a], [x / mean for x in b]
            drawn = statistics.fmean((x - y) ** 2 for x, y in zip(a, b, strict=True)) / 2
            within = (statistics.variance(a) + statistics.variance(b)) / 2
            rows.append((math.sqrt(drawn), math.sqrt(max(within - drawn, 0.0))))
            measured.append(abs(statistics.fmean(a) / statistics.fmean(b) - 1))
    return rows, _p95(measured)


def _p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def _process(
    rng: random.Random, common: list[float], sigma: float, rule: tuple[int, int, float]
) -> list[float]:
    least, most, target = rule
    windows = [1 + common[i] + rng.gauss(0, sigma) for i in range(least)]
    while len(windows) < max(least, most):
        n = len(windows)
        if n >= 2 and statistics.stdev(windows) / math.sqrt(n) / statistics.fmean(windows) <= target:
            break
        windows.append(1 + common[n] + rng.gauss(0, sigma))
    return windows


def model(
    rows: list[tuple[float, float]], rule: tuple[int, int, float], inflation: float, repeats: int
) -> tuple[float, float]:
    """(A/A p95, mean windows a row) of ``rule``, averaged over ``repeats`` simulated pairs."""
    rng = random.Random(45)
    p95s, counts = [], []
    for _ in range(repeats):
        dev = []
        for sigma_e, sigma_c in rows:
            common = [rng.gauss(0, sigma_c) for _ in range(max(rule[0], rule[1]))]
            a, b = (_process(rng, common, sigma_e * inflation, rule) for _ in range(2))
            dev.append(abs(statistics.fmean(a) / statistics.fmean(b) - 1))
            counts += [len(a), len(b)]
        p95s.append(_p95(dev))
    return statistics.fmean(p95s), statistics.fmean(counts)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m lab.studies.window_model")
    parser.add_argument(
        "--medians", type=Path, default=Path("lab/evidence/quiet-cheap-h100/lease-h/medians.csv")
    )
    parser.add_argument("--first", default="H2-0.15")
    parser.add_argument("--second", default="H3-0.15")
    parser.add_argument("--rule", action="append", default=[], help="LEAST,MOST,TARGET (repeatable)")
    parser.add_argument("--inflation", default="1.0,1.1,1.2")
    parser.add_argument("--repeats", type=int, default=20)
    args = parser.parse_args(argv)
    rows, measured = noise(args.medians, args.first, args.second)
    sigmas = sorted(e for e, _ in rows)
    print(
        f"{len(rows)} rows of {args.medians}: drawn window noise p50 {statistics.median(sigmas):.3%}, p95 "
        f"{_p95(sigmas):.3%}; measured A/A p95 of the windows' mean {measured:.3%}"
    )
    rules = [tuple(float(x) for x in r.split(",")) for r in args.rule] or [(3, 3, 0.0), (3, 8, 0.002)]
    for inflation in (float(x) for x in args.inflation.split(",")):
        for least, most, target in rules:
            rule = (int(least), int(most), target)
            p95, windows = model(rows, rule, inflation, args.repeats)
            print(
                f"rule least {rule[0]}, most {rule[1]}, target {target:.4f}, window noise x{inflation:.2f}: "
                f"A/A p95 {p95:.3%}, windows a row {windows:.2f}"
            )


if __name__ == "__main__":
    main()
