"""Backends realize a Cell and run the suite in it, writing one result document per cell.

A backend never raises for a cell that fails: the failure is written as a result with
``status: failed``, its reason and its log tail, and the matrix goes on.
"""

from __future__ import annotations

import datetime as dt
import errno
import json
import os
import shutil
from pathlib import Path
from typing import Any, Protocol

from harness import jsonio, resume
from harness.matrix import Cell, Plan
from harness.suite import RESULT_SCHEMA_VERSION  # the format the suite writes, and so do failed results


class Backend(Protocol):
    name: str

    def run_cell(
        self,
        cell: Cell,
        plan: Plan,
        result_path: Path,
        log_path: Path,
        round_index: int = 1,
        gpus: tuple[str, ...] = (),
    ) -> dict[str, object]:
        """Run the suite for ``cell`` (its ``round_index``-th independent process); write and return its result.

        ``gpus``: the only GPU ids the run may see (empty: the backend's default). Called from
        several threads at once when runs go concurrently on several GPUs.
        """
        ...

    def stop(self) -> None:
        """From another thread: end every run in flight; each raises KeyboardInterrupt and writes nothing."""
        ...

    def identity(self, cell: Cell, plan: Plan) -> dict[str, str]:
        """What a kept result must have been made with: suite version and settings, image or interpreter."""
        ...

    def sweep(self, results_dir: Path) -> list[str]:
        """Clean up what a killed run into ``results_dir`` left running; say what was removed."""
        ...


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


def needs_gpu(cell: Cell, plan: Plan) -> bool:
    """Whether the cell's suite runs on a GPU: not for a CPU build of torch, nor a CPU-only suite."""
    return not (cell.torch.endswith("+cpu") or plan.suite["device"] == "cpu")


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
    if suite.get("min_time_s"):
        arguments += ["--min-time-s", str(suite["min_time_s"])]
    if suite.get("numerics") is False:
        arguments.append("--no-numerics")
    return arguments


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
    partial_log = resume.partial(log_path)
    if partial_log.exists():  # the log is complete now; under its final name it is never half of one
        partial_log.replace(log_path)
    if doc.get("failure") and not doc["failure"].get("log_tail"):
        doc["failure"]["log_tail"] = log_tail(log_path)
    jsonio.write_atomic(result_path, doc, compact=True)
    return doc
