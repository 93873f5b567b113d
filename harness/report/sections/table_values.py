"""The values in the report's tables: numbers and durations that sort by their value, and links to the
result file (or the one-measurement file) each came from."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

import pandas as pd

from harness import jsonio
from harness.report.analysis import stats
from harness.report.writers.document import Kind, Value
from harness.results import folder

MEASUREMENTS = "measurements"  # the report's folder of one-measurement files that numbers link to
# what a measurement file's name keeps of its result file's name: a valid result name of 250 bytes, with
# the digest and suffix added, is past the 255 bytes a file name may hold; the digest keeps names unique
NAME_BYTES = 100


def link(
    text: str, file: str | None, out_dir: Path, number: float | None = None, kind: Kind = "text"
) -> Value:
    """A value that links to the result file it came from (relative to the report)."""
    return Value(text, number, kind, os.path.relpath(file, out_dir) if file else None)


def time(
    seconds: float,
    file: str | None,
    out_dir: Path,
    measurement: Any = None,
    extracts: dict[str, tuple[str, int]] | None = None,
) -> Value:
    """A duration that links to the measurement it came from (its own small file), else its result file."""
    if file and extracts is not None and measurement is not None and bool(pd.notna(measurement)):
        name = jsonio.name_prefix(Path(file).name.removesuffix(".gz").removesuffix(".json"), NAME_BYTES)
        # shards hold files of the same name; a name that is not UTF-8 hashes as the bytes it was
        digest = hashlib.sha256(file.encode(errors="surrogateescape")).hexdigest()[:8]
        href = f"{MEASUREMENTS}/{name}-{digest}-m{int(measurement)}{folder.MEASUREMENT_SUFFIX}"
        extracts[href] = (file, int(measurement))
        return Value(duration(seconds), seconds, "duration", href)
    return link(duration(seconds), file, out_dir, seconds, "duration")


def number(value: Any, form: str) -> Value | str:
    """A finite number shown as ``form`` (a format spec), sortable by its value; '' where there is none."""
    return Value(format(value, form), float(value), "number") if stats.finite(value) else ""


def duration(seconds: float) -> str:
    if seconds >= 1:
        return f"{seconds:.3f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.3f} ms"
    return f"{seconds * 1e6:.1f} µs"


def rounds_text(numbers: list[int]) -> str:
    """[1, 2, 3, 5] -> 'r1-r3, r5'; where shards repeat round numbers, how many runs."""
    if len(set(numbers)) != len(numbers):
        return f"{len(numbers)} runs"
    spans: list[list[int]] = []
    for n in sorted(numbers):
        if spans and n == spans[-1][1] + 1:
            spans[-1][1] = n
        else:
            spans.append([n, n])
    return ", ".join(f"r{a}" if a == b else f"r{a}-r{b}" for a, b in spans)
