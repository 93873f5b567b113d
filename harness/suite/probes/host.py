"""The host the suite ran on, as far as it decides whether CPU timings mean anything: the thread count the
suite fixed, the load before and after, and the measurements a busy or stalled host spoiled.

On a CPU every sample is host time, so another process that takes the core shows in it. The scheduler
then takes the core for a whole tick (1 to 4 ms): a kernel of microseconds reads milliseconds in those
samples, and its median drifts far above its minimum. A result says so (``host``, a measurement's
``stalled``) and the report never judges such a row. Standard library only.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import statistics
from typing import Any

from harness.suite.document import HostRecord

CPU_THREADS = 1  # the CPU suite's intra-op threads: two processes never fight over a 2-core host's cores
# the clock a CPU sample counts in: wall time. The thread's own CPU time, which preemption does not
# inflate, moved as far between processes beside two CPU-bound jobs on the 2-core machine
# (lab/evidence/busy-host/); a measurement keeps it beside (``thread_cpu_stats``), and "thread_cpu" here
# judges on it instead
CPU_CLOCK = "wall"
TICK_S = 1e-3  # a sample this much above the fastest was preempted (the shortest scheduler tick is 1 ms)
PREEMPTED_SHARE = 0.02  # more samples than this preempted: the host took the core from the measurement
# a median this far above the fastest sample: the host stalled it (an LSTM on a quiet CPU reaches 1.8x:
# its samples are bimodal; a preempted microsecond kernel reads 100x)
MEDIAN_OVER_MIN = 3.0


def fix_threads(torch: Any, device: str) -> int | None:
    """On a CPU, the intra-op thread count, fixed to ``CPU_THREADS`` (recorded in the result)."""
    if device != "cpu":
        return None
    torch.set_num_threads(CPU_THREADS)
    return CPU_THREADS


# glibc's mallopt parameters: freed memory stays in the process instead of going back to the kernel
M_TRIM_THRESHOLD, M_TOP_PAD, M_MMAP_THRESHOLD = -1, -2, -3
KEPT_BYTES = 32 * 1024**2  # the largest mmap threshold glibc takes on 64-bit


def keep_freed_memory(device: str) -> str | None:
    """On a CPU, keep the memory a call frees in the process, as PyTorch's caching allocator does on a
    GPU: glibc otherwise hands large blocks back to the kernel, and the next call's page faults are then
    timed with it (a training step's allocations: a tenth of its time, different in each process). What
    was set, or None where it was not (another C library, or a GPU)."""
    if device != "cpu":
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        done = [
            libc.mallopt(M_MMAP_THRESHOLD, KEPT_BYTES),
            libc.mallopt(M_TRIM_THRESHOLD, 2**31 - 1),
            libc.mallopt(M_TOP_PAD, KEPT_BYTES),
        ]
    except (OSError, AttributeError):
        return None
    if not all(done):
        return None
    return f"glibc: mmap threshold {KEPT_BYTES >> 20} MiB, no trim, top pad {KEPT_BYTES >> 20} MiB"


def load() -> float | None:
    """The 1-minute load average (None where the system does not keep one)."""
    try:
        return os.getloadavg()[0]
    except OSError:
        return None


def stalled(samples: list[float], batch: int = 1) -> str | None:
    """Why a CPU measurement's samples show a busy or stalled host, or None: samples quantized at the
    scheduler tick (a share of them a tick above the fastest), or a median far above the minimum."""
    if len(samples) < 5:
        return None
    fastest, median = min(samples), statistics.median(samples)
    preempted = sum(1 for s in samples if (s - fastest) * batch >= TICK_S) / len(samples)
    if fastest * batch < TICK_S and preempted > PREEMPTED_SHARE:
        return f"{preempted:.0%} of its samples were a scheduler tick (≥ 1 ms) above the fastest"
    if median > MEDIAN_OVER_MIN * fastest:
        return f"its median is {median / fastest:.1f}x its fastest sample"
    return None


def record(
    device: str, threads: int | None, load_start: float | None, allocator: str | None = None
) -> HostRecord:
    """The result's ``host``: cores, threads, the allocator's settings (``keep_freed_memory``), the load
    before and after, and whether the host was busy
    (on a CPU, load above its cores: every measurement of the run shares it), with why. A stalled
    measurement says so itself and spoils its own row only."""
    cores = os.cpu_count() or 1
    load_end = load()
    why = []
    if device == "cpu":
        loads = [x for x in (load_start, load_end) if x is not None]
        if loads and max(loads) > cores:
            why.append(f"load {max(loads):.1f} on {cores} cores")
    found: HostRecord = {
        "cores": cores,
        "threads": threads,
        "load_start": load_start,
        "load_end": load_end,
        "busy": bool(why),
        "why": "; ".join(why),
    }
    if allocator:  # a dict unpacked into the literal is beyond mypy's TypedDict check
        found["allocator"] = allocator
    return found
