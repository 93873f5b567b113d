"""One row of a suite process: built, timed, and recorded beside its timing (what ran, peak memory).

On a GPU a row samples as long as its process's timed share asks (harness/suite/share.py); on a CPU
every row is timed in windows spread across the process (harness/suite/windows.py). A row that fails is
data (``status: error``) and the process goes on, unless the error left the CUDA context unusable.
"""

from __future__ import annotations

import dataclasses
import sys
import time
from typing import Any

from harness.suite import host, windows
from harness.suite.catalog import CATALOG, FAMILY
from harness.suite.contract import BuildsCalls, MeasuresItself, Unsupported
from harness.suite.phases import Phases
from harness.suite.settings import SuiteSettings
from harness.suite.share import ShareAsk, TimedShare

# a measurement's records beside its timing: the timed share leaves them out
RECORDS = ("peak_memory", "what_ran", "numerics")


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


def measure_windows(
    cells: list[tuple[dict[str, bool], tuple[str, str]]], settings: SuiteSettings, timer: Any
) -> list[dict[str, Any]]:
    """On a CPU, every row timed in ``windows.WINDOWS`` passes over the rows, each window its share of
    the time budget, merged into one measurement per row (harness/suite/windows.py). A workload that
    measures itself in processes of its own is measured once, in the first pass, with the whole budget."""
    share = dataclasses.replace(settings, time_budget_s=settings.time_budget_s / windows.WINDOWS)
    later = dataclasses.replace(share, what_ran=False)  # recorded once, in the first window
    parts: list[list[dict[str, Any]]] = [[] for _ in cells]
    done: list[dict[str, Any] | None] = [None] * len(cells)
    for window in range(windows.WINDOWS):
        for index, (knobs, (workload, dtype)) in enumerate(cells):
            spec = CATALOG.get(workload)
            whole = spec is not None and isinstance(FAMILY[spec.family], MeasuresItself)
            if whole and window:
                continue
            part = measure_one(
                workload, dtype, knobs, settings if whole else later if window else share, "cpu", timer, None
            )
            parts[index].append(part)
            if not whole and window < windows.WINDOWS - 1:
                progress(index + 1, len(cells), part, f" (window {window + 1} of {windows.WINDOWS})")
                continue
            entry = part if whole else windows.merge(parts[index])
            if entry.get("status") == "ok":  # host time: another process shows in the samples
                why = host.stalled(entry["samples_s"], entry.get("batch", 1))
                if why:
                    entry["stalled"] = why
            done[index] = entry
            progress(index + 1, len(cells), entry)
    return [entry for entry in done if entry is not None]


def measure_shared(
    share: TimedShare,
    workload: str,
    dtype: str,
    knobs: dict[str, bool],
    settings: SuiteSettings,
    device: str,
    timer: Any,
    gpu: Any,
) -> dict[str, Any]:
    """One row, sampled longer where the process's timed share asks it to (harness/suite/share.py)."""
    began = time.perf_counter()
    ask = share.ask(settings.time_budget_s)
    entry = measure_one(workload, dtype, knobs, settings, device, timer, gpu, ask)
    timed_s = sum(entry.get("samples_s", ())) * entry.get("batch", 1)
    rested = bool(entry.get("power_rest_s"))
    # the records beside the timing are not the sampling's to pay back
    records_s = sum(entry.get("phases_s", {}).get(phase, 0.0) for phase in RECORDS)
    wall_s = time.perf_counter() - began
    share.add(timed_s, entry.get("sampling_wall_s", 0.0), wall_s - records_s, rested, records_s)
    return entry


def measure_one(
    workload: str,
    dtype: str,
    knobs: dict[str, bool],
    settings: SuiteSettings,
    device: str,
    timer: Any,
    gpu: Any,
    ask: ShareAsk | None = None,
) -> dict[str, Any]:
    """One row, sampled for the matrix's lengths or as its process's timed share asks (``ask``)."""
    import contextlib

    import torch

    from harness.suite import gpu_state, peaks, what_ran
    from harness.suite.graphs import GRAPHS
    from harness.suite.measure import measure
    from harness.suite.summary import summarize
    from harness.suite.workloads.tensors import apply_knobs

    spec = CATALOG[workload]
    entry: dict[str, Any] = {"workload": workload, "dtype": dtype, "knobs": knobs}
    if dtype not in spec.dtypes:
        return {**entry, "status": "unsupported", "error": f"{workload} is not defined for {dtype}"}
    apply_knobs(knobs, tf32=knobs["tf32"] or dtype == "tf32")
    family = FAMILY[spec.family]
    start = time.perf_counter()
    try:
        if isinstance(family, MeasuresItself):  # its own processes: nothing to build or record here
            entry.update(family.measure(spec, settings.profile, device, dtype, knobs, settings.time_budget_s))
            entry["stats"] = summarize(entry["samples_s"])
            entry["status"], entry["wall_s"] = "ok", time.perf_counter() - start
            return entry
        if not isinstance(family, BuildsCalls):
            raise TypeError(f"workload family {spec.family} has neither build nor measure")
        built = family.build(spec, settings.profile, device, dtype)
        entry["params"] = built.params
        build_s = time.perf_counter() - start
        mode = contextlib.nullcontext() if built.grad else torch.inference_mode()
        with mode:
            before = gpu.snapshot() if gpu is not None else {}
            budget_s, least_s = settings.time_budget_s, settings.min_time_s
            entry.update(measure(built.fn, timer, budget_s, least_s, gpu, ask=ask, graphs=GRAPHS))
            entry["phases_s"] = {"build": build_s, **entry["phases_s"]}
            if gpu is not None:
                entry["gpu_state"] = gpu_state.delta(before, gpu.snapshot())
            after = Phases(entry["phases_s"])  # the records beside the timing, on the same stopwatch
            if device == "cuda":
                entry["peak_memory_bytes"] = _peak_memory(built.fn)
                after.done("peak_memory")
            if settings.what_ran:
                try:
                    entry["what_ran"] = what_ran.record(built.fn, device)
                except Exception as exc:  # a record beside the timing: never a reason to lose the timing
                    text = str(exc).splitlines()[0] if str(exc) else ""
                    entry["what_ran_error"] = f"{type(exc).__name__}: {text}"[:500]
                after.done("what_ran")
    except Unsupported as exc:  # the workload says it cannot run here: not an error
        return {**entry, "status": "unsupported", "error": f"{exc}"[:500]}
    except Exception as exc:  # one measurement failing is data; the rest of the suite goes on
        return {**entry, "status": "error", "error": error_text(exc, device, f"{workload} {dtype}")}
    finally:
        if device == "cuda":
            # after a sticky CUDA error this raises too; it must not replace the CudaContextLost above
            with contextlib.suppress(Exception):
                torch.cuda.empty_cache()
    median = entry["stats"]["median"]
    entry["status"] = "ok"
    entry["wall_s"] = time.perf_counter() - start
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
    return entry


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


def progress(index: int, total: int, entry: dict[str, Any], where: str = "") -> None:
    """A line on stderr for each measured row (the cell's log shows how far it got)."""
    knobs = " ".join(f"{k}={int(v)}" for k, v in entry["knobs"].items())
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
