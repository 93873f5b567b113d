"""``history add`` and ``history reindex``: documents in, under the history's lock; the index after them.

A run (its cell, start and finish) is imported once however often it is added, and never altered: a
document that claims a run the history holds but differs from it is refused. Only documents that
``validate`` accepts are imported, and an add that finds any problem imports nothing. A file whose
document the history holds already (the digest of its JSON text names a run in the index) is read and
digested but not validated again: it was when it was added, and validating is most of an add's time.
"""

from __future__ import annotations

import errno
import os
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from harness import jsonio
from harness.errors import InputError, Problem
from harness.history import check, facts, index, store
from harness.history.layout import MARKER, History, locked, open_history
from harness.results import documents, folder
from harness.results.folder import MAX_BYTES
from harness.suite.document import ResultDocument

Progress = Callable[[int, int], None]  # (files done, files in all) of long work: validating, reindexing


@dataclass(frozen=True)
class Read:
    source: str
    raw: bytes  # the file's bytes as they came
    text: bytes  # its JSON text
    sha256: str  # of the text


@dataclass(frozen=True)
class Candidate:
    source: str
    raw: bytes  # the file's bytes as they came
    sha256: str
    document: ResultDocument


@dataclass(frozen=True)
class Added:
    history: Path
    added: tuple[str, ...]  # the files whose runs are new
    already: tuple[str, ...]  # the files whose runs the history held already
    runs: int  # what the history holds now


def result_files(paths: list[Path]) -> list[Path]:
    """The result files named, or found in the folders named (as ``report`` finds them)."""
    found: list[Path] = []
    for path in paths:
        if path.is_dir():
            found += folder.result_files(path)
        elif os.path.lexists(path):
            found.append(path)
        else:
            raise InputError([Problem(str(path), "results", "does not exist; name a results folder or file")])
    if not found:
        named = ", ".join(map(str, paths))
        raise InputError(
            [Problem(named, "results", "holds no result files (*.json.gz); name a results folder")]
        )
    return list(dict.fromkeys(found))


def _read(files: list[Path]) -> tuple[list[Read], list[Problem]]:
    """Each file's bytes, its JSON text and the text's digest (never read through a link)."""
    found, problems = [], []
    for path in files:
        try:
            text = jsonio.read_bytes(path, MAX_BYTES, follow=False)
            raw = jsonio.read_bytes(path, MAX_BYTES, decompress=False, follow=False)
        except OSError as exc:
            why = "it is a link; copy the file itself" if exc.errno == errno.ELOOP else exc.strerror or exc
            problems.append(Problem(str(path), "", f"cannot be read ({why})"))
            continue
        except ValueError as exc:
            problems.append(Problem(str(path), "", f"cannot be read ({exc})"))
            continue
        found.append(Read(str(path), raw, text, store.digest(text)))
    return found, problems


def _candidates(files: list[Read], problems: list[Problem], progress: Progress | None) -> list[Candidate]:
    """Each file validated; InputError listing every refusal (``problems``: those found reading them)."""
    found = []
    if progress and files:
        progress(0, len(files))
    for done, read in enumerate(files, 1):
        document, refused = documents.check_bytes(read.text, read.source)
        if document is None:
            problems = [*problems, *refused]
        else:
            found.append(Candidate(read.source, read.raw, read.sha256, document))
        if progress:
            progress(done, len(files))
    if problems:
        bad = len({p.source for p in problems})
        why = f"nothing was added: 'harness validate' refuses the {bad} file(s) below"
        raise InputError([Problem("history", "", why), *problems])
    return found


def _held(root: Path, read: list[Read], progress: Progress | None) -> set[str]:
    """Of the digests of ``read``, those of documents whose runs the history holds (none where there is no
    history yet)."""
    if not os.path.lexists(root / MARKER):
        return set()
    history = open_history(root)
    ensure_index(history, progress=progress)
    with index.reading(history) as db:
        return index.held(db, {r.sha256 for r in read})


def add(root: Path, paths: list[Path], progress: Progress | None = None) -> Added:
    """Import the results in ``paths`` (folders or files) into the history at ``root`` (made if new);
    ``progress`` hears how many of the files not held already have been validated."""
    read, problems = _read(result_files(paths))
    held = _held(root, read, progress)
    candidates = _candidates([r for r in read if r.sha256 not in held], problems, progress)
    history = open_history(root, create=True)
    with locked(history):
        ensure_index(history, locked_already=True, progress=progress)
        with index.reading(history) as db:
            new, already, problems = _sort_out(history, db, candidates)
        if problems:
            raise InputError(problems)
        if new:
            kept = [(c, store.put(history, c.raw, c.sha256)) for c in new]
            with index.writing(history, fresh=False) as db:
                index.insert(db, (facts.of(c.document, c.sha256, name) for c, name in kept))
                index.set_documents(db, _count(history))
        with index.reading(history) as db:
            total = db.execute("SELECT COUNT(*) FROM runs").fetchone()[0]
    skipped = [r.source for r in read if r.sha256 in held]
    return Added(root, tuple(c.source for c in new), (*skipped, *already), int(total))


def _sort_out(
    history: History, db: sqlite3.Connection, candidates: list[Candidate]
) -> tuple[list[Candidate], list[str], list[Problem]]:
    """Which candidates are new runs, which the history holds, and which contradict what it holds."""
    new: dict[tuple[str, str, str], Candidate] = {}
    already: list[str] = []
    problems: list[Problem] = []
    for c in candidates:
        key = documents.run_key(c.document)
        held = index.run_of(db, *key)
        earlier = new.get(key)
        if held is None and earlier is None:
            new[key] = c
        elif (held is not None and held[0] == c.sha256) or (
            earlier is not None and earlier.sha256 == c.sha256
        ):
            already.append(c.source)
        else:
            other = _held_document(history, held[1]) if held else earlier.document if earlier else None
            if other is not None and documents.same_run(other, c.document):
                already.append(c.source)
            else:
                where = f"the history's {held[1]}" if held else earlier.source if earlier else "?"
                problems.append(
                    Problem(
                        c.source,
                        "",
                        f"claims the run of {where} (cell {key[0]}, started {key[1]}, finished {key[2]}) but "
                        "differs from it; a run in the history is never altered: remove the file that is "
                        "not the run's own result",
                    )
                )
    return list(new.values()), already, problems


def _held_document(history: History, name: str) -> ResultDocument | None:
    sha = Path(name).name.split(".")[0]
    text = store.read(store.Stored(history.root / name, sha))
    parsed: ResultDocument = jsonio.parse(text)
    return parsed


def _count(history: History) -> int:
    return sum(1 for _ in store.stored(history))


def ensure_index(history: History, locked_already: bool = False, progress: Progress | None = None) -> None:
    """Rebuild the index where it is missing, of another version, or behind its documents; InputError
    where it disagrees with them otherwise (``check``: forged or damaged, it is never trusted)."""
    if index.current(history, _count(history)):
        with index.reading(history) as db:
            wrong = next(check.problems(history, db), None)
        if wrong is not None:
            raise index.damaged(history, wrong)
        return
    if locked_already:
        reindex_locked(history, progress)
        return
    with locked(history):
        if not index.current(history, _count(history)):
            reindex_locked(history, progress)


def reindex(root: Path, progress: Progress | None = None) -> int:
    """Build the index again from the documents alone; how many runs it holds."""
    history = open_history(root)
    with locked(history):
        return reindex_locked(history, progress)


def reindex_locked(history: History, progress: Progress | None = None) -> int:
    """Every document read, checked against its name and validated again (a history is untrusted)."""
    runs: dict[tuple[str, str, str], facts.RunFacts] = {}
    problems: list[Problem] = []
    count = 0
    stored = list(store.stored(history))
    for item in stored:
        if progress:
            progress(count, len(stored))
        count += 1
        name = str(item.path.relative_to(history.root))
        document, refused = documents.check_bytes(store.read(item), str(item.path))
        if document is None:
            problems += refused
            continue
        key = documents.run_key(document)
        if key in runs and runs[key].sha256 != item.sha256:
            earlier = _held_document(history, runs[key].file)
            if earlier is not None and documents.same_run(earlier, document):
                continue  # one run, its times spelled two ways (added before times were instants)
            problems.append(
                Problem(name, "", f"claims the run of {runs[key].file} but differs from it; remove one")
            )
            continue
        runs.setdefault(key, facts.of(document, item.sha256, name))
    if problems:
        raise InputError([Problem(str(history.root), "", "the index was not rebuilt:"), *problems])
    if progress and count:
        progress(count, count)
    ordered = sorted(runs.values(), key=lambda r: (r.finished_at, r.sha256))
    with index.writing(history, fresh=True) as db:
        index.insert(db, ordered)
        index.set_documents(db, count)
    return len(ordered)
