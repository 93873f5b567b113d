"""``qualify``'s rounds: a sequential qualification, as a sequence of plain steps.

The first rounds run every row of every cell (``FIRST_ROUNDS``, or every round the matrix asks); then
each later round, up to the matrix's, runs again only the rows a report would still call inconclusive,
in the cells that have them and the baseline. Rows a busy host spoiled are not run again (no round can
decide them), and where they are all that is left, the rounds stop there (``Rounds.busy`` says why).
The caller judges the folder afterwards, as ``report`` does. Library code: progress goes through
``say``, nothing is printed.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from harness.executors import runs
from harness.executors.runs import CellOutcome
from harness.plan.model import Plan
from harness.report import pipeline
from harness.results import folder

# the first rounds for every row; later rounds (up to the matrix's) only for the undecided ones
FIRST_ROUNDS = 3
Say = Callable[[str], None]
Run = Callable[[Plan, range], list[CellOutcome]]  # run some rounds of a plan into the folder (launch.run)


@dataclass(frozen=True)
class Rounds:
    """What the rounds of a qualification did."""

    outcomes: list[CellOutcome]  # the last runs made: where nothing could run, why
    measured: bool  # whether any run was made (False: the folder already held every round needed)
    stopped: bool = False  # no run could start (``runs.none_started``): the rounds stopped there
    first: int = 0  # the rounds every row was asked for
    last: int = 0  # the last round asked for (of the undecided rows, where it is past ``first``)
    busy: str = ""  # why the rounds stopped with rows undecided: a busy host spoiled every one of them

    @property
    def asked(self) -> str:
        """The rounds asked of the folder, in words: 'rounds 1-3 of every row[, and rounds 4-11 of the rows
        still undecided after them]'."""
        every = "round 1" if self.first == 1 else f"rounds 1-{self.first}"
        later = f"rounds {self.first + 1}-{self.last}" if self.last > self.first + 1 else f"round {self.last}"
        return f"{every} of every row" + (
            f", and {later} of the rows still undecided after them" if self.last > self.first else ""
        )


def run_rounds(plan: Plan, out: Path, all_rounds: bool, run: Run, say: Say) -> Rounds:
    """Run ``plan``'s rounds into ``out`` (its folder's ``plan.json`` is the whole plan), first every
    row, then only the undecided ones. A later round the folder already holds (an earlier run's) is said
    so, and kept where it is valid and made the same way rather than measured again."""
    first = plan.rounds if all_rounds else min(FIRST_ROUNDS, plan.rounds)
    # where the plan may run on a CPU, round 1 runs alone: a busy host can spoil every row in it for good
    alone = 1 if first > 1 and not all_rounds and plan.suite.device != "cuda" else first
    done = dataclasses.replace(_ran(run(plan, range(1, alone + 1))), first=first, last=first)
    if alone < first and not done.stopped:
        still = pipeline.undecided(plan, [out], before_round=alone + 1)
        if still is not None and not still.rows:
            held = max(1, held_rounds(plan, out))  # a finished folder's later rounds count too
            done = dataclasses.replace(done, first=1, last=1, busy=_spoiled(still, held))
            say(f"stopped after {_rounds(held)}: {done.busy}")
            return done
        rest = _ran(run(plan, range(alone + 1, first + 1)))
        done = Rounds(rest.outcomes, done.measured or rest.measured, rest.stopped, first, first)
    for round_index in range(first + 1, plan.rounds + 1):
        if done.stopped:
            break
        still = pipeline.undecided(plan, [out], before_round=round_index)
        if still is None:
            say(f"every row is decided after {round_index - 1} rounds; the other rounds are not needed")
            break
        if not still.rows:  # a spoiled round stays in the folder: no later round decides its rows
            done = dataclasses.replace(done, busy=_spoiled(still, round_index - 1))
            say(f"stopped after {_rounds(round_index - 1)}: {done.busy}")
            break
        undecided = f"round {round_index} of at most {plan.rounds}: {_undecided(still)}"
        if still.spoiled:
            undecided += f" ({still.spoiled} more a busy host spoiled are not run again)"
        if all(folder.result_path(out, cell, round_index).exists() for cell in still.cells):
            say(f"{undecided}; {out}/ already holds their round {round_index}, from an earlier run")
        else:
            rows = ", ".join(f"{w} {d}" for w, d in still.rows)
            say(f"{undecided}; running {rows} again in {len(still.cells)} cells")
        later = _ran(run(undecided_only(plan, still), range(round_index, round_index + 1)))
        done = Rounds(later.outcomes, done.measured or later.measured, later.stopped, first, round_index)
    return done


def _undecided(still: pipeline.Undecided) -> str:
    """``6 comparisons still undecided (3 rows, in 3 cells with the baseline)``: a comparison is a
    row of one cell against the baseline, so a row counts once per cell that leaves it undecided."""
    rows = len(still.rows)
    if still.count == rows:
        return f"{rows} row{'s' * (rows != 1)} still undecided"
    return (
        f"{still.count} comparisons still undecided ({rows} row{'s' * (rows != 1)}, in "
        f"{len(still.cells)} cells with the baseline)"
    )


def _rounds(count: int) -> str:
    return "round 1" if count == 1 else f"{count} rounds"


def held_rounds(plan: Plan, out: Path) -> int:
    """The last round of ``plan`` that ``out`` holds a result of, for any cell (0: none)."""
    held = [
        r
        for r in range(1, plan.rounds + 1)
        if any(folder.result_path(out, c.id, r).exists() for c in plan.cells)
    ]
    return max(held, default=0)


def _spoiled(still: pipeline.Undecided, rounds: int) -> str:
    """Why no later round can decide what is left, in words."""
    return (
        f"the {still.spoiled} undecided rows were timed on a busy or stalled host ({still.why}), and more "
        f"rounds cannot decide them: a spoiled round stays in the folder; the matrix's other rounds "
        f"(after {_rounds(rounds)}) are not run"
    )


def undecided_only(plan: Plan, still: pipeline.Undecided) -> Plan:
    """The plan narrowed to what is still undecided: those cells, and exactly those rows (not the product
    of their workloads and dtypes)."""
    return dataclasses.replace(
        plan,
        cells=tuple(c for c in plan.cells if c.id in still.cells),
        suite=dataclasses.replace(
            plan.suite,
            workloads=tuple(dict.fromkeys(w for w, _ in still.rows)),
            dtypes=tuple(dict.fromkeys(d for _, d in still.rows)),
            rows=tuple(f"{w}:{d}" for w, d in still.rows),
        ),
    )


def _ran(outcomes: list[CellOutcome]) -> Rounds:
    return Rounds(outcomes, any(not o.kept for o in outcomes), runs.none_started(outcomes) is not None)
