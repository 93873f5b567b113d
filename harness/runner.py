"""Run every cell of a plan through a backend, one result document per cell."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from harness import jsonio
from harness.backends import Backend
from harness.matrix import Plan
from harness.results import PLAN_FILE


@dataclass(frozen=True)
class CellOutcome:
    cell_id: str
    status: str
    reason: str | None
    wall_s: float
    measurements: int


def run(
    plan: Plan, backend: Backend, results_dir: Path, say: Callable[[str], None] = print
) -> list[CellOutcome]:
    """Run the plan's cells in order; a failed cell is recorded and the next one runs."""
    jsonio.write_atomic(results_dir / PLAN_FILE, plan.to_json())
    outcomes = []
    for index, cell in enumerate(plan.cells, 1):
        say(
            f"[{index}/{len(plan.cells)}] {cell.id}: running on the {backend.name} backend "
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
                f"[{index}/{len(plan.cells)}] {cell.id}: ok, {outcome.measurements} measurements "
                f"in {outcome.wall_s:.1f} s"
            )
        else:
            say(f"[{index}/{len(plan.cells)}] {cell.id}: FAILED: {outcome.reason}")
        outcomes.append(outcome)
    return outcomes
