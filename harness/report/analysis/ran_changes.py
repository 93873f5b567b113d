"""What ran on each side of a row, compared: the same kernels (operators on a CPU), or what changed."""

from __future__ import annotations

import re
from typing import Any

import pandas as pd

from harness.report.analysis.frames import RAN_SEPARATOR, known, short_kernel


def what_ran(base: pd.DataFrame, mine: pd.DataFrame) -> tuple[str | None, str | None]:
    """Whether the same kernels (operators on a CPU) ran on both sides, and if not, what changed.

    ``same``; ``changed`` with "baseline -> candidate"; ``varies`` where one side's own rounds ran
    different things (autotuning may pick another algorithm per process); None where a side's results
    do not say (recorded before what_ran, or with it off)."""
    if "ran" not in base or "ran" not in mine or base["ran"].isna().any() or mine["ran"].isna().any():
        return None, None
    ran = {side: sorted(set(rows["ran"])) for side, rows in (("baseline", base), ("candidate", mine))}
    varying = [side for side, signatures in ran.items() if len(signatures) > 1]
    if varying:
        return "varies", f"what ran differs between the rounds of the {' and the '.join(varying)}"
    if ran["baseline"] == ran["candidate"]:
        return "same", None
    first = {side: rows.iloc[0] for side, rows in (("baseline", base), ("candidate", mine))}
    return "changed", _change(first["baseline"], first["candidate"])


def _change(a: pd.Series[Any], b: pd.Series[Any]) -> str:
    """The most telling difference first: the attention backend, cuDNN or not, the largest kernel.

    ``change_kind`` reads back the kind of change, which the report groups rows by."""
    if _recorded(a["attention_backend"]) != _recorded(b["attention_backend"]):
        return f"attention backend {_recorded(a['attention_backend'])} -> {_recorded(b['attention_backend'])}"
    top = _recorded(a.get("top_kernel")), _recorded(b.get("top_kernel"))
    kernels = (
        "largest kernel: " + _kernel_change(top[0], top[1])
        if top[0] != top[1] and isinstance(top[0], str) and isinstance(top[1], str)
        else None
    )
    if bool(a["cudnn_used"]) != bool(b["cudnn_used"]):
        kind = "cuDNN -> no cuDNN" if a["cudnn_used"] else "no cuDNN -> cuDNN"
        return f"{kind}, {kernels}" if kernels else kind
    if kernels:
        return kernels
    before, after = set(str(a["ran"]).split(RAN_SEPARATOR)), set(str(b["ran"]).split(RAN_SEPARATOR))
    return f"other kernels: {len(after - before)} new, {len(before - after)} gone"


def _kernel_change(a: str, b: str) -> str:
    """``a -> b`` by their short names; where those are alike (long generated names cut at the same
    place), from a little before the first character where the names differ."""
    short = short_kernel(a), short_kernel(b)
    if short[0] != short[1]:
        return f"{short[0]} -> {short[1]}"
    common = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
    start = max(0, common - 24)
    return f"…{a[start : start + 48]} -> …{b[start : start + 48]}"


def _recorded(value: Any) -> Any:
    """None for what a side did not record: pandas fills a missing cell with NaN, which equals nothing."""
    return value if known(value) else None


def change_kind(change: str) -> str:
    """The kind of a ``_change`` text, to group rows by: an attention backend change whole (a side's
    backends may be a comma-joined list), else the words before its first "," or ":"."""
    if change.startswith("attention backend "):
        return change
    return re.split(r"[,:]", change, maxsplit=1)[0]
