"""What a run may keep from an earlier run into the same results folder, and what it must redo.

A result is reused only when it is valid (``documents.check``) and was made the same way: the same
identity (suite version, suite settings, and the backend's image or interpreter). Everything else
is redone; a valid result that no longer matches is moved to ``superseded/`` rather than overwritten,
and an invalid one is quarantined, so nothing valid is ever lost and nothing invalid is ever kept.
A fresh run keeps nothing: before it runs, everything earlier runs left in the folder moves to
``superseded/`` (``executors.runs.prepared``), not only the results its own schedule names.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

from harness import jsonio
from harness.results import documents, folder
from harness.suite.document import Identity, ResultDocument


class Mode(Enum):
    RESUME = "resume"  # keep valid results of the same identity (ok or failed); run what is missing
    RERUN_FAILED = "rerun-failed"  # run only the runs whose kept result failed
    FRESH = "fresh"  # run everything; every earlier result moves to superseded/ before anything runs


@dataclass(frozen=True)
class Decision:
    run: bool
    note: str  # why, for the progress line; empty when a run simply has no result yet
    kept: ResultDocument | None = None  # the valid document a run that is not repeated keeps


def decide(result_path: Path, identity: Identity, mode: Mode) -> Decision:
    """Whether to run the result at ``result_path`` (again), moving aside what must not stay."""
    legacy = result_path.with_name(result_path.name.removesuffix(".gz"))
    if legacy != result_path and legacy.exists() and not result_path.exists():
        # a folder written before results were compressed: the same run under its new name
        with contextlib.suppress(OSError, ValueError):
            jsonio.compress(legacy, result_path, folder.MAX_BYTES)
    if not result_path.exists():
        if mode is Mode.RERUN_FAILED:
            return Decision(False, f"no result yet; {Mode.RERUN_FAILED.value} retries only failed runs")
        return Decision(True, "")
    document, problems = documents.check(result_path)
    if document is None:
        folder.quarantine(result_path, problems)
        return Decision(True, f"the earlier result was invalid and is quarantined ({problems[0].message})")
    recorded = document["run"].get("identity")
    if mode is Mode.FRESH or recorded != identity:
        folder.supersede(result_path)
        why = (
            f"a {Mode.FRESH.value} run"
            if mode is Mode.FRESH
            else f"it was made differently ({_difference(recorded, identity)})"
        )
        return Decision(True, f"the earlier result moved to {folder.SUPERSEDED}/: {why}")
    if document["status"] == "ok":
        return Decision(
            False,
            "kept: a valid result made the same way (suite version and settings, image or interpreter)",
            document,
        )
    failure = document["failure"]
    reason = failure["reason"] if failure else ""
    if mode is Mode.RERUN_FAILED:
        return Decision(True, f"retrying an earlier failure: {reason}")
    note = f"kept an earlier failure ({reason}); {Mode.RERUN_FAILED.value} retries it"
    return Decision(False, note, document)


def _difference(recorded: Identity | None, identity: Identity) -> str:
    if recorded is None:
        return "it records no identity"
    was: dict[str, object] = dict(recorded)
    now: dict[str, object] = dict(identity)
    changed = [key for key in sorted(now) if was.get(key) != now[key]]
    return ", ".join(f"{key} {was.get(key)!r} -> {now[key]!r}" for key in changed) or "identity"
