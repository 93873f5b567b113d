"""Each row's steps between neighbouring releases, within one context: along cuDNN (one line per torch
build), and along torch into each torch build's oldest cuDNN release (what its release page compares). A
step is judged as the report judges two cells (``report.stats.judge`` over the rounds' medians, the
report's default threshold and alpha; a round a busy host spoiled never counts); a change begins where a
step is slower or faster, or where the row ran at one end and failed at the other.

A step's verdict depends only on the runs at its two ends: ``key`` says which, so a rebuild judges again
only the steps a new run touched.
"""

from __future__ import annotations

import hashlib
import itertools
import math
import statistics
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from harness.history.facts import Context
from harness.history.versions import version_key
from harness.plan.model import DEFAULT_ALPHA, DEFAULT_REGRESSION_PCT
from harness.report.analysis import stats
from harness.site.data import Point

CHANGED = ("slower", "faster", "failed")


@dataclass(frozen=True)
class Step:
    context: str  # Context.label
    axis: str  # "cudnn" or "torch"
    torch_before: str
    torch_after: str
    cudnn_before: str
    cudnn_after: str
    verdict: str  # slower, faster, same, inconclusive, failed
    ratio: float | None  # after / before
    reason: str
    ran_before: str | None
    ran_after: str | None
    rounds: tuple[int, int]
    finished: str  # when the newest run at the later end finished
    key: str  # which runs it was judged from
    open: bool = False  # slower, and still slower at the newest release of its line

    @property
    def changed(self) -> bool:
        return self.verdict in CHANGED or (self.ran_before or "") != (self.ran_after or "")

    def to_json(self) -> dict[str, object]:
        return {**self.__dict__, "rounds": list(self.rounds)}

    @classmethod
    def from_json(cls, value: Mapping[str, Any]) -> Step:
        """A step as ``to_json`` wrote it; ValueError where a field is missing, extra or of another type
        (a shard is read back, and a file on disk is untrusted)."""
        if not isinstance(value, Mapping) or set(value) != set(_FIELDS):
            raise ValueError("not a step")
        for name, kinds in _FIELDS.items():
            if not isinstance(value[name], kinds) or isinstance(value[name], bool) is not (kinds == (bool,)):
                raise ValueError(f"a step's {name} is not {kinds}")
        rounds = value["rounds"]
        if len(rounds) != 2 or not all(type(n) is int for n in rounds) or value["verdict"] not in VERDICTS:
            raise ValueError("not a step")
        ratio = value["ratio"]
        if ratio is not None and not (isinstance(ratio, (int, float)) and 0 < ratio < math.inf):
            raise ValueError("a step's ratio is not a ratio")
        return cls(**{**value, "rounds": (rounds[0], rounds[1])})


_TEXT, _MAYBE_TEXT = (str,), (str, type(None))
_FIELDS: dict[str, tuple[type, ...]] = {
    **{n: _TEXT for n in ("context", "axis", "torch_before", "torch_after", "cudnn_before", "cudnn_after")},
    **{n: _TEXT for n in ("verdict", "reason", "finished", "key")},
    "ratio": (int, float, type(None)),
    "ran_before": _MAYBE_TEXT,
    "ran_after": _MAYBE_TEXT,
    "rounds": (list,),
    "open": (bool,),
}
VERDICTS = ("slower", "faster", "same", "inconclusive", "failed", "missing")


Cell = tuple[str, str]  # (torch, cudnn)


def of_row(points: list[Point], cached: Mapping[str, Step]) -> list[Step]:
    """Every step of one row's points, in every context; a step whose runs are those of a ``cached`` one
    is that one."""
    found: list[Step] = []
    by_context: dict[Context, dict[Cell, list[Point]]] = {}
    for p in points:
        by_context.setdefault(p.run.context, {}).setdefault((p.run.torch, p.run.cudnn), []).append(p)
    for context, cells in by_context.items():
        context_steps: list[Step] = []
        firsts = _first_releases(cells)
        for axis, line_of, along in (("cudnn", 0, 1), ("torch", 1, 0)):
            lines: dict[str, list[Cell]] = {}
            for cell in cells:
                lines.setdefault(cell[line_of], []).append(cell)
            for line in lines.values():
                ordered = sorted(line, key=lambda c: version_key(c[along]))
                series = [
                    _step(context.label, axis, a, b, cells[a], cells[b], cached)
                    for a, b in itertools.pairwise(ordered)
                    if axis == "cudnn" or b in firsts
                ]
                context_steps += _marked_open(series, ordered, cells) if axis == "cudnn" else series
        found += context_steps
    return found


def _first_releases(cells: Mapping[Cell, list[Point]]) -> set[Cell]:
    """The cell of each torch build's oldest cuDNN release: only there is a torch step what a release page
    shows (elsewhere the cuDNN step into it is)."""
    oldest: dict[str, Cell] = {}
    for cell in sorted(cells, key=lambda c: version_key(c[1])):
        oldest.setdefault(cell[0], cell)
    return set(oldest.values())


def _step(
    context: str,
    axis: str,
    a: Cell,
    b: Cell,
    before: list[Point],
    after: list[Point],
    cached: Mapping[str, Step],
) -> Step:
    key = hashlib.sha256(
        (",".join(p.run.sha256 for p in before) + "|" + ",".join(p.run.sha256 for p in after)).encode()
    ).hexdigest()[:20]
    if key in cached and cached[key].context == context and cached[key].axis == axis:
        return cached[key]
    ok_a, ok_b = _medians(before), _medians(after)
    spoiled = _spoiled(before) if not ok_a else _spoiled(after) if not ok_b else None
    if spoiled:  # never a verdict from a busy host's timings (the report's rule)
        verdict, ratio, reason = "inconclusive", None, f"busy host: {spoiled}; no verdict from its rounds"
    elif ok_a and not ok_b:
        verdict, ratio, reason = (
            "failed",
            None,
            f"ran at the earlier end, failed at the later ({_failure(after)})",
        )
    elif not ok_a or not ok_b:
        verdict, ratio, reason = "inconclusive", None, "failed at the earlier end"
    elif min(len(ok_a), len(ok_b)) < 2:
        ratio = stats.time_ratio(statistics.median(ok_b), statistics.median(ok_a))
        verdict, reason = "inconclusive", "one round at an end: no verdict (qualify runs 3 or more)"
    else:
        judged = stats.judge(ok_a, ok_b, DEFAULT_REGRESSION_PCT, DEFAULT_ALPHA)
        verdict, ratio, reason = judged.verdict, judged.ratio, judged.reason
    return Step(
        context,
        axis,
        a[0],
        b[0],
        a[1],
        b[1],
        verdict,
        ratio,
        reason,
        _ran(before),
        _ran(after),
        (len(ok_a), len(ok_b)),
        max(p.run.finished_at for p in after),
        key,
    )


def _medians(points: list[Point]) -> list[float]:
    """The medians of the rounds that ran on a quiet host: a spoiled round's never count."""
    return [p.median_s for p in points if p.status == "ok" and p.median_s is not None and not p.spoiled]


def _spoiled(points: list[Point]) -> str | None:
    """Why a busy host spoiled a round of these that ran (None: none was spoiled)."""
    return next((p.spoiled for p in points if p.status == "ok" and p.spoiled), None)


def _failure(points: list[Point]) -> str:
    return next((p.status for p in points if p.status != "ok"), "no measurement")


def _ran(points: list[Point]) -> str | None:
    names = Counter(p.ran for p in points if p.ran)
    return names.most_common(1)[0][0] if names else None


def _marked_open(series: list[Step], ordered: list[Cell], cells: Mapping[Cell, list[Point]]) -> list[Step]:
    """A slower step is open while the newest release of its line is still slower than the step's start
    by the threshold."""
    if not series:
        return series
    newest = _medians(cells[ordered[-1]])
    marked = []
    for step in series:
        start = _medians(cells[(step.torch_before, step.cudnn_before)])
        still = bool(newest and start) and stats.time_ratio(
            statistics.median(newest), statistics.median(start)
        ) >= 1 + (DEFAULT_REGRESSION_PCT / 100)
        marked.append(Step(**{**step.__dict__, "open": step.verdict == "slower" and still}))
    return marked
