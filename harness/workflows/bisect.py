"""Find the first release where one row changed, measuring as few releases as it can (as ``asv find`` does
over commits): binary search between a good and a bad release of the matrix's release axis.

Each probe runs one cell for one row (``workload:dtype``) and is judged against the good release with the
same statistics as every verdict: ``same`` keeps the change after it, the bad side's verdict puts it at or
before it, and an undecided probe gets more rounds (up to the matrix's) and then goes to the side its
median is nearer. Results already in the folders given are reused; a release with as many rounds of the row
there as a probe asks is not measured again.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from harness.errors import HarnessError, InputError, Problem
from harness.executors import launch
from harness.executors.runs import CellOutcome
from harness.plan.model import Cell, Plan
from harness.plan.releases import Release, ReleaseAxis, release_axis
from harness.report import pipeline
from harness.report.analysis import frames, row_verdicts
from harness.results import documents, folder, resume
from harness.suite.catalog import rows_of

Say = Callable[[str], None]
Run = Callable[[Plan, Path], list[CellOutcome]]  # run a plan into a folder (launch.run with a request)
FIRST_ROUNDS = 3  # as qualify: more only where a probe is undecided
KNOWN_SHOWN = 12  # rows an unknown row's message names


@dataclass(frozen=True)
class Probe:
    release: Release
    verdict: str  # against the good release: same, slower, faster, inconclusive (or good / bad)
    ratio: float | None  # median ratio to the good release
    rounds: int
    measured: bool  # run by this bisect (False: its rounds were in the folders already)


@dataclass(frozen=True)
class Found:
    row: str
    before: Release  # the last release like the good one
    after: Release  # the first release like the bad one
    verdict: str  # after against before
    ratio: float | None
    what_ran: str | None  # what ran differently between the two, if anything
    probes: tuple[Probe, ...]
    measured: int  # releases this bisect ran
    between: int  # releases from good to bad, both included: what a full sweep would measure
    located: bool = True  # False: bad is not judged different from good, so there was no change to find
    # False: the two ends were undecided against each other, and the search followed the medians: ``before``
    # -> ``after`` is the likeliest step (as asv's find names one), not a change shown to be one
    significant: bool = True
    ends: str = ""  # the two ends' verdict against each other (bad against good)


def rounds_said(count: int) -> str:
    """``1 round``, ``3 rounds``."""
    return "1 round" if count == 1 else f"{count} rounds"


def bisect(
    plan: Plan,
    row: str,
    good: str,
    bad: str,
    out: Path,
    reuse: list[Path],
    run: Run,
    say: Say,
) -> Found:
    """Find where ``row`` changed between the releases ``good`` and ``bad`` of ``plan``'s release axis."""
    axis, (workload, dtype), lo, hi = _checked(plan, row, good, bad)
    check_folders(reuse)
    folders = [*reuse, out]
    judge = _Judge(plan, workload, dtype, folders, run, out, say)
    between = abs(hi - lo) + 1
    good_probe, bad_probe, first = judge.ends(axis.releases[lo], axis.releases[hi])
    significant = first.verdict in ("slower", "faster")
    leaning = first.verdict == "inconclusive" and first.ratio is not None and round(first.ratio, 4) != 1.0
    if not (significant or leaning):  # nothing to locate: said, with what the two ends gave
        ends = [
            dataclasses.replace(good_probe, verdict="good"),
            dataclasses.replace(bad_probe, verdict=first.verdict),
        ]
        return Found(
            row=f"{workload} {dtype}",
            before=axis.releases[lo],
            after=axis.releases[hi],
            verdict=first.verdict,
            ratio=first.ratio,
            what_ran=None,
            probes=tuple(ends),
            measured=len(judge.measured),
            between=between,
            located=False,
            ends=first.verdict,
        )
    direction, good_release = first.verdict, axis.releases[lo]  # undecided ends: medians alone, below
    bad_said = "bad" if significant else first.verdict  # undecided ends: the bad end is not shown to be bad
    probes = [
        dataclasses.replace(good_probe, verdict="good"),
        dataclasses.replace(bad_probe, verdict=bad_said),
    ]
    while abs(hi - lo) > 1:
        mid = (lo + hi) // 2  # strictly between while they are two or more apart, either way round
        release = axis.releases[mid]
        judge.probe(release, None)
        seen = judge.more_rounds(good_release, release)
        if significant and seen.verdict == "same":
            lo = mid
        elif significant and seen.verdict == direction:
            hi = mid
        else:  # undecided, a change the other way, or undecided ends: the side whose median is nearer
            # (with undecided ends, a probe like the bad end is often judged 'same' too: only medians tell)
            to_good = abs(math.log(seen.ratio)) if seen.ratio else math.inf
            to_bad = abs(math.log(seen.ratio / first.ratio)) if seen.ratio and first.ratio else math.inf
            lo, hi = (mid, hi) if to_good <= to_bad else (lo, mid)
        probes.append(Probe(release, seen.verdict, seen.ratio, seen.rounds, judge.ran(release)))
        say(
            f"bisect: {release.label} is {seen.verdict} against {good} (ratio {_ratio(seen.ratio)}): the "
            f"change is between {axis.releases[lo].label} and {axis.releases[hi].label}"
        )
    before, after = axis.releases[lo], axis.releases[hi]
    final = judge.compare(before, after)
    return Found(
        row=f"{workload} {dtype}",
        before=before,
        after=after,
        verdict=final.verdict,
        ratio=final.ratio,
        what_ran=final.what_ran,
        probes=tuple(probes),
        measured=len(judge.measured),
        between=between,
        significant=significant,
        ends=first.verdict,
    )


def cells_between(plan: Plan, row: str, good: str, bad: str) -> list[Cell]:
    """The cells a search from ``good`` to ``bad`` may run, both ends included (InputError as ``bisect``
    gives it for a row or release the matrix does not hold): what the host must be able to run."""
    axis, _, lo, hi = _checked(plan, row, good, bad)
    ids = {r.cell_id for r in axis.releases[min(lo, hi) : max(lo, hi) + 1]}
    return [c for c in plan.cells if c.id in ids]


def _rows(plan: Plan) -> set[tuple[str, str]]:
    """The matrix's rows: its ``rows``, else its workloads (or its profile's) in each of its dtypes, and
    its ``cpu_rows`` (a CPU's)."""
    suite = plan.suite
    named = {(w, d) for w, _, d in (pair.partition(":") for pair in (*suite.rows, *suite.cpu_rows))}
    if suite.rows:
        return named
    return named | set(rows_of(suite.workloads, suite.profile, suite.dtypes))


def _checked(plan: Plan, row: str, good: str, bad: str) -> tuple[ReleaseAxis, tuple[str, str], int, int]:
    """The axis, the row and the two releases' places, or InputError with the fix for each."""
    problems = []
    workload, _, dtype = row.partition(":")
    rows = sorted(_rows(plan))
    if (workload, dtype) not in rows:
        known = ", ".join(f"{w}:{d}" for w, d in rows[:KNOWN_SHOWN])
        more = f" and {len(rows) - KNOWN_SHOWN} more" if len(rows) > KNOWN_SHOWN else ""
        problems.append(
            Problem(row, "row", f"is not a row of the matrix; give WORKLOAD:DTYPE, one of {known}{more}")
        )
    axis = release_axis(plan.cells)
    if axis is None:
        problems.append(
            Problem(
                plan.source,
                "axes",
                "has no release axis: list cuDNN releases ({wheel: X} cells under one torch) or torch "
                "versions (under one cuDNN source)",
            )
        )
        raise InputError(problems)
    names = ", ".join(r.version for r in axis.releases)
    places = []
    for flag, name in (("good", good), ("bad", bad)):
        release = axis.find(name)
        if release is None:
            problems.append(Problem(name, flag, f"is not a release of the {axis.axis} axis; one of {names}"))
        else:
            places.append(axis.releases.index(release))
    if len(places) == 2 and places[0] == places[1]:
        problems.append(Problem(bad, "bad", "is the good release; give two different releases"))
    if problems:
        raise InputError(problems)
    return axis, (workload, dtype), places[0], places[1]


def check_folders(reuse: list[Path]) -> None:
    """Each folder whose results the search reuses is one ``report`` would read: a results folder with
    its plan (InputError naming it and the fix, setting ``results``, as report refuses it)."""
    problems = []
    for where in reuse:
        if not where.is_dir():
            what = "is a file" if where.exists() else "does not exist"
            problems.append(
                Problem(
                    str(where),
                    "results",
                    f"{what}; name a results folder that 'python -m harness run' wrote, or leave the option "
                    "out",
                    setting="results",
                )
            )
            continue
        try:
            folder.stored_plan(where)
        except InputError as exc:
            problems += exc.problems
    if problems:
        raise InputError(problems)


class Unmeasured(HarnessError):
    """A release's probe ran but left no measured round of the row: its run failed, and its result in the
    search's folder says why."""


@dataclass(frozen=True)
class _Seen:
    verdict: str
    ratio: float | None
    rounds: int
    what_ran: str | None


class _Judge:
    """Runs a release's cell for the row where the folders lack it, and judges two releases' rounds."""

    def __init__(
        self, plan: Plan, workload: str, dtype: str, folders: list[Path], run: Run, out: Path, say: Say
    ) -> None:
        self.plan, self.workload, self.dtype = plan, workload, dtype
        self.folders, self.run, self.out, self.say = folders, run, out, say
        self.measured: set[str] = set()
        self._loaded: tuple[pd.DataFrame, dict[tuple[str, str, str, str], list[float]]] | None = None
        self._warned = False

    def ran(self, release: Release) -> bool:
        return release.cell_id in self.measured

    def _frame(self) -> tuple[pd.DataFrame, dict[tuple[str, str, str, str], list[float]]]:
        """The row's rounds in the folders, read again only after a probe ran."""
        if self._loaded is None:
            where = [f for f in self.folders if f.is_dir()]
            loaded = documents.load_many(where)
            # what report refuses (a cell all of whose results were refused, machines or builds mixed),
            # refused here too; its warnings said once
            warn = self.say if not self._warned else (lambda line: None)
            pipeline.refuse_as_report_does(self.plan, where, loaded, warn)
            self._warned = True
            frame = frames.long_form(loaded)
            if frame.empty or "workload" not in frame.columns:  # no result, or failed runs alone
                self._loaded = pd.DataFrame(), {}
            else:
                row = frame[(frame["workload"] == self.workload) & (frame["dtype"] == self.dtype)]
                self._loaded = row, frames.samples(loaded)
        return self._loaded

    def _rounds(self, release: Release) -> int:
        frame, _ = self._frame()
        if frame.empty:
            return 0
        return int(((frame["group"] == release.cell_id) & (frame["status"] == "ok")).sum())

    def probe(self, release: Release, rounds: int | None) -> Probe:
        wanted = rounds or min(FIRST_ROUNDS, self.plan.rounds)
        have = self._rounds(release)
        if have < wanted:
            self.say(
                f"bisect: measuring {release.label} ({self.workload} {self.dtype}, {rounds_said(wanted)})"
            )
            cell = self.plan.cell(release.cell_id)
            probe_plan = dataclasses.replace(
                self.plan,
                cells=(cell,),
                baseline_id=cell.id,
                suite=dataclasses.replace(
                    self.plan.suite,
                    workloads=(self.workload,),
                    dtypes=(self.dtype,),
                    rows=(f"{self.workload}:{self.dtype}",),
                ),
                rounds=wanted,
            )
            self.run(probe_plan, self.out)
            self._loaded = None
            self.measured.add(release.cell_id)
            if self._rounds(release) == 0:
                raise Unmeasured(
                    f"bisect: {release.label} has no measured round of {self.workload} {self.dtype}: its run "
                    f"failed, and its result in {self.out} says why; fix that and run bisect again"
                )
        return Probe(release, "", None, self._rounds(release), release.cell_id in self.measured)

    def compare(self, base: Release, other: Release) -> _Seen:
        frame, samples = self._frame()
        if frame.empty or not {base.cell_id, other.cell_id} <= set(frame["group"]):
            return _Seen("missing", None, 0, None)
        table = row_verdicts.timing(
            frame,
            base.cell_id,
            (base.cell_id, other.cell_id),
            lambda workload: self.plan.threshold_pct(workload),
            self.plan.alpha,
            samples,
        )
        if table.empty:
            return _Seen("missing", None, 0, None)
        row = table.iloc[0]
        ratio = float(row["ratio"]) if pd.notna(row.get("ratio")) else None
        change = row.get("ran_change")
        return _Seen(
            str(row["verdict"]),
            ratio,
            int(row["rounds_candidate"]),
            str(change) if pd.notna(change) else None,
        )

    def ends(self, good: Release, bad: Release) -> tuple[Probe, Probe, _Seen]:
        """Both ends measured, with more rounds while they stay undecided, their probes as they then stand
        (a probe that has its rounds runs nothing, and counts them), and the one against the other."""
        self.probe(good, None)
        self.probe(bad, None)
        seen = self.more_rounds(good, bad)
        return self.probe(good, None), self.probe(bad, None), seen

    def more_rounds(self, base: Release, other: Release) -> _Seen:
        """Rounds up to the matrix's, on both sides, while the two stay undecided."""
        seen = self.compare(base, other)
        for rounds in range(min(FIRST_ROUNDS, self.plan.rounds) + 1, self.plan.rounds + 1):
            if seen.verdict != "inconclusive":
                break
            self.probe(base, rounds)
            self.probe(other, rounds)
            seen = self.compare(base, other)
        return seen


def _ratio(value: float | None) -> str:
    return f"{value:.3f}" if value is not None else "n/a"


def run_with(request: launch.RunRequest, say: Say, detail: Say | None = None) -> Run:
    """A ``Run`` that sends each probe through ``launch.run`` with ``request``'s settings, into its folder.
    A fresh start happens here, once, before the search counts the rounds the folder holds: what earlier
    runs left moves to ``superseded/`` and every probe then resumes, so none moves rounds already counted."""
    if request.mode is resume.Mode.FRESH:
        if request.out.is_dir():
            with folder.locked(request.out):
                folder.supersede_all(request.out)
        request = dataclasses.replace(request, mode=resume.Mode.RESUME)
    quiet = _Quiet(say, detail)
    return lambda plan, out: launch.run(plan, dataclasses.replace(request, out=out), quiet, detail)


class _Quiet:
    """The probes' progress without the results they kept: a search says what it measured; each kept run
    (and the count of them) goes to ``detail`` (verbose) instead."""

    # a kept run's line ("[2/9] CELL round 2: kept: ...", runs.tag) and their count, matched from the
    # line's start: a measurement's error text in another line may hold the same words
    KEPT = re.compile(r"\[\d+/\d+\] \S+( round \d+)?: kept: |\d+ of \d+ results kept from earlier runs into ")

    def __init__(self, say: Say, detail: Say | None) -> None:
        self.say, self.detail = say, detail

    def __call__(self, line: str) -> None:
        if self.KEPT.match(line):
            if self.detail is not None:
                self.detail(line)
        else:
            self.say(line)
