"""Where the command line's progress goes: run-level lines, the backends' detail (-v), nothing (-q).

On a terminal the runs also get a live bar (done of total, elapsed, time left) under the lines, drawn
by rich; anywhere else (a CI log, a pipe) each line starts with its time, so a log says when things
happened. Only the CLI makes one; library code takes plain callables.
"""

from __future__ import annotations

import datetime as dt
import io
import re
import sys
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:  # rich is loaded where a bar is drawn: '--help' and pipes never pay for it
    from rich.progress import Progress, TaskID

QUIET, NORMAL, VERBOSE = -1, 0, 1
# what a terminal acts on rather than shows: C0 and C1 controls (ESC, BEL, a carriage return), DEL and
# the bidirectional overrides that reorder what is shown, and lone surrogates (a file name that is not
# UTF-8), which no terminal encoding can carry; a tab and a line break stay
_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def inert(text: str) -> str:
    """``text`` as a terminal shows it without acting on it: each control character as its escape."""
    return _CONTROLS.sub(
        lambda m: f"\\x{ord(m[0]):02x}" if ord(m[0]) < 0x100 else f"\\u{ord(m[0]):04x}", text
    )


class InertStream(io.TextIOBase):
    """A text stream that writes through :func:`inert`: what the command line prints (result text
    included) never drives the terminal. ``raw`` is the stream beneath, for the progress bar's drawing."""

    def __init__(self, raw: TextIO) -> None:
        self.raw = raw

    def write(self, text: str) -> int:
        self.raw.write(inert(text))
        return len(text)

    def flush(self) -> None:
        self.raw.flush()

    def isatty(self) -> bool:
        return self.raw.isatty()

    def fileno(self) -> int:
        return self.raw.fileno()

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(self.raw, "encoding", "utf-8")


class Console:
    def __init__(self, verbosity: int = NORMAL, stream: TextIO | None = None) -> None:
        self.verbosity = verbosity
        self.stream = stream or sys.stdout
        self._bar: Progress | None = None
        self._task: TaskID | None = None

    @property
    def live(self) -> bool:
        return self.verbosity > QUIET and self.stream.isatty()

    def say(self, line: str) -> None:
        """A run-level line: what starts, what finished, what was kept."""
        if self.verbosity > QUIET:
            self._print(line)

    def detail(self, line: str) -> None:
        """What a backend says while one run goes on (the suite's measurements, image builds): with -v;
        a milestone (an environment built, a release installed) at the default verbosity too."""
        from harness.backends.packages import Milestone

        if self.verbosity >= VERBOSE or (isinstance(line, Milestone) and self.verbosity > QUIET):
            self._print(f"    {line}")

    def runs(self, done: int, total: int) -> None:
        """How many of the runs to do have finished: the bar on a terminal."""
        if not self.live or total <= 0:
            return
        if self._bar is None:
            from rich.console import Console as RichConsole
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )

            self._bar = Progress(
                TextColumn("runs"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                TextColumn("left"),
                TimeRemainingColumn(),
                console=RichConsole(file=getattr(self.stream, "raw", self.stream)),
                transient=True,
            )
            self._bar.start()
            self._task = self._bar.add_task("runs", total=total)
        assert self._task is not None
        self._bar.update(self._task, completed=done, total=total)
        if done >= total:
            self.close()

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar, self._task = None, None

    def _print(self, line: str) -> None:
        if self._bar is not None:
            self._bar.console.print(inert(line), markup=False, highlight=False)
        elif self.stream.isatty():
            print(line, file=self.stream, flush=True)
        else:
            print(f"[{dt.datetime.now():%H:%M:%S}] {line}", file=self.stream, flush=True)
