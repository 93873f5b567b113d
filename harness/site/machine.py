"""What the site offers machines: index.json (contexts, releases, rows with their pages and shards, the
newest runs, the open regressions) and a JSON shard per row (every point, columns of equal length, and its
steps)."""

from __future__ import annotations

from collections.abc import Sequence

from harness.history.facts import Context, Row
from harness.site import names, parts
from harness.site.data import Point, StoredRun
from harness.site.steps import Step

FORMAT = 1
NEWEST = 100
INDEX = "index.json"


def shards(row: Row, digest: str, points: Sequence[Point], steps: Sequence[Step]) -> list[dict[str, object]]:
    """The row's shard, in parts (each a run of its points) where one would be larger than a site's file
    may be: the first holds the steps and names the other parts."""
    chunks = parts.split(points, lambda chunk: len(parts.compact(shard(row, digest, chunk, ()))))
    found = [shard(row, digest, chunk, steps if k == 1 else ()) for k, chunk in enumerate(chunks, 1)]
    found[0]["parts"] = [parts.name(names.row_shard(row), k) for k in range(2, len(chunks) + 1)]
    return found


def shard(row: Row, digest: str, points: Sequence[Point], steps: Sequence[Step]) -> dict[str, object]:
    contexts = list(dict.fromkeys(p.run.context.label for p in points))
    ok = [p for p in points if p.status == "ok" and p.median_s is not None]
    return {
        "format": FORMAT,
        "row": _row(row),
        "digest": digest,
        "contexts": contexts,
        "points": {
            "run": [names.run_page(p.run) for p in ok],
            "context": [contexts.index(p.run.context.label) for p in ok],
            "torch": [p.run.torch for p in ok],
            "cudnn": [p.run.cudnn for p in ok],
            "round": [p.run.round for p in ok],
            "median_s": [p.median_s for p in ok],
            "q1_s": [p.q1_s for p in ok],
            "q3_s": [p.q3_s for p in ok],
            "ran": [p.ran for p in ok],
            "spoiled": [p.spoiled for p in ok],  # why a busy host spoiled it (null: a quiet host's)
        },
        "failed": [{"run": names.run_page(p.run), "status": p.status} for p in points if p not in ok],
        "steps": [s.to_json() for s in steps],
    }


def index(
    contexts: Sequence[Context],
    runs: Sequence[StoredRun],
    rows: Sequence[tuple[Row, int]],
    regressions: Sequence[tuple[Row, Step]],
) -> list[dict[str, object]]:
    """index.json, in parts where its rows and regressions would make it larger than a site's file may
    be: the first names the others (``parts``), each holding the next of its ``rows`` and
    ``regressions``."""
    releases = sorted({(r.torch, r.cudnn) for r in runs})
    newest = sorted(runs, key=lambda r: (r.finished_at, r.id), reverse=True)[:NEWEST]
    head = {
        "format": FORMAT,
        "runs": len(runs),
        "contexts": [c.__dict__ for c in contexts],
        "releases": [{"torch": t, "cudnn": c, "page": names.release_page(t, c)} for t, c in releases],
        "newest": [
            {
                "cell": r.cell_id,
                "round": r.round,
                "torch": r.torch,
                "cudnn": r.cudnn,
                "context": r.context.label,
                "status": r.status,
                "finished_at": r.finished_at,
                "page": names.run_page(r),
            }
            for r in newest
        ],
    }
    fields: dict[str, Sequence[object]] = {
        "rows": [
            {**_row(row), "rounds": n, "page": names.row_page(row), "shard": names.row_shard(row)}
            for row, n in rows
        ],
        "regressions": [
            {**_row(row), "page": names.row_page(row), **step.to_json()} for row, step in regressions
        ],
    }
    found = parts.json_parts(head, fields)
    found[0]["parts"] = [parts.name(INDEX, k) for k in range(2, len(found) + 1)]
    return found


def _row(row: Row) -> dict[str, str]:
    """A row as machines read it: ``dtype`` the mode's id, ``mode`` its name for readers."""
    return {"workload": row.workload, "dtype": row.dtype, "mode": names.mode(row), "knobs": row.knobs}
