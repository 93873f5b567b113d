"""Time one call repeatedly and summarize the samples.

On a GPU each sample is a CUDA-event pair around one call, measured as nvbench's "cold" timer
does: the L2 cache is flushed first, and a GPU sleep kernel is queued before the start event so
the host enqueues the timed call while the GPU is still busy; the events are reused and Python's
garbage collector is off while sampling (as in timeit and pyperf). The harness's first timer (new
events per sample, no block, GC on) drifted inside a full-suite run on our H100 (conv 3x3 bf16:
tenths of the samples rose from 57.6 to 106 µs; reports/gpu-local-cudnn-sources-v0-timer); this
one did not. benchmarks/timing_method.py compares the three timers in a fresh process, where the
drift did not reproduce, so its cause in the long run is not pinned down. On the CPU each sample is
a ``perf_counter`` pair.

Sampling stops on the first of: relative noise under target (after a minimum count), the time
budget, or the sample cap; which one is recorded. Raw samples are always kept.
"""

from __future__ import annotations

import gc
import math
import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import torch

MIN_SAMPLES = 10
MAX_SAMPLES = 2000
TARGET_REL_NOISE = 0.005  # nvbench's default stdrel target
WARMUP_MIN_CALLS = 3
WARMUP_MIN_S = 0.05
L2_FLUSH_BYTES = 256 * 1024 * 1024  # at least 2x the L2 of any current GPU (H100: 50 MB)
HARD_TIMEOUT_S = 15.0
BLOCK_CYCLES = 400_000  # GPU sleep before each sample: ~200 µs at 2 GHz, enough to enqueue one call


class Timer:
    """Times one call of ``fn``: CUDA events on a GPU, a synchronized host clock on the CPU."""

    def __init__(self, device: str, hide_launch_latency: bool = True) -> None:
        self.cuda = device.startswith("cuda")
        self.name = "cuda_event" if self.cuda else "perf_counter"
        self.hide_launch_latency = self.cuda and hide_launch_latency
        if self.cuda:
            self._flush = torch.empty(L2_FLUSH_BYTES // 4, dtype=torch.int32, device=device)
            self._start = torch.cuda.Event(enable_timing=True)
            self._end = torch.cuda.Event(enable_timing=True)

    def time_call(self, fn: Callable[[], Any], flush: bool = True) -> float:
        if not self.cuda:
            start = time.perf_counter()
            fn()
            return time.perf_counter() - start
        if flush:
            self._flush.zero_()
        if self.hide_launch_latency:
            torch.cuda._sleep(BLOCK_CYCLES)
        self._start.record()
        fn()
        self._end.record()
        self._end.synchronize()
        return float(self._start.elapsed_time(self._end)) / 1e3


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
    fn: Callable[[], Any], timer: Timer, time_budget_s: float, min_time_s: float = 0.0, gpu: Any = None
) -> dict[str, Any]:
    """First-call time, warm-up, then samples until a stopping rule fires.

    ``min_time_s``: measured time to accumulate before the noise target may stop sampling (nvbench's
    min-time, 0.5 s there). ``gpu``: a GpuState; each sample then records the SM clock after it, and a
    sample under the throttle clock is discarded and counted.
    """
    if timer.cuda:
        torch.cuda.synchronize()
    first_call_s = timer.time_call(fn, flush=False)  # includes autotuning and lazy loading

    warmup_calls, warm_start = 0, time.perf_counter()
    while warmup_calls < WARMUP_MIN_CALLS or time.perf_counter() - warm_start < WARMUP_MIN_S:
        timer.time_call(fn, flush=False)
        warmup_calls += 1

    samples: list[float] = []
    clocks: list[int | None] = []
    noise = _RunningNoise()  # the stopping rule in O(1) per sample, not a pass over every sample
    throttled = 0
    clocked = gpu is not None and gpu.available
    start = time.perf_counter()
    stop_reason = "max_samples"
    with _gc_paused():
        while len(samples) < MAX_SAMPLES:
            sample = timer.time_call(fn)
            clock = gpu.sm_clock_mhz() if clocked else None
            if clock is not None and gpu.min_sm_mhz is not None and clock < gpu.min_sm_mhz:
                throttled += 1
                time.sleep(0.05)  # let the clock recover, as nvbench does
            else:
                samples.append(sample)
                clocks.append(clock)
                noise.add(sample)
            elapsed = time.perf_counter() - start
            if elapsed >= max(HARD_TIMEOUT_S, time_budget_s):
                stop_reason = "timeout"  # nvbench's 15 s: even with fewer samples than the minimum
                break
            if len(samples) >= MIN_SAMPLES and elapsed >= time_budget_s:
                stop_reason = "time_budget"
                break
            if (
                len(samples) >= MIN_SAMPLES
                and noise.total >= min_time_s
                and noise.rel_stdev() < TARGET_REL_NOISE
            ):
                stop_reason = "noise_target"
                break
    if not samples:
        raise RuntimeError(f"every sample ran under the throttle clock ({throttled} discarded)")
    return {
        "timer": timer.name,
        "l2_flushed": timer.cuda,
        "launch_latency_hidden": timer.hide_launch_latency,
        "unit": "s",
        "first_call_s": first_call_s,
        "warmup_calls": warmup_calls,
        "samples_s": samples,
        "sm_clock_mhz": clocks if clocked else None,
        "throttled_discarded": throttled,
        "stop_reason": stop_reason,
        "sampling_wall_s": time.perf_counter() - start,
        "stats": summarize(samples),
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


def summarize(samples: list[float]) -> dict[str, float | int]:
    q1, median, q3 = statistics.quantiles(samples, n=4, method="inclusive")
    mean = statistics.fmean(samples)
    stdev = statistics.stdev(samples) if len(samples) > 1 else 0.0
    return {
        "n": len(samples),
        "min": min(samples),
        "q1": q1,
        "median": median,
        "q3": q3,
        "max": max(samples),
        "mean": mean,
        "stdev": stdev,
        "rel_stdev": stdev / mean if mean > 0 else 0.0,
        "rel_iqr": (q3 - q1) / median if median > 0 else 0.0,
    }
