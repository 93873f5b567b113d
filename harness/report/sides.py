"""What the two sides of a ``compare`` hold: which cells (never pooled: one cell against one, or the same
cells cell by cell), and from which matrices and suite settings, so that a comparison across them says so.
"""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import NoReturn

from harness.errors import InputError, Problem, one_line
from harness.plan.model import DEFAULT_ALPHA, DEFAULT_REGRESSION_PCT, Plan
from harness.report.analysis import math_flags
from harness.results import folder
from harness.suite.document import ResultDocument
from harness.suite.settings import SuiteSettings

SIDES = ("A", "B")
# the suite's settings (``SuiteSettings``) that change how a row is measured; which rows run (workloads,
# dtypes, rows, knobs), the checks beside the timing and where results go are not settings of the measurement
MEASUREMENT = ("profile", "device", "time_budget_s", "min_time_s", "timed_share")
LISTED = 8  # cells named per side in a refusal (a line of the terminal each)


@dataclass(frozen=True)
class Thresholds:
    """How a comparison judges its rows, and where that came from (``source``, said in the report)."""

    regression_pct: float = DEFAULT_REGRESSION_PCT
    alpha: float = DEFAULT_ALPHA
    per_workload_pct: Mapping[str, float] = field(default_factory=dict)
    source: str = "the defaults"
    cpu_pct: float | None = None  # every row's where both sides ran on CPUs (a plan's cpu_regression_pct)

    def told(self) -> str:
        """``threshold 5% (relu 10%), alpha 0.002, from A's plan``."""
        per = ", ".join(f"{w} {pct:g}%" for w, pct in sorted(self.per_workload_pct.items()))
        return (
            f"threshold {self.regression_pct:g}%"
            + (f" ({per})" if per else "")
            + (f" ({self.cpu_pct:g}% on a CPU)" if self.cpu_pct is not None else "")
            + f", alpha {self.alpha:g}, "
            f"{self.source}"
        )


@dataclass(frozen=True)
class Entry:
    """One result file of a side: the side, the cell its document names, the document."""

    side: str
    cell: str
    document: ResultDocument


def pairs(
    entries: Mapping[str, Entry], paths: Mapping[str, Path], picks: Mapping[str, str | None]
) -> list[tuple[str, str]]:
    """(cell of A, cell of B) to compare, after each side's pick (text in the cell id): one cell a side,
    or every cell of the two sides when both hold the same cells. A side whose cells would be pooled is
    refused (InputError) naming each side's cells and how to pick one."""
    cells = {}
    for side in SIDES:
        have = sorted({e.cell for e in entries.values() if e.side == side})
        pick = picks[side]
        chosen = [c for c in have if pick is None or pick in c]
        if not chosen:
            setting = f"cell_{side.lower()}" if picks[side] != picks[_other(side)] else "cell"
            why = f"holds no cell whose id contains {pick!r}; it holds {_listing(have)}"
            raise InputError([Problem(str(paths[side]), setting, why, setting=setting)])
        cells[side] = chosen
    a, b = cells["A"], cells["B"]
    if len(a) == 1 and len(b) == 1:
        return [(a[0], b[0])]
    if a == b:
        return [(cell, cell) for cell in a]
    told = [Problem(str(paths[side]), side, f"holds {_listing(cells[side])}") for side in SIDES]
    raise InputError(
        [
            *told,
            Problem(
                f"{paths['A']}, {paths['B']}",
                "cell",
                "a side's cells are never pooled into one: pick one cell on each side with TEXT in its id "
                "(its -a and -b forms pick one side's alone), or compare folders that hold the same cells, "
                "which are compared cell by cell",
                setting="cell",
            ),
        ]
    )


def differences(entries: Mapping[str, Entry], paths: Mapping[str, Path]) -> list[str]:
    """A sentence for each thing the sides were made with that differs between them: the matrix (plan
    name and matrix sha256) and the suite's settings of the measurement. Empty where they agree."""
    plans: dict[Path, Plan | None] = {}
    named: dict[str, dict[str, str]] = {side: {} for side in SIDES}  # sha256 (or name) -> how it is told
    settings: dict[str, dict[str, set[str]]] = {side: {} for side in SIDES}
    for file, entry in entries.items():
        doc = entry.document
        sha = str(doc["run"].get("matrix_sha256") or "")
        name = _plan_name(Path(file), paths[entry.side], plans)
        if sha or name:
            told = (
                f"{name!r} (matrix sha256 {sha[:12]})" if name and sha else repr(name) if name else sha[:12]
            )
            named[entry.side].setdefault(sha or f"name {name}", told)
        if doc["status"] == "ok":
            for name, value in _settings(doc["run"].get("command", [])).items():
                settings[entry.side].setdefault(name, set()).add(value)
    found = []
    # the matrix file's sha256 says which matrix where the runs recorded it, its plan's name otherwise
    if named["A"] and named["B"] and set(named["A"]) != set(named["B"]):
        found.append(
            f"A and B come from different matrices (A: {', '.join(sorted(named['A'].values()))}; "
            f"B: {', '.join(sorted(named['B'].values()))}): check that both asked the same of the cells "
            "compared"
        )
    differ = [
        f"{name.replace('_', '-')} {' / '.join(sorted(settings['A'][name]))} on A, "
        f"{' / '.join(sorted(settings['B'][name]))} on B"
        for name in MEASUREMENT
        if name in settings["A"] and name in settings["B"] and settings["A"][name] != settings["B"][name]
    ]
    if differ:
        found.append(
            "A and B ran the suite with different settings ("
            + "; ".join(differ)
            + "): a difference in timing may come from them alone"
        )
    return found + _math(entries)


def _math(entries: Mapping[str, Entry]) -> list[str]:
    """A sentence where the sides ran a precision mode with different math flags (torch builds whose
    defaults differ): those rows compare math as well as cuDNN."""
    ran = ((e.side, e.document) for e in entries.values() if e.document["status"] == "ok")
    differ = math_flags.differing(math_flags.from_documents(ran, SIDES), {side: side for side in SIDES})
    if not differ:
        return []
    return [
        "A and B ran with different math flags ("
        + " | ".join(differ)
        + "): those rows compare the math as well as cuDNN, not cuDNN alone"
    ]


def _settings(command: list[str]) -> dict[str, str]:
    """The measurement's settings a run's suite command gave, read as the suite reads them
    (``SuiteSettings``), each told as text; a setting the command left out is ``(suite default)`` (the
    default of the suite that ran, which may not be today's). Empty where the command is not the suite's
    run, or not one the suite can read."""
    if "run" not in command:
        return {}
    try:
        given = vars(_SUITE_RUN.parse_known_args(command[command.index("run") + 1 :])[0])
    except ValueError:
        return {}
    return {name: "(suite default)" if given[name] is None else str(given[name]) for name in MEASUREMENT}


class _Refusing(argparse.ArgumentParser):
    """A parser that raises (ValueError) where argparse would print and exit."""

    def error(self, message: str) -> NoReturn:
        raise ValueError(message)


def _suite_run() -> argparse.ArgumentParser:
    """The suite's options for its settings, each defaulting to None: what a command leaves out reads as
    None, not as today's default."""
    parser = _Refusing(add_help=False, allow_abbrev=False)
    SuiteSettings.add_arguments(parser)
    parser.set_defaults(**dict.fromkeys((f.name for f in fields(SuiteSettings)), None))
    return parser


_SUITE_RUN = _suite_run()


def thresholds(
    entries: Mapping[str, Entry], paths: Mapping[str, Path], pct: float | None, alpha: float | None
) -> Thresholds:
    """How to judge the rows: ``pct`` and ``alpha`` where given; the rest as the plans of the sides' folders
    say (the thresholds their matrix chose, per workload too, as ``report`` judges those folders): the
    baseline's (A's) plan where both sides have one, and the defaults where neither does."""
    seen: dict[Path, Plan | None] = {}
    plans = {
        side: [p for f, e in entries.items() if e.side == side if (p := _plan_of(Path(f), paths[side], seen))]
        for side in SIDES
    }
    chosen = plans["A"][0] if plans["A"] else plans["B"][0] if plans["B"] else None
    if chosen is None:
        found = Thresholds(source=f"the defaults ({_unreadable(seen) or 'no plan.json beside the results'})")
    else:
        side = "A" if plans["A"] else "B"
        unread = _unreadable(seen) if side == "B" else None  # A's there but damaged: said, never passed over
        found = Thresholds(
            chosen.regression_pct,
            chosen.alpha,
            chosen.per_workload_pct,
            f"from {side}'s plan" + (f"; {unread}" if unread else ""),
            chosen.cpu_regression_pct,
        )
    given = [name for name, value in (("threshold", pct), ("alpha", alpha)) if value is not None]
    if not given:
        return found
    rest = "" if chosen is None else f", the rest {found.source}"
    return Thresholds(
        found.regression_pct if pct is None else pct,
        found.alpha if alpha is None else alpha,
        found.per_workload_pct if pct is None else {},  # a threshold given is every workload's
        f"{' and '.join(given)} as given{rest}",
    )


def _plan_of(file: Path, root: Path, seen: dict[Path, Plan | None]) -> Plan | None:
    """The nearest plan.json from ``file``'s folder up to its side's ``root``, where one is there and valid;
    None otherwise (files copied out of their results folder)."""
    here = file.parent
    while True:
        if here not in seen:
            seen[here] = None
            if (here / folder.PLAN_FILE).is_file():
                with contextlib.suppress(InputError):  # a damaged plan.json names nothing; results compare
                    seen[here] = folder.stored_plan(here)
        if seen[here] is not None or here == root or root not in here.parents:
            return seen[here]
        here = here.parent


def _unreadable(seen: Mapping[Path, Plan | None]) -> str | None:
    """The first plan.json beside the results that could not be read, and why (None: none such), so that a
    damaged plan.json is said, never taken for a missing one."""
    for here, plan in seen.items():
        if plan is None and (here / folder.PLAN_FILE).is_file():  # there, and refused when read
            try:
                folder.stored_plan(here)
            except InputError as error:
                return f"{here / folder.PLAN_FILE} could not be read: {one_line(str(error), 300)}"
    return None


def _plan_name(file: Path, root: Path, seen: dict[Path, Plan | None]) -> str | None:
    """The plan name of the nearest plan.json (``_plan_of``)."""
    plan = _plan_of(file, root, seen)
    return plan.name if plan is not None else None


def _other(side: str) -> str:
    return "B" if side == "A" else "A"


def _listing(cells: list[str]) -> str:
    """``N cells: a, b, ...``, at most LISTED of them named."""
    more = f" and {len(cells) - LISTED} more" if len(cells) > LISTED else ""
    return f"{len(cells)} cell{'s' if len(cells) != 1 else ''}: {', '.join(cells[:LISTED])}{more}"
