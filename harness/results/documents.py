"""Result documents: read and validate them, load a folder's, quarantine every invalid one, count each run
once.

Valid means: the JSON Schema (``schemas/result.schema.json``) holds, and so do the facts a schema
cannot state: the cell id matches the cell's content, the statistics agree with the raw samples.
An invalid document is moved to ``<results>/quarantine/`` with its problems beside it; it is
never merged.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from harness import jsonio, schemas
from harness.errors import InputError, Problem
from harness.plan.model import Cell
from harness.results import folder
from harness.results.folder import MAX_BYTES, Quarantined
from harness.suite.document import ResultDocument
from harness.suite.summary import summarize

MAX_SAMPLE_S = 86400.0


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


def round_of(document: ResultDocument) -> int:
    """Which round of its cell a result is (1 for results written before rounds were recorded)."""
    return document["run"].get("round", 1)


def run_key(document: ResultDocument) -> tuple[str, str, str]:
    """What makes a run that run: its cell and when it started and finished. A copy under another name, the
    same folder given twice, a shard copied into another: all the same run, which must count once."""
    return (document["cell"]["id"], document["started_at"], document["finished_at"])


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
            if document != earlier:
                differ = sorted(k for k in {*document, *earlier} if document.get(k) != earlier.get(k))
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
    found = problems(document, source)
    return (None if found else document), found


def problems(document: Any, source: str) -> list[Problem]:
    """Why ``document`` is not a valid result (empty: it is): its schema, then the facts a schema cannot
    state. ``validate`` and ``report`` refuse a file for these; ``run`` never writes a result that has any."""
    found = schemas.problems("result", document, source)
    return found or _facts(document, source)


def _facts(doc: ResultDocument, source: str) -> list[Problem]:
    found = []
    cell = doc["cell"]
    try:
        expected_id = Cell.from_json(cell).id
    except (KeyError, ValueError, TypeError):
        expected_id = None
    if expected_id != cell["id"]:
        found.append(
            Problem(
                source,
                "cell.id",
                f"{cell['id']!r} does not match the cell's content "
                f"(expected {expected_id!r}); the document was altered or forged",
            )
        )
    started, finished = instant(doc["started_at"]), instant(doc["finished_at"])
    if started is None or finished is None:
        found.append(Problem(source, "started_at", "started_at or finished_at is not a time Python can read"))
    elif finished < started:
        found.append(
            Problem(source, "finished_at", f"{doc['finished_at']} is before started_at {doc['started_at']}")
        )
    elif not math.isclose((finished - started).total_seconds(), doc["duration_s"], abs_tol=1.0):
        found.append(
            Problem(
                source,
                "duration_s",
                f"is {doc['duration_s']} s, but the run started "
                f"{(finished - started).total_seconds():g} s before it finished",
            )
        )
    found += _host_agrees(doc, source) + _cudnn_agrees(doc, source)
    first_of: dict[str, int] = {}
    for i, m in enumerate(doc["measurements"]):
        key = repr((m["workload"], m["dtype"], sorted(m["knobs"].items())))
        if key in first_of:
            found.append(
                Problem(
                    source,
                    f"measurements[{i}]",
                    f"repeats measurements[{first_of[key]}] (the same "
                    "workload, dtype and knobs); a document holds each measurement once",
                )
            )
            continue
        first_of[key] = i
        if m["status"] != "ok":
            continue
        field, samples, s = f"measurements[{i}]", m["samples_s"], m["stats"]
        bad = _bad_sample(samples)
        if bad is not None:
            found.append(
                Problem(
                    source,
                    f"{field}.samples_s[{bad}]",
                    f"{samples[bad]!r} is not a time in (0, {MAX_SAMPLE_S:g}] s",
                )
            )
            continue
        clocks = m.get("sm_clock_mhz") or []
        bad = _bad_items(
            clocks,
            lambda x: x is None or (isinstance(x, int) and not isinstance(x, bool) and 0 <= x <= 10000),
        )
        if bad is not None:
            found.append(
                Problem(
                    source,
                    f"{field}.sm_clock_mhz[{bad}]",
                    f"{clocks[bad]!r} is not a clock in MHz (0..10000 or null)",
                )
            )
        if s["n"] != len(samples):
            found.append(
                Problem(source, f"{field}.stats.n", f"is {s['n']} but there are {len(samples)} samples")
            )
            continue
        for name, other in (
            ("wall_stats", m.get("wall_stats")),
            ("thread_cpu_stats", m.get("thread_cpu_stats")),
        ):
            if other is not None and other["n"] != len(samples):  # the same calls in the other clock
                found.append(
                    Problem(
                        source, f"{field}.{name}.n", f"is {other['n']} but there are {len(samples)} samples"
                    )
                )
        found += _windows_agree(m, field, source)
        expected: dict[str, object] = _summary(samples)
        for key, value in s.items():
            want = expected[key]
            if not (
                isinstance(value, (int, float))
                and isinstance(want, (int, float))
                and math.isclose(value, want, rel_tol=1e-9, abs_tol=1e-15)
            ):
                found.append(
                    Problem(
                        source,
                        f"{field}.stats.{key}",
                        f"is {value} but the samples give "
                        f"{expected[key]}; the statistics must be those of samples_s",
                    )
                )
                break
    return found


def _host_agrees(doc: ResultDocument, source: str) -> list[Problem]:
    """A CPU run whose load was above its cores is busy (the suite's rule, ``suite/host.py``): one that says
    it was not, with that load recorded, was altered."""
    host = doc.get("host")
    if not isinstance(host, dict) or doc.get("device") != "cpu" or host.get("busy") is not False:
        return []
    loads = [x for x in (host.get("load_start"), host.get("load_end")) if isinstance(x, (int, float))]
    cores = host.get("cores")
    if not loads or not isinstance(cores, int) or max(loads) <= cores:
        return []
    return [
        Problem(
            source,
            "host.busy",
            f"is false, but the run recorded a load of {max(loads):g} on {cores} cores, which makes a CPU "
            "run busy; the document was altered: use the run's own result, or run the cell again",
        )
    ]


def _cudnn_agrees(doc: ResultDocument, source: str) -> list[Problem]:
    """A measured run loaded the cuDNN its cell names: a wheel's release (its first three parts), a system
    version asked for by number, none where the cell disables it."""
    cudnn, asked = doc.get("cudnn"), doc["cell"].get("cudnn")
    if doc["status"] != "ok" or not isinstance(cudnn, dict):
        return []
    loaded = cudnn.get("runtime_version")
    wanted: str | None = None
    if isinstance(asked, dict) and "wheel" in asked:
        wanted = ".".join(str(asked["wheel"]).split(".")[:3])
    elif isinstance(asked, dict) and re.fullmatch(r"\d+(\.\d+)*", str(asked.get("system", ""))):
        wanted = str(asked["system"])
    if asked == "disabled" and cudnn.get("enabled") is not False:
        return [
            Problem(
                source, "cudnn.enabled", "is not false, but the cell disables cuDNN; the document was altered"
            )
        ]
    if wanted is None or (isinstance(loaded, str) and (loaded + ".").startswith(wanted + ".")):
        return []
    return [
        Problem(
            source,
            "cudnn.runtime_version",
            f"is {loaded!r}, but the cell names cuDNN {wanted}: a run that loaded another cuDNN than its "
            "cell's is not that cell's; the document was altered or misfiled",
        )
    ]


def _windows_agree(m: Any, field: str, source: str) -> list[Problem]:
    """A row timed in windows (``suite/windows.py``): each window gave at least one sample, kept or set aside
    as contended, and the fastest window is always kept, so its median lies among the samples and no
    window's median lies below the fastest sample."""
    medians, samples = m.get("window_medians_s"), m["samples_s"]
    if not medians or not samples:
        return []
    aside = m.get("contended_discarded") or 0
    if len(medians) > len(samples) + aside:
        return [
            Problem(
                source,
                f"{field}.window_medians_s",
                f"lists {len(medians)} windows, but the row has {len(samples)} samples and {aside} set "
                "aside: each window gives at least one; the document was altered",
            )
        ]
    low, high = min(samples), max(samples)
    slack = 1e-9 * high
    if min(medians) < low - slack or min(medians) > high + slack:
        return [
            Problem(
                source,
                f"{field}.window_medians_s",
                f"has a fastest window median of {min(medians):g} s, outside every sample ({low:g} to "
                f"{high:g} s), though the fastest window's samples are kept; the document was altered",
            )
        ]
    return []


def instant(text: str) -> dt.datetime | None:
    """An RFC 3339 time (the schema checked its form) as an aware datetime; None where Python cannot read
    it."""
    try:
        return dt.datetime.fromisoformat(text.upper().replace("Z", "+00:00"))
    except ValueError:
        return None


def _bad_sample(samples: list[Any]) -> int | None:
    """Index of the first sample that is not a time in (0, MAX_SAMPLE_S] s. Numbers are checked in one
    numpy pass: a folder of 10,000 measurements holds tens of millions of samples."""
    if set(map(type, samples)) <= {float, int}:
        values = np.asarray(samples, dtype=np.float64)
        bad = ~((values > 0) & (values <= MAX_SAMPLE_S))
        return int(np.argmax(bad)) if bad.any() else None
    return _bad_items(
        samples, lambda x: isinstance(x, (int, float)) and not isinstance(x, bool) and 0 < x <= MAX_SAMPLE_S
    )


def _summary(samples: list[float]) -> dict[str, object]:
    """``summarize``'s statistics in numpy's arithmetic: the same to well within the check's 1e-9
    (numpy's linear percentiles are statistics' inclusive quantiles), at C speed rather than the exact
    fractions statistics.stdev sums in."""
    if len(samples) < 2:
        return dict(summarize(samples))
    values = np.asarray(samples, dtype=np.float64)
    q1, median, q3 = (float(q) for q in np.percentile(values, [25, 50, 75]))
    mean, stdev = float(values.mean()), float(values.std(ddof=1))
    return {
        "n": len(samples),
        "min": float(values.min()),
        "q1": q1,
        "median": median,
        "q3": q3,
        "max": float(values.max()),
        "mean": mean,
        "stdev": stdev,
        "rel_stdev": stdev / mean if mean > 0 else 0.0,
        "rel_iqr": (q3 - q1) / median if median > 0 else 0.0,
    }


def _bad_items(values: list[Any], good: Any) -> int | None:
    """Index of the first item that is not ``good`` (the schema leaves big arrays' items to this check)."""
    return next((i for i, value in enumerate(values) if not good(value)), None)


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
