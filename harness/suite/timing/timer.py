"""The timer: one call of a function timed on a GPU with CUDA events, on a CPU with ``perf_counter``.

On a CPU each sample reads two clocks around the call: wall time (``perf_counter``) and the thread's own
CPU time (``thread_time``). The clock a sample counts in is ``Timer.clock`` (``host.CPU_CLOCK``), read
innermost; the other one's reading of the same call is kept beside it (``Timer.other_s``). A scheduler
that takes the core from the thread stops its CPU time, so preemption inflates wall time and not the
thread's; what else a busy host does shows in both (lab/studies/thread_clock.py measures them).

On a GPU each sample is a CUDA-event pair around one call, measured as nvbench's "cold" timer does: the
L2 cache is flushed first (a buffer of the GPU's L2 size, as nvbench's), and a GPU sleep kernel is queued
before the start event so the host enqueues the timed call while the GPU is still busy; the events are
reused. The sleep is sized per workload to cover the host's enqueue time (``Timer.fit_block``).

Samples are pipelined: the next sample is queued before the last one is read, so the host's reading,
clock query and bookkeeping overlap the GPU's work instead of leaving it idle between samples. A sample
counts only where the GPU was provably still busy with the one before once it was queued whole; the sleep
covers what the last sample's work does not, and grows where a sample found the GPU idle. Where the power
limit holds the SM clock under its maximum, the GPU rests between samples (``Timer.rest_longer``), the
rest growing until the clock holds. A second metric, host wall time per call over blocks of back-to-back
calls (``Timer.host_time_per_call``), shows what the device time hides: host-side overhead.
docs/method.md says why each of these is so, with the measurements behind it.
"""

from __future__ import annotations

import itertools
import math
import statistics
import time
from collections.abc import Callable, Generator
from typing import Any

import torch

L2_FLUSH_BYTES = 256 * 1024 * 1024  # where torch does not say the L2's size: at least 2x any current GPU's
BLOCK_STEP_S = 10e-6  # the sleep grows by at least this where a sample found the GPU idle
IDLE_WINDOW = 100
HOST_READ_S = 100e-6  # generous: the host's reading of one sample, its clock query and bookkeeping
# GPU sleep while the enqueue time is measured: a replay enqueues in tens of microseconds, and a call that
# takes longer than half of it is measured again under BLOCK_MAX_S
FIT_SLEEP_S = 0.002
BLOCK_MAX_S = 0.1  # longest: a call whose enqueue takes longer is host-bound beyond what we can hide
BLOCK_MARGIN = 1.5  # the sleep covers 1.5x the measured enqueue time
REST_STEP = 0.5  # power rest: the first is half a sample's time
REST_MAX = 3.0  # at most 3x a sample's time (a quarter of the loop timed); then capped samples are kept
# the rest grows 1.5x at most this often: the power limit answers over a tenth of a second or more
REST_EVERY_S = 0.2
HOST_BLOCK_MIN_S = 0.005  # host-time metric: each block of calls lasts at least this long
HOST_BLOCKS = 3


class Timer:
    """Times one call of ``fn``: CUDA events on a GPU, a synchronized host clock on the CPU."""

    def __init__(
        self,
        device: str,
        hide_launch_latency: bool = True,
        clean_flush: bool = False,
        flush_buffers: int = 1,
        cpu_clock: str = "wall",
    ) -> None:
        """``cpu_clock``: on a CPU, the clock a sample counts in, "wall" or "thread_cpu". ``clean_flush``:
        flush the L2 by reading a buffer of twice its size, which leaves clean lines,
        instead of writing one of its size (nvbench's), which leaves dirty lines the timed call's misses
        write back. ``flush_buffers``: that many flush buffers, taken in turn, so no one buffer's place
        holds for every sample (``lab/studies/aa_sources.py --study flush`` compares them)."""
        self.clean_flush = clean_flush
        self.cuda = device.startswith("cuda")
        self.name = "cuda_event" if self.cuda else "perf_counter"
        # on a CPU, the clock a sample counts in: "wall" or "thread_cpu" (None on a GPU: CUDA events)
        self.clock: str | None = None if self.cuda else cpu_clock
        self.other_clock = "thread_cpu" if cpu_clock == "wall" else "wall"
        self.other_s = 0.0  # on a CPU, the last sample's time in ``other_clock``
        self.hide_launch_latency = self.cuda and hide_launch_latency
        self.block_cycles = self.block_limit_cycles = 0
        self._reset_rest()
        self.idle_discarded = 0  # of the last ``samples``
        self.flush_s = 0.0
        if self.cuda:
            l2_bytes = getattr(torch.cuda.get_device_properties(device), "L2_cache_size", 0)
            # nvbench writes a buffer of the L2's size
            self.flush_bytes = (2 if clean_flush else 1) * (l2_bytes or L2_FLUSH_BYTES)
            self._flushes = [
                torch.zeros(self.flush_bytes // 4, dtype=torch.int32, device=device)
                for _ in range(flush_buffers)
            ]
            self._flush_turn = 0
            # two pairs: one sample in flight while the last one is read
            self._pairs = [(_event(), _event()) for _ in range(2)]
            self._start, self._end = self._pairs[0]
            self.sleep_cycles_per_s = self._calibrate_sleep() if self.hide_launch_latency else 0.0
            self.flush_s = self._time_flush()

    def _flush_l2(self) -> None:
        buffer = self._flushes[self._flush_turn % len(self._flushes)]
        self._flush_turn += 1
        if self.clean_flush:
            buffer.sum()
        else:
            buffer.zero_()

    def _calibrate_sleep(self) -> float:
        """Cycles of ``torch.cuda._sleep`` per second on this GPU (as Inductor calibrates it)."""
        cycles = 2_000_000
        torch.cuda._sleep(cycles)  # first launch loads the kernel
        torch.cuda.synchronize()
        best = math.inf
        for _ in range(3):
            self._start.record()
            torch.cuda._sleep(cycles)
            self._end.record()
            self._end.synchronize()
            best = min(best, self._start.elapsed_time(self._end) / 1e3)
        return cycles / best

    def _time_flush(self) -> float:
        """GPU time of one L2 flush (median of 5): the sleep before a sample need only cover the rest."""
        times = []
        for _ in range(5):
            self._start.record()
            self._flush_l2()
            self._end.record()
            self._end.synchronize()
            times.append(float(self._start.elapsed_time(self._end)) / 1e3)
        return statistics.median(times)

    def fit_block(self, fn: Callable[[], Any], call_s: float = 0.0, flush: bool = True) -> float:
        """Size the GPU sleep before each sample from ``fn``'s host enqueue time; return that time.

        A fixed sleep hides the launch of a single kernel, but a call that enqueues hundreds of
        kernels (an RNN, a training step) outruns it and the GPU then waits on the host inside the
        timed region: the timing becomes host-bound and differs from process to process. nvbench's
        blocking kernel waits for the host instead; a calibrated sleep is the closest Python gets.
        Samples are pipelined (``samples``), so the GPU still has the last sample's flush and call
        (``call_s``: its GPU time) queued while the host enqueues the next: the sleep covers the rest,
        and ``samples`` lengthens it where a sample finds the GPU idle anyway.
        """
        if not self.hide_launch_latency:
            return 0.0
        enqueue_s = self._enqueue_time(fn, FIT_SLEEP_S)
        if enqueue_s > FIT_SLEEP_S / 2:  # a host-bound call: measure it again under a longer sleep
            enqueue_s = self._enqueue_time(fn, BLOCK_MAX_S)
        flush_s = self.flush_s if flush else 0.0
        block_s = min(BLOCK_MAX_S, max(0.0, BLOCK_MARGIN * enqueue_s - flush_s - call_s))
        self.block_cycles = int(block_s * self.sleep_cycles_per_s)
        # a sleep longer than the host's whole turn (its enqueue and its reading of a sample) hides nothing
        limit_s = min(BLOCK_MAX_S, BLOCK_MARGIN * (enqueue_s + HOST_READ_S))
        self.block_limit_cycles = max(self.block_cycles, int(limit_s * self.sleep_cycles_per_s))
        return enqueue_s

    def _enqueue_time(self, fn: Callable[[], Any], busy_s: float) -> float:
        """Least host time of three enqueues of ``fn`` while a GPU sleep of ``busy_s`` keeps the GPU busy: a
        hiccup would size the sleep for good, where too short a sleep grows (``samples``)."""
        enqueue = []
        for _ in range(3):
            torch.cuda._sleep(int(busy_s * self.sleep_cycles_per_s))
            start = time.perf_counter()
            fn()
            enqueue.append(time.perf_counter() - start)
            torch.cuda.synchronize()
        return min(enqueue)

    @property
    def block_s(self) -> float:
        return self.block_cycles / self.sleep_cycles_per_s if self.block_cycles else 0.0

    def _reset_rest(self) -> None:
        self.rest_cycles = 0  # GPU sleep before each sample's flush, for the power limit (``rest_longer``)
        self._rested_at, self._rest_full = -math.inf, False

    @property
    def rest_s(self) -> float:
        return self.rest_cycles / self.sleep_cycles_per_s if self.rest_cycles else 0.0

    @property
    def can_rest_longer(self) -> bool:
        return self.hide_launch_latency and not self._rest_full

    def rest_longer(self, sample_s: float) -> None:
        """Lengthen the GPU's rest before each sample: the power limit held the clock under its maximum.

        Back to back, a power-hungry kernel draws more than the board's limit allows, and the clock then
        settles where the limit and the GPU's temperature put it, a different place in each process. A
        single-thread sleep draws next to nothing; with enough of it between samples the average power
        stays under the limit and each sample runs at the clock an idle gap gives it (docs/method.md).
        """
        now = time.perf_counter()
        if now - self._rested_at < REST_EVERY_S:
            return
        self._rested_at = now
        wanted = max(1.5 * self.rest_s, REST_STEP * sample_s)
        self._rest_full = wanted >= REST_MAX * sample_s
        self.rest_cycles = int(min(wanted, REST_MAX * sample_s) * self.sleep_cycles_per_s)

    def host_time_per_call(self, fn: Callable[[], Any], per_call_guess_s: float) -> float:
        """Host wall time per call, synchronized only at the ends of blocks of back-to-back calls.

        torch.utils.benchmark's blocked measurement: where framework or dispatcher overhead
        regresses, this moves while the device time does not. Warm L2, no sleep.
        """
        calls = max(1, min(1000, math.ceil(HOST_BLOCK_MIN_S / max(per_call_guess_s, 1e-7))))
        per_call = []
        for _ in range(HOST_BLOCKS):
            self._sync()
            start = time.perf_counter()
            for _ in range(calls):
                fn()
            self._sync()
            per_call.append((time.perf_counter() - start) / calls)
        return statistics.median(per_call)

    def _sync(self) -> None:
        if self.cuda:
            torch.cuda.synchronize()

    def time_call(self, fn: Callable[[], Any], flush: bool = True) -> float:
        if not self.cuda:
            start = time.perf_counter()
            fn()
            return time.perf_counter() - start
        self._enqueue(fn, self._start, self._end, flush)
        self._end.synchronize()
        return float(self._start.elapsed_time(self._end)) / 1e3

    def _cpu_sample(self, fn: Callable[[], Any]) -> float:
        """One call on a CPU in both clocks: its time in ``clock``, read innermost, and in the other clock
        (``other_s``). A call shorter than the CPU clock's resolution reads 0 there: 1 ns stands for it."""
        if self.clock == "thread_cpu":
            wall, cpu = time.perf_counter_ns(), time.thread_time_ns()
            fn()
            cpu = time.thread_time_ns() - cpu
            wall = time.perf_counter_ns() - wall
            self.other_s = wall / 1e9
            return max(cpu, 1) / 1e9
        cpu, wall = time.thread_time_ns(), time.perf_counter_ns()
        fn()
        wall = time.perf_counter_ns() - wall
        cpu = time.thread_time_ns() - cpu
        self.other_s = max(cpu, 1) / 1e9
        return wall / 1e9

    def _enqueue(self, fn: Callable[[], Any], start: Any, end: Any, flush: bool = True) -> None:
        if self.rest_cycles:
            torch.cuda._sleep(self.rest_cycles)
        if flush:
            self._flush_l2()
        if self.block_cycles:
            torch.cuda._sleep(self.block_cycles)
        start.record()
        fn()
        end.record()

    def samples(self, fn: Callable[[], Any], flush: bool = True) -> Generator[float, None, None]:
        """Cold samples of ``fn``, endlessly; on a GPU the next one is queued before the last is read.

        What the caller does with a sample (its clock query, the stopping rule) overlaps the next
        sample's GPU work. A sample counts only where the sample before it was still running once it
        was queued whole: its call was then enqueued before its start event could fire. The others
        (the first, and any after the host fell behind) are dropped and counted in ``idle_discarded``.
        A host hiccup now and then costs a sample; a host that keeps falling behind (more than a tenth
        of a window of ``IDLE_WINDOW`` samples) lengthens the sleep before each sample by a quarter,
        up to ``block_limit_cycles``. Closing the iterator waits for the sample in flight and drops it.
        """
        self.idle_discarded = 0
        self._reset_rest()
        if not self.cuda:
            while True:
                yield self._cpu_sample(fn)
        previous: tuple[Any, Any, bool] | None = None
        idle_in_window = 0
        try:
            for index in itertools.count():
                start, end = self._pairs[index % 2]
                self._enqueue(fn, start, end, flush)
                clean = previous is not None and not previous[1].query()
                if previous is not None:
                    previous[1].synchronize()
                    if previous[2] or not self.hide_launch_latency:
                        yield float(previous[0].elapsed_time(previous[1])) / 1e3
                    else:
                        self.idle_discarded += 1
                        idle_in_window += 1
                if index % IDLE_WINDOW == IDLE_WINDOW - 1:
                    if idle_in_window * 10 > IDLE_WINDOW:
                        self._lengthen_block()
                    idle_in_window = 0
                previous = start, end, clean
        finally:
            torch.cuda.synchronize()
            self._reset_rest()  # the next measurement's warm-up does not rest

    def _lengthen_block(self) -> None:
        step = int(BLOCK_STEP_S * self.sleep_cycles_per_s)
        grown = max(self.block_cycles + step, int(self.block_cycles * 1.25))
        self.block_cycles = min(self.block_limit_cycles, grown)


def _event() -> Any:
    return torch.cuda.Event(enable_timing=True)
