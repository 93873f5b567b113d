"""How long each measurement of a GPU process samples: until timed work is a set share of the process.

A process pays the same start-up (importing torch, the CUDA context, probing cuDNN) and a fixed cost per
measurement (building inputs, the first call, warm-up, host time) whatever it samples, and holds the GPU
all that time. The plan asks that timed GPU work be a share of each process's wall time (``timed_share``).
Longer sampling does not make round medians agree more closely, so a process samples as long as its
share needs and no longer: the timed work still missing is spread over the measurements left, each asked
at most the matrix's time budget. What a process cannot reach so (a stall, a cold start, few rows) is
not paid back: it finishes sooner instead of sampling longer.

The estimate is the process's own: its time so far that was not timed, a fixed cost for each
measurement still to come and for the interpreter's start and exit outside the suite, and the share of
a sampling loop that its samples fill (the rest is L2 flushes, GPU sleeps and dropped samples).

Only loops that are mostly timed work are lengthened: one that rests the GPU for its power limit
(``timer.Timer.rest_longer``) keeps the matrix's lengths, and the measurements after it make up its
share. A lengthened loop stops once its floor is in, not at a budget past it; the floor follows the
loop's own timed share as it samples: down where the loop is more timed than the process's others, up
only in the process's last measurement, which no later one can make up for. A short kernel's loop, much
of it L2 flushes and syncs between samples, lowers its process's share with every second it samples, so
it stops at ``SHORT_LOOP_S`` of timed work. The records beside the timing (what ran, numerics, peak
memory) are not paid back by sampling, so a cell's first round, which checks numerics, samples as its
later rounds do. On a GPU the floor rules both ways: a loop stops at it also under the matrix's
``min_time_s`` (which holds where no share is asked), though never before ``SHORT_LOOP_S`` of timed work.
docs/method.md gives the measurements behind each rule.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import NamedTuple

OUTSIDE_S = 1.3  # a process's wall time outside the suite's clock (start, exit)
# until a measurement of this process says otherwise: a measurement's wall time outside its sampling loop
# and its records: inputs, first call, warm-up, capture, host time
FIXED_S = 0.15
LOOP_SHARE = 0.75  # a sampling loop's timed share; the rest is L2 flushes, GPU sleeps and dropped samples
# aimed above the target: a measurement stops at its floor, and the estimate of what lies outside the
# suite's clock is good to some tenths of a second
AIM_ABOVE = 0.015
BUDGET_MARGIN = 1.25  # a raised floor raises the time budget so far that the loop can reach it
SHORT_LOOP_S = 0.1  # the timed work a loop too little timed to lengthen stops at


class ShareAsk(NamedTuple):
    """What a process's timed share asks of one measurement's sampling loop, which learns its own timed
    share as it samples (after ``measure.SHARE_CHECK_S``; until then the process's so far holds):

    - a loop at least ``min_loop_share`` timed: a floor of timed work (``at``), where that is above the
      matrix's ``min_time_s``; sampling stops once it is in (``timed_floor``);
    - a loop under ``min_loop_share``: lengthening it adds more untimed time than timed work, so it stops
      at ``SHORT_LOOP_S`` of timed work instead (``short_loop``), or at the matrix's lengths if sooner;
    - a loop that rests the GPU for its power limit: the matrix's lengths, with the time its rest needs."""

    owed_s: float  # the timed work this measurement owes the process's share, were its loop all timed
    ratio: float  # timed seconds the process aims at per untimed second
    loop_share: float  # the timed share of the loops the process lengthened so far
    time_budget_s: float  # the matrix's
    min_loop_share: float
    last: bool  # the process's last measurement: no later one can make up for it
    part: float = 1.0  # the part of its row this loop is (a window's); its short loop and share check scale

    def at(self, loop_share: float) -> tuple[float, float]:
        """(floor s, time budget s) for a loop whose samples fill ``loop_share`` of it: x timed seconds
        bring x (1 - share) / share untimed, and must outweigh those too. A loop less timed than the
        process's others leaves that to the measurements after it, unless it is the last: a short
        kernel's loop grows less timed as it lengthens, and a floor that chased it would run away."""
        asked = loop_share if self.last else max(loop_share, self.loop_share)
        net = 1 - self.ratio * (1 - asked) / asked if asked > 0 else 0.0
        # never past the matrix's time budget: a process with more untimed work (a stall, a cold start)
        # finishes sooner instead of sampling longer to pay it back
        timed_s = self.time_budget_s if net <= 0 else min(self.time_budget_s, max(0.0, self.owed_s / net))
        return timed_s, max(self.time_budget_s, BUDGET_MARGIN * timed_s / max(loop_share, 0.01))

    @property
    def timed_s(self) -> float:
        """The floor while the loop has no share of its own."""
        return self.at(self.loop_share)[0]


class TimedShare:
    """How much timed work each remaining measurement of a process should reach for ``target`` of the
    process's wall time to be timed work: 0 where the measurements reach it anyway or ``target`` is 0."""

    def __init__(
        self,
        target: float,
        measurements: int,
        started: float | None = None,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        self.target = target
        self.left = measurements
        self.clock = clock
        self.started = clock() if started is None else started
        self.done = 0
        self.timed_s = 0.0  # the samples' sum, over the measurements done
        self._loop_timed_s = 0.0  # the samples' sum of the loops worth lengthening (``add``)
        self._loop_s = 0.0  # those loops' wall time
        self._fixed_s = 0.0  # the measurements' wall time outside their sampling loops and records
        self.records_s = 0.0  # the records beside the timing (what ran, numerics, peak memory): not paid back

    @property
    def min_loop_share(self) -> float:
        """The least timed share of a loop worth lengthening: the target plus 0.1. A loop under the
        target's share adds more untimed than timed work, and no length of it reaches the target."""
        return self.target + 0.1

    @property
    def loop_share(self) -> float:
        """The timed share of this process's loops worth lengthening so far (LOOP_SHARE before one)."""
        seen = self._loop_timed_s / self._loop_s if self._loop_s > 0 else LOOP_SHARE
        return max(seen, self.min_loop_share)

    def ask(self, time_budget_s: float, part: float = 1.0) -> ShareAsk | None:
        """What the process asks of its next measurement; None where it asks nothing (``target`` 0).
        ``time_budget_s``: the measurement's; ``part``: the part of its row it is (a window's)."""
        if self.target <= 0:
            return None
        aim = min(0.95, self.target + AIM_ABOVE)
        ratio = aim / (1 - aim)
        owed_s = 0.0
        if self.left > 0:
            fixed = self._fixed_s / self.done if self.done else FIXED_S
            spent = self.clock() - self.started - self.timed_s - self.records_s
            untimed = OUTSIDE_S + spent + fixed * self.left
            owed_s = (ratio * untimed - self.timed_s) / self.left  # solve timed = ratio * untimed
        return ShareAsk(
            owed_s, ratio, self.loop_share, time_budget_s, self.min_loop_share, self.left == 1, part
        )

    def skip(self, count: int) -> None:
        """``count`` measurements counted at the start will not run (a row that failed is not measured in
        its later windows)."""
        self.left = max(0, self.left - count)

    def extend(self, count: int) -> None:
        """``count`` measurements more than counted so far will run (a row's further windows)."""
        self.left += count

    def add(
        self, timed_s: float, loop_s: float, wall_s: float, rested: bool = False, records_s: float = 0.0
    ) -> None:
        """One measurement done: its timed work, its sampling loop's wall time and its own less its
        records (``records_s``: what ran, numerics, peak memory, which sampling does not pay back).
        ``rested``: its loop rested the GPU for the power limit. Such a loop, or
        one under ``min_loop_share``, is never lengthened, so its share says nothing of the loops that
        will be; its time counts all the same."""
        self.left, self.done = self.left - 1, self.done + 1
        self.records_s += records_s
        self.timed_s += timed_s
        if not rested and loop_s > 0 and timed_s >= self.min_loop_share * loop_s:
            self._loop_timed_s += timed_s
            self._loop_s += loop_s
        self._fixed_s += max(0.0, wall_s - loop_s)
