"""Issue 45's three goals side by side, from one lease's files (``lab/evidence/aa-h100/device-lease.sh``).

    python -m lab.studies.aa_profile LEASE --out DIR [--trials 300] [--worst 12]
        LEASE: the folder the lease's tarballs were extracted into (aa/ with suite 0.15's round 1,
        aa-018/ with suite 0.18's two rounds, progress.txt, validation/, validation-aa/); DIR gets
        processes.csv, medians.csv and validation.csv (``lab.studies.quiet_cheap export``), and the
        figures are printed from them
    python -m lab.studies.aa_profile --tables DIR [--trials 300] [--worst 12]
        the figures from tables made before (what the repository keeps)

1. A/A: suite 0.18's round 1 (numerics on) and round 2 (numerics off), two processes of the bundled cell
   over the whole default profile: |median ratio - 1| p50, p95 and max over every row measured in both,
   over the rows of 100 us or more, over suite 0.15's rows and over those it did not measure (the
   layer rows the profile added);
   how many windows the rows took, the A/A by that count, how far apart the processes' windows lie in
   units of their own spread (the part more windows cannot average), the A/A had every row stopped at
   3 to 8 windows, and the rows worst in A/A (goal: p95 <= 0.5 %).
2. Seconds: suite 0.18's round 1 against suite 0.15's, both with numerics, in the same lease (goal:
   no longer), and each one's seconds a row.
3. The early verdicts on suite 0.18's validation rounds, as ``lab.studies.quiet_cheap`` judges them
   (goals: agreement with the 7+7 verdicts >= 99 %, A/A false positives <= 1 %, a planted 5 % flagged
   >= 95 %).
"""

from __future__ import annotations

import argparse
import math
import statistics
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

from lab.studies.quiet_cheap import (
    AA_GOAL,
    export,
    pct,
    read_tables,
    report_cost,
    report_validation,
    secs,
)

REFERENCE, FIRST, SECOND = "R1-0.15", "R1-0.18", "R2-0.18"
REFERENCE_SECOND = "R2-0.15"  # suite 0.15's own A/A on the same GPU, where the lease ran it
THIRD = "R3-0.18"  # a third round of suite 0.18 (no numerics), where the A/A matrix ran three
# suite 0.18's round 1 once more, on suite 0.15's GPU after its processes, where the pairs ran on two GPUs
BESIDE = "R1-0.18s"
DEFAULTS = "R1-0.18d"  # suite 0.18's round 1 at its defaults, where the pairs ran with other settings
# where each process's result file lies in the lease's folder
FILES = {
    REFERENCE: "aa/suite-0.15.r1.json.gz",
    REFERENCE_SECOND: "aa/suite-0.15.r2.json.gz",
    FIRST: "aa-018/*.r1.json.gz",
    SECOND: "aa-018/*.r2.json.gz",
    THIRD: "aa-018/*.r3.json.gz",
    BESIDE: "aa/suite-0.18.r1.json.gz",
    DEFAULTS: "aa/suite-0.18d.r1.json.gz",
}
LONG_US = 100.0  # the rows of 100 us or more: issue 34's second split


def export_lease(lease: Path, out: Path) -> None:
    """The lease's result files and validation folders as the three tables ``quiet_cheap`` reads."""
    progress = lease / "progress.txt"
    processes: list[str] = []
    for name, pattern in FILES.items():
        for path in sorted(lease.glob(pattern))[:1]:
            processes.append(f"{name}={path}" + (f",{progress}" if progress.exists() else ""))
    validation = [lease / m for m in ("validation", "validation-aa") if (lease / m).is_dir()]
    export(processes, validation, out, [])


class Paired(NamedTuple):
    """A row both processes measured: its table row, each one's median (us), |ratio - 1|, each one's
    windows, and whether suite 0.15 measured it too (not a layer row the profile added)."""

    row: dict[str, str]
    a: float
    b: float
    dev: float
    windows: tuple[int, int]
    old: bool


class Pair:
    """The rows both processes measured."""

    def __init__(self, medians: list[dict[str, str]], first: str, second: str, reference: str) -> None:
        self.rows: list[Paired] = []
        for row in medians:
            if row.get(f"{first}:us") and row.get(f"{second}:us"):
                a, b = float(row[f"{first}:us"]), float(row[f"{second}:us"])
                windows = (len(row[f"{first}:windows_us"].split()), len(row[f"{second}:windows_us"].split()))
                old = bool(row.get(f"{reference}:us"))
                self.rows.append(Paired(row, a, b, abs(b / a - 1), windows, old))

    def line(self, label: str, keep: Callable[[Paired], bool] | None = None) -> str:
        """p50, p95 and max of |ratio - 1| over the rows ``keep`` admits (None: every row)."""
        dev = [r.dev for r in self.rows if keep is None or keep(r)]
        if not dev:
            return f"{label:34} no rows"
        p95 = pct(dev, 0.95)
        return (
            f"{label:34} {len(dev):4} rows: p50 {statistics.median(dev):.3%}, p95 {p95:.3%}, max "
            f"{max(dev):.3%}" + ("" if p95 <= AA_GOAL else f"  ({p95 / AA_GOAL:.2f}x the goal)")
        )


def report_aa(medians: list[dict[str, str]], worst: int) -> None:
    pair = Pair(medians, FIRST, SECOND, REFERENCE)
    if not pair.rows:
        print("no row measured in both of suite 0.18's processes")
        return
    dev = [r.dev for r in pair.rows]
    p95 = pct(dev, 0.95)
    verdict = "met" if p95 <= AA_GOAL else f"NOT met, {p95 / AA_GOAL:.2f}x the goal"
    print(f"goal 1, A/A p95 <= 0.5 % over all paired rows: {p95:.3%} ({verdict})")
    print(pair.line("all paired rows"))
    print(pair.line(f"rows of {LONG_US:.0f} us or more", lambda r: min(r.a, r.b) >= LONG_US))
    print(pair.line(f"rows under {LONG_US:.0f} us", lambda r: min(r.a, r.b) < LONG_US))
    print(pair.line("suite 0.15's rows", lambda r: r.old))
    print(pair.line("rows suite 0.15 did not measure", lambda r: not r.old))
    own = Pair(medians, REFERENCE, REFERENCE_SECOND, REFERENCE)
    if own.rows:  # the same rule's baseline on this GPU: suite 0.15's two processes
        print(own.line("suite 0.15's own A/A, its rows"))
    for first, second in ((SECOND, THIRD), (FIRST, THIRD)):
        more = Pair(medians, first, second, REFERENCE)
        if more.rows:  # further pairs of suite 0.18, where a third round ran
            print(more.line(f"{first} against {second}"))
    counts: dict[int, list[float]] = defaultdict(list)
    for r in pair.rows:
        counts[max(r.windows)].append(r.dev)
    taken = [n for r in pair.rows for n in r.windows]
    print(
        f"windows a row: mean {statistics.fmean(taken):.2f} (least {min(taken)}, most {max(taken)}); "
        "A/A p95 by the more of the two processes' counts: "
        + ", ".join(f"{n}: {len(v)} rows {pct(v, 0.95):.2%}" for n, v in sorted(counts.items()))
    )
    print(process_part(pair))
    print(later_windows(pair))
    print(window_caps(pair))
    print(f"the {worst} rows worst in A/A (median us {FIRST} / {SECOND}, windows, round 1's stop):")
    for row, a, b, d, windows, old in sorted(pair.rows, key=lambda r: -r.dev)[:worst]:
        knobs = "" if row["knobs"] == "c0d0t0" else f" {row['knobs']}"
        where = "" if old else " (not in suite 0.15's)"
        print(
            f"  {d:7.3%}  {row['workload']} {row['dtype']}{knobs}{where}: {a:.3f} / {b:.3f} us, "
            f"windows {windows[0]}/{windows[1]}, {row[f'{FIRST}:stop']}"
        )


def _windows(row: dict[str, str], name: str) -> list[float]:
    return [float(x) for x in row[f"{name}:windows_us"].split()]


def welch(a: list[float], b: list[float]) -> tuple[float, float] | None:
    """|difference of the two window means| over its standard error, and Welch's degrees of freedom."""
    va, vb = statistics.variance(a) / len(a), statistics.variance(b) / len(b)
    if va + vb <= 0:
        return None
    df = (va + vb) ** 2 / (va**2 / (len(a) - 1) + vb**2 / (len(b) - 1))
    return abs(statistics.fmean(a) - statistics.fmean(b)) / math.sqrt(va + vb), df


def process_part(pair: Pair) -> str:
    """How far the two processes' window means lie apart in units of their standard error (the windows'
    own spread over the square root of their count), against the share beyond 1.96 that the windows'
    spread alone gives: Student's t at each row's Welch degrees of freedom (about 12 % at 3 windows a
    side, not the normal's 5 %). Split by the windows the two processes took: a row stops at 3 where its
    windows happen to agree, so its standard error is read low, and such rows lie further out than the
    t predicts, a selection the rows that took every window (8 and 8) do not have."""
    from scipy import stats

    groups: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for r in pair.rows:
        a, b = _windows(r.row, FIRST), _windows(r.row, SECOND)
        if len(a) < 2 or len(b) < 2:
            continue
        found = welch(a, b)
        if found is None:
            continue
        kind = "both 3" if len(a) == len(b) == 3 else "both 8" if len(a) == len(b) == 8 else "others"
        groups["all"].append(found)
        groups[kind].append(found)
    if not groups:
        return "process part: no row whose windows vary in both processes"
    lines: list[str] = []
    for kind in ("all", "both 3", "both 8", "others"):
        measured = groups.get(kind, [])
        if not measured:
            continue
        z = [v for v, _ in measured]
        beyond = sum(v > 1.96 for v in z) / len(z)
        expected = statistics.fmean(2 * stats.t.sf(1.96, df) for _, df in measured)
        lines.append(
            f"  {kind} ({len(z)} rows): p50 {statistics.median(z):.2f}, p95 {pct(z, 0.95):.2f}; beyond 1.96 "
            f"in {beyond:.1%} (the windows' spread alone: {expected:.1%})"
        )
    return (
        "process part, |difference of the window means| over its standard error, by the windows taken:\n"
        + ("\n".join(lines))
    )


def later_windows(pair: Pair, least: int = 4) -> str:
    """Whether a process's later windows are new placements: how far a row's first window lies from the
    mean of its later ones, and the process part over the later windows alone (rows with at least
    ``least`` windows in both processes), beyond 1.96 and beyond 3 against what their spread gives. Were
    every window a placement drawn anew, the later windows' means would lie where their spread puts them;
    a process that keeps one placement over its later windows shows as a share beyond 3 far above t's."""
    from scipy import stats

    first: list[float] = []
    found: list[tuple[float, float]] = []
    for r in pair.rows:
        a, b = _windows(r.row, FIRST), _windows(r.row, SECOND)
        for windows in (a, b):
            if len(windows) >= 3:
                first.append(abs(windows[0] / statistics.fmean(windows[1:]) - 1))
        if len(a) >= least and len(b) >= least:
            later = welch(a[1:], b[1:])
            if later is not None:
                found.append(later)
    if not first or not found:
        return "later windows: too few rows with several windows in both processes"
    z = [v for v, _ in found]
    beyond = {t: sum(v > t for v in z) / len(z) for t in (1.96, 3.0)}
    expected = {t: statistics.fmean(2 * stats.t.sf(t, df) for _, df in found) for t in (1.96, 3.0)}
    return (
        f"a row's first window against the mean of its later ones (a process of 3 windows or more): "
        f"p50 {statistics.median(first):.2%}, p95 {pct(first, 0.95):.2%}\n"
        f"process part over the later windows alone ({len(z)} rows of {least} windows or more in both): "
        f"beyond 1.96 in {beyond[1.96]:.1%} (their spread alone: {expected[1.96]:.1%}), beyond 3 in "
        f"{beyond[3.0]:.1%} ({expected[3.0]:.1%})"
    )


def window_caps(pair: Pair, caps: tuple[int, ...] = (3, 4, 5, 6, 8)) -> str:
    """The A/A p95 of the mean of each process's first ``cap`` windows (all of them where it took fewer):
    what stopping a row at ``cap`` windows would have given, on the windows' mean (a row's figure is the
    median of every sample, so the last cap, every window, is the yardstick)."""
    shown: list[str] = []
    for cap in caps:
        dev: list[float] = []
        taken: list[int] = []
        for r in pair.rows:
            a, b = _windows(r.row, FIRST)[:cap], _windows(r.row, SECOND)[:cap]
            if a and b:
                dev.append(abs(statistics.fmean(b) / statistics.fmean(a) - 1))
                taken += [len(a), len(b)]
        if dev:
            shown.append(f"{cap}: {pct(dev, 0.95):.2%} ({statistics.fmean(taken):.2f} windows a row)")
    return "A/A p95 of the first windows' mean, at most: " + ", ".join(shown)


def report_seconds(processes: dict[str, dict[str, str]]) -> None:
    if REFERENCE not in processes or FIRST not in processes:
        print("goal 2: needs suite 0.15's and suite 0.18's round 1")
        return
    report_cost(processes, "goal 2, 0.18 vs 0.15", f"{REFERENCE},{FIRST}")
    if BESIDE in processes:  # on suite 0.15's GPU: the same comparison within one GPU
        report_cost(processes, "goal 2 on one GPU", f"{REFERENCE},{BESIDE}")
    if DEFAULTS in processes:
        report_cost(processes, "goal 2 at 0.18's defaults", f"{REFERENCE},{DEFAULTS}")
    for name in (REFERENCE, REFERENCE_SECOND, FIRST, SECOND, THIRD, BESIDE, DEFAULTS):
        if name in processes:
            p = processes[name]
            per_row = float(p["duration_s"]) / max(1, int(p["ok"]))
            print(f"{'':22} {name}: {p['ok']} rows, {per_row:.3f} s a row")


def report(tables: Path, trials: int, worst: int) -> None:
    processes_table, medians, validation = read_tables(tables)
    processes = {p["name"]: p for p in processes_table}
    print("Processes (name: suite version recorded, GPU, seconds):")
    for p in processes_table:
        print(f"  {p['name']:8} suite {p['suite_version']:5} {p['gpu_uuid'][:12]}  {secs(p)}")
    print()
    report_aa(medians, worst)
    print()
    report_seconds(processes)
    print()
    if validation:
        print(
            "goal 3, the early verdicts on suite 0.18's validation rounds "
            "(lab/studies/early_verdicts.py's trials)"
        )
        report_validation(validation, trials)
    else:
        print("goal 3: no validation rounds in these tables")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m lab.studies.aa_profile")
    parser.add_argument(
        "lease", type=Path, nargs="?", help="the folder the lease's tarballs were extracted into"
    )
    parser.add_argument("--out", type=Path, help="where the tables go (with LEASE)")
    parser.add_argument("--tables", type=Path, help="tables made before (instead of LEASE)")
    parser.add_argument("--trials", type=int, default=300)
    parser.add_argument("--worst", type=int, default=12)
    args = parser.parse_args(argv)
    if args.lease is not None:
        if args.out is None:
            parser.error("LEASE needs --out")
        export_lease(args.lease, args.out)
        report(args.out, args.trials, args.worst)
    elif args.tables is not None:
        report(args.tables, args.trials, args.worst)
    else:
        parser.error("give LEASE --out DIR, or --tables DIR")


if __name__ == "__main__":
    main()
