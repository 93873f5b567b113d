"""A stopwatch of named phases: where a process's or a measurement's wall time goes (issue 19)."""

from __future__ import annotations

import time


class Phases:
    """Wall seconds of each phase, each from the end of the one before (or from the stopwatch's start)."""

    def __init__(self, seconds: dict[str, float] | None = None) -> None:
        self.seconds: dict[str, float] = {} if seconds is None else seconds
        self._last = time.perf_counter()

    def done(self, phase: str) -> None:
        now = time.perf_counter()
        self.seconds[phase] = now - self._last
        self._last = now
