"""The result document of a run, as a backend finishes it: its run record, a failure's log tail, written
atomically."""

from __future__ import annotations

import datetime as dt
import errno
import os
import shutil
from pathlib import Path
from typing import cast

from harness import jsonio
from harness.plan.model import Cell, Plan
from harness.results import folder
from harness.suite import RESULT_SCHEMA_VERSION  # the format the suite writes, and so do failed results
from harness.suite.document import CellRecord, ResultDocument, RunRecord, SuiteResult

LOG_TAIL_CHARS = 4000
MIN_FREE_BYTES = 4 * 1024 * 1024  # below this, a failed run is blamed on the disk, not the cell


def cell_record(cell: Cell) -> CellRecord:
    """The cell as a result names it: its id and its content."""
    return {
        "id": cell.id,
        "torch": cell.torch,
        "cudnn": cell.cudnn.to_json(),
        "base_image": cell.base_image,
        "python": cell.python,
    }


def failed_result(
    cell: Cell, plan: Plan, suite_version: str, stage: str, reason: str, log_tail: str, started: dt.datetime
) -> SuiteResult:
    """The result document of a cell that produced none of its own (it could not start, or crashed)."""
    now = dt.datetime.now(dt.timezone.utc)
    return {
        "schema_version": RESULT_SCHEMA_VERSION,
        "suite_version": suite_version,
        "cell": cell_record(cell),
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
    """A finished run's document as a backend wrote it (Slurm follows its tasks through them), or None."""
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
    return folder.log_tail(log_path, LOG_TAIL_CHARS)


def finish_result(
    doc: SuiteResult, cell: Cell, run: RunRecord, result_path: Path, log_path: Path
) -> ResultDocument:
    """Name the cell, add the backend's run record and the log's tail to a failure; write atomically.

    A failure while the results folder's disk is (nearly) full is not the cell's: it raises ENOSPC,
    so the run stops and the cell runs again once there is room, instead of being kept as failed.
    """
    if doc.get("status") != "ok" and shutil.disk_usage(result_path.parent).free < MIN_FREE_BYTES:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(result_path.parent))
    doc["cell"] = cell_record(cell)
    folder.finish_log(log_path)
    failure = doc.get("failure")
    if failure and not failure.get("log_tail"):
        failure["log_tail"] = log_tail(log_path)
    result: ResultDocument = {**doc, "run": run}
    jsonio.write_atomic(result_path, result, compact=True)
    return result
