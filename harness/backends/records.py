"""The result document of a run, as a backend finishes it: its run record, a failure's log tail, written atomically."""

from __future__ import annotations

import datetime as dt
import errno
import os
import shutil
from pathlib import Path
from typing import Any

from harness import jsonio
from harness.plan.model import Cell, Plan
from harness.results import folder
from harness.suite import RESULT_SCHEMA_VERSION  # the format the suite writes, and so do failed results

LOG_TAIL_CHARS = 4000
MIN_FREE_BYTES = 4 * 1024 * 1024  # below this, a failed run is blamed on the disk, not the cell


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


def read_suite_result(path: Path) -> dict[str, Any] | None:
    """The document the suite wrote, or None where it wrote none (or something that is not one)."""
    try:
        doc = jsonio.read(path)  # plain from the suite, compressed from a finished run (Slurm reads those)
    except (OSError, ValueError, RecursionError):
        return None
    return doc if isinstance(doc, dict) else None


def log_tail(log_path: Path) -> str:
    try:
        return log_path.read_text(errors="replace")[-LOG_TAIL_CHARS:]
    except OSError:
        return ""


def finish_result(
    doc: dict[str, Any], cell: Cell, run: dict[str, Any], result_path: Path, log_path: Path
) -> dict[str, Any]:
    """Name the cell, add the backend's run record and the log's tail to a failure; write atomically.

    A failure while the results folder's disk is (nearly) full is not the cell's: it raises ENOSPC,
    so the run stops and the cell runs again once there is room, instead of being kept as failed.
    """
    if doc.get("status") != "ok" and shutil.disk_usage(result_path.parent).free < MIN_FREE_BYTES:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(result_path.parent))
    doc["cell"] = {"id": cell.id, **cell.to_json()}
    doc["run"] = run
    partial_log = folder.partial(log_path)
    if partial_log.exists():  # the log is complete now; under its final name it is never half of one
        partial_log.replace(log_path)
    if doc.get("failure") and not doc["failure"].get("log_tail"):
        doc["failure"]["log_tail"] = log_tail(log_path)
    jsonio.write_atomic(result_path, doc, compact=True)
    return doc
