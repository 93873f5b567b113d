"""Run every cell of a plan through a backend, one result document per cell."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from harness import jsonio
from harness.backends import Backend
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


def run(
    plan: Plan,
    backend: Backend,
    results_dir: Path,
    say: Callable[[str], None] = print,
    cells: tuple[Cell, ...] | None = None,
) -> list[CellOutcome]:
    """Run every round of the plan's cells (or ``cells`` of them); a failed run is recorded and the next one runs.

    ``plan.json`` always describes the whole matrix, so a report can place any subset run into it.
    """
    jsonio.write_atomic(results_dir / PLAN_FILE, plan.to_json())
    order = schedule(plan.cells if cells is None else cells, plan.rounds)
    outcomes = []
    started = time.monotonic()
    for index, (round_index, cell) in enumerate(order, 1):
        tag = f"[{index}/{len(order)}] {cell.id}" + (f" round {round_index}" if plan.rounds > 1 else "")
        say(f"{tag}: running on the {backend.name} backend (torch {cell.torch}, cuDNN {cell.cudnn.label})")
        start = time.monotonic()
        name = result_name(cell.id, round_index)
        doc = backend.run_cell(
            cell, plan, results_dir / name, results_dir / "logs" / name.replace(".json", ".log"), round_index
        )
        outcome = CellOutcome(
            cell.id,
            round_index,
            str(doc["status"]),
            (doc.get("failure") or {}).get("reason"),  # type: ignore[union-attr]
            time.monotonic() - start,
            len(doc["measurements"]),
        )  # type: ignore[arg-type]
        if outcome.status == "ok":
            eta = (time.monotonic() - started) / index * (len(order) - index)
            say(
                f"{tag}: ok, {outcome.measurements} measurements in {outcome.wall_s:.1f} s"
                + (f" (about {eta:.0f} s left)" if index < len(order) else "")
            )
        else:
            say(f"{tag}: FAILED: {outcome.reason}")
        outcomes.append(outcome)
    return outcomes
