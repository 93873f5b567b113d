"""Time one call repeatedly and summarize the samples: first call, warm-up, then samples until a
stopping rule fires.

Sampling stops on the first of: relative noise under target (after a minimum count and ``min_time_s``
of timed work), the time budget, the sample cap (which yields only once ``min_time_s`` is in), a floor
of timed work that the process asked for being in (``timed_floor``), or, in a loop too little timed to
lengthen, ``share.SHORT_LOOP_S`` of timed work (``short_loop``); which one is recorded. Raw samples are
always kept (whole nanoseconds, at most six significant digits: ``stored``); Python's garbage collector
is off while sampling (as in timeit and pyperf). How long a GPU process asks each measurement to sample
is ``harness/suite/timing/share.py``'s; how one call is timed, ``harness/suite/timing/timer.py``'s.
"""

from __future__ import annotations

import gc
import math
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import closing, contextmanager
from dataclasses import asdict, dataclass
from typing import Any, NamedTuple

import torch

from harness.suite.document import Stats
from harness.suite.timing import graphs as graph_captures
from harness.suite.timing.graphs import capture, graphs_that_fit, rotation
from harness.suite.timing.phases import Phases
from harness.suite.timing.share import SHORT_LOOP_S, ShareAsk
from harness.suite.timing.summary import summarize
from harness.suite.timing.timer import Timer

MIN_SAMPLES = 10
MAX_SAMPLES = 20000  # 2000 stopped a 40 us kernel at 0.08 s of timed work
SAMPLES_LIMIT = 100000  # the result schema's: past MAX_SAMPLES only while min_time_s is not yet in
TARGET_REL_NOISE = 0.005  # nvbench's default stdrel target
WARMUP_MIN_CALLS = 3
WARMUP_MIN_S = 0.02
HARD_TIMEOUT_S = 15.0
SHARE_CHECK_S = 0.2  # a loop this long has a timed share of its own for its process's ask (share.ShareAsk)
SIGNIFICANT = 6  # a stored sample's significant digits (``stored``)


@contextmanager
def _gc_paused() -> Iterator[None]:
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


@dataclass(frozen=True)
class Sampling:
    """How ``measure`` samples a call beyond its lengths (each field's default is the suite's way).

    ``gpu``: a GpuState; each sample then records the SM clock after it, and a sample under the throttle
    clock is discarded and counted, as is one whose clock the power limit held under the maximum while
    the GPU's rest between samples can still grow (``Timer.rest_longer``). ``graph``: on a GPU, time a
    CUDA-graph replay of the call where it can be captured (harness/suite/timing/graphs.py). ``ask``: what the
    process's timed share asks of this loop (harness/suite/timing/share.py). ``batch``: calls per sample, back
    to back in one graph; ``flush``: whether the L2 is flushed before each sample (None: where the sample
    is one call). ``graphs``: captures of the call taken in turn, one a sample; ``relocate``: tensors the
    call closes over, moved to other addresses before each capture after the first
    (``lab/studies/aa_sources.py``; the suite moves none). ``host_time``: whether to time the host's share
    of a call (a row's later windows do not); ``warmup_min_s``: the warm-up's least length."""

    gpu: Any = None
    graph: bool = True
    ask: ShareAsk | None = None
    batch: int = 1
    flush: bool | None = None
    graphs: int = 1
    relocate: Sequence[Any] = ()
    host_time: bool = True
    warmup_min_s: float = WARMUP_MIN_S


@dataclass(frozen=True)
class Measurement:
    """One measurement's timing: its samples, their statistics and how they were taken. ``to_json`` is
    the part of a result's measurement entry that the timing writes (the result schema's names)."""

    timer: str
    clock: str | None  # on a CPU, the clock its samples were judged in
    other_samples_s: list[float] | None  # on a CPU, the same calls in the other clock
    graph_capture_error: str | None
    batch: int
    graphs: int
    l2_flushed: bool
    launch_latency_hidden: bool
    first_call_s: float
    warmup_calls: int
    samples_s: list[float]
    sm_clock_mhz: list[int | None] | None
    throttled_discarded: int
    timed_floor_s: float | None  # the floor a raised loop stopped at
    power_capped_discarded: int
    power_rest_s: float | None
    idle_discarded: int
    stop_reason: str
    sampling_wall_s: float
    stats: Stats
    host_enqueue_s: float | None
    launch_block_s: float | None
    host_time_per_call_s: float | None
    phases_s: dict[str, float]

    def to_json(self) -> dict[str, Any]:
        """The measurement as a result entry holds it: the clock and the other clock's samples only on a
        CPU (rows.py keeps their statistics), the floor only where one ruled."""
        document = asdict(self)
        document["unit"] = "s"
        for key in ("clock", "other_samples_s", "timed_floor_s"):
            if document[key] is None:
                del document[key]
        return document


def measure(
    fn: Callable[[], Any],
    timer: Timer,
    time_budget_s: float,
    min_time_s: float = 0.0,
    how: Sampling = Sampling(),
) -> Measurement:
    """First-call time, warm-up, then samples until a stopping rule fires (the module's docstring).

    ``min_time_s``: measured time to accumulate before the noise target may stop sampling (nvbench's
    min-time, 0.5 s there). The first call, the warm-up and the host time stay eager; the samples come
    from CUDA-graph replays where ``how.graph`` and the call can be captured. With ``how.ask``, a floor
    of timed work above ``min_time_s`` where sampling stops once it is in, however noisy the samples
    (``timed_floor``): longer sampling does not make round medians agree more closely. Once the loop has
    run ``SHARE_CHECK_S``, the floor is the one its own timed share asks for; a loop under
    ``ask.min_loop_share`` timed stops at ``SHORT_LOOP_S`` of timed work instead (``short_loop``); a loop
    whose GPU rests keeps the lengths above. The floor rules both ways: a loop stops at it (but not
    before ``SHORT_LOOP_S`` of timed work) also where it lies under ``min_time_s``. In one window of a
    row (``ask.part`` of it), ``SHARE_CHECK_S`` and ``SHORT_LOOP_S`` are that part of theirs. The time
    budget does not count the time samples dropped for the clock took.

    ``how.graphs`` graphs of the call, each with its own outputs and workspaces, are taken in turn, one a
    sample (fewer where their memory would pass ``GRAPHS_BYTES`` or half the GPU's free memory). The
    suite times one call a sample, flushed (docs/method.md says why). A call that cannot be recorded is
    timed eagerly, one call a sample."""
    phases = Phases()
    base_bytes = 0
    if timer.cuda:
        torch.cuda.synchronize()
        base_bytes = torch.cuda.memory_allocated()
        torch.cuda.reset_peak_memory_stats()
    first_call_s = timer.time_call(fn, flush=False)  # includes autotuning and lazy loading
    phases.done("first_call")
    warmup_calls, call_s = _warm_up(fn, timer, how.warmup_min_s)
    phases.done("warmup")
    timed = _Timed(fn, 1, [], None, call_s)
    if timer.cuda and how.graph:
        timed = _captured(fn, timer, how, base_bytes, call_s)
        phases.done("graph_capture")
    flushed = timer.cuda and (timed.calls == 1 if how.flush is None else how.flush)
    enqueue_s = timer.fit_block(timed.fn, timed.call_s, flushed) if timer.cuda else None
    phases.done("block_fit")
    loop = _Loop(timer, time_budget_s, min_time_s, how, timed.calls)
    loop.run(timed.fn, flushed)
    phases.done("sampling")
    stats = summarize(loop.samples)
    host_time_per_call_s = timer.host_time_per_call(fn, stats["median"]) if how.host_time else None
    phases.done("host_time")
    return Measurement(
        timer="cuda_graph" if timed.fn is not fn else timer.name,
        clock=timer.clock or None,
        other_samples_s=loop.others if timer.clock else None,
        graph_capture_error=timed.error,
        batch=timed.calls,
        graphs=len(timed.replays) if timed.fn is not fn else 1,
        l2_flushed=flushed,
        launch_latency_hidden=timer.hide_launch_latency,
        first_call_s=first_call_s,
        warmup_calls=warmup_calls,
        samples_s=loop.samples,
        sm_clock_mhz=loop.clocks if loop.clocked else None,
        throttled_discarded=loop.throttled,
        timed_floor_s=loop.floor_s if loop.raised else None,
        power_capped_discarded=loop.power_capped,
        power_rest_s=loop.rest_s if timer.hide_launch_latency else None,
        idle_discarded=timer.idle_discarded,
        stop_reason=loop.stop_reason,
        sampling_wall_s=loop.wall_s,
        stats=stats,
        host_enqueue_s=enqueue_s,
        launch_block_s=timer.block_s if timer.cuda else None,
        host_time_per_call_s=host_time_per_call_s,
        phases_s=phases.seconds,
    )


def stored(seconds: float) -> float:
    """A sample as results keep it: whole nanoseconds (finer than CUDA events resolve, tens of ns), and
    at most ``SIGNIFICANT`` significant digits, which move it by at most 5e-6 of itself: under the GPU
    timer's 32 ns tick for samples under 6.4 ms, and a thousandth of the smallest difference a verdict
    or an A/A figure reads (0.5 %)."""
    return float(f"{round(seconds, 9):.{SIGNIFICANT}g}")


def _warm_up(fn: Callable[[], Any], timer: Timer, least_s: float) -> tuple[int, float]:
    """Calls until ``WARMUP_MIN_CALLS`` and ``least_s`` are in: (their count, the last call's time)."""
    calls, start = 0, time.perf_counter()
    call_s = 0.0
    while calls < WARMUP_MIN_CALLS or time.perf_counter() - start < least_s:
        call_s = timer.time_call(fn, flush=False)
        calls += 1
    return calls, call_s


class _Timed(NamedTuple):
    """What the loop samples: the call itself, or its graphs taken in turn (``calls`` a replay)."""

    fn: Callable[[], Any]
    calls: int
    replays: list[Any]
    error: str | None  # why the call could not be captured
    call_s: float  # a call's time, for the launch block's fit


def _captured(fn: Callable[[], Any], timer: Timer, how: Sampling, base_bytes: int, call_s: float) -> _Timed:
    """The call's graphs, as many of ``how.graphs`` as fit; the call itself where none could be taken."""
    free_before = graph_captures.free_memory()
    peak = how.batch * (torch.cuda.max_memory_allocated() - base_bytes)
    replays, error = [], None
    held: list[Any] = []  # the storages that graphs recorded before their tensors moved
    for index in range(graphs_that_fit(how.graphs, peak, free_before)):
        if index:
            if not graph_captures.another_fits(index, free_before, graph_captures.free_memory()):
                break
            graph_captures.relocate(how.relocate, held)
        replay, error = capture(fn, how.batch)
        if replay is None:
            break
        replays.append(replay)
        # the first replays upload the graph
        call_s = min(timer.time_call(replay, flush=False) for _ in range(WARMUP_MIN_CALLS))
    if not replays:
        return _Timed(fn, 1, [], error, call_s)
    return _Timed(rotation(replays, held), how.batch, replays, None, call_s)


class _Loop:
    """The sampling loop's state and its stopping rules (``measure``'s docstring)."""

    def __init__(self, timer: Timer, budget_s: float, min_time_s: float, how: Sampling, calls: int) -> None:
        self.timer, self.gpu, self.calls = timer, how.gpu, calls
        self.time_budget_s, self.min_time_s, self.ask = budget_s, min_time_s, how.ask
        self.samples: list[float] = []
        self.others: list[float] = []  # on a CPU, each kept sample's time in the other clock
        self.clocks: list[int | None] = []
        self.noise = _RunningNoise()  # the stopping rule in O(1) per sample
        self.throttled = self.power_capped = 0
        self.clocked = how.gpu is not None and how.gpu.available
        self.dropped_s = 0.0  # the sampling time of the samples the power limit slowed
        self.stop_reason = "max_samples"
        ask = how.ask
        self.floor_s, self.floor_budget_s = ask.at(ask.loop_share) if ask is not None else (0.0, budget_s)
        part = ask.part if ask is not None else 1.0  # a window's part of its row
        self.short_loop_s, self.share_check_s = SHORT_LOOP_S * part, SHARE_CHECK_S * part
        self.short = self.raised = False  # under ask.min_loop_share timed / a floor in force
        self.rest_s: float | None = None
        self.wall_s = 0.0

    def run(self, timed: Callable[[], Any], flushed: bool) -> None:
        """Samples until a rule stops the loop; raises where the throttle clock took every sample."""
        start = last = time.perf_counter()
        with _gc_paused(), closing(self.timer.samples(timed, flushed)) as stream:
            for raw in stream:
                self._take(raw, last)
                last = time.perf_counter()
                reason = self._stop(last - start)
                if reason:
                    self.stop_reason = reason
                    break
            self.rest_s = self.timer.rest_s  # before closing the stream ends the rest
        if not self.samples:
            raise RuntimeError(f"every sample ran under the throttle clock ({self.throttled} discarded)")
        self.wall_s = time.perf_counter() - start

    def _take(self, raw: float, last: float) -> None:
        """One sample kept, or dropped for the throttle clock or the power limit."""
        gpu = self.gpu
        clock = gpu.sm_clock_mhz() if self.clocked else None  # while the next sample runs
        if clock is not None and gpu.min_sm_mhz is not None and clock < gpu.min_sm_mhz:
            self.throttled += 1
            time.sleep(0.05)  # let the clock recover, as nvbench does
        elif clock is not None and self.timer.can_rest_longer and gpu.power_capped(clock):
            self.power_capped += 1  # under the power limit's clock: rest the GPU longer between samples
            self.timer.rest_longer(raw)
            self.dropped_s += time.perf_counter() - last
            self.ask, self.short = None, False
        else:
            sample = stored(raw / self.calls)
            self.samples.append(sample)
            self.clocks.append(clock)
            if self.timer.clock:
                self.others.append(stored(self.timer.other_s))
            self.noise.add(sample)

    def _stop(self, elapsed: float) -> str | None:
        """Why sampling stops after ``elapsed`` seconds of it, or None."""
        loop_s = elapsed - self.dropped_s
        work = self.noise.total * self.calls  # the GPU's timed work: every call of every kept sample
        ask, n = self.ask, len(self.samples)
        if ask is not None and loop_s >= self.share_check_s:  # the loop's own share from now on
            self.short = work < ask.min_loop_share * loop_s
            self.floor_s, self.floor_budget_s = ask.at(work / loop_s)
        self.raised = ask is not None and not self.short
        budget_s = self.floor_budget_s if self.raised else self.time_budget_s
        if elapsed >= max(HARD_TIMEOUT_S, budget_s):
            return "timeout"  # nvbench's 15 s: even with fewer samples than the minimum
        if n >= MIN_SAMPLES and loop_s >= budget_s:
            return "time_budget"
        floor_s = max(self.floor_s, self.short_loop_s)
        if self.raised and work >= floor_s and n >= MIN_SAMPLES:
            return "timed_floor"
        if self.short and work >= self.short_loop_s and n >= MIN_SAMPLES:
            return "short_loop"
        enough = work >= (floor_s if self.raised else self.min_time_s)
        if n >= MIN_SAMPLES and enough and self.noise.rel_stdev() < TARGET_REL_NOISE:
            return "noise_target"
        if n >= (MAX_SAMPLES if enough else SAMPLES_LIMIT):
            return "max_samples"
        return None


class _RunningNoise:
    """Running total, mean and relative standard deviation of the samples so far (Welford's method)."""

    def __init__(self) -> None:
        self.n, self.total, self.mean, self._m2 = 0, 0.0, 0.0, 0.0

    def add(self, value: float) -> None:
        self.n += 1
        self.total += value
        delta = value - self.mean
        self.mean += delta / self.n
        self._m2 += delta * (value - self.mean)

    def rel_stdev(self) -> float:
        if self.n < 2 or self.mean <= 0:
            return math.inf
        return math.sqrt(self._m2 / (self.n - 1)) / self.mean
