"""What the site reads of a history's index."""

from __future__ import annotations

import hashlib
import sqlite3
from dataclasses import dataclass, fields
from typing import Any

from harness.history.facts import Context, Row, Run
from harness.history.versions import version_key

# the runs table's columns of a Run's fields (all but its context, which is a line of the contexts table)
RUN_COLUMNS = tuple(f.name for f in fields(Run) if f.name != "context")


@dataclass(frozen=True)
class StoredRun(Run):
    """A run as the index holds it, with the id the index gave it."""

    id: int


@dataclass(frozen=True)
class RowInfo:
    id: int
    row: Row
    count: int  # measurements of it
    digest: str  # which runs measured it (count, sum and largest run id: the history only grows)


@dataclass(frozen=True)
class Point:
    """One measurement of one row: a run's round."""

    run: StoredRun
    status: str
    median_s: float | None
    q1_s: float | None
    q3_s: float | None
    ran: str | None
    spoiled: str | None  # why a busy or stalled host spoiled its timing: a hollow point, in no line or step


@dataclass(frozen=True)
class Catalog:
    runs: dict[int, StoredRun]
    rows: tuple[RowInfo, ...]
    contexts: tuple[Context, ...]
    cudnn: tuple[str, ...]  # every cuDNN release the history measured, in order: a line skips none silently


def catalog(db: sqlite3.Connection) -> Catalog:
    contexts = {
        int(r[0]): Context(*r[1:]) for r in db.execute("SELECT id, gpu, driver, suite, profile FROM contexts")
    }
    runs = {
        int(r[0]): _run(r, contexts[r[-1]])
        for r in db.execute(f"SELECT id, {', '.join(RUN_COLUMNS)}, context_id FROM runs ORDER BY id")
    }
    cudnn = tuple(sorted({r.cudnn for r in runs.values()}, key=version_key))
    releases = hashlib.sha256("\0".join(cudnn).encode(errors="surrogateescape")).hexdigest()[:12]
    rows = tuple(  # a row's page draws its gaps from every release: a new one rebuilds it
        RowInfo(int(r[0]), Row(r[1], r[2], r[3]), int(r[4]), f"{r[4]}:{r[5]}:{r[6]}:{releases}")
        for r in db.execute(
            "SELECT rows.id, workload, dtype, knobs, COUNT(run_id), SUM(run_id), MAX(run_id) FROM rows "
            "JOIN measurements ON measurements.row_id = rows.id GROUP BY rows.id "
            "ORDER BY workload, dtype, knobs"
        )
    )
    return Catalog(runs, rows, tuple(sorted(contexts.values(), key=lambda c: c.label)), cudnn)


def _run(r: tuple[Any, ...], context: Context) -> StoredRun:
    """A line of the runs table as ``catalog`` selects it: the id, RUN_COLUMNS, the context's id."""
    return StoredRun(**dict(zip(RUN_COLUMNS, r[1:-1], strict=True)), context=context, id=r[0])


def points(db: sqlite3.Connection, catalog: Catalog, row_id: int) -> list[Point]:
    return [
        Point(catalog.runs[r[0]], *r[1:])
        for r in db.execute(
            "SELECT run_id, status, median_s, q1_s, q3_s, ran, spoiled FROM measurements WHERE row_id = ? "
            "ORDER BY run_id",
            (row_id,),
        )
    ]


@dataclass(frozen=True)
class RunMeasurement:
    row: Row
    status: str
    median_s: float | None
    q1_s: float | None
    q3_s: float | None
    ran: str | None
    spoiled: str | None


def measurements(db: sqlite3.Connection, run_id: int) -> list[RunMeasurement]:
    """A run's measurements."""
    return [
        RunMeasurement(Row(r[0], r[1], r[2]), *r[3:])
        for r in db.execute(
            "SELECT workload, dtype, knobs, status, median_s, q1_s, q3_s, ran, spoiled FROM measurements "
            "JOIN rows ON rows.id = measurements.row_id WHERE run_id = ? ORDER BY workload, dtype, knobs",
            (run_id,),
        )
    ]
