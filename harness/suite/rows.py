"""One row of a suite process: built, timed, and recorded beside its timing (what ran, peak memory).

Every row is timed in windows spread across its process (harness/suite/timing/windows.py); on a GPU a row
samples as long as its process's timed share asks (harness/suite/timing/share.py), and gets more windows while
its windows disagree. A row that fails is
data (``status: error``) and the process goes on, unless the error left the CUDA context unusable.
"""

from __future__ import annotations

import dataclasses
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple

from harness.suite.catalog import CATALOG, FAMILY
from harness.suite.contract import BuildsCalls, MeasuresItself, Unsupported
from harness.suite.document import Dtype, Knobs, Measurement
from harness.suite.probes import host
from harness.suite.settings import SuiteSettings
from harness.suite.timing import windows
from harness.suite.timing.phases import Phases
from harness.suite.timing.share import ShareAsk, TimedShare

# a measurement's records beside its timing: the timed share leaves them out
RECORDS = ("peak_memory", "what_ran", "numerics")
# what a row's later window pays again to be measured in another place
REPEATED = ("build", "first_call", "warmup", "graph_capture", "block_fit")


class CudaContextLost(RuntimeError):
    """A measurement's error left the CUDA context unusable (a device-side assert, an illegal address):
    every later call would fail with the same error, so the cell stops and says which one did it."""


def error_text(exc: BaseException, device: str, what: str) -> str:
    """A row's error as its result records it (the exception's type and first line); raises
    ``CudaContextLost`` where the error left the CUDA context unusable (``what``: the row and the step)."""
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    if device == "cuda" and not cuda_usable():
        raise CudaContextLost(
            f"{what} raised {type(exc).__name__}: {text}; the CUDA context is unusable after it, so the "
            "cell stops here"
        ) from exc
    return f"{type(exc).__name__}: {text}"[:500]


Cell = tuple[Knobs, tuple[str, Dtype]]  # a row's knobs, and its (workload, dtype)


@dataclass(frozen=True)
class Row:
    """What every row of a process is timed with: the suite's settings, the device, its timer, the GPU's
    state (None without NVML or a GPU), the process's timed share and its windows."""

    settings: SuiteSettings
    device: str
    timer: Any
    gpu: Any
    share: TimedShare
    plan: windows.Windows


class Which(NamedTuple):
    """The row measured: its workload, dtype and knobs."""

    workload: str
    dtype: Dtype
    knobs: Knobs


class Window(NamedTuple):
    """A measurement of a row: its window ``nth`` (from 0) of ``per_row`` (the row's least), with ``settings``
    whose time budget is the window's part, from ``graphs`` CUDA graphs (``GRAPHS`` where None)."""

    settings: SuiteSettings
    nth: int = 0
    per_row: int = 1
    graphs: int | None = None

    @property
    def first(self) -> bool:
        """The row's first window warms the GPU up and records peak memory, host time and what ran."""
        return self.nth == 0


def measure_windows(row: Row, cells: list[Cell]) -> Iterator[tuple[int, Measurement]]:
    """Every row timed in passes over the rows, at least ``plan.per_row`` windows and more while
    ``windows.wants_another`` says so, each window its part of the time budget, of the share's lengths
    (``ShareAsk.part``) and of ``GRAPHS``, merged into one measurement per row
    (harness/suite/timing/windows.py), yielded with the row's index as its last window is done. The first
    window warms up and records what ran, peak memory and host time; a later one builds the row again,
    in another place, and only samples. A row that failed is not measured again. A workload that
    measures itself in processes of its own is measured once, in the first pass, with the whole budget.
    The share counts ``plan.expected`` windows a row until the row's windows say how many it takes."""
    from harness.suite.timing.graphs import GRAPHS

    plan, share = row.plan, row.share
    part = dataclasses.replace(row.settings, time_budget_s=row.settings.time_budget_s / plan.per_row)
    graphs = max(1, GRAPHS // plan.per_row)  # the row's graphs spread over its windows
    parts: list[list[Measurement]] = [[] for _ in cells]
    finished = [False] * len(cells)
    try:
        for index_in_row in range(plan.passes):
            for index, (knobs, (workload, dtype)) in enumerate(cells):
                if finished[index]:
                    continue
                which = Which(workload, dtype, knobs)
                if _measures_itself(workload):
                    entry = measure_shared(row, which, Window(row.settings))
                else:
                    if index_in_row >= plan.expected:
                        share.extend(1)  # a window past those the share counted
                    window = Window(part, index_in_row, plan.per_row, graphs)
                    entry = measure_shared(row, which, window)
                parts[index].append(entry)
                if not _finished(parts[index], plan, share, _measures_itself(workload)):
                    progress(index + 1, len(cells), entry, f" (window {index_in_row + 1})")
                    continue
                finished[index] = True
                merged = _merged(parts[index], plan, row.device)
                progress(index + 1, len(cells), merged)
                yield index, merged
    except CudaContextLost:  # the rows measured in some windows keep what those measured
        for index, done in enumerate(parts):
            if done and not finished[index]:
                yield index, _merged(done, plan, row.device)
        raise


def _finished(parts: list[Measurement], plan: windows.Windows, share: TimedShare, whole: bool) -> bool:
    """Whether a row's windows so far are all it gets; where they are fewer than the share counted, the
    share counts the rest off."""
    if whole:
        return True
    ok = parts[-1].get("status") == "ok"
    if ok and windows.wants_another([float(p["stats"]["median"]) for p in parts], plan):
        return False
    share.skip(max(0, plan.expected - len(parts)))  # a row that failed once is not measured again
    return True


def _merged(parts: list[Measurement], plan: windows.Windows, device: str) -> Measurement:
    from harness.suite.timing.summary import summarize

    merged = parts[0] if len(parts) == 1 else windows.merge(parts, plan.tolerance)
    others = merged.pop("other_samples_s", None)
    if others:  # on a CPU: the same calls in the clock they were not judged in, as statistics only
        other: Literal["wall_stats", "thread_cpu_stats"] = (
            "wall_stats" if merged.get("clock") == "thread_cpu" else "thread_cpu_stats"
        )
        merged[other] = summarize(others)
    if device == "cpu" and merged.get("status") == "ok":  # another process shows in the samples
        why = host.stalled(merged["samples_s"], merged.get("batch", 1))
        if why:
            merged["stalled"] = why
    return merged


# memory stranded past the first row's, past which later rows may choose other algorithms for want of
# workspace (docs/method.md: where stranded memory grew, convolutions ran up to 6 times slower)
STRANDED_GROWTH_BYTES = 8 * 1024**3


def stranded_growth(measurements: list[Measurement]) -> str | None:
    """A warning where the memory a row could not give back grew by more than ``STRANDED_GROWTH_BYTES``
    over the process (a constant amount holds from the first row on, and every row has the same less)."""
    held = [(m["memory_stranded_bytes"], m) for m in measurements if "memory_stranded_bytes" in m]
    if not held:
        return None
    first = held[0][0]
    most, row = max(held, key=lambda pair: pair[0])
    if most - first <= STRANDED_GROWTH_BYTES:
        return None
    return (
        f"the GPU memory the CUDA caching allocator held with no tensor in it grew from {first / 2**30:.1f} "
        f"GiB after the first row to {most / 2**30:.1f} GiB after {row['workload']} {row['dtype']} "
        "(memory_stranded_bytes): the rows after it had that much less GPU memory"
    )


def windows_measured(cells: list[Cell], plan: windows.Windows) -> int:
    """How many measurements the timed share counts a process of these rows at before their windows say
    how many they take: ``plan.expected`` windows a row, one for a workload that measures itself."""
    return sum(1 if _measures_itself(workload) else plan.expected for _, (workload, _) in cells)


def _measures_itself(workload: str) -> bool:
    spec = CATALOG.get(workload)
    return spec is not None and isinstance(FAMILY[spec.family], MeasuresItself)


def measure_shared(row: Row, which: Which, window: Window) -> Measurement:
    """One window of a row, sampled longer where the process's timed share asks it to
    (harness/suite/timing/share.py). A later window's fixed costs (building, first call, warm-up, capture) buy
    another placement, not timed work: like the records beside the timing, the share does not pay them
    back with longer sampling."""
    began = time.perf_counter()
    ask = row.share.ask(window.settings.time_budget_s, 1 / window.per_row)
    entry = measure_one(row, which, window, ask)
    timed_s = sum(entry.get("samples_s", ())) * entry.get("batch", 1)
    rested = bool(entry.get("power_rest_s"))
    not_paid_back = RECORDS if window.first else RECORDS + REPEATED
    records_s = sum(entry.get("phases_s", {}).get(phase, 0.0) for phase in not_paid_back)
    wall_s = time.perf_counter() - began
    row.share.add(timed_s, entry.get("sampling_wall_s", 0.0), wall_s - records_s, rested, records_s)
    return entry


def measure_one(row: Row, which: Which, window: Window, ask: ShareAsk | None = None) -> Measurement:
    """One window of a row, sampled for the window's lengths or as its process's timed share asks
    (``ask``). Its first window warms the GPU up and records peak memory and host time (what ran where
    settings ask). On a GPU the memory it used goes back to the driver after it, and
    ``memory_stranded_bytes`` says what could not."""
    import contextlib

    from harness.suite.precision import flags as math_flags
    from harness.suite.precision import tf32_asked
    from harness.suite.timing.graphs import release
    from harness.suite.workloads.tensors import apply_knobs

    spec = CATALOG[which.workload]
    entry: Measurement = {
        "workload": which.workload,
        "dtype": which.dtype,
        "knobs": which.knobs,
        "status": "error",  # until it is measured: every way out below sets it
    }
    if which.dtype not in spec.dtypes:
        return {
            **entry,
            "status": "unsupported",
            "error": f"{which.workload} is not defined for {which.dtype}",
        }
    apply_knobs(which.knobs, tf32=tf32_asked(which.dtype, which.knobs["tf32"]))
    entry["math_flags"] = math_flags()
    family = FAMILY[spec.family]
    start = time.perf_counter()
    pad = None
    try:
        if isinstance(family, MeasuresItself):  # its own processes: nothing to build or record here
            return _measured_itself(family, spec, row, which, entry)
        if not isinstance(family, BuildsCalls):
            raise TypeError(f"workload family {spec.family} has neither build nor measure")
        pad = placement_pad(which, window, row.device)
        if row.device == "cuda" and window.settings.placement_pad_mib:
            entry["placement_pads_mib"] = [pad_mib(which, window)]
        built = family.build(spec, window.settings.profile, row.device, which.dtype)
        entry["params"] = built.params
        _timed(row, window, ask, built, entry, time.perf_counter() - start)
    except Unsupported as exc:  # the workload says it cannot run here: not an error
        return {**entry, "status": "unsupported", "error": f"{exc}"[:500]}
    except Exception as exc:  # one measurement failing is data; the rest of the suite goes on
        what = f"{which.workload} {which.dtype}"
        return {**entry, "status": "error", "error": error_text(exc, row.device, what)}
    finally:
        del pad  # before the release: a live pad is not memory stranded
        if row.device == "cuda":
            # after a sticky CUDA error this raises too; it must not replace the CudaContextLost above
            with contextlib.suppress(Exception):
                entry["memory_stranded_bytes"] = release()
    entry["status"] = "ok"
    entry["wall_s"] = time.perf_counter() - start
    _rates(entry, built, row.device, which.dtype)
    return entry


PAD_STEP_MIB = 2  # the driver maps GPU memory in pages of 2 MiB


def pad_mib(which: Which, window: Window) -> int:
    """The pad a window holds, 0 to ``placement_pad_mib`` MiB in steps of ``PAD_STEP_MIB``: drawn from the
    row and the window's place among its windows, so every process pads alike."""
    import random

    most = window.settings.placement_pad_mib
    if most < PAD_STEP_MIB:
        return 0
    return random.Random(f"{which.workload}:{which.dtype}:{window.nth}").randrange(0, most + 1, PAD_STEP_MIB)


def placement_pad(which: Which, window: Window, device: str) -> Any:
    """A tensor of ``pad_mib`` MiB held while a window is built and timed, or None (no pad, or not a GPU).
    The driver places what the row then allocates after it: each window of a row lies elsewhere in
    memory, where without a pad every pass over the rows asks the driver for the same sizes in the same
    order. (Measured: the A/A got worse, docs/method.md; the setting's default is no pad.)"""
    mib = pad_mib(which, window)
    if device != "cuda" or not mib:
        return None
    import torch

    return torch.empty(mib * 1024**2, dtype=torch.uint8, device=device)


def _measured_itself(
    family: MeasuresItself, spec: Any, row: Row, which: Which, entry: Measurement
) -> Measurement:
    """A workload that measures itself in processes of its own, with the whole time budget."""
    from harness.suite.timing.summary import summarize

    start = time.perf_counter()
    settings = row.settings
    measured = family.measure(
        spec, settings.profile, row.device, which.dtype, which.knobs, settings.time_budget_s
    )
    entry.update(measured)  # type: ignore[typeddict-item]  # a family's measure returns Measurement's timing keys
    entry["stats"] = summarize(entry["samples_s"])
    entry["status"], entry["wall_s"] = "ok", time.perf_counter() - start
    return entry


def _timed(
    row: Row, window: Window, ask: ShareAsk | None, built: Any, entry: Measurement, build_s: float
) -> None:
    """The built call timed into ``entry``, with the records of a row's first window beside it."""
    import contextlib

    import torch

    from harness.suite.probes import gpu_state, what_ran
    from harness.suite.timing.graphs import GRAPHS
    from harness.suite.timing.measure import WARMUP_MIN_S, Sampling, measure

    settings, gpu = window.settings, row.gpu
    how = Sampling(
        gpu=gpu,
        ask=ask,
        graphs=GRAPHS if window.graphs is None else window.graphs,
        host_time=window.first,
        warmup_min_s=WARMUP_MIN_S if window.first else 0.0,
    )
    with contextlib.nullcontext() if built.grad else torch.inference_mode():
        before: gpu_state.Snapshot = gpu.snapshot() if gpu is not None else {}
        timing = measure(built.fn, row.timer, settings.time_budget_s, settings.min_time_s, how).to_json()
        entry.update(timing)  # type: ignore[typeddict-item]  # to_json's keys are Measurement's timing keys
        entry["phases_s"] = {"build": build_s, **entry["phases_s"]}
        if gpu is not None:
            entry["gpu_state"] = gpu_state.delta(before, gpu.snapshot())
        after = Phases(entry["phases_s"])  # the records beside the timing, on the same stopwatch
        if row.device == "cuda" and window.first:
            entry["peak_memory_bytes"] = _peak_memory(built.fn)
            after.done("peak_memory")
        if settings.what_ran and window.first:
            try:
                entry["what_ran"] = what_ran.record(built.fn, row.device)
            except Exception as exc:  # a record beside the timing: never a reason to lose the timing
                text = str(exc).splitlines()[0] if str(exc) else ""
                entry["what_ran_error"] = f"{type(exc).__name__}: {text}"[:500]
            after.done("what_ran")


def _rates(entry: Measurement, built: Any, device: str, dtype: str) -> None:
    """A measured row's throughput from its median, and its share of the GPU's peaks where known."""
    import torch

    from harness.suite.timing import peaks

    median = entry["stats"]["median"]
    peak = peaks.for_gpu(torch.cuda.get_device_name() if device == "cuda" else None)
    if built.flops:
        entry["flops"] = built.flops
        entry["tflops"] = built.flops / median / 1e12
        if peak and dtype in peak:
            entry["pct_of_peak_flops"] = 100 * entry["tflops"] / peak[dtype]
    if built.bytes:
        entry["bytes"] = built.bytes
        entry["gbps"] = built.bytes / median / 1e9
        if peak:
            entry["pct_of_peak_bandwidth"] = 100 * entry["gbps"] / peak["gbps"]


def cuda_usable() -> bool:
    """Whether the CUDA context still works: a sticky error makes every later call raise it again."""
    import torch

    try:
        torch.cuda.synchronize()
        torch.zeros(1, device="cuda").add_(1).item()
    except Exception:
        return False
    return True


def _peak_memory(fn: Any) -> int:
    """Bytes one call allocates at its peak, beyond what was allocated before it."""
    import torch

    torch.cuda.synchronize()
    baseline = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    fn()
    torch.cuda.synchronize()
    return max(0, torch.cuda.max_memory_allocated() - baseline)


def progress(index: int, total: int, entry: Measurement, where: str = "") -> None:
    """A line on stderr for each measured row (the cell's log shows how far it got)."""
    knobs = " ".join(f"{k}={v:d}" for k, v in entry["knobs"].items())
    if entry["status"] == "ok":
        stats = entry["stats"]
        what = f"median {stats['median'] * 1e6:.1f} us (n={stats['n']}, {entry['stop_reason']})"
    else:
        what = f"{entry['status']}: {entry['error']}"
    print(
        f"[{index}/{total}] {entry['workload']} {entry['dtype']} {knobs}{where}: {what}",
        file=sys.stderr,
        flush=True,
    )
