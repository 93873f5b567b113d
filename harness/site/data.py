"""What the site reads of a history's index."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from typing import Any

from harness.history.facts import Context, Row


@dataclass(frozen=True)
class RunInfo:
    id: int
    sha256: str
    cell_id: str
    cell_label: str
    round: int
    started_at: str
    finished_at: str
    status: str
    failure: str | None
    backend: str
    torch: str
    cudnn: str
    context: Context


@dataclass(frozen=True)
class RowInfo:
    id: int
    row: Row
    count: int  # measurements of it
    digest: str  # which runs measured it (count, sum and largest run id: the history only grows)


@dataclass(frozen=True)
class Point:
    """One measurement of one row: a run's round."""

    run: RunInfo
    status: str
    median_s: float | None
    q1_s: float | None
    q3_s: float | None
    ran: str | None


@dataclass(frozen=True)
class Catalog:
    runs: dict[int, RunInfo]
    rows: tuple[RowInfo, ...]
    contexts: tuple[Context, ...]


def catalog(db: sqlite3.Connection) -> Catalog:
    contexts = {
        int(r[0]): Context(*r[1:]) for r in db.execute("SELECT id, gpu, driver, suite, profile FROM contexts")
    }
    runs = {
        int(r[0]): _run(r, contexts[r[12]])
        for r in db.execute(
            "SELECT id, sha256, cell_id, cell_label, round, started_at, finished_at, status, failure, "
            "backend, torch, cudnn, context_id FROM runs ORDER BY id"
        )
    }
    rows = tuple(
        RowInfo(int(r[0]), Row(r[1], r[2], r[3]), int(r[4]), f"{r[4]}:{r[5]}:{r[6]}")
        for r in db.execute(
            "SELECT rows.id, workload, dtype, knobs, COUNT(run_id), SUM(run_id), MAX(run_id) FROM rows "
            "JOIN measurements ON measurements.row_id = rows.id GROUP BY rows.id "
            "ORDER BY workload, dtype, knobs"
        )
    )
    return Catalog(runs, rows, tuple(sorted(contexts.values(), key=lambda c: c.label)))


def _run(r: tuple[Any, ...], context: Context) -> RunInfo:
    return RunInfo(r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], r[9], r[10], r[11], context)


def points(db: sqlite3.Connection, catalog: Catalog, row_id: int) -> list[Point]:
    return [
        Point(catalog.runs[r[0]], *r[1:])
        for r in db.execute(
            "SELECT run_id, status, median_s, q1_s, q3_s, ran FROM measurements WHERE row_id = ? "
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


def measurements(db: sqlite3.Connection, run_id: int) -> list[RunMeasurement]:
    """A run's measurements."""
    return [
        RunMeasurement(Row(r[0], r[1], r[2]), *r[3:])
        for r in db.execute(
            "SELECT workload, dtype, knobs, status, median_s, q1_s, q3_s, ran FROM measurements JOIN rows "
            "ON rows.id = measurements.row_id WHERE run_id = ? ORDER BY workload, dtype, knobs",
            (run_id,),
        )
    ]
