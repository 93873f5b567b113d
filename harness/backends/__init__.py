"""Backends realize a Cell and run the suite in it, writing one result document per cell.

A backend never raises for a cell that fails: the failure is written as a result with
``status: failed``, its reason and its log tail, and the matrix goes on.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Protocol

from harness.matrix import Cell, Plan


class Backend(Protocol):
    name: str

    def run_cell(self, cell: Cell, plan: Plan, result_path: Path, log_path: Path) -> dict[str, object]:
        """Run the suite for ``cell``; write and return its result document."""
        ...


RESULT_SCHEMA_VERSION = 1  # the result format these backends write (schemas/result.schema.json)


def failed_result(
    cell: Cell, plan: Plan, suite_version: str, stage: str, reason: str, log_tail: str, started: dt.datetime
) -> dict[str, object]:
    """The result document of a cell that produced none of its own (it could not start, or crashed)."""
    now = dt.datetime.now(dt.timezone.utc)
    return {
        "schema_version": RESULT_SCHEMA_VERSION,
        "suite_version": suite_version,
        "cell": {"id": cell.id, **cell.to_json()},
        "profile": plan.suite["profile"],
        "status": "failed",
        "failure": {"stage": stage, "reason": reason[:4000], "log_tail": log_tail},
        "started_at": started.isoformat(),
        "finished_at": now.isoformat(),
        "duration_s": (now - started).total_seconds(),
        "warnings": [],
        "measurements": [],
    }


def suite_arguments(cell: Cell, plan: Plan, out: str, expect: dict[str, object]) -> list[str]:
    """``python -m harness.suite`` arguments that run ``plan``'s suite for ``cell`` into ``out``."""
    suite = plan.suite
    arguments = [
        "run", "--out", out,
        "--cell", json.dumps({"id": cell.id, **cell.to_json()}),
        "--expect-cudnn", json.dumps(expect),
        "--knobs", json.dumps(list(plan.knob_sets)),
        "--profile", suite["profile"], "--device", suite["device"],
        "--dtypes", ",".join(suite["dtypes"]), "--time-budget-s", str(suite["time_budget_s"]),
    ]  # fmt: skip
    if suite.get("workloads"):
        arguments += ["--workloads", ",".join(suite["workloads"])]
    return arguments
