"""Time one call repeatedly and summarize the samples.

On a GPU each sample is a CUDA-event pair around one call, measured as nvbench's "cold" timer
does: the L2 cache is flushed first, and a GPU sleep kernel is queued before the start event so
the host enqueues the timed call while the GPU is still busy; the events are reused and Python's
garbage collector is off while sampling (as in timeit and pyperf). The harness's first timer (new
events per sample, no block, GC on) drifted inside a full-suite run on our H100 (conv 3x3 bf16:
tenths of the samples rose from 57.6 to 106 µs; reports/gpu-local-cudnn-sources-v0-timer at 3c2b42d); this
one did not. benchmarks/timing_method.py compares the three timers in a fresh process, where the
drift did not reproduce, so its cause in the long run is not pinned down. On the CPU each sample is
a ``perf_counter`` pair. The GPU sleep is sized per workload to cover the host's enqueue time
(``Timer.fit_block``), and a second metric, host wall time per call over blocks of back-to-back
calls, shows what the device time hides: host-side overhead.

Samples are pipelined (suite 0.6): the next sample is queued before the last one is read, so the
host's reading, clock query and bookkeeping overlap the GPU's work instead of leaving it idle between
samples. A sample counts only where the GPU was provably still busy with the one before once it was
queued whole; the sleep covers what the last sample's work does not, and grows where a sample found the
GPU idle. The L2 flush is the GPU's L2 size, as nvbench's, not a fixed 256 MB. Issue 19 measured where
a process's time went (reports/early-verdicts/stopping-rule.txt): with a fixed 200 us sleep, a 256 MB
flush and the GPU idle while the host read each sample, a 50 us kernel was timed in a sixth of the
sampling loop. The price, measured there (reports/qualify-cost): with the GPU busy nearly all the time, a
power-hungry kernel ran at the clocks the power limit allows under sustained load, not at the burst
clocks the idle gaps let it keep: bf16 GEMM at a median SM clock of 1590 MHz instead of 1980, and its
round medians (185 to 200 us) spread so far that 7 rounds left it undecided
(reports/qualify-cost/session-28/lease-1-suite-0.7). Suite 0.8 therefore rests the GPU between samples
where the power limit holds the clock under its maximum (``Timer.rest_longer``): the samples taken under
that limit are dropped and counted, and the rest grows until the clock holds (178.0 to 178.6 us in every
round of lease-3-suite-0.8, nearly every sample at 1980 MHz).

Sampling stops on the first of: relative noise under target (after a minimum count and ``min_time_s``
of timed work), the time budget, the sample cap (which yields only once ``min_time_s`` is in), a floor
of timed work that the process asked for being in (``timed_floor``, suite 0.9), or, in a loop too little
timed to lengthen, ``share.SHORT_LOOP_S`` of timed work (``short_loop``, suite 0.10); which one is
recorded. Raw samples are always kept. How long a GPU process asks each measurement to sample is
``harness/suite/share.py``'s.

What differs between two processes of one cell (issue 34, reports/quiet-cheap-h100/, measured with
benchmarks/aa_sources.py on our H100): where a call's inputs, outputs and workspaces lie. A second
measurement of the same row in the same process moved its median by up to 2.7 % (p95), a second build
of its inputs by up to 5 %, and the same moves repeat in every process that allocates the same way; an
fp64 reference computed between two rows moved the later rows (p95 between processes 1.58 % against
0.96 %). Suite 0.11 therefore takes each sample in turn from ``GRAPHS`` captures of the call, each with
its own outputs and workspaces (p95 between processes on the 15 noisiest rows 1.10 % against 1.49 %),
and the numerics run after every row is timed (``harness/suite/__main__.py``). Hot samples, several
calls back to back without an L2 flush (nvbench's batch measurement), were noisier between processes,
not quieter (p95 1.64 % batched, 4.20 % single, against 1.20 % cold): an L2-resident call is faster or
slower by where its data lies in the L2. ``measure`` can still time batches (``batch``, ``flush``); the
suite times one call a sample, flushed.
"""

from __future__ import annotations

import gc
import itertools
import math
import statistics
import time
from collections.abc import Callable, Generator, Iterator, Sequence
from contextlib import closing, contextmanager
from typing import Any

import torch

from harness.suite.phases import Phases
from harness.suite.share import SHORT_LOOP_S, ShareAsk
from harness.suite.summary import summarize

MIN_SAMPLES = 10
MAX_SAMPLES = 20000  # 2000 until suite 0.6: a 40 us kernel then stopped at 0.08 s of timed work
SAMPLES_LIMIT = 100000  # the result schema's: past MAX_SAMPLES only while min_time_s is not yet in
TARGET_REL_NOISE = 0.005  # nvbench's default stdrel target
WARMUP_MIN_CALLS = 3
WARMUP_MIN_S = 0.02  # 0.05 until suite 0.11: 7.7 s of a default-profile process
L2_FLUSH_BYTES = 256 * 1024 * 1024  # where torch does not say the L2's size: at least 2x any current GPU's
HARD_TIMEOUT_S = 15.0
BLOCK_STEP_S = 10e-6  # the sleep grows by at least this where a sample found the GPU idle
IDLE_WINDOW = 100
HOST_READ_S = 100e-6  # generous: the host's reading of one sample, its clock query and bookkeeping
# GPU sleep while the enqueue time is measured (0.1 s until 0.6, 0.01 s until 0.11): a replay enqueues in
# tens of microseconds, and a call that takes longer than half of it is measured again under BLOCK_MAX_S
FIT_SLEEP_S = 0.002
BLOCK_MAX_S = 0.1  # longest: a call whose enqueue takes longer is host-bound beyond what we can hide
BLOCK_MARGIN = 1.5  # the sleep covers 1.5x the measured enqueue time
SHARE_CHECK_S = 0.2  # a loop this long has a timed share of its own for its process's ask (share.ShareAsk)
REST_STEP = 0.5  # power rest: the first is half a sample's time (suite 0.5's idle gaps: about 1.5x)
REST_MAX = 3.0  # at most 3x a sample's time (a quarter of the loop timed); then capped samples are kept
# the rest grows 1.5x at most this often: the power limit answers over a tenth of a second or more, and
# growing every 20 ms took each rest to REST_MAX on our H100
# (reports/qualify-cost/session-28/lease-2-suite-0.8-rest-every-20ms)
REST_EVERY_S = 0.2
HOST_BLOCK_MIN_S = 0.005  # host-time metric: each block of calls lasts at least this long (0.01 until 0.11)
HOST_BLOCKS = 3
# Graphs taken in turn (suite 0.11): where a call's outputs and workspaces lie moved its median by up to
# 2.7 % between two measurements of one process on our H100, and which addresses a call gets depends on
# what ran before it in its process. Samples taken in turn from GRAPHS captures of the call (each with
# its own outputs and workspaces) average that out: between processes, |ratio - 1| p95 1.10 % against
# 1.49 % on the 15 noisiest rows (reports/quiet-cheap-h100/, benchmarks/aa_sources.py --study rotation).
GRAPHS = 4
GRAPHS_BYTES = 16 * 1024**3  # at most this much memory for the captures' own (GPU memory free: half)


class Timer:
    """Times one call of ``fn``: CUDA events on a GPU, a synchronized host clock on the CPU."""

    def __init__(self, device: str, hide_launch_latency: bool = True) -> None:
        self.cuda = device.startswith("cuda")
        self.name = "cuda_event" if self.cuda else "perf_counter"
        self.hide_launch_latency = self.cuda and hide_launch_latency
        self.block_cycles = self.block_limit_cycles = 0
        self._reset_rest()
        self.idle_discarded = 0  # of the last ``samples``
        self.flush_s = 0.0
        if self.cuda:
            l2_bytes = getattr(torch.cuda.get_device_properties(device), "L2_cache_size", 0)
            self.flush_bytes = l2_bytes if l2_bytes else L2_FLUSH_BYTES  # nvbench flushes the L2's size
            self._flush = torch.empty(self.flush_bytes // 4, dtype=torch.int32, device=device)
            # two pairs: one sample in flight while the last one is read
            self._pairs = [(_event(), _event()) for _ in range(2)]
            self._start, self._end = self._pairs[0]
            self.sleep_cycles_per_s = self._calibrate_sleep() if self.hide_launch_latency else 0.0
            self.flush_s = self._time_flush()

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
            self._flush.zero_()
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

        Back to back, a power-hungry kernel (bf16 GEMM on our H100) draws more than the board's limit
        allows, and the clock then settles where the limit and the GPU's temperature put it: 1590 to
        1860 MHz in issue 19's rounds, a different place in each process, so the round medians of one
        cell ranged from 185 to 200 us. A single-thread sleep draws next to nothing; with enough of it
        between samples the average power stays under the limit and each sample runs at the clock an
        idle gap gives it, as suite 0.5's samples did (1980 MHz, medians within 0.3 %).
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

    def _enqueue(self, fn: Callable[[], Any], start: Any, end: Any, flush: bool = True) -> None:
        if self.rest_cycles:
            torch.cuda._sleep(self.rest_cycles)
        if flush:
            self._flush.zero_()
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
                yield self.time_call(fn, flush)
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


@contextmanager
def _gc_paused() -> Iterator[None]:
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def capture(fn: Callable[[], Any], calls: int = 1) -> tuple[Callable[[], Any] | None, str | None]:
    """``calls`` back-to-back calls of ``fn`` recorded as one CUDA graph: its replay, or None and why it
    could not be recorded.

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
            for _ in range(calls):
                fn()
        torch.cuda.synchronize()
    except Exception as exc:  # any refusal means: time the call eagerly
        # ending a broken capture raises "operation failed due to a previous error during capture";
        # the error the call itself raised is the one that says why
        cause = exc.__context__ if exc.__context__ is not None else exc
        text = str(cause).strip().splitlines()
        return None, f"{type(cause).__name__}: {text[0] if text else ''}"[:300]
    return graph.replay, None


def graphs_that_fit(wanted: int, call_bytes: int, free_bytes: int | None = None) -> int:
    """How many of ``wanted`` graphs to capture of a call that allocates ``call_bytes`` beyond its inputs:
    their memory stays under ``GRAPHS_BYTES`` and half the GPU's free memory, one graph at least."""
    if free_bytes is None:
        free_bytes = torch.cuda.mem_get_info()[0] if torch.cuda.is_available() else GRAPHS_BYTES * 2
    room = min(GRAPHS_BYTES, free_bytes // 2)
    return max(1, min(wanted, room // max(call_bytes, 1)))


def _relocate(tensors: Sequence[Any], held: list[Any]) -> None:
    """Move each GPU tensor of ``tensors`` to a copy at other addresses, in place (the calls that close over
    it use the copy from now on); the storage it leaves is held in ``held`` for the graphs recorded on it."""
    with torch.inference_mode(False):  # a copy made under inference mode could not become a tensor's data
        for tensor in tensors:
            if isinstance(tensor, torch.Tensor) and tensor.is_cuda:
                held.append(tensor.data)
                tensor.data = tensor.data.clone()


def _rotation(replays: list[Callable[[], Any]], held: list[Any]) -> Callable[[], Any]:
    """One replay a call, taking the graphs in turn; ``held`` lives as long as they do."""
    if len(replays) == 1:
        return replays[0]
    turn = itertools.cycle(replays)

    def replay() -> Any:
        _ = held
        return next(turn)()

    return replay


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
) -> dict[str, Any]:
    """First-call time, warm-up, then samples until a stopping rule fires.

    ``graph``: on a GPU, time a CUDA-graph replay of the call where it can be captured (see the
    module's docstring); the first call, the warm-up and the host time stay eager. ``min_time_s``:
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
    above. From suite 0.11 the floor rules both ways: a loop stops at it (but not before ``SHORT_LOOP_S``
    of timed work) also where it lies under ``min_time_s``, the length where no share is asked.

    ``graphs`` (suite 0.11): on a GPU, capture that many graphs of the call, each with its own outputs and
    workspaces, and take them in turn, one a sample (fewer where their memory would pass
    ``GRAPHS_BYTES`` or half the GPU's free memory); ``relocate``: tensors the call closes over, moved
    to other addresses before each capture after the first (``benchmarks/aa_sources.py``; the suite
    moves none). ``batch``: calls per sample, back to back in one graph, each sample the replay's time
    over ``batch``; ``flush``: whether the L2 is flushed before each sample (default: where the sample
    is one call). The suite times one call a sample, flushed: hot batches were noisier between
    processes on our H100 (reports/quiet-cheap-h100/). A call that cannot be recorded is timed
    eagerly, one call a sample.
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
    while warmup_calls < WARMUP_MIN_CALLS or time.perf_counter() - warm_start < WARMUP_MIN_S:
        call_s = timer.time_call(fn, flush=False)
        warmup_calls += 1
    phases.done("warmup")
    timed, capture_error = fn, None
    calls, replays = 1, []
    held: list[Any] = []  # the storages that graphs recorded before their tensors moved
    if timer.cuda and graph:
        graphs = graphs_that_fit(graphs, batch * (torch.cuda.max_memory_allocated() - base_bytes))
        for index in range(graphs):
            if index:
                _relocate(relocate, held)
            replay, capture_error = capture(fn, batch)
            if replay is None:
                break
            replays.append(replay)
            # the first replays upload the graph
            call_s = min(timer.time_call(replay, flush=False) for _ in range(WARMUP_MIN_CALLS))
        if replays:
            timed, calls, capture_error = _rotation(replays, held), batch, None
        phases.done("graph_capture")
    flushed = timer.cuda and (calls == 1 if flush is None else flush)
    enqueue_s = timer.fit_block(timed, call_s, flushed) if timer.cuda else None
    phases.done("block_fit")

    samples: list[float] = []
    clocks: list[int | None] = []
    noise = _RunningNoise()  # the stopping rule in O(1) per sample, not a pass over every sample
    throttled = power_capped = 0
    clocked = gpu is not None and gpu.available
    start = last = time.perf_counter()
    dropped_s = 0.0  # the sampling time of the samples the power limit slowed
    stop_reason = "max_samples"
    floor_s, floor_budget_s = ask.at(ask.loop_share) if ask is not None else (0.0, time_budget_s)
    short = raised = False  # under ask.min_loop_share timed / a floor in force (above min_time_s until 0.11)
    with _gc_paused(), closing(timer.samples(timed, flushed)) as stream:
        for raw in stream:
            # whole nanoseconds: finer than CUDA events resolve (32 ns on our H100), and it halves the files
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
                noise.add(sample)
            last = time.perf_counter()
            elapsed = last - start
            loop_s = elapsed - dropped_s
            work = noise.total * calls  # the GPU's timed work: every call of every kept sample
            if ask is not None and loop_s >= SHARE_CHECK_S:  # the loop's own share from now on
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
            if raised and work >= max(floor_s, SHORT_LOOP_S) and len(samples) >= MIN_SAMPLES:
                stop_reason = "timed_floor"
                break
            if short and work >= SHORT_LOOP_S and len(samples) >= MIN_SAMPLES:
                stop_reason = "short_loop"
                break
            enough = work >= (max(floor_s, SHORT_LOOP_S) if raised else min_time_s)
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
    host_time_per_call_s = timer.host_time_per_call(fn, stats["median"])
    phases.done("host_time")
    return {
        "timer": "cuda_graph" if timed is not fn else timer.name,
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
