"""Run every cell of a plan through a backend, one result document per cell."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness import jsonio, resume
from harness.backends import Backend
from harness.errors import RunStopped
from harness.matrix import Cell, Plan
from harness.results import PLAN_FILE


@dataclass(frozen=True)
class CellOutcome:
    cell_id: str
    round_index: int
    status: str
    reason: str | None
    wall_s: float
    measurements: int
    kept: bool = False  # from an earlier run into the same folder


def schedule(cells: tuple[Cell, ...], rounds: int) -> list[tuple[int, Cell]]:
    """(round, cell) in run order: cells forward in odd rounds, backward in even ones (A B B A ...).

    Interleaving puts slow drift (clocks, temperature, other tenants) on both sides of a
    comparison instead of on whichever cell ran last, as asv's --interleave-rounds does.
    """
    order = []
    for round_index in range(1, rounds + 1):
        ordered = cells if round_index % 2 else tuple(reversed(cells))
        order += [(round_index, cell) for cell in ordered]
    return order


def result_name(cell_id: str, round_index: int) -> str:
    return f"{cell_id}.r{round_index}.json"


def log_name(cell_id: str, round_index: int) -> str:
    """The run's own output, in the results folder's ``logs/``."""
    return f"{cell_id}.r{round_index}.log"


def run(
    plan: Plan,
    backend: Backend,
    results_dir: Path,
    say: Callable[[str], None] = print,
    cells: tuple[Cell, ...] | None = None,
    mode: resume.Mode = resume.Mode.RESUME,
) -> list[CellOutcome]:
    """Run every round of the plan's cells (or ``cells`` of them); a failed run is recorded and the next one runs.

    Runs with a valid result of the same identity are kept, not repeated (see ``resume``), so an
    interrupted run continues where it stopped. ``plan.json`` always describes the whole matrix, so a
    report can place any subset run into it.
    """
    with resume.locked(results_dir) as swept:
        if swept:
            say(f"removed what an interrupted run left: {', '.join(swept)}")
        for line in backend.sweep(results_dir):
            say(line)
        jsonio.write_atomic(results_dir / PLAN_FILE, plan.to_json())
        return _run_rounds(plan, backend, results_dir, say, plan.cells if cells is None else cells, mode)


def _run_rounds(
    plan: Plan,
    backend: Backend,
    results_dir: Path,
    say: Callable[[str], None],
    cells: tuple[Cell, ...],
    mode: resume.Mode,
) -> list[CellOutcome]:
    order = schedule(cells, plan.rounds)
    outcomes: list[CellOutcome] = []
    started, ran = time.monotonic(), 0
    for index, (round_index, cell) in enumerate(order, 1):
        tag = f"[{index}/{len(order)}] {cell.id}" + (f" round {round_index}" if plan.rounds > 1 else "")
        name = result_name(cell.id, round_index)
        decision = resume.decide(results_dir / name, backend.identity(cell, plan), mode)
        if not decision.run:
            say(f"{tag}: {decision.note}")
            if decision.kept is not None:
                outcomes.append(_kept(decision.kept, round_index))
            continue
        say(
            f"{tag}: running on the {backend.name} backend (torch {cell.torch}, cuDNN {cell.cudnn.label})"
            + (f"; {decision.note}" if decision.note else "")
        )
        start = time.monotonic()
        try:
            doc = backend.run_cell(
                cell,
                plan,
                results_dir / name,
                results_dir / "logs" / log_name(cell.id, round_index),
                round_index,
            )
        except OSError as exc:  # the results folder itself failed (disk full, gone): nothing can be kept
            raise RunStopped(
                f"cannot write into {results_dir} ({exc.strerror or exc}) during {cell.id} round {round_index}; "
                "nothing partial was kept; fix that and run again to resume"
            ) from None
        ran += 1
        outcome = CellOutcome(
            cell.id,
            round_index,
            str(doc["status"]),
            (doc.get("failure") or {}).get("reason"),  # type: ignore[union-attr]
            time.monotonic() - start,
            len(doc["measurements"]),
        )  # type: ignore[arg-type]
        if outcome.status == "ok":
            eta = (time.monotonic() - started) / ran * (len(order) - index)
            say(
                f"{tag}: ok, {outcome.measurements} measurements in {outcome.wall_s:.1f} s"
                + (f" (about {eta:.0f} s left)" if index < len(order) else "")
            )
        else:
            say(f"{tag}: FAILED: {outcome.reason}")
        outcomes.append(outcome)
    return outcomes


def _kept(document: dict[str, Any], round_index: int) -> CellOutcome:
    return CellOutcome(
        document["cell"]["id"],
        round_index,
        document["status"],
        (document.get("failure") or {}).get("reason"),
        0.0,
        len(document["measurements"]),
        kept=True,
    )
