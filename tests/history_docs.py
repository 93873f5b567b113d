"""Small valid result documents for the history and site tests: a committed GPU result, cut to a few rows
and samples, its times, build and context set as a test asks (what ``validate`` checks still holds)."""

from __future__ import annotations

import copy
import datetime as dt
import functools
from pathlib import Path
from typing import Any

from harness import jsonio
from harness.results.validity import _summary
from tests.evidence import RELEASE_ATLAS

BASE = RELEASE_ATLAS / "results" / "torch-installed_cudnn-bundled_2ecb882014.r1.json.gz"
ROWS = 6
SAMPLES = 12


@functools.cache
def _base() -> dict[str, Any]:
    document: dict[str, Any] = jsonio.read(BASE)
    kept = []
    for m in document["measurements"]:
        if m["status"] == "ok" and len(kept) < ROWS:
            kept.append(m)
    for m in kept:
        m["samples_s"] = m["samples_s"][:SAMPLES]
        m["sm_clock_mhz"] = (m.get("sm_clock_mhz") or [])[:SAMPLES] or None
        if m["sm_clock_mhz"] is None:
            m.pop("sm_clock_mhz")
        m["stats"] = _summary(m["samples_s"])
        if m.get("window_medians_s") is not None:  # one window over the kept samples
            m["window_medians_s"] = [m["stats"]["median"]]
    document["measurements"] = kept
    return document


def make(
    start: int,
    *,
    cudnn: str = "9.19.0",
    torch: str = "2.11.0+cu130",
    gpu: str = "NVIDIA H200",
    round_: int = 1,
    scale: float = 1.0,
    kernel: str | None = None,
) -> dict[str, Any]:
    """A result of the base cell, started ``start`` minutes after a fixed time, its times ``scale``d."""
    document = copy.deepcopy(_base())
    began = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(minutes=start)
    document["started_at"] = began.isoformat()
    document["finished_at"] = (began + dt.timedelta(seconds=30)).isoformat()
    document["duration_s"] = 30.0
    document["run"]["round"] = round_
    document["cudnn"]["runtime_version"] = cudnn
    document["environment"]["torch"]["version"] = torch
    document["environment"]["gpu"]["name"] = gpu
    for m in document["measurements"]:
        m["samples_s"] = [s * scale for s in m["samples_s"]]
        m["stats"] = _summary(m["samples_s"])
        if m.get("window_medians_s") is not None:
            m["window_medians_s"] = [m["stats"]["median"]]
        if kernel is not None and m.get("what_ran") and m["what_ran"].get("kernels"):
            m["what_ran"]["kernels"][0]["name"] = kernel
    return document


def write(folder: Path, document: dict[str, Any], name: str | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / (
        name or f"{document['cell']['id']}.{document['started_at'][:16].replace(':', '')}.json.gz"
    )
    jsonio.write_atomic(path, document, compact=True)
    return path
