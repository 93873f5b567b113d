"""Whether a result document is valid: the JSON Schema (``schemas/result.schema.json``) holds, and so do
the facts a schema cannot state: the cell id matches the cell's content, the times agree, a measured run
loaded its cell's cuDNN, the statistics agree with the raw samples. It reads nothing: the folder, which
writes results, and the documents' loader, which reads them, both ask it.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from typing import Any

import numpy as np

from harness import schemas
from harness.errors import Problem
from harness.plan.model import Cell
from harness.suite.document import ResultDocument
from harness.suite.timing.summary import summarize

MAX_SAMPLE_S = 86400.0


def problems(document: Any, source: str) -> list[Problem]:
    """Why ``document`` is not a valid result (empty: it is): its schema, then the facts a schema cannot
    state. ``validate`` and ``report`` refuse a file for these; ``run`` never writes a result that has any."""
    found = schemas.problems("result", document, source)
    return found or _facts(document, source)


def _facts(doc: ResultDocument, source: str) -> list[Problem]:
    found = _cell_agrees(doc, source) + _times_agree(doc, source)
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
        if m["status"] == "ok":
            found += _measurement_agrees(m, f"measurements[{i}]", source)
    return found


def _cell_agrees(doc: ResultDocument, source: str) -> list[Problem]:
    """The cell's id is its content's: an id that is not was altered or forged."""
    cell = doc["cell"]
    try:
        expected_id = Cell.from_json(cell).id
    except (KeyError, ValueError, TypeError):
        expected_id = None
    if expected_id == cell["id"]:
        return []
    return [
        Problem(
            source,
            "cell.id",
            f"{cell['id']!r} does not match the cell's content "
            f"(expected {expected_id!r}); the document was altered or forged",
        )
    ]


def _times_agree(doc: ResultDocument, source: str) -> list[Problem]:
    """The run finished after it started, ``duration_s`` apart (to a second)."""
    started, finished = instant(doc["started_at"]), instant(doc["finished_at"])
    if started is None or finished is None:
        return [Problem(source, "started_at", "started_at or finished_at is not a time Python can read")]
    if finished < started:
        return [
            Problem(source, "finished_at", f"{doc['finished_at']} is before started_at {doc['started_at']}")
        ]
    if not math.isclose((finished - started).total_seconds(), doc["duration_s"], abs_tol=1.0):
        return [
            Problem(
                source,
                "duration_s",
                f"is {doc['duration_s']} s, but the run started "
                f"{(finished - started).total_seconds():g} s before it finished",
            )
        ]
    return []


def _measurement_agrees(m: Any, field: str, source: str) -> list[Problem]:
    """A measured row's samples are times, its clocks are clocks, and its statistics are its samples'."""
    samples, s = m["samples_s"], m["stats"]
    bad = _bad_sample(samples)
    if bad is not None:
        return [
            Problem(
                source,
                f"{field}.samples_s[{bad}]",
                f"{samples[bad]!r} is not a time in (0, {MAX_SAMPLE_S:g}] s",
            )
        ]
    found = []
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
        found.append(Problem(source, f"{field}.stats.n", f"is {s['n']} but there are {len(samples)} samples"))
        return found
    for name, other in (
        ("wall_stats", m.get("wall_stats")),
        ("thread_cpu_stats", m.get("thread_cpu_stats")),
    ):
        if other is not None and other["n"] != len(samples):  # the same calls in the other clock
            found.append(
                Problem(source, f"{field}.{name}.n", f"is {other['n']} but there are {len(samples)} samples")
            )
    found += _windows_agree(m, field, source)
    return found + _stats_agree(s, samples, field, source)


def _stats_agree(stats: Any, samples: list[float], field: str, source: str) -> list[Problem]:
    """The first statistic that is not the samples' (to 1e-9), if any."""
    expected: dict[str, object] = _summary(samples)
    for key, value in stats.items():
        want = expected[key]
        if not (
            isinstance(value, (int, float))
            and isinstance(want, (int, float))
            and math.isclose(value, want, rel_tol=1e-9, abs_tol=1e-15)
        ):
            return [
                Problem(
                    source,
                    f"{field}.stats.{key}",
                    f"is {value} but the samples give "
                    f"{expected[key]}; the statistics must be those of samples_s",
                )
            ]
    return []


def _host_agrees(doc: ResultDocument, source: str) -> list[Problem]:
    """A CPU run whose load was above its cores is busy (the suite's rule, ``suite/probes/host.py``): one that
    says it was not, with that load recorded, was altered."""
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
    """A row timed in windows (``suite/timing/windows.py``): each window gave at least one sample, kept or set
    aside as contended, and the fastest window is always kept, so its median lies among the samples and no
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
    """An RFC 3339 time (the schema checked its form) as an aware datetime in UTC; None where Python
    cannot read it, or its instant lies outside the years 1 to 9999."""
    try:
        return dt.datetime.fromisoformat(text.upper().replace("Z", "+00:00")).astimezone(dt.timezone.utc)
    except (ValueError, OverflowError):
        return None


def utc(text: str) -> str:
    """An RFC 3339 time as one spelling of its instant, ``2026-01-01T22:00:00.000000Z``: ``+00:00``, ``Z``
    and ``+02:00`` spellings of one instant are one text, and texts order as their instants do. A text
    that is not a time (a valid document's never is) is left as it is."""
    found = instant(text)
    return text if found is None else found.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


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
