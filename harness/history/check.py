"""The index checked against what it is derived from: every run it lists has its document in the history,
under the name its digest gives, and every value it holds is one a valid document could have given it
(``facts.of``). A value of the index becomes a file name, a division and a page: a forged or damaged
index is refused, never published, and ``history reindex`` makes it again from the documents.
"""

from __future__ import annotations

import os
import re
import sqlite3
import stat
from collections.abc import Iterator

from harness.history import store
from harness.history.facts import TEXT_LIMIT
from harness.history.layout import History
from harness.results.validity import MAX_SAMPLE_S
from harness.suite.precision import MODES

SHA256 = re.compile(r"[0-9a-f]{64}")
CELL_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+-]{0,127}")  # the result schema's
WORKLOAD = re.compile(r"[a-z0-9][a-z0-9_.-]{0,63}")  # the result schema's
KNOBS = re.compile(r"benchmark=[01] deterministic=[01] tf32=[01]")  # as frames.knob_label writes them
TIME = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{6}Z")  # validity.utc's
SUITE = re.compile(r"[0-9]+(\.[0-9]+)*")
PROFILES = ("smoke", "default", "full", "atlas")
RUN_STATUS = ("ok", "failed")
ROW_STATUS = ("ok", "unsupported", "error")
BACKENDS = ("local", "docker", "k8s")


def problems(history: History, db: sqlite3.Connection) -> Iterator[str]:
    """What in the index disagrees with its documents or could not come from one (the first of each
    kind is enough to refuse it)."""
    yield from _contexts(db)
    yield from _runs(history, db)
    yield from _rows(db)
    yield from _measurements(db)


def _text(value: object, limit: int = TEXT_LIMIT) -> bool:
    return isinstance(value, str) and len(value) <= limit


def _contexts(db: sqlite3.Connection) -> Iterator[str]:
    for cid, gpu, driver, suite, profile in db.execute(
        "SELECT id, gpu, driver, suite, profile FROM contexts"
    ):
        if not (_text(gpu) and _text(driver) and _text(suite, 64) and SUITE.fullmatch(suite)):
            yield f"context {cid!r} holds a value no document gives ({gpu!r}, {driver!r}, {suite!r})"
            return
        if profile not in PROFILES:
            yield f"context {cid!r} holds a profile no document gives ({profile!r})"
            return


def _runs(history: History, db: sqlite3.Connection) -> Iterator[str]:
    contexts = {r[0] for r in db.execute("SELECT id FROM contexts")}
    seen: set[str] = set()
    query = (
        "SELECT id, sha256, file, cell_id, cell_label, round, started_at, finished_at, status, failure, "
        "backend, torch, cudnn, context_id FROM runs"
    )
    for line in db.execute(query):
        (
            rid,
            sha,
            file,
            cell,
            label,
            round_,
            started,
            finished,
            status,
            failure,
            backend,
            torch,
            cudnn,
            ctx,
        ) = line
        if not (isinstance(sha, str) and SHA256.fullmatch(sha) and file in _names(history, sha)):
            yield f"run {rid!r} names no document of the history ({str(file)[:100]!r})"
            return
        if sha in seen:
            yield f"run {rid!r} repeats the document of another run ({file})"
            return
        seen.add(sha)
        if not _regular(history.root / file):
            yield f"run {rid!r} has no document: {file} is not in the history"
            return
        fine = (
            isinstance(cell, str)
            and CELL_ID.fullmatch(cell)
            and _text(label)
            and type(round_) is int
            and round_ >= 1
            and all(isinstance(t, str) and TIME.fullmatch(t) for t in (started, finished))
            and status in RUN_STATUS
            and (failure is None or _text(failure))
            and backend in BACKENDS
            and _text(torch)
            and _text(cudnn)
            and ctx in contexts
        )
        if not fine:
            yield f"run {rid!r} ({file}) holds a value its document cannot have given"
            return


def _names(history: History, sha256: str) -> tuple[str, str]:
    return store.relative(history, sha256, gzipped=False), store.relative(history, sha256, gzipped=True)


def _regular(path: os.PathLike[str]) -> bool:
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def _rows(db: sqlite3.Connection) -> Iterator[str]:
    for rid, workload, dtype, knobs in db.execute("SELECT id, workload, dtype, knobs FROM rows"):
        fine = (
            isinstance(workload, str)
            and WORKLOAD.fullmatch(workload)
            and dtype in MODES
            and isinstance(knobs, str)
            and KNOBS.fullmatch(knobs)
        )
        if not fine:
            yield f"row {rid!r} is no row a document names ({str(workload)[:80]!r}, {dtype!r}, {knobs!r})"
            return


_TIME = "({c} IS NULL OR (typeof({c}) IN ('real', 'integer') AND {c} > 0 AND {c} <= {most}))"
_BAD_MEASUREMENTS = f"""
SELECT run_id, row_id FROM measurements WHERE NOT (
    run_id IN (SELECT id FROM runs) AND row_id IN (SELECT id FROM rows)
    AND status IN {ROW_STATUS}
    AND {_TIME.format(c="median_s", most=MAX_SAMPLE_S)} AND {_TIME.format(c="q1_s", most=MAX_SAMPLE_S)}
    AND {_TIME.format(c="q3_s", most=MAX_SAMPLE_S)}
    AND (n IS NULL OR (typeof(n) = 'integer' AND n >= 1))
    AND (ran IS NULL OR (typeof(ran) = 'text' AND length(ran) <= {TEXT_LIMIT}))
) LIMIT 1
"""


def _measurements(db: sqlite3.Connection) -> Iterator[str]:
    bad = db.execute(_BAD_MEASUREMENTS).fetchone()
    if bad is not None:
        yield f"the measurement of run {bad[0]!r}, row {bad[1]!r} holds a value no document gives"
