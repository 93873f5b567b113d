"""What a backend makes of a run's result document: a failed one where the suite wrote none, the suite's own
read back, a log's tail. The result file is written by ``results.folder.write_result`` alone."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import cast

from harness import jsonio
from harness.plan.model import Cell, Plan
from harness.results import folder
from harness.suite import RESULT_SCHEMA_VERSION  # the format the suite writes, and so do failed results
from harness.suite.document import ResultDocument, SuiteResult


def failed_result(
    cell: Cell, plan: Plan, suite_version: str, stage: str, reason: str, log_tail: str, started: dt.datetime
) -> SuiteResult:
    """The result document of a cell that produced none of its own (it could not start, or crashed)."""
    now = dt.datetime.now(dt.timezone.utc)
    return {
        "schema_version": RESULT_SCHEMA_VERSION,
        "suite_version": suite_version,
        "cell": folder.cell_record(cell),
        "profile": plan.suite.profile,
        "status": "failed",
        "failure": {"stage": stage, "reason": reason[:4000], "log_tail": log_tail},
        "started_at": started.isoformat(),
        "finished_at": now.isoformat(),
        "duration_s": (now - started).total_seconds(),
        "warnings": [],
        "measurements": [],
    }


def read_suite_result(path: Path) -> SuiteResult | None:
    """The document the suite wrote, or None where it wrote none (or something that is not one)."""
    return cast("SuiteResult | None", _read_object(path))


def read_result(path: Path) -> ResultDocument | None:
    """A finished run's result as the folder holds it (Slurm follows its tasks through them), or None."""
    return cast("ResultDocument | None", _read_object(path))


def _read_object(path: Path) -> object:
    """A JSON object, plain or compressed, or None. Only its shape is known here: the folder's load
    validates it like any other result before anything is reported from it."""
    try:
        doc = jsonio.read(path)
    except (OSError, ValueError, RecursionError):
        return None
    return doc if isinstance(doc, dict) else None


def log_tail(log_path: Path) -> str:
    return folder.log_tail(log_path, folder.LOG_TAIL_CHARS)
