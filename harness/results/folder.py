"""A results folder's layout, owned here alone: every name in it, its lock, and what may move aside.

<results>/plan.json                 the plan the folder's results belong to (checked wherever read)
<results>/<cell>.r<round>.json.gz   one result per run
<results>/logs/<cell>.r<round>.log  each run's own output (``.part`` while it is written)
<results>/quarantine/               invalid documents, with their problems beside them
<results>/superseded/               valid results a later run replaced, and all an earlier run left
                                    where a run started afresh (its results, logs/ and quarantine/)
<results>/.lock                     held by the one process that writes here
<results>/.cell-*, .tmp-*           scratch of runs in flight, swept by the next run after a kill
"""

from __future__ import annotations

import contextlib
import datetime as dt
import errno
import fcntl
import hashlib
import json
import os
import shutil
import stat
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, cast

from harness import jsonio, schemas
from harness.errors import BackendUnavailable, InputError, Problem
from harness.plan.model import Cell, Plan
from harness.results import validity
from harness.suite.document import CellRecord, ResultDocument, RunRecord, SuiteResult

MAX_BYTES = 64 * 1024 * 1024  # the largest document read from a folder (untrusted input)
PLAN_FILE = "plan.json"
VERDICT_FILE = "verdict.json"  # a report's, where a report was written into a results folder
MEASUREMENT_SUFFIX = ".measurement.json"  # one measurement a report links to: never a result
LOGS = "logs"
QUARANTINE = "quarantine"
SUPERSEDED = "superseded"
MOVED_NAME_BYTES = 200  # a file moved aside, with '.N' and '.problems.txt' added, stays a valid name
LOCK_FILE = ".lock"
PARTIAL_SUFFIX = ".part"  # a log being written; renamed when its run finishes
SCRATCH_PREFIX = ".cell-"
MAX_DEPTH = 8  # how far below a results folder shards are looked for
PROBLEMS_BYTES = 16 * 1024  # what is read back of a quarantined document's problems
LOG_TAIL_CHARS = 4000  # what a failed result keeps of its run's log
MIN_FREE_BYTES = 4 * 1024 * 1024  # below this, a failed run is blamed on the disk, not the cell


@dataclass(frozen=True)
class Quarantined:
    name: str
    problems: tuple[str, ...]


def result_name(cell_id: str, round_index: int) -> str:
    return f"{cell_id}.r{round_index}.json.gz"


def result_path(results_dir: Path, cell_id: str, round_index: int) -> Path:
    return results_dir / result_name(cell_id, round_index)


def log_path(results_dir: Path, cell_id: str, round_index: int) -> Path:
    """The run's own output, in the results folder's ``logs/``."""
    return results_dir / LOGS / f"{cell_id}.r{round_index}.log"


def partial(log: Path) -> Path:
    return log.with_name(log.name + PARTIAL_SUFFIX)


def open_log(log: Path, binary: bool = False) -> IO[Any]:
    """The run's log, opened to write under its partial name, in a real ``logs/`` folder (never a link)."""
    jsonio.real_folder(log.parent)
    return jsonio.open_for_writing(partial(log), "wb" if binary else "w")


def write_log(log: Path, text: str) -> None:
    """A whole log at once, where a run ended before it could start its command."""
    jsonio.write_text_atomic(jsonio.real_folder(log.parent) / log.name, text)


def finish_log(log: Path) -> None:
    """The partial log under its final name: complete now, and never half of one (rename never follows a
    link: one planted at the final name is replaced, not written through)."""
    if partial(log).is_file() and not partial(log).is_symlink():
        os.replace(partial(log), log)


def log_tail(log: Path, limit: int) -> str:
    """The end of a run's log, never read through a link planted in its place."""
    try:
        return jsonio.read_text_nofollow(log, limit)
    except OSError:
        return ""


def cell_record(cell: Cell) -> CellRecord:
    """The cell as a result names it: its id and its content."""
    return {"id": cell.id, **cell.to_json()}  # type: ignore[typeddict-item]


def write_result(
    results_dir: Path, cell: Cell, document: SuiteResult, run: RunRecord, *, refuse_invalid: bool = False
) -> ResultDocument:
    """The one place a run's result is written: ``document`` (what the suite wrote, or the failed result a
    backend made) with the cell named, the backend's run record, and, for a failure without one, its
    log's tail; the log gets its final name first. Written once, atomically, as the result of
    ``run``'s round. The run records which plan it was made for (``plan_sha256``: the folder's plan.json
    as it is now), so that a report can tell a result of another plan from its own.

    A failure while the results folder's disk is (nearly) full is not the cell's: it raises ENOSPC,
    so the run stops and the cell runs again once there is room, instead of being kept as failed.
    """
    if document.get("status") != "ok" and shutil.disk_usage(results_dir).free < MIN_FREE_BYTES:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(results_dir))
    round_index = run.get("round", 1)
    log = log_path(results_dir, cell.id, round_index)
    finish_log(log)
    made_for = plan_sha256(results_dir)
    if made_for is not None:
        run = {**run, "plan_sha256": made_for}
    result: ResultDocument = {**document, "cell": cell_record(cell), "run": run}
    failure = result.get("failure")
    if failure and not failure.get("log_tail"):
        result["failure"] = {**failure, "log_tail": log_tail(log, LOG_TAIL_CHARS)}
    path = result_path(results_dir, cell.id, round_index)
    result = _agreeing(result, str(path), refuse_invalid)
    jsonio.write_atomic(path, result, compact=True)
    return result


def _agreeing(result: ResultDocument, source: str, refuse: bool) -> ResultDocument:
    """``result`` where it is valid; else the run's failed result, with why: a run never writes a result its
    own ``validate`` refuses (a later run would quarantine it and write another, without end). Where even
    that is invalid (the run record itself is), or ``refuse`` (a result gathered, not run), InputError
    naming the fields, and nothing written."""
    found = validity.problems(result, source)
    if not found:
        return result
    if refuse:
        raise InputError(found)
    now = dt.datetime.now(dt.timezone.utc).isoformat()
    reason = "the suite wrote a result that does not agree with itself, so it is not kept: " + "; ".join(
        f"{p.field}: {p.message}" for p in found[:3]
    )
    kept = ("schema_version", "suite_version", "cell", "profile", "run")
    failed = cast(
        "ResultDocument",
        {
            **{k: v for k, v in result.items() if k in kept},
            "status": "failed",
            "failure": {"stage": "validate", "reason": reason[:4000], "log_tail": ""},
            "started_at": now,
            "finished_at": now,
            "duration_s": 0.0,
            "warnings": [],
            "measurements": [],
        },
    )
    again = validity.problems(failed, source)
    if again:
        why = "what ran this cell recorded values no result may hold (above); nothing was written for it"
        raise InputError([*again, Problem(source, "run", why)])
    return failed


def scratch(results_dir: Path) -> Path:
    """A new scratch folder for one run, swept by the next run if this one is killed."""
    return Path(tempfile.mkdtemp(prefix=SCRATCH_PREFIX, dir=results_dir))


@contextlib.contextmanager
def scratch_folder(results_dir: Path) -> Iterator[str]:
    """``scratch`` for the duration of a ``with`` block."""
    path = scratch(results_dir)
    try:
        yield str(path)
    finally:
        jsonio.remove_tree(path, ignore_errors=True)  # what the run left there is its own


def is_result_file(path: Path) -> bool:
    """A result document by its name: not the plan, a report's verdict or measurement extract, a hidden or
    temporary file."""
    return (
        jsonio.is_document(path.name)
        and path.name not in (PLAN_FILE, VERDICT_FILE)
        and not path.name.endswith(MEASUREMENT_SUFFIX)
        and not path.name.startswith(".")
    )


def result_files(folder: Path, name_contains: str | None = None) -> list[Path]:
    """The result files under ``folder``, shards in subfolders included, those in its quarantine and
    superseded subfolders not (a ``superseded/`` folder named itself holds results like any other)."""
    return sorted(
        path
        for path in jsonio.files_under(folder, MAX_DEPTH)
        if is_result_file(path)
        and not {QUARANTINE, SUPERSEDED} & set(path.relative_to(folder).parts)
        and (name_contains is None or name_contains in path.name)
    )


@contextlib.contextmanager
def locked(results_dir: Path) -> Iterator[list[str]]:
    """Hold the folder's lock for a run; yield what was swept from runs that were killed."""
    results_dir.mkdir(parents=True, exist_ok=True)
    with jsonio.open_for_writing(results_dir / LOCK_FILE, "a+") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            lock.seek(0)
            holder = lock.read().strip() or "another process"
            raise BackendUnavailable(
                f"{results_dir} is being written by {holder}; wait for it to finish, or use another folder",
                setting="out",
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
    """Remove what an interrupted run left: temporary files, partial logs, scratch folders. A link is
    removed as the link; nothing is swept inside a ``logs`` that is not a real folder (it raises)."""
    swept = []
    patterns = [".tmp-*", f"{SCRATCH_PREFIX}*"]
    if os.path.lexists(results_dir / LOGS):
        jsonio.real_folder(results_dir / LOGS)
        patterns += [f"{LOGS}/.tmp-*", f"{LOGS}/*{PARTIAL_SUFFIX}"]
    for pattern in patterns:
        for path in results_dir.glob(pattern):
            if stat.S_ISDIR(os.lstat(path).st_mode):
                jsonio.remove_tree(path, ignore_errors=True)  # planted ones too
            else:
                path.unlink(missing_ok=True)
            swept.append(str(path.relative_to(results_dir)))
    return sorted(swept)


def move_aside(path: Path, folder_name: str) -> Path:
    """Move ``path`` into ``folder_name/`` beside it, under a name no file there has yet (x.r1.2.json.gz):
    nothing is overwritten, and nothing leaves the results folder, whatever an attacker put there."""
    folder = path.parent / folder_name
    if folder.is_symlink() or (folder.exists() and not folder.is_dir()):
        raise InputError(
            [
                Problem(
                    str(folder),
                    "",
                    f"is a link or a file, not a folder; remove it, so that nothing "
                    f"is moved out of {path.parent}",
                )
            ]
        )
    folder.mkdir(exist_ok=True)
    stem, dot, suffix = path.name.partition(".json")  # x.r1 .json .gz
    if len(path.name.encode(errors="surrogateescape")) > MOVED_NAME_BYTES:
        # room for '.N' and the '.problems.txt' beside it: a long name keeps its start and a digest
        digest = hashlib.sha256(path.name.encode(errors="surrogateescape")).hexdigest()[:8]
        stem = f"{jsonio.name_prefix(stem if dot else path.name, MOVED_NAME_BYTES - 40)}-{digest}"
        dot, suffix = (dot, suffix) if dot and len(suffix) <= 10 else ("", "")
    target, n = folder / f"{stem}{dot}{suffix}", 1
    while target.exists() or target.is_symlink():
        n += 1
        target = folder / (f"{stem}.{n}{dot}{suffix}" if dot else f"{stem}.{n}")
    os.rename(path, target)  # a link is moved as the link; the folder is on the same file system
    return target


def quarantine(path: Path, problems: list[Problem]) -> Quarantined:
    """Move ``path`` aside with the validator's messages; nothing is deleted."""
    target = move_aside(path, QUARANTINE)
    lines = tuple(str(p) for p in problems)
    problems_file = target.with_name(f"{target.name}.problems.txt")  # not synced: its document is moved whole
    jsonio.write_text_atomic(problems_file, "\n".join(lines) + "\n", sync=False)
    return Quarantined(target.name, lines)


def quarantined_earlier(results_dir: Path, known: frozenset[str] = frozenset()) -> list[Quarantined]:
    """What earlier runs or reports quarantined here, with their problems; those named in ``known`` (just
    quarantined, their problems in hand) are not read again."""
    folder = results_dir / QUARANTINE
    if folder.is_symlink() or not folder.is_dir():
        return []
    found = []
    for p in sorted(folder.glob("*.problems.txt")):
        name = p.name.removesuffix(".problems.txt")
        if name not in known:
            found.append(Quarantined(name, tuple(log_tail(p, PROBLEMS_BYTES).splitlines())))
    return found


def supersede(path: Path) -> None:
    move_aside(path, SUPERSEDED)


def supersede_all(results_dir: Path) -> list[str]:
    """A fresh start: everything earlier runs left in ``results_dir`` moved to ``superseded/``: every result
    document (of any cell and round, whatever the new plan will run), the runs' ``logs/`` and
    ``quarantine/``. Nothing is deleted, and nothing planted is followed: a link among them moves as the
    link (``move_aside``). Returns the names moved, in order."""
    moved = []
    for path in sorted(results_dir.iterdir()):
        if is_result_file(path) or path.name in (LOGS, QUARANTINE):
            move_aside(path, SUPERSEDED)
            moved.append(path.name)
    return moved


def plan_sha256(results_dir: Path) -> str | None:
    """Which plan the folder's results are made for: the sha256 of its plan.json's content (every field
    but ``source``, the path the matrix was given by, which says nothing of the plan); None where there is
    no plan.json that reads as JSON (``stored_plan`` says why, where a plan is needed)."""
    try:
        raw = jsonio.read(results_dir / PLAN_FILE, MAX_BYTES)
    except (OSError, ValueError, RecursionError):
        return None
    if not isinstance(raw, dict):
        return None
    content = {key: value for key, value in raw.items() if key != "source"}
    return hashlib.sha256(json.dumps(content, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def stored_plan(results_dir: Path, remedy: str = "re-run the matrix to recreate it") -> Plan:
    """The plan.json of a results folder, checked as the untrusted input it is: its schema (every name that
    becomes a path or reaches a command is pattern-checked), cell ids that match their cells, a baseline
    among them. Raises InputError naming what is wrong and, for a damaged plan, ``remedy``."""
    plan_file = results_dir / PLAN_FILE
    source = str(plan_file)
    if not plan_file.exists() and not plan_file.is_symlink():
        raise InputError(
            [
                Problem(
                    str(results_dir),
                    "",
                    f"no {PLAN_FILE} here; is this a results folder written by 'python -m harness run'?",
                )
            ]
        )
    try:
        raw = jsonio.read(plan_file, MAX_BYTES)
    except (OSError, ValueError, RecursionError) as exc:
        raise InputError(
            [Problem(source, "", f"not a plan written by 'python -m harness run' ({exc}); {remedy}")]
        ) from None
    found = schemas.problems("plan", raw, source)
    if not found:
        for i, cell in enumerate(raw["cells"]):
            if Cell.from_json(cell).id != cell["id"]:
                found.append(
                    Problem(source, f"cells[{i}].id", f"{cell['id']!r} does not match the cell's content")
                )
        if raw["baseline"] not in {c["id"] for c in raw["cells"]}:
            found.append(Problem(source, "baseline", f"{raw['baseline']!r} is none of the plan's cells"))
    if found:
        found.append(Problem(source, "", f"not a plan written by 'python -m harness run'; {remedy}"))
        raise InputError(found)
    return Plan.from_json(raw)


def write_plan(results_dir: Path, plan: Plan, *, same_plan: bool = False) -> None:
    """Write ``plan.json`` (under the lock). A folder holds one matrix's results: its plan is replaced by an
    edit of that matrix (the same name), never by another matrix's, and never when it is not a plan at all;
    ``same_plan``: only by this very plan (a re-run adds to a folder, it does not redefine it)."""
    plan_file = results_dir / PLAN_FILE
    if plan_file.exists() or plan_file.is_symlink():
        fix = "use another results folder, or remove this one if its results are no longer wanted"
        stored = stored_plan(results_dir, remedy=f"run will not replace it: {fix}")
        if stored.name != plan.name or (same_plan and stored != plan):
            what = f"matrix {stored.name!r}" if stored.name != plan.name else "another plan of that matrix"
            raise InputError(
                [
                    Problem(
                        str(results_dir),
                        "out",
                        f"holds the results of {what} ({PLAN_FILE}), not {plan.name!r}'s; {fix}",
                        setting="out",
                    )
                ]
            )
    jsonio.write_atomic(plan_file, plan.to_json())
