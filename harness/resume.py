"""What a run may keep from an earlier run into the same results folder, and what it must redo.

A result is reused only when it is valid (``results.check``) and was made the same way: the same
identity (suite version, suite settings, and the backend's image or interpreter). Everything else
is redone; a valid result that no longer matches is moved to ``superseded/`` rather than overwritten,
and an invalid one is quarantined, so nothing valid is ever lost and nothing invalid is ever kept.

The folder is locked while a run writes into it, so the leftovers of a killed run (temporary files,
partial logs, scratch folders) can be swept safely by the next one.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any

from harness import jsonio, results
from harness.errors import BackendUnavailable
from harness.matrix import Plan

SUPERSEDED = "superseded"
LOCK_FILE = ".lock"
PARTIAL_SUFFIX = ".part"  # a log being written; renamed when its run finishes


class Mode(Enum):
    RESUME = "resume"  # keep valid results of the same identity (ok or failed); run what is missing
    RERUN_FAILED = "rerun-failed"  # run only the runs whose kept result failed
    FRESH = "fresh"  # run everything; earlier valid results move to superseded/


@dataclass(frozen=True)
class Decision:
    run: bool
    note: str  # why, for the progress line; empty when a run simply has no result yet
    kept: dict[str, Any] | None = None  # the valid document a run that is not repeated keeps


def suite_settings_sha256(plan: Plan) -> str:
    """What of the matrix shapes a cell's measurements: the suite section and the knob sets."""
    settings = {"suite": plan.suite, "knob_sets": list(plan.knob_sets)}
    return hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest()


def decide(result_path: Path, identity: dict[str, Any], mode: Mode) -> Decision:
    """Whether to run the result at ``result_path`` (again), moving aside what must not stay."""
    legacy = result_path.with_name(result_path.name.removesuffix(".gz"))
    if legacy != result_path and legacy.exists() and not result_path.exists():
        # a folder written before results were compressed: the same run under its new name
        with contextlib.suppress(OSError, ValueError):
            jsonio.compress(legacy, result_path, results.MAX_BYTES)
    if not result_path.exists():
        if mode is Mode.RERUN_FAILED:
            return Decision(False, "no result yet; --rerun-failed retries only failed runs")
        return Decision(True, "")
    document, problems = results.check(result_path)
    if document is None:
        results.quarantine(result_path, problems)
        return Decision(True, f"the earlier result was invalid and is quarantined ({problems[0].message})")
    recorded = document.get("run", {}).get("identity")
    if mode is Mode.FRESH or recorded != identity:
        supersede(result_path)
        why = (
            "--fresh"
            if mode is Mode.FRESH
            else f"it was made differently ({_difference(recorded, identity)})"
        )
        return Decision(True, f"the earlier result moved to {SUPERSEDED}/: {why}")
    if document["status"] == "ok":
        return Decision(
            False,
            "kept: a valid result made the same way (suite version and settings, image or interpreter)",
            document,
        )
    reason = (document.get("failure") or {}).get("reason", "")
    if mode is Mode.RERUN_FAILED:
        return Decision(True, f"retrying an earlier failure: {reason}")
    return Decision(False, f"kept an earlier failure ({reason}); --rerun-failed retries it", document)


def _difference(recorded: Any, identity: dict[str, Any]) -> str:
    if not isinstance(recorded, dict):
        return "it records no identity"
    changed = [key for key in sorted(identity) if recorded.get(key) != identity[key]]
    return ", ".join(f"{key} {recorded.get(key)!r} -> {identity[key]!r}" for key in changed) or "identity"


def supersede(result_path: Path) -> None:
    results.move_aside(result_path, SUPERSEDED)


def partial(log_path: Path) -> Path:
    return log_path.with_name(log_path.name + PARTIAL_SUFFIX)


@contextlib.contextmanager
def locked(results_dir: Path) -> Iterator[list[str]]:
    """Hold the folder's lock for a run; yield what was swept from runs that were killed."""
    results_dir.mkdir(parents=True, exist_ok=True)
    with (results_dir / LOCK_FILE).open("a+") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            lock.seek(0)
            holder = lock.read().strip() or "another process"
            raise BackendUnavailable(
                f"{results_dir} is being written by {holder}; wait for it to finish, or use another --out"
            ) from None
        lock.seek(0)
        lock.truncate()
        lock.write(f"pid {os.getpid()}\n")
        lock.flush()
        try:
            yield sweep(results_dir)
        finally:
            lock.truncate(0)
            fcntl.flock(lock, fcntl.LOCK_UN)


def sweep(results_dir: Path) -> list[str]:
    """Remove what an interrupted run left: temporary files, partial logs, scratch folders."""
    swept = []
    for pattern in (".tmp-*", "logs/.tmp-*", f"logs/*{PARTIAL_SUFFIX}", ".cell-*"):
        for path in results_dir.glob(pattern):
            if path.is_dir():
                shutil.rmtree(path, ignore_errors=True)
            else:
                path.unlink(missing_ok=True)
            swept.append(str(path.relative_to(results_dir)))
    return sorted(swept)
