"""The history's index: SQLite from the standard library (docs/history.md says why, with the figures).

The index is derived: ``build`` makes it from the documents at any time. It is never changed in place: a
writer copies it, changes the copy and renames the copy over it, so a reader (which opens it read-only
and immutable) sees the old index or the new one, and no journal file is ever made beside it where a
planted link could send a write.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sqlite3
import tempfile
import urllib.parse
from collections.abc import Iterable, Iterator
from pathlib import Path

from harness import jsonio
from harness.errors import InputError, Problem
from harness.history.facts import RunFacts
from harness.history.layout import History, regular_or_absent

INDEX_VERSION = 3  # the tables below; an index of another version is rebuilt from the documents
# 2: measurements.spoiled; a cell that disables cuDNN, or a CPU build's, is its own cuDNN column
# 3: times as UTC instants

SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE contexts (
    id INTEGER PRIMARY KEY, gpu TEXT NOT NULL, driver TEXT NOT NULL, suite TEXT NOT NULL,
    profile TEXT NOT NULL, UNIQUE (gpu, driver, suite, profile));
CREATE TABLE runs (
    id INTEGER PRIMARY KEY, sha256 TEXT NOT NULL UNIQUE, file TEXT NOT NULL, cell_id TEXT NOT NULL,
    cell_label TEXT NOT NULL, round INTEGER NOT NULL, started_at TEXT NOT NULL, finished_at TEXT NOT NULL,
    status TEXT NOT NULL, failure TEXT, backend TEXT NOT NULL, torch TEXT NOT NULL, cudnn TEXT NOT NULL,
    context_id INTEGER NOT NULL REFERENCES contexts (id), UNIQUE (cell_id, started_at, finished_at));
CREATE TABLE rows (
    id INTEGER PRIMARY KEY, workload TEXT NOT NULL, dtype TEXT NOT NULL, knobs TEXT NOT NULL,
    UNIQUE (workload, dtype, knobs));
CREATE TABLE measurements (
    run_id INTEGER NOT NULL REFERENCES runs (id), row_id INTEGER NOT NULL REFERENCES rows (id),
    status TEXT NOT NULL, median_s REAL, q1_s REAL, q3_s REAL, n INTEGER, ran TEXT, spoiled TEXT,
    PRIMARY KEY (run_id, row_id)) WITHOUT ROWID;
CREATE INDEX measurements_by_row ON measurements (row_id, run_id);
"""


def _readonly(path: Path) -> sqlite3.Connection:
    uri = f"file:{urllib.parse.quote(str(path.absolute()))}?mode=ro&immutable=1"
    return sqlite3.connect(uri, uri=True)


def current(history: History, documents: int) -> bool:
    """Whether the index is there, of this version, and counts ``documents`` (the files it was built
    from): a document written by an add that was killed before its index was renamed into place makes it
    stale."""
    if not regular_or_absent(history.index):
        return False
    try:
        with contextlib.closing(_readonly(history.index)) as db:
            if db.execute("PRAGMA user_version").fetchone()[0] != INDEX_VERSION:
                return False
            row = db.execute("SELECT value FROM meta WHERE key = 'documents'").fetchone()
    except sqlite3.DatabaseError:
        return False  # damaged, or not an index: derived, so made again
    return row is not None and row[0] == str(documents)


@contextlib.contextmanager
def reading(history: History) -> Iterator[sqlite3.Connection]:
    """The index, read-only (it must be current and checked: ``add.ensure_index``); InputError saying how
    to rebuild it where SQLite cannot read what it holds."""
    regular_or_absent(history.index)
    try:
        with contextlib.closing(_readonly(history.index)) as db:
            yield db
    except sqlite3.Error as exc:
        raise damaged(history, f"SQLite cannot read it ({exc})") from None


def damaged(history: History, why: str) -> InputError:
    """The refusal of an index that is not what the documents give: it is derived, so made again."""
    return InputError(
        [
            Problem(
                str(history.index),
                "",
                f"does not agree with the documents it is derived from: {why}; 'harness history reindex "
                f"--history {history.root}' rebuilds it from them",
            )
        ]
    )


@contextlib.contextmanager
def writing(history: History, fresh: bool) -> Iterator[sqlite3.Connection]:
    """A copy of the index (an empty one where ``fresh``) to change; renamed over the index when the block
    ends without an exception, removed otherwise. The caller holds the history's lock."""
    fd, name = tempfile.mkstemp(dir=history.root, prefix=".tmp-index-", suffix=".sqlite")
    os.close(fd)
    scratch = Path(name)
    try:
        if not fresh and regular_or_absent(history.index):
            with open(history.index, "rb") as source, open(scratch, "wb") as target:  # checked: no link
                shutil.copyfileobj(source, target)
        db = sqlite3.connect(scratch, isolation_level=None)
        try:
            db.execute("PRAGMA journal_mode = OFF")  # a scratch copy: a crash leaves it to the sweep
            db.execute("PRAGMA synchronous = OFF")
            if fresh:
                db.executescript(SCHEMA)
                db.execute(f"PRAGMA user_version = {INDEX_VERSION}")
            db.execute("BEGIN")
            yield db
            db.execute("COMMIT")
        finally:
            db.close()
        with open(scratch, "rb+") as f:
            os.fsync(f.fileno())
        os.chmod(scratch, jsonio.FILE_MODE)
        os.replace(scratch, history.index)
    finally:
        scratch.unlink(missing_ok=True)


def set_documents(db: sqlite3.Connection, count: int) -> None:
    db.execute("INSERT OR REPLACE INTO meta VALUES ('documents', ?)", (str(count),))


def run_of(db: sqlite3.Connection, cell_id: str, started: str, finished: str) -> tuple[str, str] | None:
    """The (sha256, file) of the run with that key, if the index holds it."""
    row = db.execute(
        "SELECT sha256, file FROM runs WHERE cell_id = ? AND started_at = ? AND finished_at = ?",
        (cell_id, started, finished),
    ).fetchone()
    return None if row is None else (str(row[0]), str(row[1]))


def held(db: sqlite3.Connection, digests: set[str]) -> set[str]:
    """Those of ``digests`` that are the documents of runs the index holds."""
    return {str(r[0]) for r in db.execute("SELECT sha256 FROM runs")} & digests


def insert(db: sqlite3.Connection, runs: Iterable[RunFacts]) -> None:
    """Add runs (new ones: the caller has checked that none is held already)."""
    contexts = {
        tuple(r[1:]): int(r[0]) for r in db.execute("SELECT id, gpu, driver, suite, profile FROM contexts")
    }
    rows = {tuple(r[1:]): int(r[0]) for r in db.execute("SELECT id, workload, dtype, knobs FROM rows")}
    for run in runs:
        c = run.context
        key = (c.gpu, c.driver, c.suite, c.profile)
        if key not in contexts:
            contexts[key] = _new_id(db.execute("INSERT INTO contexts VALUES (NULL, ?, ?, ?, ?)", key))
        run_id = _new_id(
            db.execute(
                "INSERT INTO runs VALUES (NULL, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    run.sha256,
                    run.file,
                    run.cell_id,
                    run.cell_label,
                    run.round,
                    run.started_at,
                    run.finished_at,
                    run.status,
                    run.failure,
                    run.backend,
                    run.torch,
                    run.cudnn,
                    contexts[key],
                ),
            )
        )
        values = []
        for m in run.measurements:
            row = (m.row.workload, m.row.dtype, m.row.knobs)
            if row not in rows:
                rows[row] = _new_id(db.execute("INSERT INTO rows VALUES (NULL, ?, ?, ?)", row))
            values.append((run_id, rows[row], m.status, m.median_s, m.q1_s, m.q3_s, m.n, m.ran, m.spoiled))
        db.executemany("INSERT INTO measurements VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", values)


def _new_id(cursor: sqlite3.Cursor) -> int:
    assert cursor.lastrowid is not None
    return cursor.lastrowid
