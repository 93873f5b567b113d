"""How long each measurement of a GPU process samples: until timed work is a set share of the process.

A process pays the same start-up (importing torch, 4.4 to 5.3 s on our H100; the CUDA context; probing
cuDNN) and a fixed cost per measurement (building inputs, the first call, warm-up, host time) whatever it
samples, and holds the GPU all that time. Issue 19 asks that timed GPU work be at least half of each
process's wall time. Longer sampling does not make round medians agree more closely (resampling the
committed rounds to their first 0.25 s of timed work gave the same verdicts: benchmarks/early_verdicts.py
--timed-prefix), so a process samples as long as its share needs and no longer: the timed work still
missing is spread over the measurements left. A process of one row (a late round of a sequential
qualification) thus samples that row for 7 to 9 s on our H100; a full round about 1 s a row.

The estimate is the process's own: its time so far that was not timed, a fixed cost for each
measurement still to come and for the interpreter's start and exit outside the suite, and the share of
a sampling loop that its samples fill (the rest is L2 flushes, GPU sleeps and dropped samples). On our
H100, with suite 0.6's lengths (reports/qualify-cost/probe-0.7/): a full round's processes 55 % and 57 %
timed, one of 4 rows 61 %, one of 1 row 51 %, against 25 % for that row without the rule.

Only loops that are mostly timed work are lengthened (suite 0.9): one that rests the GPU for its power
limit (``timer.Timer.rest_longer``) keeps the matrix's lengths, and the measurements after it make up
its share. A lengthened loop stops once its floor is in, not at a budget past it; the floor follows the
loop's own timed share as it samples (suite 0.10): down where the loop is more timed than the process's
others, up only in the process's last measurement, which no later one can make up for.

A short kernel's loop, a quarter to a half timed on our H100 (L2 flushes and syncs between samples),
lowers its process's share with every second it samples, so it stops at ``SHORT_LOOP_S`` of timed work
(suite 0.10): round medians of the first 0.05 or 0.1 s of timed work decided every committed row as all
the samples did (benchmarks/early_verdicts.py --timed-prefix; 100.0 % of 13,500 trials, 3.04 and 3.05
rounds a side). With both, on our H100: 4.01 GPU-minutes against today's 8.89 in one lease, every process
50.8 to 53.1 % timed (reports/qualify-cost/session-29/lease-3-suite-0.10).

Suite 0.11 (issue 34): the records beside the timing (what ran, numerics, peak memory) are not paid back by
sampling, so a cell's first round, which checks numerics, samples as its later rounds do; and on a GPU the
floor rules both ways: a loop stops at it also under the matrix's ``min_time_s`` (which holds where no
share is asked), though never before ``SHORT_LOOP_S`` of timed work. On our H100 a default-profile process
took 210 to 240 s, its first round 0.831 of suite 0.5's in one lease (reports/quiet-cheap-h100/).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import NamedTuple

OUTSIDE_S = 1.3  # a process's wall time outside the suite's clock: 0.9 to 1.4 s on our H100 (start, exit)
# until a measurement of this process says otherwise (H100, suite 0.6, reports/qualify-cost):
# a measurement's wall time outside its sampling loop and its records: inputs, first call, warm-up, capture,
# host time (0.3 s with the records until suite 0.11)
FIXED_S = 0.15
LOOP_SHARE = 0.75  # a sampling loop's timed share; the rest is L2 flushes, GPU sleeps and dropped samples
# at most this much timed work asked of one measurement: the last row a process can lengthen makes up
# for the rows before it that could not be (a cold first process asked 11 s of it in session 29)
MAX_FLOOR_S = 30.0
# aimed above the target: a measurement stops at its floor, and the estimate of what lies outside the
# suite's clock is good to some tenths of a second (suite 0.10 aimed 0.01 above: 50.1 to 50.9 %)
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
    - a loop that rests the GPU for its power limit: the matrix's lengths, with the time its rest needs.

    Raising every row and stopping each at its floor ran a round in 117 to 127 s on our H100, against 32
    to 43 s with the rows too little timed left to their budgets (reports/qualify-cost/session-28/
    lease-4-floor-stop, lease-3-suite-0.8)."""

    owed_s: float  # the timed work this measurement owes the process's share, were its loop all timed
    ratio: float  # timed seconds the process aims at per untimed second
    loop_share: float  # the timed share of the loops the process lengthened so far
    time_budget_s: float  # the matrix's
    min_loop_share: float
    last: bool  # the process's last measurement: no later one can make up for it

    def at(self, loop_share: float) -> tuple[float, float]:
        """(floor s, time budget s) for a loop whose samples fill ``loop_share`` of it: x timed seconds
        bring x (1 - share) / share untimed, and must outweigh those too. A loop less timed than the
        process's others leaves that to the measurements after it, unless it is the last: a short
        kernel's loop grows less timed as it lengthens (to 0.6 from 0.88 on our H100, session 29), and
        a floor that chased it tripled."""
        asked = loop_share if self.last else max(loop_share, self.loop_share)
        net = 1 - self.ratio * (1 - asked) / asked if asked > 0 else 0.0
        timed_s = MAX_FLOOR_S if net <= 0 else min(MAX_FLOOR_S, max(0.0, self.owed_s / net))
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

    def ask(self, time_budget_s: float) -> ShareAsk | None:
        """What the process asks of its next measurement; None where it asks nothing (``target`` 0)."""
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
        return ShareAsk(owed_s, ratio, self.loop_share, time_budget_s, self.min_loop_share, self.left == 1)

    def add(
        self, timed_s: float, loop_s: float, wall_s: float, rested: bool = False, records_s: float = 0.0
    ) -> None:
        """One measurement done: its timed work, its sampling loop's wall time and its own less its
        records (``records_s``: what ran, numerics, peak memory, which sampling does not pay back from
        suite 0.11). ``rested``: its loop rested the GPU for the power limit (suite 0.8). Such a loop, or
        one under ``min_loop_share``, is never lengthened, so its share says nothing of the loops that
        will be; its time counts all the same."""
        self.left, self.done = self.left - 1, self.done + 1
        self.records_s += records_s
        self.timed_s += timed_s
        if not rested and loop_s > 0 and timed_s >= self.min_loop_share * loop_s:
            self._loop_timed_s += timed_s
            self._loop_s += loop_s
        self._fixed_s += max(0.0, wall_s - loop_s)
