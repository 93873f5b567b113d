"""Write the site: only what new runs touch, unless asked for everything.

Incremental: ``.site-manifest.json`` records each file's digest and each row's runs (their count, sum and
largest id in the index: a history only grows, so these say which runs a row holds). A row whose runs are
those of the last build keeps its page and shard, and its steps are read back from its shard; a new run
rebuilds the pages of the rows it measured, its own page, the release pages whose content changed, the
index, index.json and the feed. Reindexing a history renumbers its runs: the next build is a full one.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict, cast

from harness import jsonio
from harness.history import index
from harness.history.add import ensure_index
from harness.history.facts import Row
from harness.history.layout import open_history
from harness.site import data, feed, index_page, machine, names, release_page, row_page, run_page, steps
from harness.site.data import Catalog, StoredRun
from harness.site.markup import CSS, SCRIPT

GENERATOR = "3"  # the pages' form: a build by another generator rebuilds every page (3: spoiled rounds, gaps)
MANIFEST = ".site-manifest.json"


class Manifest(TypedDict):
    """``.site-manifest.json``: what the last build made, for the next one to keep what has not changed."""

    generator: str  # GENERATOR of the build that wrote it
    runs: str  # the fingerprint of the runs it was made from (``_fingerprint``)
    count: int  # how many runs
    rows: dict[str, str]  # row slug -> which runs measured it (``RowInfo.digest``)
    files: dict[str, str]  # file -> its digest


SHARD_BYTES = 8 * 1024 * 1024
FOLDERS = ("assets", "rows", "runs", "releases")


@dataclass(frozen=True)
class Built:
    out: Path
    written: int  # files written by this build
    kept: int  # files left as the last build wrote them
    rows_rebuilt: int
    runs: int
    rows: int
    largest: tuple[str, int]  # the largest file written, and its size in bytes


class _Writer:
    def __init__(self, out: Path, previous: Mapping[str, str]) -> None:
        self.out, self.previous = out, previous
        self.digests: dict[str, str] = {}
        self.written = self.kept = 0
        self.largest = ("", 0)

    def has(self, name: str) -> bool:
        return name in self.previous and (self.out / name).is_file()

    def keep(self, name: str) -> None:
        self.digests[name] = self.previous[name]
        self.kept += 1

    def write(self, name: str, content: str) -> None:
        """Write ``name`` unless the last build wrote the same bytes there."""
        raw = content.encode("utf-8", errors="backslashreplace")
        digest = hashlib.sha256(raw).hexdigest()
        self.digests[name] = digest
        if self.previous.get(name) == digest and (self.out / name).is_file():
            self.kept += 1
            return
        jsonio.write_bytes_atomic(self.out / name, raw)
        self.written += 1
        if len(raw) > self.largest[1]:
            self.largest = (name, len(raw))


def build(history_root: Path, out: Path, full: bool = False) -> Built:
    """The site of the history at ``history_root``, written into ``out``."""
    history = open_history(history_root)
    ensure_index(history)
    out = jsonio.output_folder(out, "out")
    for folder in FOLDERS:
        jsonio.real_folder(out / folder)
    with index.reading(history) as db:
        catalog = data.catalog(db)
        previous = None if full else _manifest(out, catalog)
        writer = _Writer(out, previous["files"] if previous else {})
        row_digests = previous["rows"] if previous else {}
        found: dict[Row, list[steps.Step]] = {}
        rebuilt = 0
        for info in catalog.rows:
            kept = _kept_steps(out, info, row_digests, writer)
            if kept is None:
                found[info.row] = _row(db, catalog, info, out, writer)
                rebuilt += 1
            else:
                found[info.row] = kept
        for run in catalog.runs.values():
            name = names.run_page(run)
            if writer.has(name):
                writer.keep(name)
            else:
                model = run_page.RunPage(run, tuple(data.measurements(db, run.id)))
                writer.write(name, run_page.render(model))
    _summaries(catalog, found, writer)
    manifest: Manifest = {
        "generator": GENERATOR,
        "runs": _fingerprint(catalog, len(catalog.runs)),
        "count": len(catalog.runs),
        "rows": {i.row.slug: i.digest for i in catalog.rows},
        "files": writer.digests,
    }
    jsonio.write_atomic(out / MANIFEST, manifest, compact=True)
    return Built(
        out, writer.written, writer.kept, rebuilt, len(catalog.runs), len(catalog.rows), writer.largest
    )


def _row(db: Any, catalog: Catalog, info: data.RowInfo, out: Path, writer: _Writer) -> list[steps.Step]:
    points = data.points(db, catalog, info.id)
    cached = {s.key: s for s in _shard_steps(out, info.row) or ()}
    found = steps.of_row(points, cached)
    model = row_page.RowPage(info.row, catalog.contexts, tuple(points), tuple(found), catalog.cudnn)
    writer.write(names.row_page(info.row), row_page.render(model))
    shard = machine.shard(info.row, info.digest, points, found)
    writer.write(names.row_shard(info.row), json.dumps(shard, separators=(",", ":"), allow_nan=False))
    return found


def _kept_steps(
    out: Path, info: data.RowInfo, digests: Mapping[str, str], writer: _Writer
) -> list[steps.Step] | None:
    """The row's steps as its shard holds them, where its page and shard need no rebuild."""
    page, shard = names.row_page(info.row), names.row_shard(info.row)
    if digests.get(info.row.slug) != info.digest or not (writer.has(page) and writer.has(shard)):
        return None
    kept = _shard_steps(out, info.row)
    if kept is None:
        return None
    writer.keep(page)
    writer.keep(shard)
    return kept


def _shard_steps(out: Path, row: Row) -> list[steps.Step] | None:
    """The steps a row's shard holds; None where it cannot be read back as this generator wrote it."""
    try:
        shard = jsonio.parse(jsonio.read_bytes(out / names.row_shard(row), SHARD_BYTES, follow=False))
        return [steps.Step.from_json(s) for s in shard["steps"]]
    except (OSError, ValueError, RecursionError, KeyError, TypeError):
        return None


def _manifest(out: Path, catalog: Catalog) -> Manifest | None:
    """The last build's manifest, where it was made by this generator from the runs the index still
    numbers as it did; else None (a full build)."""
    try:
        manifest = jsonio.parse(jsonio.read_bytes(out / MANIFEST, SHARD_BYTES, follow=False))
    except (OSError, ValueError, RecursionError):
        return None
    if not isinstance(manifest, dict) or manifest.get("generator") != GENERATOR:
        return None
    count = manifest.get("count")
    if (
        not isinstance(count, int)
        or count > len(catalog.runs)
        or manifest.get("runs") != _fingerprint(catalog, count)
    ):
        return None
    if not isinstance(manifest.get("files"), dict) or not isinstance(manifest.get("rows"), dict):
        return None
    return cast(Manifest, manifest)  # its parts checked above


def _fingerprint(catalog: Catalog, count: int) -> str:
    ids = sorted(catalog.runs)[:count]
    return hashlib.sha256(",".join(f"{i}:{catalog.runs[i].sha256}" for i in ids).encode()).hexdigest()


def _summaries(catalog: Catalog, found: Mapping[Row, list[steps.Step]], writer: _Writer) -> None:
    """The release pages, the index, index.json, the feed and the assets (each written only if changed)."""
    runs = list(catalog.runs.values())
    for (torch, cudnn), model in _releases(catalog, runs, found).items():
        writer.write(names.release_page(torch, cudnn), release_page.render(model))
    regressions = sorted(
        ((row, s) for row, found_steps in found.items() for s in found_steps if s.open),
        key=lambda rs: (rs[1].finished, rs[0].workload),
        reverse=True,
    )
    counted = tuple((i.row, i.count) for i in catalog.rows)
    top = index_page.IndexPage(catalog.contexts, tuple(runs), counted, tuple(regressions))
    writer.write("index.html", index_page.render(top))
    document = machine.index(catalog.contexts, runs, counted, regressions)
    writer.write("index.json", json.dumps(document, indent=1, allow_nan=False))
    newest = max((r.finished_at for r in runs), default="")
    writer.write("regressions.xml", feed.render(regressions, newest))
    writer.write("assets/site.css", CSS)
    writer.write("assets/site.js", SCRIPT)


def _releases(
    catalog: Catalog, runs: list[StoredRun], found: Mapping[Row, list[steps.Step]]
) -> dict[tuple[str, str], release_page.ReleasePage]:
    into: dict[tuple[str, str, str], dict[str, list[tuple[Row, steps.Step]]]] = {}
    for row, row_steps in found.items():
        for s in row_steps:
            into.setdefault((s.torch_after, s.cudnn_after, s.context), {}).setdefault(s.axis, []).append(
                (row, s)
            )
    pages = {}
    for torch, cudnn in sorted({(r.torch, r.cudnn) for r in runs}):
        parts = []
        for context in catalog.contexts:
            mine = tuple(r for r in runs if r.torch == torch and r.cudnn == cudnn and r.context == context)
            if not mine:
                continue
            axes = into.get((torch, cudnn, context.label), {})
            chosen = axes.get("cudnn") or axes.get("torch") or []
            parts.append(release_page.ContextPart(context, tuple(chosen), mine))
        pages[(torch, cudnn)] = release_page.ReleasePage(torch, cudnn, tuple(parts))
    return pages
