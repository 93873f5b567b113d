"""Where a suite process's time goes, and why measurements stop on the time budget (issue 19: measure first).

    python -m benchmarks.stopping_rule [RESULTS_DIR ...]

Reads committed H100 results (default: gpu-verdicts, 21 runs of 16 measurements; both suite 0.5; add
gpu-suite-default-0.5's 6 runs of the default profile from git: ``git archive ce74bb4
reports/gpu-suite-default-0.5/results | tar -x -C /tmp``) and prints, from what each result recorded:

1. per run: the process's wall time, the suite's, the sampling loops', and the timed GPU work (the sum of
   the samples), each as a share of the process's;
2. per measurement: which rule stopped sampling, and, for those stopped by the time budget, which of the
   noise target's two conditions was not met (the samples' relative standard deviation under 0.5 %, or at
   least ``min_time_s`` of timed GPU work);
3. what shorter sampling would have cost in precision: the median of each measurement's first samples
   (as many as a budget of T seconds of sampling wall would have taken) against the median of all of
   them, as |ratio - 1| p50 / p95 / max, next to the spread of that row's median between processes
   (rounds), which a verdict has to beat anyway.

Nothing here runs a GPU: it is the recorded samples, read again.
"""

from __future__ import annotations

import argparse
import statistics
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np

from harness import jsonio

REPO = Path(__file__).resolve().parent.parent
DEFAULT = sorted((REPO / "reports" / "gpu-verdicts").glob("results-shard*"))
TARGET = 0.005  # harness.suite.measure.TARGET_REL_NOISE
MIN_SAMPLES = 10
BUDGETS_S = (0.25, 0.5, 1.0)


def _pct(values: list[float], q: float) -> float:
    return float(np.percentile(values, q)) * 100 if values else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="*", type=Path, default=DEFAULT)
    args = parser.parse_args()
    files = sorted(p for folder in args.folders for p in folder.glob("*.json.gz"))
    stops: Counter[str] = Counter()
    blocked: Counter[str] = Counter()
    truncated: dict[float, list[float]] = defaultdict(list)
    saved: dict[float, list[float]] = defaultdict(list)
    rounds: dict[tuple[str, str, str, str], list[float]] = defaultdict(list)
    shares = []
    print("## 1. Where a process's wall time goes")
    for path in files:
        doc = jsonio.read(path)
        if doc.get("status") != "ok":
            continue
        wall = float(doc["run"]["wall_s"])
        ok = [m for m in doc["measurements"] if m["status"] == "ok" and m.get("samples_s")]
        sampling = sum(m["sampling_wall_s"] for m in ok)
        gpu = sum(sum(m["samples_s"]) for m in ok)
        measured = sum(m["wall_s"] for m in ok)
        first = sum(m["first_call_s"] for m in ok)
        profiled = sum((m.get("what_ran") or {}).get("profile_s", 0.0) for m in ok)
        shares.append(gpu / wall)
        suite = float(doc["duration_s"])
        print(
            f"{path.parent.parent.name}/{path.name[:40]}: process {wall:.1f} s; suite {suite:.1f} s "
            f"({suite / wall:.0%}); measurements {measured:.1f} s ({measured / wall:.0%}), of which "
            f"sampling loops {sampling:.1f} s ({sampling / wall:.0%}), first calls {first:.1f} s, what-ran "
            f"profiles {profiled:.1f} s, the rest (build, warm-up, graph capture, numerics) "
            f"{measured - sampling - first - profiled:.1f} s; timed GPU work {gpu:.1f} s ({gpu / wall:.1%}); "
            f"{len(ok)} measurements"
        )
        min_time = float(doc["profile"].get("min_time_s", 0.5)) if isinstance(doc["profile"], dict) else 0.5
        for m in ok:
            samples = np.asarray(m["samples_s"], dtype=float)
            stops[m["stop_reason"]] += 1
            if m["stop_reason"] == "time_budget":
                noisy = m["stats"]["rel_stdev"] >= TARGET
                short = samples.sum() < min_time
                blocked[
                    "both"
                    if noisy and short
                    else "rel. stdev >= 0.5 %"
                    if noisy
                    else f"timed work < {min_time} s"
                    if short
                    else "neither (checked before the last sample)"
                ] += 1
            full = float(np.median(samples))
            per_sample = m["sampling_wall_s"] / len(samples)
            for budget in BUDGETS_S:
                k = max(MIN_SAMPLES, int(budget / per_sample))
                if k < len(samples):
                    truncated[budget].append(abs(float(np.median(samples[:k])) / full - 1))
                    saved[budget].append(m["sampling_wall_s"] - k * per_sample)
                else:
                    truncated[budget].append(0.0)
                    saved[budget].append(0.0)
            key = (doc["cell"]["id"], m["workload"], m["dtype"], str(sorted(m["knobs"].items())))
            rounds[key].append(full)
    print(
        f"timed GPU work as a share of the process's wall time: median {statistics.median(shares):.1%}, "
        f"min {min(shares):.1%}, max {max(shares):.1%} over {len(shares)} runs"
    )
    total = sum(stops.values())
    print("\n## 2. What stopped sampling")
    for reason, count in stops.most_common():
        print(f"{reason}: {count} of {total} measurements ({count / total:.0%})")
    for reason, count in blocked.most_common():
        print(f"  stopped by the time budget because: {reason}: {count}")
    spread = [
        float(np.std(v, ddof=1) / np.mean(v)) for v in rounds.values() if len(v) >= 3 and np.mean(v) > 0
    ]
    print("\n## 3. Shorter sampling: the median of the first samples against the median of all")
    print(
        f"between processes (the same row's round medians, {len(spread)} rows with 3+ rounds): coefficient "
        f"of variation p50 {_pct(spread, 50):.3f} %, p95 {_pct(spread, 95):.3f} %"
    )
    for budget in BUDGETS_S:
        d, cut = truncated[budget], sum(saved[budget])
        print(
            f"sampling cut to {budget} s: |median ratio - 1| p50 {_pct(d, 50):.3f} %, "
            f"p95 {_pct(d, 95):.3f} %, max {_pct(d, 100):.3f} % over {len(d)} measurements; "
            f"saves {cut:.0f} s of sampling in {len(shares)} processes "
            f"({cut / len(shares):.1f} s per process)"
        )


if __name__ == "__main__":
    main()
