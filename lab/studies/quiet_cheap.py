"""Issue 34's three goals side by side, from GPU result files or the compact tables made of them.

    python -m lab.studies.quiet_cheap export --process NAME=RESULT[,PROGRESS] [...]
        [--validation FOLDER ...] --out DIR              result files -> DIR/processes.csv, medians.csv,
                                                         validation.csv (lab/evidence/quiet-cheap-h100)
    python -m lab.studies.quiet_cheap logs LOG1 LOG2      two processes' progress logs: the A/A of the rows
                                                         both printed (a process whose document was lost)
    python -m lab.studies.quiet_cheap report DIR --aa LABEL=NAME1,NAME2 [...] [--cost LABEL=NAME1,NAME2 ...]
        [--trials 300]                                   the figures, from those three tables

- ``--aa LABEL=R1,R2``: two processes of one cell over the whole default profile (round 1 with numerics,
  round 2): |median ratio - 1| p50, p95, max over every row measured in both (the goal: p95 <= 0.5 %),
  the p95 by round 1's stop reason, and where rows were timed in windows, the A/A of each window alone
  and of their mean.
- ``--pairs A,B,C,...``: every pair of those processes taken as an A/A: the spread of their p95s.
- ``--cost LABEL=A,B``: the seconds of process B against process A, both round 1 with numerics, run in
  one lease (the goal: B no longer than A, suite 0.5's). A process's seconds are its document's duration
  and, where the lease's driver recorded it, its wall time from start to exit.
- The validation: 7 rounds of a baseline and a candidate cell and 7 more of the baseline
  (``python -m harness run`` folders), judged as ``lab/studies/early_verdicts.py`` judges the committed
  suite-0.5 rounds, with the same calls: the sequential plan (3..7 rounds a side) against the 7+7
  verdict of every row, A/A false positives over random 7 + 7 splits of the baseline's 14 rounds, and a
  planted x1.05 (goals: agreement >= 99 %, false positives <= 1 %, a planted 5 % flagged >= 95 %).

A document is only what it says it is: ``processes.csv`` keeps the suite version each one recorded.
"""

from __future__ import annotations

import argparse
import csv
import random
import re
import statistics
from collections import Counter
from pathlib import Path

import numpy as np

from harness import jsonio
from harness.report.analysis import stats
from lab.studies.early_verdicts import ALPHA, THRESHOLD, rounds, sequential

AA_GOAL, AGREE_GOAL, FALSE_GOAL, PLANTED_GOAL = 0.005, 0.99, 0.01, 0.95
STOPS = {"noise_target": "nt", "time_budget": "tb", "timed_floor": "tf", "short_loop": "sl"}
STOPS.update({"max_samples": "ms", "timeout": "to"})
PHASES = ("build", "first_call", "warmup", "graph_capture", "block_fit", "sampling", "host_time", "what_ran")


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _wall(progress: Path | None, stem: str) -> float | None:
    """A process's wall seconds from its lease driver's ``<name> exit <rc> process_wall_ms <ms>`` line."""
    if progress is None:
        return None
    for line in progress.read_text().splitlines():
        hit = re.match(r"(\S+) exit \d+ process_wall_ms (\d+)", line)
        if hit and hit.group(1) == stem:
            return int(hit.group(2)) / 1000
    return None


def _us(seconds: float) -> str:
    """Microseconds to a tenth of a nanosecond, trailing zeros cut: a median is whole or half nanoseconds."""
    return f"{seconds * 1e6:.4f}".rstrip("0").rstrip(".")


def _short(knobs: dict[str, bool]) -> str:
    return "".join(f"{k[0]}{int(v)}" for k, v in sorted(knobs.items()))  # c0d0t0


def export(processes: list[str], validation: list[Path], out: Path, medians_of: list[str]) -> None:
    out.mkdir(parents=True, exist_ok=True)
    docs = {}
    with (out / "processes.csv").open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(
            [
                *("name", "result", "suite_version", "gpu_uuid", "duration_s", "process_wall_s", "numerics"),
                *("ok", "timed_s", *(f"{p}_s" for p in PHASES), "numerics_s", "setup_s"),
            ]
        )
        for spec in processes:
            name, _, files = spec.partition("=")
            path, _, progress = files.partition(",")
            doc = docs[name] = jsonio.read(Path(path))
            ok = [m for m in doc["measurements"] if m["status"] == "ok"]
            phases = Counter[str]()
            for m in ok:
                phases.update(m.get("phases_s", {}))
            stem = Path(path).name.removesuffix(".gz").removesuffix(".json")
            uuid = (doc.get("environment", {}).get("gpu") or {}).get("uuid", "")
            wall = _wall(Path(progress) if progress else None, stem)
            writer.writerow(
                [name, stem, doc["suite_version"], uuid, f"{doc['duration_s']:.1f}"]
                + [f"{wall:.1f}" if wall else ""]
                + [int(any("numerics" in m for m in ok)), len(ok)]
                + [f"{sum(sum(m['samples_s']) * m.get('batch', 1) for m in ok):.1f}"]
                + [f"{phases[p]:.1f}" if p in phases else "" for p in PHASES]
                + [f"{phases['numerics']:.1f}", f"{sum(doc.get('setup_s', {}).values()):.1f}"]
            )
    if medians_of:  # the processes whose medians the figures read
        docs = {n: docs[n] for n in medians_of}
    keys = sorted(
        {
            (m["workload"], m["dtype"], _short(m["knobs"]))
            for doc in docs.values()
            for m in doc["measurements"]
            if m["status"] == "ok"
        }
    )
    with (out / "medians.csv").open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(
            ["workload", "dtype", "knobs", *(f"{n}:us" for n in docs), *(f"{n}:stop" for n in docs)]
            + [f"{n}:windows_us" for n in docs]
        )
        found = {
            n: {(m["workload"], m["dtype"], _short(m["knobs"])): m for m in d["measurements"]}
            for n, d in docs.items()
        }
        for key in keys:  # rows measured in at least one process
            ms = [found[n].get(key) for n in docs]
            ok = [m if m is not None and m["status"] == "ok" else None for m in ms]
            writer.writerow(
                [*key]
                + [_us(m["stats"]["median"]) if m else "" for m in ok]
                + [STOPS.get(str(m.get("stop_reason")), "?") if m else "" for m in ok]
                + [" ".join(_us(x) for x in m.get("window_medians_s", ())) if m else "" for m in ok]
            )
    with (out / "validation.csv").open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["run", "cell", "workload", "dtype", "knobs", "round_medians_us"])
        for folder in validation:
            for (cell, workload, dtype, knobs), medians in rounds([folder]).items():
                medians_text = " ".join(_us(x) for x in medians)
                writer.writerow([folder.name, cell, workload, dtype, knobs, medians_text])


def read_tables(folder: Path) -> tuple[list[dict[str, str]], list[dict[str, str]], list[dict[str, str]]]:
    tables = []
    for name in ("processes.csv", "medians.csv", "validation.csv"):
        with (folder / name).open(newline="") as f:
            tables.append(list(csv.DictReader(f)))
    return tables[0], tables[1], tables[2]


def secs(process: dict[str, str]) -> str:
    wall = f", process {process['process_wall_s']} s" if process["process_wall_s"] else ""
    return f"{process['duration_s']} s{wall}"


def report_aa(
    processes: dict[str, dict[str, str]], medians: list[dict[str, str]], label: str, pair: str
) -> None:
    first, second = pair.split(",")
    dev: list[float] = []
    by_reason: dict[str, list[float]] = {}
    for row in medians:
        if row[f"{first}:us"] and row[f"{second}:us"]:
            d = abs(float(row[f"{second}:us"]) / float(row[f"{first}:us"]) - 1)
            dev.append(d)
            by_reason.setdefault(row[f"{first}:stop"], []).append(d)
    p95 = pct(dev, 0.95)
    versions = {processes[n]["suite_version"] for n in (first, second)}
    print(
        f"{label:22} suite {'/'.join(sorted(versions))}, {len(dev)} rows: |ratio - 1| p50 "
        f"{statistics.median(dev):.3%}, p95 {p95:.3%}, max {max(dev):.3%}  (goal p95 <= 0.5 %: "
        f"{'met' if p95 <= AA_GOAL else f'NOT met, {p95 / AA_GOAL:.2f}x the goal'})"
    )
    print(f"{'':22} seconds: {first} {secs(processes[first])}; {second} {secs(processes[second])}")
    print(
        f"{'':22} p95 by round 1's stop: "
        + ", ".join(f"{r} ({len(v)}) {pct(v, 0.95):.2%}" for r, v in sorted(by_reason.items()))
    )
    report_windows(medians, first, second)


def report_windows(medians: list[dict[str, str]], first: str, second: str) -> None:
    """Where both processes timed their rows in windows (suite 0.15 on a GPU): the A/A of each window
    alone and of the windows' mean, and how far one process's windows of a row lie apart."""
    pairs = []
    for row in medians:
        a, b = (row.get(f"{n}:windows_us", "").split() for n in (first, second))
        if a and len(a) == len(b):
            pairs.append(([float(x) for x in a], [float(x) for x in b]))
    count = {len(a) for a, _ in pairs}
    if not pairs or len(count) != 1 or count == {1}:
        return
    alone = []
    for i in range(count.pop()):
        dev = [abs(b[i] / a[i] - 1) for a, b in pairs]
        alone.append(f"{i + 1} {pct(dev, 0.95):.3%}")
    mean = [abs(sum(b) / sum(a) - 1) for a, b in pairs]
    spread = [max(a) / min(a) - 1 for a, _ in pairs]
    print(
        f"{'':22} {len(pairs)} rows in windows: A/A p95 of each window alone: {', '.join(alone)}; of the "
        f"windows' mean {pct(mean, 0.95):.3%}; {first}'s windows of a row apart p50 "
        f"{statistics.median(spread):.3%}, p95 {pct(spread, 0.95):.3%}"
    )


def report_cost(processes: dict[str, dict[str, str]], label: str, pair: str) -> None:
    reference, new = (processes[n] for n in pair.split(","))
    ratio = float(new["duration_s"]) / float(reference["duration_s"])
    walls = ""
    if reference["process_wall_s"] and new["process_wall_s"]:
        walls = f", process {float(new['process_wall_s']) / float(reference['process_wall_s']):.3f}"
    print(
        f"{label:22} suite {new['suite_version']} {secs(new)} against suite {reference['suite_version']} "
        f"{secs(reference)}: {ratio:.3f}{walls}  (goal <= 1: {'met' if ratio <= 1 else 'NOT met'})"
    )
    for p in (reference, new):
        spent = [f"{k.removesuffix('_s')} {p[k]}" for k in p if k.endswith("_s") and p[k] and float(p[k]) > 0]
        spent = [x for x in spent if not x.startswith(("duration", "process_wall"))]
        known = ", ".join(spent) + (
            "" if len(spent) > 1 else " (its phases not recorded: suite 0.6 began that)"
        )
        print(f"{'':22} suite {p['suite_version']}: {known}")


def report_pairs(medians: list[dict[str, str]], names: list[str]) -> None:
    """Every pair of these processes as an A/A: the spread of their p95s."""
    found = []
    for i, first in enumerate(names):
        for second in names[i + 1 :]:
            a, b = f"{first}:us", f"{second}:us"
            dev = [abs(float(row[b]) / float(row[a]) - 1) for row in medians if row[a] and row[b]]
            found.append((pct(dev, 0.95), first, second))
    found.sort()
    print(
        f"every pair of {len(names)} processes ({len(found)} pairs): p95 min {found[0][0]:.3%} "
        f"({found[0][1]}, {found[0][2]}), median {statistics.median(f[0] for f in found):.3%}, max "
        f"{found[-1][0]:.3%} ({found[-1][1]}, {found[-1][2]}); "
        f"under 0.5 %: {sum(f[0] <= AA_GOAL for f in found)}"
    )


def report_validation(table: list[dict[str, str]], trials: int) -> None:
    rng = random.Random(20261124)
    runs: dict[str, dict[tuple[str, str, str, str], list[float]]] = {}
    for row in table:
        key = (row["cell"], row["workload"], row["dtype"], row["knobs"])
        runs.setdefault(row["run"], {})[key] = [float(x) / 1e6 for x in row["round_medians_us"].split()]
    main, *more = runs.values()
    baseline = next(k[0] for k in main if "bundled" in k[0])
    rows = []
    for k, b in main.items():
        a = main.get((baseline, *k[1:]), [])
        if k[0] != baseline and len(a) >= 7 and len(b) >= 7:
            rows.append((a, b, stats.judge(a, b, THRESHOLD, ALPHA).verdict))
    references = Counter(r[2] for r in rows)
    print(
        f"{len(rows)} candidate rows, 7+7 rounds each (their 7+7 verdicts: "
        + ", ".join(f"{v} {n}" for v, n in references.most_common())
        + f"), {trials} trials a row"
    )
    agree: Counter[bool] = Counter()
    called: Counter[tuple[str, str]] = Counter()
    spent = []
    for a, b, reference in rows:
        for _ in range(trials):
            verdict, n = sequential(rng.sample(a, len(a)), rng.sample(b, len(b)))
            agree[verdict == reference] += 1
            called[(reference, verdict)] += 1
            spent.append(n)
    share = agree[True] / sum(agree.values())
    print(
        f"  sequential 3..7 agrees with the 7+7 verdict in {share:.1%} of {sum(agree.values())} trials "
        f"(goal >= 99 %: {'met' if share >= AGREE_GOAL else 'NOT met'}); "
        f"rounds per side {np.mean(spent):.2f} of 7"
    )
    print("    (reference, got): " + ", ".join(f"{r}->{g} {v}" for (r, g), v in sorted(called.items())))
    extra = {k[1:]: v for run in more for k, v in run.items() if k[0] == baseline}
    pooled = {k[1:]: v + extra.get(k[1:], []) for k, v in main.items() if k[0] == baseline}
    pooled = {k: v for k, v in pooled.items() if len(v) >= 14}
    print(f"  A/A and planted: {len(pooled)} rows of the baseline with 14 rounds, split 7 + 7 at random")
    for planted in (1.0, 1.05, 1.10):
        counts: Counter[str] = Counter()
        for values in pooled.values():
            for _ in range(trials):
                shuffled = rng.sample(values, len(values))
                counts[sequential(shuffled[:7], [x * planted for x in shuffled[7:14]])[0]] += 1
        n = sum(counts.values())
        if planted == 1.0:
            rate = (counts["slower"] + counts["faster"]) / n
            print(
                f"  planted x1.00: false positives (slower or faster) {rate:.2%} (goal <= 1 %: "
                f"{'met' if rate <= FALSE_GOAL else 'NOT met'}); same {counts['same'] / n:.1%}, "
                f"inconclusive {counts['inconclusive'] / n:.1%}"
            )
            continue
        flagged = 1 - counts["same"] / n
        goal = (
            f" (goal >= 95 %: {'met' if flagged >= PLANTED_GOAL else 'NOT met'})" if planted == 1.05 else ""
        )
        print(
            f"  planted x{planted:.2f}: called slower {counts['slower'] / n:.1%}, flagged (slower or "
            f"inconclusive) {flagged:.2%}{goal}"
        )


def report(folder: Path, aa: list[str], pairs: list[str], cost: list[str], trials: int) -> None:
    processes_table, medians, validation = read_tables(folder)
    processes = {p["name"]: p for p in processes_table}
    print("Processes (name: suite version recorded, GPU, seconds):")
    for p in processes_table:
        print(f"  {p['name']:14} suite {p['suite_version']:5} {p['gpu_uuid'][:12]}  {secs(p)}")
    print("\nA/A: two processes of the bundled cell, the whole default profile, one GPU")
    for spec in aa:
        label, _, pair = spec.partition("=")
        report_aa(processes, medians, label, pair)
    for names in pairs:
        report_pairs(medians, names.split(","))
    print("\nSeconds per process, round 1 with its numerics, in one lease")
    for spec in cost:
        label, _, pair = spec.partition("=")
        report_cost(processes, label, pair)
    if validation:
        print("\nEarly verdicts on the new rounds (lab/studies/early_verdicts.py's trials)")
        report_validation(validation, trials)


LOG_LIMIT = 64 * 1024**2
_LOG_LINE = re.compile(r"\[\d+/\d+\] (\S+) (\S+) .*: median ([\d.]+) us \(n=\d+")


def _log_medians(path: Path) -> dict[tuple[str, str], float]:
    """Each row's median as a suite's progress log printed it (0.1 us: coarse under 20 us)."""
    text = jsonio.read_bytes(path, LOG_LIMIT).decode()  # plain or gzip
    return {(m[1], m[2]): float(m[3]) for m in map(_LOG_LINE.match, text.splitlines()) if m}


def logs(first: Path, second: Path) -> None:
    """The A/A of two processes whose documents did not both come back: their progress logs' medians."""
    a, b = _log_medians(first), _log_medians(second)
    common = [row for row in b if row in a]
    print(f"{first.name}: {len(a)} rows, {second.name}: {len(b)} rows, {len(common)} in both")
    for least_us in (0, 20, 100):
        ratios = sorted(abs(b[row] / a[row] - 1) for row in common if a[row] >= least_us)
        if ratios:
            print(
                f"  rows >= {least_us:3} us ({len(ratios)}): |ratio - 1| p50 {pct(ratios, 0.5):.3%}, "
                f"p95 {pct(ratios, 0.95):.3%}, max {ratios[-1]:.3%}"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p_export = sub.add_parser("export")
    p_export.add_argument(
        "--process",
        action="append",
        default=[],
        help="NAME=RESULT[,PROGRESS]: a result file, its lease's progress",
    )
    p_export.add_argument("--validation", action="append", default=[], type=Path)
    p_export.add_argument("--medians-of", default="", help="NAME,NAME,...: the processes medians.csv keeps")
    p_export.add_argument("--out", type=Path, required=True)
    p_report = sub.add_parser("report")
    p_report.add_argument("folder", type=Path)
    p_report.add_argument("--aa", action="append", default=[], help="LABEL=ROUND1,ROUND2")
    p_report.add_argument("--pairs", action="append", default=[], help="NAME,NAME,...: every pair as an A/A")
    p_report.add_argument("--cost", action="append", default=[], help="LABEL=REFERENCE,NEW")
    p_report.add_argument("--trials", type=int, default=300)
    p_logs = sub.add_parser("logs")
    p_logs.add_argument("first", type=Path)
    p_logs.add_argument("second", type=Path)
    args = parser.parse_args()
    if args.command == "logs":
        logs(args.first, args.second)
    elif args.command == "export":
        export(args.process, args.validation, args.out, [n for n in args.medians_of.split(",") if n])
    else:
        report(args.folder, args.aa, args.pairs, args.cost, args.trials)


if __name__ == "__main__":
    main()
