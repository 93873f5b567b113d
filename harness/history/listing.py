"""``history list``: what a history holds, context by context (runs of two contexts never compare)."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path

from harness.history import index
from harness.history.add import ensure_index
from harness.history.facts import Context
from harness.history.layout import open_history
from harness.history.versions import version_key
from harness.report.analysis.frames import mode
from harness.suite import precision


@dataclass(frozen=True)
class ContextSummary:
    context: Context
    runs: int
    failed: int
    torch: tuple[str, ...]  # oldest first
    cudnn: tuple[str, ...]
    first: str  # when its first run started, its last finished
    last: str
    # the precision modes its rows ran, as a reader names them (never a bare "fp32")
    modes: tuple[str, ...] = ()


@dataclass(frozen=True)
class RunLine:
    cell_id: str
    round: int
    status: str
    torch: str
    cudnn: str
    context: Context
    finished_at: str


@dataclass(frozen=True)
class Listing:
    history: Path
    runs: int
    rows: int
    contexts: tuple[ContextSummary, ...]
    newest: tuple[RunLine, ...]


def listing(root: Path, newest: int = 10) -> Listing:
    history = open_history(root)
    ensure_index(history)
    with index.reading(history) as db:
        contexts = {
            int(r[0]): Context(*r[1:])
            for r in db.execute("SELECT id, gpu, driver, suite, profile FROM contexts")
        }
        summaries = []
        for cid, context in sorted(contexts.items(), key=lambda c: c[1].label):
            runs, failed, first, last = db.execute(
                "SELECT COUNT(*), SUM(status != 'ok'), MIN(started_at), MAX(finished_at) FROM runs "
                "WHERE context_id = ?",
                (cid,),
            ).fetchone()
            torch = sorted(
                {r[0] for r in db.execute("SELECT torch FROM runs WHERE context_id = ?", (cid,))},
                key=version_key,
            )
            cudnn = sorted(
                {r[0] for r in db.execute("SELECT cudnn FROM runs WHERE context_id = ?", (cid,))},
                key=version_key,
            )
            modes = _modes(db, cid)
            summaries.append(
                ContextSummary(context, runs, failed or 0, tuple(torch), tuple(cudnn), first, last, modes)
            )
        lines = [
            RunLine(r[0], r[1], r[2], r[3], r[4], contexts[r[5]], r[6])
            for r in db.execute(
                "SELECT cell_id, round, status, torch, cudnn, context_id, finished_at FROM runs "
                "ORDER BY finished_at DESC, id DESC LIMIT ?",
                (newest,),
            )
        ]
        total = db.execute("SELECT COUNT(*) FROM runs").fetchone()[0]
        rows = db.execute("SELECT COUNT(*) FROM rows").fetchone()[0]
    return Listing(root, total, rows, tuple(summaries), tuple(lines))


ORDER = {name: i for i, name in enumerate(precision.LABELS.values())}


def _modes(db: sqlite3.Connection, context_id: int) -> tuple[str, ...]:
    """The precision modes the context's rows ran, named (``precision.label``), in the suite's order."""
    found = {
        mode(dtype, knobs)
        for dtype, knobs in db.execute(
            "SELECT DISTINCT rows.dtype, rows.knobs FROM rows JOIN measurements ON measurements.row_id = "
            "rows.id JOIN runs ON runs.id = measurements.run_id WHERE runs.context_id = ?",
            (context_id,),
        )
    }
    return tuple(sorted(found, key=lambda m: (ORDER.get(m, len(ORDER)), m)))
