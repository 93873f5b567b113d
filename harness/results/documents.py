"""Result documents: read and check them (``validity`` says what valid means), load a folder's, quarantine
every invalid one, count each run once.

An invalid document is moved to ``<results>/quarantine/`` with its problems beside it; it is
never merged.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness import jsonio
from harness.errors import InputError, Problem
from harness.results import folder, validity
from harness.results.folder import MAX_BYTES, Quarantined
from harness.suite.document import ResultDocument


@dataclass(frozen=True)
class Duplicate:
    name: str  # a file holding a run already loaded from another file
    same_as: str


@dataclass(frozen=True)
class LoadedResults:
    documents: tuple[ResultDocument, ...]
    files: tuple[str, ...]  # the path of the file each document came from, same order
    quarantined: tuple[Quarantined, ...]
    duplicates: tuple[Duplicate, ...] = ()  # copies of runs already loaded: counted once, never as rounds


def devices(loaded: LoadedResults) -> set[str]:
    """The devices the loaded results' rows ran on (``cpu``, ``cuda``; a failed run may record none)."""
    return {d for d in (doc.get("device") for doc in loaded.documents) if isinstance(d, str)}


def round_of(document: ResultDocument) -> int:
    """Which round of its cell a result is (1 for results written before rounds were recorded)."""
    return document["run"].get("round", 1)


def run_key(document: ResultDocument) -> tuple[str, str, str]:
    """What makes a run that run: its cell and when it started and finished. A copy under another name, the
    same folder given twice, a shard copied into another: all the same run, which must count once. Times
    are compared as instants: ``Z`` and ``+00:00`` (or ``+02:00`` two hours on) spell one run."""
    started, finished = document["started_at"], document["finished_at"]
    return (document["cell"]["id"], validity.utc(started), validity.utc(finished))


def same_run(a: ResultDocument, b: ResultDocument) -> bool:
    """Whether two documents are one run's result: equal, but for how their times are spelled."""
    return a == b or _spelled_once(a) == _spelled_once(b)


def _spelled_once(document: ResultDocument) -> dict[str, object]:
    return {**document, "started_at": run_key(document)[1], "finished_at": run_key(document)[2]}


def unique(documents: list[ResultDocument], files: list[str]) -> LoadedResults:
    """The documents with every repeated run left out (the first file keeps it) and said. Two files that
    claim one run (its cell, start and finish) but differ in content contradict each other: InputError
    naming both, since neither can be believed over the other."""
    seen: dict[tuple[str, str, str], tuple[str, ResultDocument]] = {}
    kept_docs, kept_files, duplicates = [], [], []
    for document, file in zip(documents, files, strict=True):
        key = run_key(document)
        if key in seen:
            first, earlier = seen[key]
            if not same_run(document, earlier):
                mine, theirs = _spelled_once(document), _spelled_once(earlier)
                differ = sorted(k for k in {*mine, *theirs} if mine.get(k) != theirs.get(k))
                raise InputError(
                    [
                        Problem(
                            file,
                            ", ".join(differ),
                            f"claims the same run as {first} (cell {key[0]}, started {key[1]}, finished "
                            f"{key[2]}) but differs from it; one of them was altered: remove the one "
                            "that is not the run's own result",
                        )
                    ]
                )
            duplicates.append(Duplicate(file, first))
            continue
        seen[key] = (file, document)
        kept_docs.append(document)
        kept_files.append(file)
    return LoadedResults(tuple(kept_docs), tuple(kept_files), (), tuple(duplicates))


def check(path: Path) -> tuple[ResultDocument | None, list[Problem]]:
    """Parse and validate one result file; return the document (if valid) and every problem."""
    source = str(path)
    try:
        document = jsonio.read(path, MAX_BYTES)
    except jsonio.TooLarge as exc:
        return None, [Problem(source, "", f"file is {exc}")]
    except OSError as exc:
        return None, [Problem(source, "", f"cannot read: {exc.strerror or exc}")]
    except (ValueError, RecursionError) as exc:
        return None, [Problem(source, "", f"not valid JSON: {exc}")]
    return check_document(document, source)


def check_bytes(data: bytes, source: str) -> tuple[ResultDocument | None, list[Problem]]:
    """``check`` of a document already read (and decompressed): its JSON text."""
    try:
        document = jsonio.parse(data)
    except (ValueError, RecursionError) as exc:
        return None, [Problem(source, "", f"not valid JSON: {exc}")]
    return check_document(document, source)


def check_document(document: Any, source: str) -> tuple[ResultDocument | None, list[Problem]]:
    """``check`` of a parsed document."""
    found = validity.problems(document, source)
    return (None if found else document), found


def load(results_dir: Path) -> LoadedResults:
    """Every valid result in ``results_dir``; invalid ones are moved to its quarantine folder."""
    documents, files, quarantined = [], [], []
    paths = [p for p in sorted(results_dir.glob("*.json*")) if folder.is_result_file(p)]
    for path in paths:
        document, problems = check(path)
        if document is None:
            quarantined.append(folder.quarantine(path, problems))
        else:
            documents.append(document)
            files.append(str(path))
    quarantined += folder.quarantined_earlier(results_dir, frozenset(q.name for q in quarantined))
    return dataclasses.replace(unique(documents, files), quarantined=tuple(quarantined))


def of_other_plans(loaded: LoadedResults) -> list[tuple[ResultDocument, str]]:
    """The results (document, file) made for another plan than the ``plan.json`` of the folder that holds
    them (their ``run.plan_sha256``): the matrix was edited since they were made, or they came from
    another folder. A result that records no plan (written before results recorded it) is not judged."""
    current: dict[Path, str | None] = {}
    found = []
    for document, file in zip(loaded.documents, loaded.files, strict=True):
        recorded = document["run"].get("plan_sha256")
        if recorded is None:
            continue
        where = Path(file).parent
        if where not in current:
            current[where] = folder.plan_sha256(where)
        if current[where] is not None and recorded != current[where]:
            found.append((document, file))
    return found


def load_many(results_dirs: list[Path]) -> LoadedResults:
    """Results of several folders (shards, machines) as one set; each folder is checked as ``load`` does."""
    parts = [load(d) for d in dict.fromkeys(results_dirs)]  # a folder given twice is read once
    merged = unique([d for p in parts for d in p.documents], [f for p in parts for f in p.files])
    return dataclasses.replace(
        merged,
        quarantined=tuple(q for p in parts for q in p.quarantined),
        duplicates=tuple(x for p in parts for x in p.duplicates) + merged.duplicates,
    )
