"""What ``compare`` prints: its verdict rows as a plain-text table for a terminal."""

from __future__ import annotations

from typing import Any

import pandas as pd
from tabulate import tabulate

HEADERS = ["workload", "dtype", "knobs", "B/A time", "99% interval", "p", "verdict"]


def comparison(timing: pd.DataFrame) -> str:
    """One line per judged row: the time ratio B/A, its interval and p-value, the verdict."""
    rows = [_row(r) for r in timing[timing["verdict"].notna()].itertuples()] if not timing.empty else []
    text: str = tabulate(rows, headers=HEADERS, disable_numparse=True)
    return text


def _row(r: Any) -> list[str]:
    interval = f"[{r.ci_low:.3f}, {r.ci_high:.3f}]" if _known(r.ci_low) and _known(r.ci_high) else ""
    return [
        r.workload,
        r.dtype,
        r.knobs,
        _fixed(r.ratio, ".3f"),
        interval,
        _fixed(r.p_value, ".2g"),
        r.verdict,
    ]


def _known(value: float | None) -> bool:
    return value is not None and value == value  # NaN is not a number to show


def _fixed(value: float | None, form: str) -> str:
    return format(value, form) if _known(value) else ""
