"""Write the site: only what new runs touch, unless asked for everything.

Incremental: ``.site-manifest.json`` records each file's digest and each row's runs (their count, sum and
largest id in the index: a history only grows, so these say which runs a row holds). A row whose runs are
those of the last build keeps its page and shard, and its steps are read back from its shard; a new run
rebuilds the pages of the rows it measured, its own page, the release pages whose content changed, the
index, index.json and the feed. Reindexing a history renumbers its runs: the next build is a full one.
A file is kept only where its bytes still have the digest the manifest records (else it is written
again), and a file the last build wrote that this one does not (the page of a run no longer in the
history) is removed. Every file is under 1 MB: what would be larger is written in parts (``parts``).
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict

from harness import jsonio
from harness.history import index
from harness.history.add import ensure_index
from harness.history.facts import Row
from harness.history.layout import open_history
from harness.site import (
    data,
    feed,
    folder,
    index_page,
    machine,
    names,
    parts,
    release_page,
    row_page,
    run_page,
    steps,
)
from harness.site.data import Catalog, StoredRun
from harness.site.markup import CSS, SCRIPT

GENERATOR = "4"  # the pages' form: a build by another generator rebuilds every page (4: files in parts)
MANIFEST = ".site-manifest.json"
_OURS = re.compile(r"(?:(?:rows|runs|releases|assets)/)?[A-Za-z0-9_+-][A-Za-z0-9._+-]{0,300}")


class Manifest(TypedDict):
    """``.site-manifest.json``: what the last build made, for the next one to keep what has not changed."""

    generator: str  # GENERATOR of the build that wrote it
    runs: str  # the fingerprint of the runs it was made from (``_fingerprint``)
    count: int  # how many runs
    rows: dict[str, str]  # row slug -> which runs measured it (``RowInfo.digest``)
    files: dict[str, str]  # file -> its digest
    # on disk: ``rows`` and ``files`` as lists of pairs, in parts (``parts.json_parts``) that the first
    # names (``parts``)


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

    def intact(self, name: str, digest: str | None) -> bool:
        """Whether ``name`` holds the bytes of ``digest`` (a truncated or altered file does not)."""
        try:
            raw = jsonio.read_bytes(self.out / name, parts.LIMIT, decompress=False, follow=False)
        except (OSError, ValueError):
            return False
        return hashlib.sha256(raw).hexdigest() == digest

    def has(self, base: str) -> bool:
        """Whether the last build wrote ``base`` and each of its parts, and each is as it wrote it."""
        return base in self.previous and all(self.intact(n, self.previous[n]) for n in self._parts(base))

    def keep(self, base: str) -> None:
        for name in self._parts(base):
            self.digests[name] = self.previous[name]
            self.kept += 1

    def _parts(self, base: str) -> list[str]:
        found, part = [base], 2
        while parts.name(base, part) in self.previous:
            found.append(parts.name(base, part))
            part += 1
        return found

    def write(self, name: str, content: str) -> None:
        """Write ``name`` unless it holds the bytes already (the last build wrote them, still intact)."""
        raw = content.encode("utf-8", errors="backslashreplace")
        digest = hashlib.sha256(raw).hexdigest()
        self.digests[name] = digest
        if self.previous.get(name) == digest and self.intact(name, digest):
            self.kept += 1
            return
        jsonio.write_bytes_atomic(self.out / name, raw)
        self.written += 1
        if len(raw) > self.largest[1]:
            self.largest = (name, len(raw))

    def write_parts(self, base: str, contents: list[str]) -> None:
        for part, content in enumerate(contents, 1):
            self.write(parts.name(base, part), content)


def build(
    history_root: Path, out: Path, full: bool = False, progress: Callable[[int, int], None] | None = None
) -> Built:
    """The site of the history at ``history_root``, written into ``out`` (checked first: ``folder``);
    ``progress`` hears (rows done, rows) after each row, kept or rebuilt."""
    history = open_history(history_root)
    ensure_index(history)
    out = folder.prepare(out, history)
    for name in FOLDERS:
        jsonio.real_folder(out / name)
    listed = _listed(out)
    with index.reading(history) as db:
        catalog = data.catalog(db)
        previous = None if full else _manifest(out, catalog, listed)
        writer = _Writer(out, previous["files"] if previous else {})
        row_digests = previous["rows"] if previous else {}
        found: dict[Row, list[steps.Step]] = {}
        rebuilt = 0
        if progress:
            progress(0, len(catalog.rows))
        for done, info in enumerate(catalog.rows, 1):
            kept = _kept_steps(out, info, row_digests, writer)
            if kept is None:
                found[info.row] = _row(db, catalog, info, out, writer)
                rebuilt += 1
            else:
                found[info.row] = kept
            if progress:
                progress(done, len(catalog.rows))
        for run in catalog.runs.values():
            name = names.run_page(run)
            if writer.has(name):
                writer.keep(name)
            else:
                model = run_page.RunPage(run, tuple(data.measurements(db, run.id)))
                writer.write_parts(name, run_page.render(model))
    _summaries(catalog, found, writer)
    _write_manifest(out, catalog, writer.digests)
    _remove(out, set(listed) - set(writer.digests))
    return Built(
        out, writer.written, writer.kept, rebuilt, len(catalog.runs), len(catalog.rows), writer.largest
    )


def _row(db: Any, catalog: Catalog, info: data.RowInfo, out: Path, writer: _Writer) -> list[steps.Step]:
    points = data.points(db, catalog, info.id)
    shard_name = names.row_shard(info.row)
    intact = writer.intact(shard_name, writer.previous.get(shard_name))
    cached = {s.key: s for s in (_shard_steps(out, info.row) if intact else None) or ()}
    found = steps.of_row(points, cached)
    model = row_page.RowPage(info.row, catalog.contexts, tuple(points), tuple(found), catalog.cudnn)
    writer.write_parts(names.row_page(info.row), row_page.render(model))
    shards = machine.shards(info.row, info.digest, points, found)
    writer.write_parts(shard_name, [parts.compact(shard) for shard in shards])
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
        shard = jsonio.parse(jsonio.read_bytes(out / names.row_shard(row), parts.LIMIT, follow=False))
        return [steps.Step.from_json(s) for s in shard["steps"]]
    except (OSError, ValueError, RecursionError, KeyError, TypeError):
        return None


def _read_manifest(out: Path) -> dict[str, Any] | None:
    """The last build's manifest as it was written (its parts merged), or None where it cannot be read."""
    merged: dict[str, Any] = {}
    part, count = 1, 1
    while part <= count:
        try:
            found = jsonio.parse(
                jsonio.read_bytes(out / parts.name(MANIFEST, part), parts.LIMIT, follow=False)
            )
        except (OSError, ValueError, RecursionError):
            return None
        if not isinstance(found, dict):
            return None
        if part == 1:
            merged = {**found, "rows": [], "files": []}
            given = found.get("parts")
            count = given if isinstance(given, int) else 1
        for key in ("rows", "files"):
            if isinstance(found.get(key), list):
                merged[key] += found[key]
        part += 1
    return merged


def _pairs(value: object) -> dict[str, str] | None:
    """A manifest's list of [name, digest] pairs as a mapping; None where it is not one."""
    if not isinstance(value, list) or not all(
        isinstance(p, list) and len(p) == 2 and all(isinstance(x, str) for x in p) for p in value
    ):
        return None
    return dict(value)


def _listed(out: Path) -> list[str]:
    """The files the last build wrote, as its manifest names them (whatever generator wrote it): only
    names a build writes, never a path out of the folder."""
    manifest = _read_manifest(out)
    files = (manifest or {}).get("files")
    if isinstance(files, dict):  # generator 2 and before: a mapping
        files = [[k, v] for k, v in files.items()]
    pairs = _pairs(files) or {}
    return [n for n in pairs if _OURS.fullmatch(n) and ".." not in n.split("/")]


def _manifest(out: Path, catalog: Catalog, listed: list[str]) -> Manifest | None:
    """The last build's manifest, where it was made by this generator from the runs the index still
    numbers as it did; else None (a full build)."""
    manifest = _read_manifest(out)
    if manifest is None or manifest.get("generator") != GENERATOR:
        return None
    count = manifest.get("count")
    if (
        not isinstance(count, int)
        or count > len(catalog.runs)
        or manifest.get("runs") != _fingerprint(catalog, count)
    ):
        return None
    files, rows = _pairs(manifest.get("files")), _pairs(manifest.get("rows"))
    if files is None or rows is None:
        return None
    kept = set(listed)
    return {
        "generator": GENERATOR,
        "runs": str(manifest["runs"]),
        "count": count,
        "rows": rows,
        "files": {n: d for n, d in files.items() if n in kept},
    }


def _write_manifest(out: Path, catalog: Catalog, files: Mapping[str, str]) -> None:
    """The manifest, in parts where it would be larger than a site's file may be; parts a larger
    manifest left are removed."""
    head = {
        "generator": GENERATOR,
        "runs": _fingerprint(catalog, len(catalog.runs)),
        "count": len(catalog.runs),
    }
    fields = {
        "rows": [[i.row.slug, i.digest] for i in catalog.rows],
        "files": [[n, d] for n, d in files.items()],
    }
    written = parts.json_parts(head, fields)
    written[0]["parts"] = len(written)
    for part in range(len(written), 0, -1):  # the first last: it names the others
        jsonio.write_bytes_atomic(out / parts.name(MANIFEST, part), parts.compact(written[part - 1]).encode())
    part = len(written) + 1
    while _regular(out / parts.name(MANIFEST, part)):
        (out / parts.name(MANIFEST, part)).unlink()
        part += 1


def _regular(path: Path) -> bool:
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def _remove(out: Path, stale: set[str]) -> None:
    """Remove what the last build wrote and this one did not (the pages of runs no longer in the history,
    parts a page no longer needs): regular files only, by name, never through a link."""
    for name in sorted(stale):
        path = out / name
        if _regular(path) and not (path.parent.is_symlink()):
            path.unlink()


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
    writer.write_parts("index.html", index_page.render(top))
    documents = machine.index(catalog.contexts, runs, counted, regressions)
    writer.write_parts(machine.INDEX, [parts.compact(d) for d in documents])
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
