"""Issue 45's process part: does a row's noise between processes shrink when its windows lie elsewhere in
memory? Reads result folders of one cell, each holding several rounds (processes) of the same rows in a
fixed number of windows (``lab/evidence/aa-h100/matrix-placement*.yaml``), grouped into modes by the
``placement_pad_mib`` their rows' windows held.

    python -m lab.studies.process_part FOLDER [FOLDER ...] [--tables DIR] [--worst 8]
    python -m lab.studies.process_part --from-tables DIR [--worst 8]

Per mode, over every row and every pair of its processes:
- the process part: |difference of the two processes' window means| over its standard error (the
  windows' own spread over sqrt(n)); beyond 1.96 in 5 % of pairs were that spread all the noise;
- the windows' spread within a process (the standard deviation of a row's log window medians), which
  a pad that moves the windows in memory should widen where placement moves a row;
- the A/A: |ratio - 1| of the two processes' row medians (each over all its windows' samples), p50
  and p95, the figure issue 45's goal 1 reads;
- the rows worst in A/A under either mode, side by side.
``--tables`` writes windows.csv (a line per mode, row, process: its window medians in us) and
``--from-tables`` prints the figures from it, so the repository can keep the figures without the
result files.
"""

from __future__ import annotations

import argparse
import csv
import gzip
import itertools
import json
import math
import statistics
from collections import defaultdict
from pathlib import Path
from typing import NamedTuple

from lab.studies.aa_profile import welch

BEYOND = 1.96


class Windows(NamedTuple):
    """One row in one process: its mode, the row, the process and its window medians (us)."""

    mode: str
    row: str
    process: str
    medians_us: tuple[float, ...]
    median_us: float  # the process's median over all its windows' samples


def read_folder(folder: Path) -> list[Windows]:
    """Every ok row of every result file in ``folder`` with two windows or more."""
    plan = json.loads((folder / "plan.json").read_text()) if (folder / "plan.json").exists() else {}
    pad_mib = int(plan.get("suite", {}).get("placement_pad_mib", 0))
    mode = f"pad 0-{pad_mib} MiB" if pad_mib else "no pad"
    found = []
    for path in sorted(folder.glob("*.r*.json.gz")):
        document = json.loads(gzip.decompress(path.read_bytes()))
        process = f"{folder.name}/{path.name.split('.')[-3]}"
        for entry in document["measurements"]:
            medians = entry.get("window_medians_s") or []
            if entry.get("status") != "ok" or len(medians) < 2:
                continue
            row = f"{entry['workload']} {entry['dtype']}"
            found.append(
                Windows(mode, row, process, tuple(m * 1e6 for m in medians), entry["stats"]["median"] * 1e6)
            )
    return found


def write_tables(rows: list[Windows], out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    with (out / "windows.csv").open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["mode", "row", "process", "median_us", "window_medians_us"])
        for w in rows:
            writer.writerow(
                [w.mode, w.row, w.process, f"{w.median_us:.4f}", " ".join(f"{m:.4f}" for m in w.medians_us)]
            )


def read_tables(folder: Path) -> list[Windows]:
    with (folder / "windows.csv").open(newline="") as handle:
        return [
            Windows(
                line["mode"],
                line["row"],
                line["process"],
                tuple(float(m) for m in line["window_medians_us"].split()),
                float(line["median_us"]),
            )
            for line in csv.DictReader(handle)
        ]


def _logs(medians: tuple[float, ...]) -> list[float]:
    return [math.log(m) for m in medians]


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


class ModeFigures(NamedTuple):
    """One mode's figures over every row and every pair of its processes."""

    rows: int
    processes: int
    z: list[float]  # |difference of the window means| over its standard error, a pair a value
    expected: list[float]  # the share beyond 1.96 Student's t gives at each pair's Welch degrees of freedom
    spread: list[float]  # the windows' standard deviation within a process, in %, a process a value
    aa: dict[str, list[float]]  # row -> |ratio - 1| of every pair of its processes, in %


def figures(rows: list[Windows]) -> dict[str, ModeFigures]:
    from scipy import stats

    by_mode: dict[str, dict[str, list[Windows]]] = defaultdict(lambda: defaultdict(list))
    for w in rows:
        by_mode[w.mode][w.row].append(w)
    result: dict[str, ModeFigures] = {}
    for mode, by_row in sorted(by_mode.items()):
        z: list[float] = []
        expected: list[float] = []
        spread: list[float] = []
        aa: dict[str, list[float]] = {}
        for row, processes in by_row.items():
            logs = [_logs(p.medians_us) for p in processes]
            spread += [statistics.stdev(values) * 100 for values in logs]
            aa[row] = []
            for (a, la), (b, lb) in itertools.combinations(zip(processes, logs, strict=True), 2):
                # windows that agree exactly are 0 standard errors apart
                found, df = welch(la, lb) or (0.0, float(len(la) + len(lb) - 2))
                z.append(found)
                expected.append(2 * float(stats.t.sf(BEYOND, df)))
                aa[row].append(abs(b.median_us / a.median_us - 1) * 100)
        count = len({p.process for ps in by_row.values() for p in ps})
        result[mode] = ModeFigures(len(by_row), count, z, expected, spread, aa)
    return result


def report(rows: list[Windows], worst: int) -> None:
    modes = figures(rows)
    for mode, f in modes.items():
        every = [v for values in f.aa.values() for v in values]
        beyond = sum(v > BEYOND for v in f.z) / len(f.z)
        print(f"{mode}: {f.rows} rows, {f.processes} processes, {len(f.z)} pairs of a row's processes")
        print(
            f"  process part |z|: p50 {_pct(f.z, 0.5):.2f}, p95 {_pct(f.z, 0.95):.2f}; beyond {BEYOND} in "
            f"{beyond:.1%} of pairs (the windows' spread alone: {statistics.fmean(f.expected):.1%})"
        )
        print(
            f"  windows' spread within a process (sd of log window medians): p50 {_pct(f.spread, 0.5):.3f}%, "
            f"p95 {_pct(f.spread, 0.95):.3f}%"
        )
        print(f"  A/A |ratio - 1|, every pair: p50 {_pct(every, 0.5):.3f}%, p95 {_pct(every, 0.95):.3f}%")
    if len(modes) == 2:
        _side_by_side(modes, worst)


def _side_by_side(modes: dict[str, ModeFigures], worst: int) -> None:
    (first_name, first), (second_name, second) = ((n, f.aa) for n, f in modes.items())
    both = set(first) & set(second)
    mean = {row: (statistics.fmean(first[row]), statistics.fmean(second[row])) for row in both}
    ordered = sorted(both, key=lambda row: -max(mean[row]))
    print(f"\nthe {worst} rows worst in mean A/A under either mode (mean |ratio - 1| over its pairs, %):")
    print(f"  {'row':<40} {first_name:>14} {second_name:>14}")
    for row in ordered[:worst]:
        print(f"  {row:<40} {mean[row][0]:>14.3f} {mean[row][1]:>14.3f}")
    lower = sum(mean[row][1] < mean[row][0] for row in both)
    print(f"\n{second_name} lowered a row's mean A/A against {first_name} in {lower} of {len(both)} rows")


def against_lease(rows: list[Windows], medians_csv: Path) -> None:
    """The same rows' A/A in an earlier lease's one pair (``lab.studies.aa_profile``'s medians.csv: suite
    0.18's round 1 against round 2 over the whole default profile)."""
    wanted = {w.row for w in rows}
    with medians_csv.open(newline="") as handle:
        found = [
            abs(float(line["R2-0.18:us"]) / float(line["R1-0.18:us"]) - 1) * 100
            for line in csv.DictReader(handle)
            if f"{line['workload']} {line['dtype']}" in wanted and line["R1-0.18:us"] and line["R2-0.18:us"]
        ]
    print(
        f"\nthe same rows in {medians_csv} (one pair, the whole default profile): {len(found)} rows, "
        f"A/A p50 {_pct(found, 0.5):.3f}%, p95 {_pct(found, 0.95):.3f}%"
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m lab.studies.process_part", description=__doc__.splitlines()[0]
    )
    parser.add_argument(
        "folders", nargs="*", type=Path, help="result folders of one cell, several rounds each"
    )
    parser.add_argument("--tables", type=Path, help="write windows.csv here")
    parser.add_argument(
        "--from-tables", type=Path, help="read windows.csv from here instead of result folders"
    )
    parser.add_argument("--worst", type=int, default=8)
    parser.add_argument(
        "--against", type=Path, help="an earlier lease's medians.csv: the same rows' A/A there"
    )
    args = parser.parse_args(argv)
    if args.from_tables:
        rows = read_tables(args.from_tables)
    else:
        if not args.folders:
            parser.error("give result folders, or --from-tables DIR")
        rows = [w for folder in args.folders for w in read_folder(folder)]
        if args.tables:
            write_tables(rows, args.tables)
    report(rows, args.worst)
    if args.against:
        against_lease(rows, args.against)


if __name__ == "__main__":
    main()
