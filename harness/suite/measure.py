"""Time one call repeatedly and summarize the samples: first call, warm-up, then samples until a
stopping rule fires.

Sampling stops on the first of: relative noise under target (after a minimum count and ``min_time_s``
of timed work), the time budget, the sample cap (which yields only once ``min_time_s`` is in), a floor
of timed work that the process asked for being in (``timed_floor``), or, in a loop too little timed to
lengthen, ``share.SHORT_LOOP_S`` of timed work (``short_loop``); which one is recorded. Raw samples are
always kept; Python's garbage collector is off while sampling (as in timeit and pyperf). How long a GPU
process asks each measurement to sample is ``harness/suite/share.py``'s; how one call is timed,
``harness/suite/timer.py``'s.
"""

from __future__ import annotations

import gc
import math
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import closing, contextmanager
from typing import Any

import torch

from harness.suite import graphs as graph_captures
from harness.suite.graphs import capture, graphs_that_fit, rotation
from harness.suite.phases import Phases
from harness.suite.share import SHORT_LOOP_S, ShareAsk
from harness.suite.summary import summarize
from harness.suite.timer import Timer

MIN_SAMPLES = 10
MAX_SAMPLES = 20000  # 2000 stopped a 40 us kernel at 0.08 s of timed work
SAMPLES_LIMIT = 100000  # the result schema's: past MAX_SAMPLES only while min_time_s is not yet in
TARGET_REL_NOISE = 0.005  # nvbench's default stdrel target
WARMUP_MIN_CALLS = 3
WARMUP_MIN_S = 0.02
HARD_TIMEOUT_S = 15.0
SHARE_CHECK_S = 0.2  # a loop this long has a timed share of its own for its process's ask (share.ShareAsk)


@contextmanager
def _gc_paused() -> Iterator[None]:
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def measure(
    fn: Callable[[], Any],
    timer: Timer,
    time_budget_s: float,
    min_time_s: float = 0.0,
    gpu: Any = None,
    graph: bool = True,
    ask: ShareAsk | None = None,
    batch: int = 1,
    flush: bool | None = None,
    graphs: int = 1,
    relocate: Sequence[Any] = (),
    host_time: bool = True,
    warmup_min_s: float = WARMUP_MIN_S,
) -> dict[str, Any]:
    """First-call time, warm-up, then samples until a stopping rule fires.

    ``graph``: on a GPU, time a CUDA-graph replay of the call where it can be captured
    (harness/suite/graphs.py); the first call, the warm-up and the host time stay eager. ``min_time_s``:
    measured time to accumulate before the noise target may stop sampling (nvbench's min-time, 0.5 s
    there). ``gpu``: a GpuState; each sample then records the SM clock after it, and a
    sample under the throttle clock is discarded and counted, as is one whose clock the power limit
    held under the maximum while the GPU's rest between samples can still grow (``Timer.rest_longer``).
    The time budget does not count the time those dropped samples took. ``ask``: what the process's
    timed share asks of this loop (harness/suite/share.py): a floor of timed work above ``min_time_s``,
    where sampling stops once it is in, however noisy the samples (``timed_floor``): longer sampling
    does not make round medians agree more closely. Once the loop has run ``SHARE_CHECK_S``, the floor
    is the one its own timed share asks for; a loop under ``ask.min_loop_share`` timed stops at
    ``SHORT_LOOP_S`` of timed work instead (``short_loop``); a loop whose GPU rests keeps the lengths
    above. The floor rules both ways: a loop stops at it (but not before ``SHORT_LOOP_S`` of timed work)
    also where it lies under ``min_time_s``, the length where no share is asked. In one window of a row
    (``ask.part`` of it), ``SHARE_CHECK_S`` and ``SHORT_LOOP_S`` are that part of theirs.

    ``graphs``: on a GPU, capture that many graphs of the call, each with its own outputs and
    workspaces, and take them in turn, one a sample (fewer where their memory would pass
    ``GRAPHS_BYTES`` or half the GPU's free memory: the call's peak allocation says how many to try,
    and what each capture took from the driver whether one more fits); ``relocate``: tensors the
    call closes over, moved to other addresses before each capture after the first
    (``benchmarks/aa_sources.py``; the suite moves none). ``batch``: calls per sample, back to back in
    one graph, each sample the replay's time over ``batch``; ``flush``: whether the L2 is flushed
    before each sample (default: where the sample is one call). The suite times one call a sample,
    flushed (docs/method.md says why). A call that
    cannot be recorded is timed eagerly, one call a sample. ``host_time``: whether to time the host's
    share of a call (a row's later windows do not: its first window's stands); ``warmup_min_s``: the
    warm-up's least length (a later window's GPU is warm: ``WARMUP_MIN_CALLS`` then).
    """
    phases = Phases()
    base_bytes = 0
    if timer.cuda:
        torch.cuda.synchronize()
        base_bytes = torch.cuda.memory_allocated()
        torch.cuda.reset_peak_memory_stats()
    first_call_s = timer.time_call(fn, flush=False)  # includes autotuning and lazy loading
    phases.done("first_call")

    warmup_calls, warm_start, call_s = 0, time.perf_counter(), first_call_s
    while warmup_calls < WARMUP_MIN_CALLS or time.perf_counter() - warm_start < warmup_min_s:
        call_s = timer.time_call(fn, flush=False)
        warmup_calls += 1
    phases.done("warmup")
    timed, capture_error = fn, None
    calls, replays = 1, []
    held: list[Any] = []  # the storages that graphs recorded before their tensors moved
    if timer.cuda and graph:
        free_before = graph_captures.free_memory()
        graphs = graphs_that_fit(
            graphs, batch * (torch.cuda.max_memory_allocated() - base_bytes), free_before
        )
        for index in range(graphs):
            if index:
                if not graph_captures.another_fits(index, free_before, graph_captures.free_memory()):
                    break
                graph_captures.relocate(relocate, held)
            replay, capture_error = capture(fn, batch)
            if replay is None:
                break
            replays.append(replay)
            # the first replays upload the graph
            call_s = min(timer.time_call(replay, flush=False) for _ in range(WARMUP_MIN_CALLS))
        if replays:
            timed, calls, capture_error = rotation(replays, held), batch, None
        phases.done("graph_capture")
    flushed = timer.cuda and (calls == 1 if flush is None else flush)
    enqueue_s = timer.fit_block(timed, call_s, flushed) if timer.cuda else None
    phases.done("block_fit")

    samples: list[float] = []
    others: list[float] = []  # on a CPU, each kept sample's time in the other clock (Timer.other_s)
    clocks: list[int | None] = []
    noise = _RunningNoise()  # the stopping rule in O(1) per sample, not a pass over every sample
    throttled = power_capped = 0
    clocked = gpu is not None and gpu.available
    start = last = time.perf_counter()
    dropped_s = 0.0  # the sampling time of the samples the power limit slowed
    stop_reason = "max_samples"
    floor_s, floor_budget_s = ask.at(ask.loop_share) if ask is not None else (0.0, time_budget_s)
    part = ask.part if ask is not None else 1.0  # a window's part of its row
    short_loop_s, share_check_s = SHORT_LOOP_S * part, SHARE_CHECK_S * part
    short = raised = False  # under ask.min_loop_share timed / a floor in force
    with _gc_paused(), closing(timer.samples(timed, flushed)) as stream:
        for raw in stream:
            # whole nanoseconds: finer than CUDA events resolve (tens of ns), and it halves the files
            sample = round(raw / calls, 9)
            clock = gpu.sm_clock_mhz() if clocked else None  # while the next sample runs
            if clock is not None and gpu.min_sm_mhz is not None and clock < gpu.min_sm_mhz:
                throttled += 1
                time.sleep(0.05)  # let the clock recover, as nvbench does
            elif clock is not None and timer.can_rest_longer and gpu.power_capped(clock):
                power_capped += 1  # under the power limit's clock: rest the GPU longer between samples
                timer.rest_longer(raw)
                dropped_s += time.perf_counter() - last
                ask, short = None, False
            else:
                samples.append(sample)
                clocks.append(clock)
                if timer.clock:
                    others.append(round(timer.other_s, 9))
                noise.add(sample)
            last = time.perf_counter()
            elapsed = last - start
            loop_s = elapsed - dropped_s
            work = noise.total * calls  # the GPU's timed work: every call of every kept sample
            if ask is not None and loop_s >= share_check_s:  # the loop's own share from now on
                short = work < ask.min_loop_share * loop_s
                floor_s, floor_budget_s = ask.at(work / loop_s)
            raised = ask is not None and not short
            budget_s = floor_budget_s if raised else time_budget_s
            if elapsed >= max(HARD_TIMEOUT_S, budget_s):
                stop_reason = "timeout"  # nvbench's 15 s: even with fewer samples than the minimum
                break
            if len(samples) >= MIN_SAMPLES and loop_s >= budget_s:
                stop_reason = "time_budget"
                break
            if raised and work >= max(floor_s, short_loop_s) and len(samples) >= MIN_SAMPLES:
                stop_reason = "timed_floor"
                break
            if short and work >= short_loop_s and len(samples) >= MIN_SAMPLES:
                stop_reason = "short_loop"
                break
            enough = work >= (max(floor_s, short_loop_s) if raised else min_time_s)
            if len(samples) >= MIN_SAMPLES and enough and noise.rel_stdev() < TARGET_REL_NOISE:
                stop_reason = "noise_target"
                break
            if len(samples) >= (MAX_SAMPLES if enough else SAMPLES_LIMIT):
                break
        rest_s = timer.rest_s  # before closing the stream ends the rest
    if not samples:
        raise RuntimeError(f"every sample ran under the throttle clock ({throttled} discarded)")
    sampling_wall_s = time.perf_counter() - start
    phases.done("sampling")
    stats = summarize(samples)
    host_time_per_call_s = timer.host_time_per_call(fn, stats["median"]) if host_time else None
    phases.done("host_time")
    return {
        "timer": "cuda_graph" if timed is not fn else timer.name,
        **({"clock": timer.clock} if timer.clock else {}),
        # on a CPU, the same calls in the other clock: rows.py keeps their statistics (``<clock>_stats``)
        **({"other_samples_s": others} if timer.clock else {}),
        "graph_capture_error": capture_error,
        "batch": calls,
        "graphs": len(replays) if timed is not fn else 1,
        "l2_flushed": flushed,
        "launch_latency_hidden": timer.hide_launch_latency,
        "unit": "s",
        "first_call_s": first_call_s,
        "warmup_calls": warmup_calls,
        "samples_s": samples,
        "sm_clock_mhz": clocks if clocked else None,
        "throttled_discarded": throttled,
        **({"timed_floor_s": floor_s} if raised else {}),
        "power_capped_discarded": power_capped,
        "power_rest_s": rest_s if timer.hide_launch_latency else None,
        "idle_discarded": timer.idle_discarded,
        "stop_reason": stop_reason,
        "sampling_wall_s": sampling_wall_s,
        "stats": stats,
        "host_enqueue_s": enqueue_s,
        "launch_block_s": timer.block_s if timer.cuda else None,
        "host_time_per_call_s": host_time_per_call_s,
        "phases_s": phases.seconds,
    }


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
