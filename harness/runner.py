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
    status: str
    reason: str | None
    wall_s: float
    measurements: int


def run(
    plan: Plan,
    backend: Backend,
    results_dir: Path,
    say: Callable[[str], None] = print,
    cells: tuple[Cell, ...] | None = None,
) -> list[CellOutcome]:
    """Run the plan's cells (or ``cells`` of them) in order; a failed cell is recorded and the next one runs.

    ``plan.json`` always describes the whole matrix, so a report can place any subset run into it.
    """
    jsonio.write_atomic(results_dir / PLAN_FILE, plan.to_json())
    cells = plan.cells if cells is None else cells
    outcomes = []
    for index, cell in enumerate(cells, 1):
        say(
            f"[{index}/{len(cells)}] {cell.id}: running on the {backend.name} backend "
            f"(torch {cell.torch}, cuDNN {cell.cudnn.label})"
        )
        start = time.monotonic()
        doc = backend.run_cell(
            cell, plan, results_dir / f"{cell.id}.json", results_dir / "logs" / f"{cell.id}.log"
        )
        outcome = CellOutcome(
            cell.id,
            str(doc["status"]),
            (doc.get("failure") or {}).get("reason"),  # type: ignore[union-attr]
            time.monotonic() - start,
            len(doc["measurements"]),
        )  # type: ignore[arg-type]
        if outcome.status == "ok":
            say(
                f"[{index}/{len(cells)}] {cell.id}: ok, {outcome.measurements} measurements "
                f"in {outcome.wall_s:.1f} s"
            )
        else:
            say(f"[{index}/{len(cells)}] {cell.id}: FAILED: {outcome.reason}")
        outcomes.append(outcome)
    return outcomes
