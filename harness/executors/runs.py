"""What every executor shares: the schedule of rounds, which runs to keep or redo, and their outcomes."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from harness.backends.docker import gpu_access
from harness.errors import one_line
from harness.plan.model import Cell, Plan
from harness.results import folder, resume
from harness.suite.document import Identity, ResultDocument

ERROR_CHARS = 160  # of a measurement's error in a progress line; the result holds it whole


@dataclass(frozen=True)
class CellOutcome:
    cell_id: str
    round_index: int
    status: str
    reason: str | None
    wall_s: float
    measurements: int
    kept: bool = False  # from an earlier run into the same folder
    stage: str | None = None  # where a failed run failed (build, gpu-access, run, ...)
    errors: tuple[str, ...] = ()  # "workload dtype: error" of each measurement that raised, in an ok run

    @property
    def measured(self) -> str:
        """The progress line's count: an ok run whose measurements raised says how many, and the first."""
        text = f"{self.measurements} measurements"
        if self.errors:
            text += f", {len(self.errors)} of them errors (first: {self.errors[0]})"
        return text


def schedule(cells: tuple[Cell, ...], rounds: range) -> list[tuple[int, Cell]]:
    """(round, cell) of ``rounds`` in run order: cells forward in odd rounds, backward in even ones
    (A B B A ...).

    Interleaving puts slow drift (clocks, temperature, other tenants) on both sides of a
    comparison instead of on whichever cell ran last, as asv's --interleave-rounds does.
    """
    order = []
    for round_index in rounds:
        ordered = cells if round_index % 2 else tuple(reversed(cells))
        order += [(round_index, cell) for cell in ordered]
    return order


def all_rounds(plan: Plan) -> range:
    return range(1, plan.rounds + 1)


@contextlib.contextmanager
def prepared(
    plan: Plan,
    results_dir: Path,
    say: Callable[[str], None],
    rounds: range | None = None,
    fresh: bool = False,
) -> Iterator[None]:
    """Hold the results folder's lock, say what an interrupted run left there, write ``plan.json`` where
    ``rounds`` (default: all the plan's) begin at round 1: later rounds of a sequential qualification
    (its undecided rows) add to the folder's plan, they do not replace it.

    ``fresh``: the run starts afresh, so before anything runs, everything earlier runs left in the folder
    moves to ``superseded/`` (``folder.supersede_all``), whichever rounds and cells this run will make:
    the folder then holds this run's results alone. A command that runs in several steps into one
    folder starts afresh in its first step only (``launch.Steps``)."""
    with folder.locked(results_dir) as swept:
        if swept:
            say(f"removed what an interrupted run left: {', '.join(swept)}")
        if (rounds or all_rounds(plan)).start == 1:
            folder.write_plan(results_dir, plan)  # first: a folder of another matrix is refused, not emptied
        if fresh:
            moved = folder.supersede_all(results_dir)
            if moved:
                folders = [f"{name}/" for name in moved if name in (folder.LOGS, folder.QUARANTINE)]
                say(
                    f"a fresh start: moved what earlier runs left in {results_dir}/ to "
                    f"{results_dir / folder.SUPERSEDED}/: {len(moved) - len(folders)} results"
                    + "".join(f", {name}" for name in folders)
                )
        yield


@dataclass(frozen=True)
class Pending:
    """A run of the schedule that must run (again)."""

    position: int  # 1-based place in the schedule, as progress lines number it
    round_index: int
    cell: Cell
    note: str  # why it runs again ("" for a first run)


def tag(position: int, total: int, cell: Cell, round_index: int, rounds: int) -> str:
    return f"[{position}/{total}] {cell.id}" + (f" round {round_index}" if rounds > 1 else "")


def decide(
    plan: Plan,
    cells: tuple[Cell, ...],
    results_dir: Path,
    identity: Callable[[Cell], Identity],
    mode: resume.Mode,
    say: Callable[[str], None],
    rounds: range | None = None,
) -> tuple[list[Pending], dict[int, CellOutcome], int]:
    """Which runs of the schedule of ``rounds`` (default: all the plan's) to run, the kept ones' outcomes
    by position, and the schedule's length.

    Shared by every way of running (here, and the Slurm submission), so they keep and redo the same runs.
    """
    order = schedule(cells, rounds or all_rounds(plan))
    pending: list[Pending] = []
    kept: dict[int, CellOutcome] = {}
    for position, (round_index, cell) in enumerate(order, 1):
        decision = resume.decide(folder.result_path(results_dir, cell.id, round_index), identity(cell), mode)
        if decision.run:
            pending.append(Pending(position, round_index, cell, decision.note))
            continue
        say(f"{tag(position, len(order), cell, round_index, plan.rounds)}: {decision.note}")
        if decision.kept is not None:
            kept[position] = outcome_of(decision.kept, round_index, kept=True)
    return pending, kept, len(order)


def outcome_of(
    document: ResultDocument, round_index: int, wall_s: float = 0.0, kept: bool = False
) -> CellOutcome:
    """What a run's result document says, for progress and exit codes."""
    failure = document["failure"]
    return CellOutcome(
        document["cell"]["id"],
        round_index,
        document["status"],
        failure["reason"] if failure else None,
        wall_s,
        len(document["measurements"]),
        kept=kept,
        stage=failure["stage"] if failure else None,
        errors=tuple(
            one_line(f"{m['workload']} {m['dtype']}: {m.get('error') or ''}", ERROR_CHARS)
            for m in document["measurements"]
            if m["status"] == "error"
        ),
    )


def nothing_ran(outcomes: list[CellOutcome]) -> str | None:
    """Why no run could even start (every one failed where the host gives the containers their GPUs);
    None where any got further."""
    if outcomes and all(o.stage == gpu_access.STAGE for o in outcomes):
        return outcomes[0].reason or ""
    return None


# where a failed run never started: its environment (local) or image (docker) could not be made, or the
# host could not give its container the GPUs. Another round of the same cells fails the same way.
NEVER_STARTED = (gpu_access.STAGE, "realize", "build")


def none_started(outcomes: list[CellOutcome]) -> str | None:
    """Why none of these runs started (every one failed before its suite ran: ``NEVER_STARTED``); None
    where any got further."""
    if outcomes and all(o.stage in NEVER_STARTED for o in outcomes):
        return outcomes[0].reason or ""
    return None
