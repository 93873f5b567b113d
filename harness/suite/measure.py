"""Time one call repeatedly and summarize the samples.

On a GPU each sample is a CUDA-event pair around one call, measured as nvbench's "cold" timer
does: the L2 cache is flushed first, and a GPU sleep kernel is queued before the start event so
the host enqueues the timed call while the GPU is still busy; the events are reused and Python's
garbage collector is off while sampling (as in timeit and pyperf). The harness's first timer (new
events per sample, no block, GC on) drifted inside a full-suite run on our H100 (conv 3x3 bf16:
tenths of the samples rose from 57.6 to 106 µs; reports/gpu-local-cudnn-sources-v0-timer); this
one did not. benchmarks/timing_method.py compares the three timers in a fresh process, where the
drift did not reproduce, so its cause in the long run is not pinned down. On the CPU each sample is
a ``perf_counter`` pair. The GPU sleep is sized per workload to cover the host's enqueue time
(``Timer.fit_block``), and a second metric, host wall time per call over blocks of back-to-back
calls, shows what the device time hides: host-side overhead.

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

from harness.suite.summary import summarize

MIN_SAMPLES = 10
MAX_SAMPLES = 2000
TARGET_REL_NOISE = 0.005  # nvbench's default stdrel target
WARMUP_MIN_CALLS = 3
WARMUP_MIN_S = 0.05
L2_FLUSH_BYTES = 256 * 1024 * 1024  # at least 2x the L2 of any current GPU (H100: 50 MB)
HARD_TIMEOUT_S = 15.0
BLOCK_MIN_S = 200e-6  # shortest GPU sleep before each sample: enough to enqueue one kernel-level call
BLOCK_MAX_S = 0.1  # longest: a call whose enqueue takes longer is host-bound beyond what we can hide
BLOCK_MARGIN = 1.5  # the sleep covers 1.5x the measured enqueue time
HOST_BLOCK_MIN_S = 0.01  # host-time metric: each block of calls lasts at least this long
HOST_BLOCKS = 3


class Timer:
    """Times one call of ``fn``: CUDA events on a GPU, a synchronized host clock on the CPU."""

    def __init__(self, device: str, hide_launch_latency: bool = True) -> None:
        self.cuda = device.startswith("cuda")
        self.name = "cuda_event" if self.cuda else "perf_counter"
        self.hide_launch_latency = self.cuda and hide_launch_latency
        self.block_cycles = 0
        if self.cuda:
            self._flush = torch.empty(L2_FLUSH_BYTES // 4, dtype=torch.int32, device=device)
            self._start = torch.cuda.Event(enable_timing=True)
            self._end = torch.cuda.Event(enable_timing=True)
            self.sleep_cycles_per_s = self._calibrate_sleep() if self.hide_launch_latency else 0.0
            self.block_cycles = int(BLOCK_MIN_S * self.sleep_cycles_per_s)

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

    def fit_block(self, fn: Callable[[], Any]) -> float:
        """Size the GPU sleep before each sample to cover ``fn``'s host enqueue time; return that time.

        A fixed sleep hides the launch of a single kernel, but a call that enqueues hundreds of
        kernels (an RNN, a training step) outruns it and the GPU then waits on the host inside the
        timed region: the timing becomes host-bound and differs from process to process. nvbench's
        blocking kernel waits for the host instead; a calibrated sleep is the closest Python gets.
        """
        if not self.hide_launch_latency:
            return 0.0
        enqueue = []
        for _ in range(3):
            torch.cuda._sleep(int(BLOCK_MAX_S * self.sleep_cycles_per_s))  # keep the GPU busy meanwhile
            start = time.perf_counter()
            fn()
            enqueue.append(time.perf_counter() - start)
            torch.cuda.synchronize()
        enqueue_s = statistics.median(enqueue)
        block_s = min(BLOCK_MAX_S, max(BLOCK_MIN_S, BLOCK_MARGIN * enqueue_s))
        self.block_cycles = int(block_s * self.sleep_cycles_per_s)
        return enqueue_s

    @property
    def block_s(self) -> float:
        return self.block_cycles / self.sleep_cycles_per_s if self.block_cycles else 0.0

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
        if flush:
            self._flush.zero_()
        if self.block_cycles:
            torch.cuda._sleep(self.block_cycles)
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


def capture(fn: Callable[[], Any]) -> tuple[Callable[[], Any] | None, str | None]:
    """One call of ``fn`` recorded as a CUDA graph: its replay, or None and why it could not be recorded.

    The caller has warmed ``fn`` up (autotuning, lazy loading and allocations are done), as capture
    requires; one more call on the capture stream warms that stream, as PyTorch's docs ask.
    """
    graph = torch.cuda.CUDAGraph()
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    try:
        with torch.cuda.stream(stream):
            fn()
        torch.cuda.current_stream().wait_stream(stream)
        with torch.cuda.graph(graph, stream=stream, capture_error_mode="thread_local"):
            fn()
        torch.cuda.synchronize()
    except Exception as exc:  # any refusal means: time the call eagerly
        # ending a broken capture raises "operation failed due to a previous error during capture";
        # the error the call itself raised is the one that says why
        cause = exc.__context__ if exc.__context__ is not None else exc
        text = str(cause).strip().splitlines()
        return None, f"{type(cause).__name__}: {text[0] if text else ''}"[:300]
    return graph.replay, None


def measure(
    fn: Callable[[], Any],
    timer: Timer,
    time_budget_s: float,
    min_time_s: float = 0.0,
    gpu: Any = None,
    graph: bool = True,
) -> dict[str, Any]:
    """First-call time, warm-up, then samples until a stopping rule fires.

    ``graph``: on a GPU, time a CUDA-graph replay of the call where it can be captured (see the
    module's docstring); the first call, the warm-up and the host time stay eager. ``min_time_s``:
    measured time to accumulate before the noise target may stop sampling (nvbench's min-time, 0.5 s
    there). ``gpu``: a GpuState; each sample then records the SM clock after it, and a
    sample under the throttle clock is discarded and counted.
    """
    if timer.cuda:
        torch.cuda.synchronize()
    first_call_s = timer.time_call(fn, flush=False)  # includes autotuning and lazy loading

    warmup_calls, warm_start = 0, time.perf_counter()
    while warmup_calls < WARMUP_MIN_CALLS or time.perf_counter() - warm_start < WARMUP_MIN_S:
        timer.time_call(fn, flush=False)
        warmup_calls += 1
    timed, capture_error = fn, None
    if timer.cuda and graph:
        replay, capture_error = capture(fn)
        if replay is not None:
            timed = replay
            for _ in range(WARMUP_MIN_CALLS):  # the first replays upload the graph
                timer.time_call(timed, flush=False)
    enqueue_s = timer.fit_block(timed) if timer.cuda else None

    samples: list[float] = []
    clocks: list[int | None] = []
    noise = _RunningNoise()  # the stopping rule in O(1) per sample, not a pass over every sample
    throttled = 0
    clocked = gpu is not None and gpu.available
    start = time.perf_counter()
    stop_reason = "max_samples"
    with _gc_paused():
        while len(samples) < MAX_SAMPLES:
            # whole nanoseconds: far finer than CUDA events resolve (about 0.5 us), and it halves the files
            sample = round(timer.time_call(timed), 9)
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
    sampling_wall_s = time.perf_counter() - start
    stats = summarize(samples)
    return {
        "timer": "cuda_graph" if timed is not fn else timer.name,
        "graph_capture_error": capture_error,
        "l2_flushed": timer.cuda,
        "launch_latency_hidden": timer.hide_launch_latency,
        "unit": "s",
        "first_call_s": first_call_s,
        "warmup_calls": warmup_calls,
        "samples_s": samples,
        "sm_clock_mhz": clocks if clocked else None,
        "throttled_discarded": throttled,
        "stop_reason": stop_reason,
        "sampling_wall_s": sampling_wall_s,
        "stats": stats,
        "host_enqueue_s": enqueue_s,
        "launch_block_s": timer.block_s if timer.cuda else None,
        "host_time_per_call_s": timer.host_time_per_call(fn, stats["median"]),
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
