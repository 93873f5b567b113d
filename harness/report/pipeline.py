"""``report`` and ``compare``: load results (folders of a plan, or two ad-hoc sides), refuse what cannot be
compared, analyze against the baseline, and write the report."""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from harness import jsonio
from harness.errors import InputError, Problem
from harness.plan.model import Plan
from harness.report import ownership, sides
from harness.report.analysis import frames, row_verdicts
from harness.report.analysis.analyze import analyze
from harness.report.analysis.model import Analysis, View
from harness.report.analysis.release_gate import Policy
from harness.report.render import render
from harness.report.sections import table_values
from harness.report.writers.document import Rendered
from harness.results import documents, folder, validity

Say = Callable[[str], None]


@dataclass(frozen=True)
class Report:
    analysis: Analysis
    loaded: documents.LoadedResults
    rendered: Rendered | None


def merged_plan(dirs: list[Path]) -> Plan:
    """The plan of one matrix's shards: each folder's ``plan.json``, all of one matrix and baseline."""
    plans = [folder.stored_plan(d) for d in dirs]
    plan = plans[0]
    for other, where in zip(plans[1:], dirs[1:], strict=True):
        if other.name != plan.name or other.baseline_id != plan.baseline_id:
            raise InputError(
                [
                    Problem(
                        str(where),
                        "plan.json",
                        f"is matrix {other.name!r} with baseline "
                        f"{other.baseline_id}, but {dirs[0]} is {plan.name!r} with baseline "
                        f"{plan.baseline_id}; "
                        "only shards of one matrix merge into one report",
                    )
                ]
            )
    cells = {c.id: c for p in plans for c in p.cells}
    # shards split a matrix by cells, by rounds or both: a cell was asked for its shards' rounds together
    asked = {sum(p.rounds for p in plans if any(c.id == cell for c in p.cells)) for cell in cells}
    return dataclasses.replace(
        plan, cells=tuple(cells.values()), rounds=asked.pop() if len(asked) == 1 else plan.rounds
    )


def report(plan: Plan, dirs: list[Path], out: Path, policy: Policy, warn: Say) -> Report:
    """Every valid result of ``dirs`` against ``plan``'s baseline, written into ``out``. Results made for
    another plan than their folder's ``plan.json`` are counted, and the report says which and when (its
    "Read this first", and a warning here)."""
    ownership.check(out, dirs, "out")  # before a minute of reading: the report's folder is another's
    stored = _stored_bytes(dirs)
    if stored >= SAY_READING_BYTES:  # said before the wait: a big folder takes a minute to read and judge
        warn(
            f"reading {stored / 2**20:,.0f} MB of result files (compressed) from {', '.join(map(str, dirs))}"
        )
    loaded = documents.load_many(dirs)
    _refuse_refused_cells(plan, dirs, loaded)
    _refuse_incomparable(dirs, loaded, warn)
    view = View.from_plan(plan).on(documents.devices(loaded))
    other = _other_plans(view, loaded)
    if other:
        warn(f"note: {other}")
        view = dataclasses.replace(view, cautions=(*view.cautions, other))
    analysis = analyze(view, loaded, policy)
    for file, cell_id in analysis.outside:
        warn(f"not in the plan: {file} holds cell {cell_id}, which plan.json does not list; not compared")
    jsonio.output_folder(out, "out")
    return Report(analysis, loaded, _written(view, analysis, loaded, out, dirs))


SAY_READING_BYTES = 64 * 1024 * 1024


def _stored_bytes(dirs: list[Path]) -> int:
    """The size, as stored, of the documents ``report`` reads in ``dirs``."""
    total = 0
    for where in dict.fromkeys(dirs):
        for path in where.glob("*.json*"):
            with contextlib.suppress(OSError):
                total += os.lstat(path).st_size
    return total


def _other_plans(view: View, loaded: documents.LoadedResults, most: int = 6) -> str | None:
    """A sentence on the results of the plan's cells that were made for another plan than the one their
    folder holds now (``documents.of_other_plans``): how many, which cells' rounds (the first ``most``
    cells), and when they were made; None where there are none."""
    mine = [d for d in loaded.documents if d["cell"]["id"] in view.letters]
    found = [d for d, _ in documents.of_other_plans(loaded) if d["cell"]["id"] in view.letters]
    if not found:
        return None
    rounds: dict[str, list[int]] = {}
    for doc in found:
        rounds.setdefault(doc["cell"]["id"], []).append(documents.round_of(doc))
    cells = [
        f"{view.letters[cell]} ({view.labels.get(cell, cell)}) {table_values.rounds_text(rounds[cell])}"
        for cell in view.groups
        if cell in rounds
    ]
    more = f" and {len(cells) - most} more cells" if len(cells) > most else ""
    times = [validity.instant(d[key]) for d in found for key in ("started_at", "finished_at")]
    utc = sorted(_utc(t) for t in times if t is not None)
    when = ""
    if utc:
        last = f"{utc[-1]:%H:%M:%S}" if utc[-1].date() == utc[0].date() else f"{utc[-1]:%Y-%m-%d %H:%M:%S}"
        when = f", made from {utc[0]:%Y-%m-%d %H:%M:%S} to {last} UTC"
    return (
        f"{len(found)} of the {len(mine)} results here were made for another plan than the plan.json "
        f"beside them (an earlier version of the matrix, or another folder's){when}: "
        f"{', '.join(cells[:most])}{more}; they are counted as rounds of this plan: a fresh run measures "
        "its own rounds alone"
    )


def _utc(instant: dt.datetime) -> dt.datetime:
    """An aware time in UTC, naive; a valid time at the calendar's edge that UTC cannot hold (year 1 at
    +05:00) stays as written rather than raising."""
    try:
        return instant.astimezone(dt.timezone.utc).replace(tzinfo=None)
    except OverflowError:
        return instant.replace(tzinfo=None)


def _written(
    view: View, analysis: Analysis, loaded: documents.LoadedResults, out: Path, dirs: list[Path]
) -> Rendered:
    """The report written into ``out`` under its lock: two reports never mix their files in one folder."""
    with folder.locked(out):
        ownership.check(out, dirs, "out")
        ownership.claim(out, dirs)
        return render(view, analysis, loaded, out, dirs)


def _refuse_refused_cells(plan: Plan, dirs: list[Path], loaded: documents.LoadedResults) -> None:
    """A cell whose every result this load refused (quarantined as invalid) has no run to judge because
    its input was bad, not because it failed to run: InputError naming each refused file, not a verdict."""
    have = {d["cell"]["id"] for d in loaded.documents}
    found = [
        Problem(f"{folder.QUARANTINE}/{q.name}", "", f"refused as invalid: {'; '.join(q.problems[:2])}")
        for cell in plan.cells
        if cell.id not in have
        for q in loaded.quarantined
        if q.name.startswith(f"{cell.id}.r")
    ]
    if found:
        found.append(
            Problem(
                ", ".join(map(str, dirs)),
                "",
                "a cell has no valid result left, so nothing is judged; put the runs' own results back "
                "in place of the refused files, or run those cells again",
            )
        )
        raise InputError(found)


@dataclass(frozen=True)
class Undecided:
    """What a sequential qualification runs again: the cells with inconclusive rows (and the baseline
    they are judged against), and those rows, as (workload, dtype) in the matrix's order. ``spoiled``:
    the inconclusive rows a busy or stalled host spoiled, which no later round can decide (a spoiled
    round stays in the folder), with the first ``why``; they are not run again."""

    cells: tuple[str, ...]
    rows: tuple[tuple[str, str], ...]
    count: int  # inconclusive rows, across cells and knob sets
    spoiled: int = 0
    why: str = ""


def undecided(plan: Plan, dirs: list[Path], before_round: int | None = None) -> Undecided | None:
    """The rows of ``plan`` still inconclusive in ``dirs``; None where every row is decided.

    ``before_round``: judged on the rounds before it only, as they stood when that round was first
    asked for; a folder a run finished holds later rounds too, and judged on those, a re-run would ask
    its later rounds for other rows than they hold and measure them again.

    Rows timed differently on the two sides (a graph on one side only) stay inconclusive whatever the
    rounds, and so do rows a busy host spoiled, so neither is run again; where those are all that is
    left, ``rows`` is empty and ``spoiled`` says how many the host spoiled."""
    loaded = documents.load_many(dirs)
    if before_round is not None:
        earlier = {
            f: None
            for d, f in zip(loaded.documents, loaded.files, strict=True)
            if documents.round_of(d) < before_round
        }
        loaded = _subset(loaded, earlier)
    view = View.from_plan(plan).on(documents.devices(loaded))
    frame = frames.long_form(loaded)
    if frame.empty:
        return None
    timing = row_verdicts.timing(
        frame, view.baseline, view.groups, view.threshold_pct, view.alpha, frames.samples(loaded)
    )
    inconclusive = timing[timing["verdict"] == "inconclusive"]
    spoiled = inconclusive[[isinstance(s, str) and bool(s) for s in inconclusive["spoiled"]]]
    open_rows = inconclusive[
        (inconclusive["timer_baseline"] == inconclusive["timer_candidate"])
        & ~inconclusive.index.isin(spoiled.index)
    ]
    if open_rows.empty and spoiled.empty:
        return None
    first = spoiled.iloc[0] if not spoiled.empty else None
    why = f"{first['workload']} {first['mode']}: {first['spoiled']}" if first is not None else ""
    if open_rows.empty:
        return Undecided((), (), 0, len(spoiled), why)
    cells = {plan.baseline_id, *open_rows["group"]}
    wanted = set(zip(open_rows["workload"], open_rows["dtype"], strict=True))
    return Undecided(
        tuple(c.id for c in plan.cells if c.id in cells),
        tuple(dict.fromkeys(r for r in zip(timing["workload"], timing["dtype"], strict=True) if r in wanted)),
        len(open_rows),
        len(spoiled),
        why,
    )


@dataclass(frozen=True)
class Pair:
    """One comparison of a ``compare``: a cell of A (the baseline) against a cell of B."""

    cell_a: str
    cell_b: str
    report: Report

    @property
    def title(self) -> str:
        return self.cell_a if self.cell_a == self.cell_b else f"{self.cell_a} (A) -> {self.cell_b} (B)"


@dataclass(frozen=True)
class Comparison:
    pairs: tuple[Pair, ...]  # one, or the sides' common cells, cell by cell
    differences: tuple[str, ...]  # what the sides were made with that differs (matrices, suite settings)
    judged: str = ""  # how the rows were judged: "threshold 5% (relu 10%), alpha 0.002, from A's plan"


@dataclass(frozen=True)
class CompareRequest:
    """What a ``compare`` asks: run A (the baseline) against run B, each result files or folders (shards in
    subfolders too); ``only`` narrows each side's files; ``cells`` (text in a cell id, per side) picks one
    cell on each side; ``threshold_pct`` and ``alpha``, where given, judge the rows instead of the sides'
    plans."""

    a: Path
    b: Path
    only: str | None = None
    cells: tuple[str | None, str | None] = (None, None)
    threshold_pct: float | None = None
    alpha: float | None = None


def compare(asked: CompareRequest, policy: Policy, out: Path | None, warn: Say) -> Comparison:
    """Two runs side by side: A is the baseline.

    A side's cells are never pooled: ``asked.cells`` picks one on each side, or folders holding the same
    cells are compared cell by cell (each into ``out``/<cell id>). The rows are judged at the threshold
    and alpha asked for, else as the sides' plans say (``sides.thresholds``)."""
    paths = {"A": asked.a, "B": asked.b}
    if out:
        jsonio.output_folder(out, "out")
    loaded, side_of = _load_sides(paths, asked.only)
    entries = {
        file: sides.Entry(side_of[file], doc["cell"]["id"], doc)
        for doc, file in zip(loaded.documents, loaded.files, strict=True)
    }
    pairs = sides.pairs(entries, paths, dict(zip(sides.SIDES, asked.cells, strict=True)))
    compared = {("A", cell_a) for cell_a, _ in pairs} | {("B", cell_b) for _, cell_b in pairs}
    kept = {f: e for f, e in entries.items() if (e.side, e.cell) in compared}
    # the suite, GPU and driver agree across everything compared; torch and cuDNN within each side's cell
    _refuse_incomparable(
        list(paths.values()), _subset(loaded, kept), warn, {f: f"{e.side} {e.cell}" for f, e in kept.items()}
    )
    differences = tuple(sides.differences(kept, paths))
    judged = sides.thresholds(kept, paths, asked.threshold_pct, asked.alpha)
    for line in differences:
        warn(f"note: {line}")
    done = []
    # cell by cell, ``out`` itself stays locked throughout: two compares into one folder never mix it
    whole: contextlib.AbstractContextManager[object] = (
        folder.locked(out) if out is not None and len(pairs) > 1 else contextlib.nullcontext()
    )
    with whole:
        for cell_a, cell_b in pairs:
            mine = {f: e for f, e in kept.items() if (e.side, e.cell) in (("A", cell_a), ("B", cell_b))}
            labels = {side: f"{side}: {paths[side]}" for side in sides.SIDES}
            if len(pairs) > 1 or any(p.is_dir() for p in paths.values()):
                labels = {"A": f"{labels['A']} ({cell_a})", "B": f"{labels['B']} ({cell_b})"}
            view = View(
                "compare",
                "A",
                sides.SIDES,
                labels,
                judged.regression_pct,
                judged.alpha,
                0,
                f"ad-hoc comparison, {judged.told()}",
                per_workload_pct=dict(judged.per_workload_pct),
                cautions=differences,
                cpu_pct=judged.cpu_pct,
            ).on(documents.devices(loaded))
            part = _subset(loaded, mine)
            analysis = analyze(view, part, policy, group_of_file={f: e.side for f, e in mine.items()})
            rendered = None
            if out is not None:  # cell by cell: a report per cell, in a folder of its own
                # a planted out/<cell> link is refused, not written through
                where = (
                    out if len(pairs) == 1 else jsonio.output_folder(jsonio.real_folder(out / cell_a), "out")
                )
                rendered = _written(view, analysis, part, where, list(paths.values()))
            done.append(Pair(cell_a, cell_b, Report(analysis, part, rendered)))
    return Comparison(tuple(done), differences, judged.told())


def _load_sides(paths: dict[str, Path], only: str | None) -> tuple[documents.LoadedResults, dict[str, str]]:
    """Both sides' results, each checked (an ad-hoc compare moves nothing: it refuses instead of
    quarantining), and the side each file is on; a file or a run on both sides is refused."""
    found = {side: _side_files(path, side, only) for side, path in paths.items()}
    both = {p.resolve() for p in found["A"]} & {p.resolve() for p in found["B"]}
    if both:
        raise InputError(
            [
                Problem(
                    str(min(both)),
                    "B",
                    f"is also in A ({len(both)} files are on both sides); a run "
                    "compared with itself shows no change by construction: compare two runs",
                )
            ]
        )
    docs, files, side_of = [], [], {}
    for side, side_paths in found.items():
        for path in side_paths:
            document, problems = documents.check(path)
            if document is None:
                raise InputError(problems)
            docs.append(document)
            files.append(str(path))
            side_of[str(path)] = side
    loaded = documents.unique(docs, files)
    for copy in loaded.duplicates:
        if side_of[copy.name] != side_of[copy.same_as]:
            raise InputError(
                [
                    Problem(
                        copy.name,
                        side_of[copy.name],
                        f"is the same run as {copy.same_as}; a run "
                        "compared with itself shows no change by construction: compare two runs",
                    )
                ]
            )
    return loaded, side_of


def _subset(loaded: documents.LoadedResults, files: Mapping[str, object]) -> documents.LoadedResults:
    """The results of ``files`` only (and the duplicates of those), in the order they were loaded."""
    keep = [(d, f) for d, f in zip(loaded.documents, loaded.files, strict=True) if f in files]
    return documents.LoadedResults(
        tuple(d for d, _ in keep),
        tuple(f for _, f in keep),
        loaded.quarantined,
        tuple(d for d in loaded.duplicates if d.same_as in files),
    )


def _side_files(path: Path, side: str, only: str | None) -> list[Path]:
    if path.is_dir():  # shards in subfolders count; plans, verdicts and quarantined files do not
        paths = folder.result_files(path, only)
    elif path.is_file():
        paths = [path]
    else:
        raise InputError([Problem(str(path), side, "no such file or folder")])
    if not paths:
        raise InputError([Problem(str(path), side, "holds no result files")])
    return paths


QUARANTINED_SAID = 20  # quarantined files named one a line; the others counted (a folder of 20,000)


def refuse_as_report_does(plan: Plan, where: list[Path], loaded: documents.LoadedResults, warn: Say) -> None:
    """What ``report`` refuses of the results of ``where`` for ``plan``, and warns of, for a command that
    reads results to measure more (``bisect``): a cell whose every result was refused, results of different
    machines, torch or cuDNN builds mixed. An empty set is no refusal here: the search measures it."""
    _refuse_refused_cells(plan, where, loaded)
    _said(where, loaded, warn)
    _refuse_mixed(where, loaded)


def _said(where: list[Path], loaded: documents.LoadedResults, warn: Say) -> None:
    for q in loaded.quarantined[:QUARANTINED_SAID]:
        warn(f"quarantined {q.name}: {q.problems[0]}")
    if len(loaded.quarantined) > QUARANTINED_SAID:
        more = len(loaded.quarantined) - QUARANTINED_SAID
        warn(f"quarantined {more} more files, each with its problems beside it in quarantine/")
    if len(set(where)) < len(where):
        warn("a folder given more than once is read once")
    for d in loaded.duplicates:
        warn(f"counted once: {d.name} holds the same run as {d.same_as}")


def _refuse_mixed(
    where: list[Path], loaded: documents.LoadedResults, group_of_file: dict[str, str] | None = None
) -> None:
    problems = frames.comparability_problems(loaded, group_of_file)
    if problems:
        raise InputError([Problem(", ".join(map(str, where)), "", p) for p in problems])


def _refuse_incomparable(
    where: list[Path], loaded: documents.LoadedResults, warn: Say, group_of_file: dict[str, str] | None = None
) -> None:
    _said(where, loaded, warn)
    if not loaded.documents:
        places = ", ".join(map(str, where))
        raise InputError(
            [
                Problem(
                    places,
                    "",
                    f"holds no valid result ({len(loaded.quarantined)} quarantined, "
                    "their problems beside them in quarantine/); run the matrix first",
                )
            ]
        )
    _refuse_mixed(where, loaded, group_of_file)
