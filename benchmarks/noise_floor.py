"""The noise floor side by side (issue 62): the harness's A/A and two standard timers' A/A, same rows.

    python -m benchmarks.noise_floor run --out DIR [--timers harness,do_bench,events] [--processes 2]
        [--device cuda] [--profile default] [--dtypes fp32_default,bf16] [--families conv,gemm]
        [--rows WORKLOAD:DTYPE,...] [--budget-s 540] [--python PYTHON] [--time-budget-s S]
    python -m benchmarks.noise_floor report DIR [DIR ...] [--out DIR]

``run`` runs, on this host's GPU, ``--processes`` separate processes of each timer over the same rows, in
turns (harness 1, do_bench 1, events 1, harness 2, ...), then prints and writes the report:

- ``harness``: one cell (the local backend, ``torch: installed``, cuDNN bundled) as ``harness run`` and
  ``qualify`` run it: the round's suite process started by ``harness.executors.launch.run`` (what
  ``qualify`` calls for each round) with the suite's defaults; round 1 checks numerics, later rounds do
  not. The results folder is ``DIR/harness/`` (``DIR/matrix.yaml`` is its matrix).
- ``do_bench``: triton's ``do_bench`` (its defaults, 25 ms warm-up and 100 ms of repetitions, the L2
  flushed before each call, ``return_mode="median"``), one process of this module a process.
- ``events``: CUDA events around a plain loop: 25 ms of warm-up, then 10 loops of about 10 ms of calls
  back to back between two events, the median of their per-call times (``perf_counter`` on a CPU).

Both reference timers time each row's call as the suite's own builder makes it, under the same knobs and
math flags (``apply_knobs``), under ``inference_mode`` where the call runs no autograd; the memory a row
used goes back to the driver after it, as the suite does. NVML's SM clock, power and temperature after
each row, and the power and thermal violation counters around it, are recorded where NVML is installed.

The rows are the profile's in the dtypes asked (by default the suite's, as ``harness run`` of a matrix
that names only the profile runs it), narrowed by ``--families`` and ``--rows``; named rows reach the
harness as its suite's ``rows`` (a process of fewer rows is another process: its timed share and windows
spread over those rows only).

Time: a process that would end past ``--budget-s`` of this invocation (estimated from the longest process
of the same timer in DIR, else from ``ROW_S`` seconds a row and ``START_S``) is not started; the command
given again with the same DIR runs what is missing (DIR keeps every finished process; another selection of
rows is refused there). The default profile in the suite's dtypes is 195 rows. On an H200 a harness
process over them takes about 155 s in round 1 (numerics on) and 135 s later: the share of these rows in
suite 0.18's processes of 343 rows in issue 45's lease 3 (221.5 s and 201.9 s, ``lab/evidence/aa-h100``).
A do_bench process is estimated at 50 to 90 s, an events process at 40 to 80 (no GPU run of them yet). So
two processes of all three (about 550 s) do not fit one device call of 10 minutes: ``--timers
harness,do_bench`` in one call (about 420 s), ``--timers events`` into another DIR in the next, then
``report`` of both. ``report`` merges folders: each row of each timer's process from the one folder that
measured it (two folders that both measured it are refused).

What comes out, in DIR (``report``: in ``--out``, default the first DIR): ``table.txt`` (what is
printed), ``rows.json`` (every process's figures, row by row, and each process's wall time), and the
processes' own files: ``harness/`` (a results folder), ``reference/<timer>.p<N>.json`` and ``.log``.

The table: for each timer, |ratio - 1| of its processes 1 and 2's medians, p50, p95 and max, over the rows
every timer measured in both (and over all its own where more), and the harness's p95 over each reference
timer's; the same by the row's duration (the mean of the harness's two medians, else the first timer's)
and by family; where the medians of the timers lie against each other; each process's wall time; other
pairs of processes where more than two ran; issue 62's goals; and every row above 2 % with both medians
and what the results say differed (SM clock, power, temperature, throttled or power-capped samples, the
graph or not, the kernels that ran, the window that moved).

``--device cpu`` runs the same on a CPU (harness and events only; triton's do_bench needs a GPU): a quick
look at the machinery, e.g. ``--device cpu --profile smoke --rows relu:fp32 --time-budget-s 0.05``.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import math
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, TypedDict, cast

from harness import jsonio
from harness.errors import HarnessError, InputError, Problem, one_line
from harness.plan.model import DEFAULT_REGRESSION_PCT
from harness.suite.catalog import CATALOG, rows_of
from harness.suite.contract import ALL_DTYPES, PROFILES
from harness.suite.timing import windows

if TYPE_CHECKING:
    from harness.plan.model import Plan
    from harness.suite.document import Measurement
    from harness.suite.probes.gpu_state import GpuState, Snapshot

REPO = Path(__file__).resolve().parent.parent
TIMERS = ("harness", "do_bench", "events")
REFERENCES = ("do_bench", "events")
KNOBS = {"cudnn_benchmark": False, "deterministic": False, "tf32": False}  # the matrix's one knob set
ABOVE = 0.02  # a row whose two processes differ by more is listed with what differed
# a reference timer whose median reads this far above the harness's graph-replayed one times the host's
# eager launches, not the GPU's work: its A/A is then the host's
HOST_BOUND = 1.10
AA_GOAL, SHARE_GOAL, TODAY_S = 0.005, 0.25, 221.5  # issue 62's goals: p95, p95 against do_bench's, seconds
BUCKETS = ((50e-6, "under 50 us"), (500e-6, "50-500 us"), (5e-3, "0.5-5 ms"), (math.inf, "5 ms or more"))
# seconds a row, where no process of the timer has run in the folder yet: (timer, device)
ROW_S = {
    ("harness", "cuda"): 0.75,
    ("do_bench", "cuda"): 0.35,
    ("events", "cuda"): 0.3,
    ("harness", "cpu"): 2.0,
    ("events", "cpu"): 0.3,
}
START_S = 20.0  # a process's start and exit: torch, the CUDA context, the harness's plan and probes
DO_BENCH_MS = (25, 100)  # triton's defaults: warm-up and repetitions, in milliseconds
LOOP_WARMUP_S, LOOP_S, LOOP_REPEATS = 0.025, 0.01, 10
Row = tuple[str, str]  # workload, dtype


class Selection(TypedDict):
    """What a folder's processes measure (``selection.json``)."""

    device: str
    profile: str
    dtypes: list[str]
    rows: list[str]  # workload:dtype, in the order every process measures them
    named: bool  # named by --rows or --families: the harness's suite gets them as its rows
    time_budget_s: float | None  # the harness's, where not the suite's default


class Figures(TypedDict, total=False):
    """One row in one process: its median and what the process recorded beside it."""

    status: str  # ok, unsupported, error
    error: str
    median_s: float
    n: int  # harness: samples
    timer: str  # harness: cuda_graph, cuda_event, perf_counter
    graph_capture_error: str
    stop_reason: str
    window_medians_s: list[float]
    sm_clock_mhz: float  # harness: the median of its samples' clocks; a reference: after the row
    power_w: float  # a reference: after the row
    temperature_c: list[int | None]  # before, after
    power_violation_ns: int  # held back by the power limit meanwhile
    thermal_violation_ns: int
    power_capped_discarded: int
    power_rest_s: float
    throttled_discarded: int
    kernels: list[str]  # harness: the kernels of its profiled call
    attention_backend: str | None
    placement_pads_mib: list[int]
    calls: int  # events: calls a loop
    wall_s: float


class ReferenceRow(Figures, total=False):
    workload: str
    dtype: str


class ReferenceDoc(TypedDict):
    """A reference timer's process, as it writes itself (``reference/<timer>.p<N>.json``)."""

    timer: str
    index: int
    device: str
    settings: dict[str, float]  # the timer's lengths
    torch: str
    triton: str | None
    gpu: str | None
    gpu_uuid: str | None
    started_at: str
    duration_s: float
    process_wall_s: float | None  # from its start to its exit, added by the process that started it
    status: str  # ok, failed
    failure: str | None
    rows: list[ReferenceRow]


class Process(TypedDict):
    """One process, as the report lists it."""

    timer: str
    index: int
    folder: str
    status: str
    failure: str | None
    wall_s: float | None  # from the process's start to its exit
    duration_s: float  # what the process measured of itself
    gpu: str | None
    gpu_uuid: str | None
    torch: str | None
    rows: int
    rows_ok: int


@dataclass
class Gathered:
    """Every process of the folders read, and each row's figures by timer and process index."""

    selection: Selection
    processes: list[Process] = field(default_factory=list)
    rows: dict[Row, dict[str, dict[int, Figures]]] = field(default_factory=dict)
    source: dict[tuple[Row, str, int], str] = field(default_factory=dict)  # the folder each came from


# --- what is measured ----------------------------------------------------------------------------------


def chosen_rows(profile: str, dtypes: list[str], families: list[str], named: list[str]) -> list[Row]:
    """The rows every process measures, in the suite's order; InputError naming the setting that is wrong."""
    problems = [
        Problem(d, "dtypes", f"is no dtype; use {', '.join(ALL_DTYPES)}")
        for d in dtypes
        if d not in ALL_DTYPES
    ]
    known = sorted({spec.family for spec in CATALOG.values()})
    problems += [
        Problem(f, "families", f"is no family; use {', '.join(known)}") for f in families if f not in known
    ]
    rows: list[Row] = []
    for pair in named:
        workload, _, dtype = pair.partition(":")
        if workload not in CATALOG:
            problems.append(Problem(pair, "rows", "names no workload; see 'python -m harness.suite list'"))
        elif dtype not in CATALOG[workload].dtypes:
            dtypes_of = ", ".join(CATALOG[workload].dtypes)
            problems.append(Problem(pair, "rows", f"give WORKLOAD:DTYPE, the dtype one of {dtypes_of}"))
        else:
            rows.append((workload, dtype))
    if problems:
        raise InputError(problems)
    if not named:
        # a workload the suite cannot run in a dtype (flash attention in fp32) is no row of any timer's
        rows = [(w, d) for w, d in rows_of((), profile, tuple(dtypes)) if d in CATALOG[w].dtypes]
    if families:
        rows = [row for row in rows if CATALOG[row[0]].family in families]
    if not rows:
        raise InputError([Problem(profile, "families", "leaves no row of the profile to measure")])
    return list(dict.fromkeys(rows))


def same_selection(out: Path, selection: Selection) -> None:
    """Record what ``out``'s processes measure, or refuse a folder that holds processes of another."""
    path = out / "selection.json"
    if path.exists():
        held = read_selection(path)
        if held != selection:
            differ = ", ".join(sorted(k for k in selection if held.get(k) != selection.get(k)))
            raise InputError(
                [
                    Problem(
                        str(out), "out", f"holds processes of other rows or settings ({differ}); name another"
                    )
                ]
            )
        return
    jsonio.write_atomic(path, selection)


def read_selection(path: Path) -> Selection:
    raw = _read_json(path)
    fields = {"device": str, "profile": str, "dtypes": list, "rows": list, "named": bool}
    if not isinstance(raw, dict) or any(not isinstance(raw.get(k), t) for k, t in fields.items()):
        raise InputError([Problem(str(path), "", "is not a selection this benchmark wrote")])
    if not all(isinstance(r, str) and ":" in r for r in raw["rows"]):
        raise InputError([Problem(str(path), "rows", "holds something other than WORKLOAD:DTYPE")])
    budget = raw.get("time_budget_s")
    if budget is not None and not isinstance(budget, (int, float)):
        raise InputError([Problem(str(path), "time_budget_s", "is not a number")])
    return cast(Selection, raw)


def _read_json(path: Path) -> Any:
    try:
        return jsonio.read(path, 64 * 1024**2)
    except OSError as exc:
        raise InputError([Problem(str(path), "", f"cannot be read: {exc.strerror or exc}")]) from None
    except (ValueError, RecursionError) as exc:
        raise InputError([Problem(str(path), "", f"is not JSON: {exc}"[:300])]) from None


# --- the harness's processes ---------------------------------------------------------------------------


def matrix_document(selection: Selection, processes: int) -> dict[str, object]:
    """The one cell's matrix: ``torch: installed``, bundled cuDNN, the suite's defaults but the rows."""
    suite: dict[str, object] = {
        "profile": selection["profile"],
        "device": selection["device"],
        "dtypes": selection["dtypes"],
    }
    if selection["named"]:
        suite["rows"] = selection["rows"]
    if selection["time_budget_s"] is not None:
        suite["time_budget_s"] = selection["time_budget_s"]
    return {
        "schema_version": 1,
        "name": "noise-floor",
        "description": "issue 62: the harness's A/A, one cell in processes of its own",  # noise_floor.py
        "backend": "local",
        "axes": {"torch": ["installed"], "cudnn": ["bundled"]},
        "knobs": {"cudnn_benchmark": [KNOBS["cudnn_benchmark"]]},
        "rounds": processes,
        "baseline": {"cudnn": "bundled"},
        "suite": suite,
    }


def harness_plan(out: Path, selection: Selection, processes: int, python: str) -> Plan:
    """The plan of ``out/matrix.yaml``, loaded as ``harness run`` loads a matrix for the local backend."""
    import yaml

    from harness import suite_listing
    from harness.backends import registry
    from harness.backends.host import ThisHost
    from harness.plan import matrix

    path = out / "matrix.yaml"
    path.write_text(yaml.safe_dump(matrix_document(selection, processes), sort_keys=False))
    host = ThisHost(python=python)
    return matrix.load(path, suite_listing.workload_ids(python), registry.cell_problems, "local", host)


def run_harness(plan: Plan, out: Path, python: str, index: int) -> None:
    """Round ``index`` of the cell into ``out/harness/``, as ``qualify`` runs one round."""
    from harness.backends import registry
    from harness.executors import launch

    request = launch.RunRequest(out / "harness", registry.Settings("local", python=python))

    def say(line: str) -> None:
        print(f"  harness: {line}", flush=True)

    launch.run(plan, request, say, lambda line: None, rounds=range(index, index + 1))


# --- the reference timers, in a process of their own ---------------------------------------------------


def do_bench_median(fn: Callable[[], Any], device: str) -> tuple[float, int]:
    """triton's do_bench at its defaults: the median of calls each after an L2 flush (seconds, calls)."""
    if device != "cuda":
        raise RuntimeError("triton's do_bench times CUDA calls only")
    from triton.testing import do_bench

    warmup, rep = DO_BENCH_MS
    return float(do_bench(fn, warmup=warmup, rep=rep, return_mode="median")) / 1e3, 1


def loop_median(fn: Callable[[], Any], device: str) -> tuple[float, int]:
    """CUDA events around a plain loop (``perf_counter`` on a CPU): warm-up, then ``LOOP_REPEATS`` loops
    of about ``LOOP_S`` of calls back to back; the median per-call time (seconds) and the calls a loop."""
    import torch

    cuda = device == "cuda"

    def sync() -> None:
        if cuda:
            torch.cuda.synchronize()

    calls, began = 0, time.perf_counter()
    while calls < 3 or time.perf_counter() - began < LOOP_WARMUP_S:
        fn()
        sync()
        calls += 1

    def loop(count: int) -> float:
        if not cuda:
            start = time.perf_counter()
            for _ in range(count):
                fn()
            return time.perf_counter() - start
        start_event, end_event = _event(), _event()
        sync()
        start_event.record()
        for _ in range(count):
            fn()
        end_event.record()
        end_event.synchronize()
        return float(start_event.elapsed_time(end_event)) / 1e3

    guess = min(loop(5) / 5 for _ in range(3))  # a hiccup in one would make every loop too short
    count = max(1, min(100_000, math.ceil(LOOP_S / max(guess, 1e-7))))
    return statistics.median(loop(count) / count for _ in range(LOOP_REPEATS)), count


def _event() -> Any:
    import torch

    return torch.cuda.Event(enable_timing=True)


TIMED: dict[str, Callable[[Callable[[], Any], str], tuple[float, int]]] = {
    "do_bench": do_bench_median,
    "events": loop_median,
}


def timed_row(timer: str, row: Row, device: str, profile: str, gpu: GpuState | None) -> ReferenceRow:
    """One row built by its family's builder and timed by ``timer``; an error is the row's, unless it
    left the CUDA context unusable (``CudaContextLost``)."""
    import torch

    from harness.suite.catalog import FAMILY
    from harness.suite.contract import BuildsCalls, Unsupported
    from harness.suite.precision import tf32_asked
    from harness.suite.rows import error_text
    from harness.suite.timing.graphs import release
    from harness.suite.workloads.tensors import apply_knobs

    workload, dtype = row
    spec, began = CATALOG[workload], time.perf_counter()
    entry: ReferenceRow = {"workload": workload, "dtype": dtype, "status": "error"}
    family = FAMILY[spec.family]
    if not isinstance(family, BuildsCalls):
        return {**entry, "status": "unsupported", "error": "measures itself in processes of its own"}
    apply_knobs(KNOBS, tf32=tf32_asked(dtype, KNOBS["tf32"]))
    built = None
    try:
        built = family.build(spec, profile, device, dtype)
        with contextlib.nullcontext() if built.grad else torch.inference_mode():
            before: Snapshot = gpu.snapshot() if gpu is not None else {}
            median_s, calls = TIMED[timer](built.fn, device)
            entry.update(_gpu_after(gpu, before))  # type: ignore[typeddict-item]  # Figures' keys
        entry["status"], entry["median_s"], entry["calls"] = "ok", median_s, calls
    except Unsupported as exc:
        entry["status"], entry["error"] = "unsupported", str(exc)[:500]
    except Exception as exc:  # a row's error is data, as in the suite
        entry["error"] = error_text(exc, device, f"{workload} {dtype}")
    finally:
        del built
        if device == "cuda":
            with contextlib.suppress(Exception):
                release()
    entry["wall_s"] = time.perf_counter() - began
    return entry


def _gpu_after(gpu: GpuState | None, before: Snapshot) -> Figures:
    """NVML's SM clock and power right after a row's timing, and its counters' change around it."""
    if gpu is None or not gpu.available:
        return {}
    from harness.suite.probes import gpu_state

    clock = gpu.sm_clock_mhz()
    after = gpu.snapshot()
    found: Figures = {}
    if clock is not None:
        found["sm_clock_mhz"] = float(clock)
    power = after.get("power_w")
    if power is not None:
        found["power_w"] = float(power)
    delta = gpu_state.delta(before, after)
    if "temperature_c" in delta:
        found["temperature_c"] = delta["temperature_c"]
    if "power_violation_ns" in delta:
        found["power_violation_ns"] = delta["power_violation_ns"]
    if "thermal_violation_ns" in delta:
        found["thermal_violation_ns"] = delta["thermal_violation_ns"]
    return found


def reference_process(timer: str, index: int, device: str, profile: str, rows: list[Row], out: Path) -> int:
    """One process of a reference timer over ``rows``, its document written to ``out`` whatever happens."""
    from harness.suite import lifeline

    lifeline.die_with_parent()
    began, started = time.perf_counter(), dt.datetime.now(dt.timezone.utc)
    import torch

    from harness.suite.probes import host
    from harness.suite.rows import CudaContextLost

    host.fix_threads(torch, device)  # on a CPU, the suite's thread count

    doc: ReferenceDoc = {
        "timer": timer,
        "index": index,
        "device": device,
        "settings": _settings(timer),
        "torch": torch.__version__,
        "triton": _triton_version(),
        "gpu": None,
        "gpu_uuid": None,
        "started_at": started.isoformat(),
        "duration_s": 0.0,
        "process_wall_s": None,
        "status": "failed",
        "failure": None,
        "rows": [],
    }
    try:
        if timer == "do_bench":
            import triton.testing  # noqa: F401  # a process without triton fails once, not in every row
        gpu = _reference_gpu(doc, device)
        for number, row in enumerate(rows, 1):
            entry = timed_row(timer, row, device, profile, gpu)
            doc["rows"].append(entry)
            what = f"{entry['median_s'] * 1e6:.2f} us" if "median_s" in entry else entry.get("error", "")
            print(f"[{number}/{len(rows)}] {row[0]} {row[1]}: {entry['status']} {what}", file=sys.stderr)
        doc["status"] = "ok"
    except (CudaContextLost, RuntimeError, ImportError) as exc:
        doc["failure"] = f"{type(exc).__name__}: {exc}"[:2000]
    doc["duration_s"] = time.perf_counter() - began
    jsonio.write_atomic(out, doc)
    return 0


def _settings(timer: str) -> dict[str, float]:
    if timer == "do_bench":
        return {"warmup_ms": DO_BENCH_MS[0], "rep_ms": DO_BENCH_MS[1]}
    return {"warmup_s": LOOP_WARMUP_S, "loop_s": LOOP_S, "repeats": LOOP_REPEATS}


def _triton_version() -> str | None:
    try:
        import triton
    except ImportError:
        return None
    return str(triton.__version__)


def _reference_gpu(doc: ReferenceDoc, device: str) -> GpuState | None:
    """The GPU's name and UUID into ``doc``, and NVML's view of it (None on a CPU)."""
    if device != "cuda":
        return None
    import torch

    from harness.suite.probes.environment import device_uuid
    from harness.suite.probes.gpu_state import GpuState

    if not torch.cuda.is_available():
        raise RuntimeError("device 'cuda' was asked for, but torch sees no CUDA GPU")
    index = torch.cuda.current_device()
    doc["gpu"], doc["gpu_uuid"] = torch.cuda.get_device_name(index), device_uuid(index)
    return GpuState(index, doc["gpu_uuid"])


def run_reference(
    timer: str, index: int, selection: Selection, out: Path, python: str, limit_s: float
) -> None:
    """A reference timer's process, started as a fresh Python; it dies with this one, and after
    ``limit_s`` it is killed and leaves no document."""
    from harness.suite import lifeline

    folder = out / "reference"
    folder.mkdir(exist_ok=True)
    target = folder / f"{timer}.p{index}.json"
    command = [python, "-m", "benchmarks.noise_floor", "reference", "--timer", timer, "--index", str(index)]
    command += ["--device", selection["device"], "--profile", selection["profile"]]
    command += ["--rows", ",".join(selection["rows"]), "--out", str(target)]
    existing = os.environ.get("PYTHONPATH")
    env = {**os.environ, "PYTHONUNBUFFERED": "1", lifeline.PARENT_ENV: str(os.getpid())}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), *([existing] if existing else [])])
    began = time.monotonic()
    with open(folder / f"{timer}.p{index}.log", "w") as log:
        try:
            subprocess.run(
                command,
                cwd=REPO,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                timeout=limit_s,
                check=False,
                start_new_session=True,  # its own process group, as the harness starts the suite
            )
        except subprocess.TimeoutExpired:
            print(f"  {timer} process {index}: killed after {limit_s:.0f} s", flush=True)
            return
    if not target.exists():
        print(f"  {timer} process {index}: wrote nothing; its log: {log.name}", flush=True)
        return
    doc = read_reference(target)
    doc["process_wall_s"] = time.monotonic() - began
    jsonio.write_atomic(target, doc)


# --- running the processes in turns --------------------------------------------------------------------


def process_file(out: Path, timer: str, index: int, cell_id: str | None) -> Path:
    """Where a process's document lies once it ran."""
    if timer == "harness":
        from harness.results import folder

        return folder.result_path(out / "harness", cell_id or "", index)
    return out / "reference" / f"{timer}.p{index}.json"


def estimate_s(out: Path, timer: str, selection: Selection, cell_id: str | None, processes: int) -> float:
    """How long a process of ``timer`` will take: the longest of its kind in ``out`` (a harness round 1,
    which checks numerics, is the longest), else rows x seconds a row and a start."""
    walls = []
    for index in range(1, processes + 1):
        path = process_file(out, timer, index, cell_id)
        if path.exists():
            wall = _wall_of(path, timer)
            if wall is not None:
                walls.append(wall)
    if walls:
        return max(walls)
    per_row = ROW_S.get((timer, selection["device"]), 1.0)
    return START_S + per_row * len(selection["rows"])


def _wall_of(path: Path, timer: str) -> float | None:
    raw = _read_json(path)
    if timer == "harness":
        wall = raw.get("run", {}).get("wall_s") if isinstance(raw, dict) else None
    else:
        wall = raw.get("process_wall_s") if isinstance(raw, dict) else None
    return float(wall) if isinstance(wall, (int, float)) else None


def selection_of(args: argparse.Namespace) -> Selection:
    """What ``run``'s arguments ask to measure; InputError naming the setting where they cannot be."""
    if args.device == "cpu" and "do_bench" in args.timers:
        raise InputError(
            [Problem("do_bench", "timers", "needs a GPU (triton); on a CPU time harness,events")]
        )
    rows = chosen_rows(args.profile, args.dtypes, args.families, args.rows)
    return {
        "device": args.device,
        "profile": args.profile,
        "dtypes": list(args.dtypes),
        "rows": [f"{w}:{d}" for w, d in rows],
        "named": bool(args.rows or args.families),
        "time_budget_s": args.time_budget_s,
    }


def run_all(args: argparse.Namespace) -> int:
    """``run``: the processes still missing in ``--out``, in turns, as far as ``--budget-s`` goes; then
    the report of the folder."""
    began = time.monotonic()
    if args.timers is None:
        args.timers = [t for t in TIMERS if args.device == "cuda" or t != "do_bench"]
    selection = selection_of(args)
    out = jsonio.output_folder(args.out, "out")
    same_selection(out, selection)
    plan = harness_plan(out, selection, args.processes, args.python) if "harness" in args.timers else None
    cell_id = plan.cells[0].id if plan is not None else None
    todo = [
        (timer, index)
        for index in range(1, args.processes + 1)
        for timer in args.timers
        if not process_file(out, timer, index, cell_id).exists()
    ]
    guess = sum(estimate_s(out, t, selection, cell_id, args.processes) for t, _ in todo)
    print(
        f"{len(selection['rows'])} rows on {args.device}; {len(todo)} processes to run "
        f"({', '.join(f'{t} {i}' for t, i in todo) or 'none'}), about {guess:.0f} s; into {out}",
        flush=True,
    )
    left: list[str] = []
    for timer, index in todo:
        need = estimate_s(out, timer, selection, cell_id, args.processes)
        if time.monotonic() - began + need > args.budget_s:
            left.append(f"{timer} {index} (about {need:.0f} s)")
            continue
        print(f"{_now()} {timer} process {index}: starting, about {need:.0f} s", flush=True)
        start = time.monotonic()
        if plan is not None and timer == "harness":
            run_harness(plan, out, args.python, index)
        else:
            run_reference(timer, index, selection, out, args.python, max(120.0, 3 * need))
        print(f"{_now()} {timer} process {index}: {time.monotonic() - start:.1f} s", flush=True)
    if left:
        print(
            f"not started, past --budget-s {args.budget_s:.0f} s: {', '.join(left)}; give the same command "
            "again to run them (a process longer than --budget-s needs a larger one)",
            flush=True,
        )
    report([out], out)
    return 0


def _now() -> str:
    return dt.datetime.now().strftime("%H:%M:%S")


# --- reading what the processes wrote ------------------------------------------------------------------


def harness_figures(measurement: Measurement) -> Figures:
    """A row of a harness result: its median and what the suite recorded beside it."""
    if measurement["status"] != "ok" or "stats" not in measurement:
        return {"status": measurement["status"], "error": measurement.get("error", "")[:300]}
    found: Figures = {"status": "ok", "median_s": measurement["stats"]["median"]}
    found["n"] = measurement["stats"]["n"]
    if "timer" in measurement:
        found["timer"] = measurement["timer"]
    if "stop_reason" in measurement:
        found["stop_reason"] = measurement["stop_reason"]
    if measurement.get("graph_capture_error"):
        found["graph_capture_error"] = str(measurement.get("graph_capture_error"))
    found["power_capped_discarded"] = measurement.get("power_capped_discarded", 0)
    found["throttled_discarded"] = measurement.get("throttled_discarded", 0)
    if measurement.get("power_rest_s"):
        found["power_rest_s"] = float(measurement.get("power_rest_s") or 0.0)
    if "window_medians_s" in measurement:
        found["window_medians_s"] = measurement["window_medians_s"]
    if "placement_pads_mib" in measurement:
        found["placement_pads_mib"] = measurement["placement_pads_mib"]
    clocks = [c for c in measurement.get("sm_clock_mhz") or () if c is not None]
    if clocks:
        found["sm_clock_mhz"] = float(statistics.median(clocks))
    state = measurement.get("gpu_state") or {}
    if "temperature_c" in state:
        found["temperature_c"] = state["temperature_c"]
    if "power_violation_ns" in state:
        found["power_violation_ns"] = state["power_violation_ns"]
    if "thermal_violation_ns" in state:
        found["thermal_violation_ns"] = state["thermal_violation_ns"]
    ran = measurement.get("what_ran")
    if ran is not None:
        found["kernels"] = sorted(k["name"] for k in ran.get("kernels", ()))
        found["attention_backend"] = ran["attention_backend"]
    return found


def gather_harness(gathered: Gathered, results: Path) -> None:
    """The harness's processes in a results folder, each checked as ``harness report`` checks results."""
    from harness.results import documents, folder

    for path in folder.result_files(results):
        doc, problems = documents.check(path)
        if doc is None:
            raise InputError(problems)
        environment = doc.get("environment")
        gpu = environment["gpu"] if environment is not None else None
        index, failure = documents.round_of(doc), doc.get("failure")
        measurements = doc["measurements"]
        gathered.processes.append(
            {
                "timer": "harness",
                "index": index,
                "folder": str(results.parent),
                "status": doc["status"],
                "failure": one_line(failure["reason"], 300) if failure else None,
                "wall_s": doc["run"]["wall_s"],
                "duration_s": doc["duration_s"],
                "gpu": gpu.get("name") if gpu else None,
                "gpu_uuid": gpu.get("uuid") if gpu else None,
                "torch": environment["torch"]["version"] if environment is not None else None,
                "rows": len(measurements),
                "rows_ok": sum(m["status"] == "ok" for m in measurements),
            }
        )
        for measurement in measurements:
            row = (measurement["workload"], measurement["dtype"])
            _put(gathered, row, "harness", index, harness_figures(measurement), str(results.parent))


# what a reference process's document holds, key by key (None: the key may hold null), and each row of it:
# a document read back is checked against these, and a row keeps only these keys
DOC_KINDS: dict[str, tuple[type | None, ...]] = {
    "timer": (str,),
    "index": (int,),
    "device": (str,),
    "status": (str,),
    "rows": (list,),
    "duration_s": (float,),
    "process_wall_s": (float, None),
    "failure": (str, None),
    "gpu": (str, None),
    "gpu_uuid": (str, None),
    "torch": (str,),
    "triton": (str, None),
}
ROW_KINDS: dict[str, tuple[type | None, ...]] = {
    "workload": (str,),
    "dtype": (str,),
    "status": (str,),
    "error": (str,),
    "median_s": (float,),
    "calls": (int,),
    "sm_clock_mhz": (float,),
    "power_w": (float,),
    "temperature_c": (list,),
    "power_violation_ns": (int,),
    "thermal_violation_ns": (int,),
    "wall_s": (float,),
}
REQUIRED = ("timer", "index", "device", "status", "rows", "duration_s", "workload", "dtype")


def read_reference(path: Path) -> ReferenceDoc:
    """A reference process's document, its keys checked (InputError naming the file and the key where
    one is not what a reference process writes); each row keeps only ``ROW_KINDS``' keys."""
    raw = _read_json(path)
    if not isinstance(raw, dict):
        raise InputError([Problem(str(path), "", "is not what a reference process writes")])
    bad = _wrong(raw, DOC_KINDS)
    if not bad and (raw["timer"] not in REFERENCES or raw["index"] < 1):
        bad = ["timer, index"]
    rows: list[Any] = raw["rows"] if not bad else []
    for number, entry in enumerate(rows):
        wrong = _wrong(entry, ROW_KINDS) if isinstance(entry, dict) else ["a row"]
        if not wrong and entry["status"] == "ok" and "median_s" not in entry:
            wrong = ["median_s"]
        if not wrong and not all(t is None or _is(t, int) for t in entry.get("temperature_c", ())):
            wrong = ["temperature_c"]
        bad += [f"rows[{number}].{key}" for key in wrong[:1]]
        if bad:
            break
        rows[number] = {k: v for k, v in entry.items() if k in ROW_KINDS}
    if bad:
        raise InputError([Problem(str(path), bad[0], "is not what a reference process writes there")])
    return cast(ReferenceDoc, raw)


def _wrong(document: dict[str, object], kinds: dict[str, tuple[type | None, ...]]) -> list[str]:
    """The keys of ``document`` whose value is not of their kind (a required key missing is one)."""
    wrong = []
    for key, allowed in kinds.items():
        if key not in document:
            if key in REQUIRED and None not in allowed:
                wrong.append(key)
            continue
        if not any(_is(document[key], kind) for kind in allowed):
            wrong.append(key)
    return wrong


def _is(value: object, kind: type | None) -> bool:
    if kind is None:
        return value is None
    if kind is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    return isinstance(value, kind) and not (kind is int and isinstance(value, bool))


def gather_reference(gathered: Gathered, path: Path) -> None:
    doc = read_reference(path)
    folder = str(path.parent.parent)
    wall, failure = doc.get("process_wall_s"), doc.get("failure")
    gathered.processes.append(
        {
            "timer": doc["timer"],
            "index": doc["index"],
            "folder": folder,
            "status": doc["status"],
            "failure": one_line(failure, 300) if failure else None,
            "wall_s": float(wall) if isinstance(wall, (int, float)) else None,
            "duration_s": float(doc["duration_s"]),
            "gpu": doc.get("gpu"),
            "gpu_uuid": doc.get("gpu_uuid"),
            "torch": doc.get("torch"),
            "rows": len(doc["rows"]),
            "rows_ok": sum(e.get("status") == "ok" for e in doc["rows"]),
        }
    )
    for entry in doc["rows"]:
        figures = cast(Figures, {k: v for k, v in entry.items() if k not in ("workload", "dtype")})
        _put(gathered, (entry["workload"], entry["dtype"]), doc["timer"], doc["index"], figures, folder)


def _put(gathered: Gathered, row: Row, timer: str, index: int, figures: Figures, folder: str) -> None:
    """One row of one process; a row two folders measured in the same timer's process is refused."""
    earlier = gathered.source.get((row, timer, index))
    if earlier is not None:
        why = f"{timer} process {index} measured {row[0]} {row[1]} in {earlier} too; report one of them"
        raise InputError([Problem(folder, "", why)])
    gathered.source[(row, timer, index)] = folder
    gathered.rows.setdefault(row, {}).setdefault(timer, {})[index] = figures


def gather(folders: list[Path]) -> Gathered:
    """Every process in ``folders``: their selections must agree on the device (InputError otherwise)."""
    selections = []
    for folder in folders:
        path = folder / "selection.json"
        if not path.is_file():
            raise InputError([Problem(str(folder), "", "holds no selection.json: not a folder 'run' wrote")])
        selections.append(read_selection(path))
    devices = {s["device"] for s in selections}
    if len(devices) > 1:
        raise InputError([Problem(", ".join(map(str, folders)), "", f"mix devices ({', '.join(devices)})")])
    merged = dict(selections[0])
    merged["rows"] = list(dict.fromkeys(r for s in selections for r in s["rows"]))
    gathered = Gathered(cast(Selection, merged))
    for folder in dict.fromkeys(folders):
        if (folder / "harness").is_dir():
            gather_harness(gathered, folder / "harness")
        for path in sorted((folder / "reference").glob("*.p*.json")):
            gather_reference(gathered, path)
    gathered.processes.sort(key=lambda p: (p["index"], TIMERS.index(p["timer"]), p["folder"]))
    order = {tuple(r.partition(":")[::2]): n for n, r in enumerate(gathered.selection["rows"])}
    gathered.rows = dict(sorted(gathered.rows.items(), key=lambda item: order.get(item[0], len(order))))
    return gathered


# --- the figures ---------------------------------------------------------------------------------------


def pct(values: list[float], q: float) -> float:
    """The nearest-rank quantile ``lab.studies.quiet_cheap`` reads its A/A with."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


class Pair(NamedTuple):
    row: Row
    a: Figures
    b: Figures
    dev: float  # |b / a - 1|


def pairs(
    gathered: Gathered, timer: str, first: int, second: int, keep: Iterable[Row] | None = None
) -> list[Pair]:
    """The rows both processes of ``timer`` measured (of ``keep``, where given), in the selection's order."""
    wanted = set(keep) if keep is not None else None
    found = []
    for row, timers in gathered.rows.items():
        a, b = timers.get(timer, {}).get(first), timers.get(timer, {}).get(second)
        if a is None or b is None or "median_s" not in a or "median_s" not in b:
            continue
        if wanted is None or row in wanted:
            found.append(Pair(row, a, b, abs(b["median_s"] / a["median_s"] - 1)))
    return found


COLUMNS = "rows     p50     p95     max"  # over what ``spread`` shows


def spread(found: list[Pair]) -> str:
    if not found:
        return f"{'no rows':>{len(COLUMNS)}}"
    dev = [p.dev for p in found]
    return f"{len(dev):4} {statistics.median(dev):7.3%} {pct(dev, 0.95):7.3%} {max(dev):7.3%}"


def timers_of(gathered: Gathered) -> list[str]:
    """The timers whose processes 1 and 2 both measured a row: those an A/A can be read of."""
    return [t for t in TIMERS if pairs(gathered, t, 1, 2)]


def common_rows(gathered: Gathered, timers: list[str]) -> list[Row]:
    """The rows every timer's processes 1 and 2 measured."""
    rows = [set(p.row for p in pairs(gathered, timer, 1, 2)) for timer in timers]
    shared = set.intersection(*rows) if rows else set()
    return [row for row in gathered.rows if row in shared]


def duration_of(gathered: Gathered, row: Row) -> float:
    """A row's duration: the mean of the harness's two medians, else of the first timer that has both."""
    for timer in TIMERS:
        both = [gathered.rows[row].get(timer, {}).get(i, {}).get("median_s") for i in (1, 2)]
        if all(m is not None for m in both):
            return statistics.fmean(cast(list[float], both))
    return math.nan


def bucket_of(seconds: float) -> str:
    """The duration bucket's label (``BUCKETS``); '?' for a row without a duration."""
    return next((label for limit, label in BUCKETS if seconds < limit), "?")


def family_of(row: Row) -> str:
    return CATALOG[row[0]].family if row[0] in CATALOG else "?"


def grouped(
    rows: list[Row], key: Callable[[Row], str], order: list[str] | None = None
) -> dict[str, list[Row]]:
    """``rows`` by ``key``, in ``order`` (labels without rows left out), else in sorted order."""
    groups: dict[str, list[Row]] = {}
    for row in rows:
        groups.setdefault(key(row), []).append(row)
    labels = [label for label in order or [] if label in groups] + sorted(set(groups) - set(order or []))
    return {label: groups[label] for label in labels}


def reads_of(gathered: Gathered, rows: list[Row]) -> dict[str, list[Row]]:
    """``rows`` by what the reference timers read: the GPU's work (every reference median, in both
    processes, under ``HOST_BOUND`` times the harness's graph-replayed one) or the host's eager launches."""
    device, host = [], []
    for row in rows:
        timers = gathered.rows[row]
        ours = min(timers["harness"][i]["median_s"] for i in (1, 2))
        theirs = max(timers[t][i]["median_s"] for t in REFERENCES if t in timers for i in (1, 2))
        (host if theirs >= HOST_BOUND * ours else device).append(row)
    return {
        f"the device (< {HOST_BOUND:.2f}x graph)": device,
        f"the host (>= {HOST_BOUND:.2f}x graph)": host,
    }


def split_lines(gathered: Gathered, timers: list[str], title: str, groups: dict[str, list[Row]]) -> list[str]:
    """p50/p95/max of each timer over each group's rows, and the harness's p95 over each other timer's."""
    head = "".join(f" | {t:9}{COLUMNS}" for t in timers)
    shares = "".join(f"  {'h/' + t:>10}" for t in timers[1:] if "harness" in timers)
    lines = [f"{'by ' + title:26}{head} |{shares}"]
    for label in groups:
        cells = [pairs(gathered, t, 1, 2, groups[label]) for t in timers]
        text = "".join(f" | {'':9}{spread(c)}" for c in cells)
        lines.append(f"{label:26}{text} |{_shares(cells, timers)}")
    return lines


def _shares(cells: list[list[Pair]], timers: list[str]) -> str:
    """The harness's p95 over each reference timer's (its first column), where both have rows."""
    if "harness" not in timers or not cells[0]:
        return ""
    ours = pct([p.dev for p in cells[0]], 0.95)
    text = ""
    for found in cells[1:]:
        theirs = pct([p.dev for p in found], 0.95) if found else 0.0
        text += f"  {ours / theirs:10.3f}" if theirs > 0 else f"  {'-':>10}"
    return text


# what a process recorded beside a row's median, as the report shows it: a row above 2 % lists those its
# two processes show differently (power to the nearest 10 W: a few watts is every pair of processes)
SHOWN: dict[str, Callable[[Figures], str]] = {
    "timer": lambda f: f.get("timer", "-"),
    "graph capture error": lambda f: f.get("graph_capture_error", "-")[:80],
    "SM clock MHz": lambda f: f"{f['sm_clock_mhz']:.0f}" if "sm_clock_mhz" in f else "-",
    "power W": lambda f: f"{round(f['power_w'], -1):.0f}" if "power_w" in f else "-",
    "power-capped samples": lambda f: str(f.get("power_capped_discarded", 0)),
    "throttled samples": lambda f: str(f.get("throttled_discarded", 0)),
    "power rest us": lambda f: f"{f.get('power_rest_s', 0.0) * 1e6:.0f}",
    "power violation ms": lambda f: f"{f.get('power_violation_ns', 0) / 1e6:.1f}",
    "thermal violation ms": lambda f: f"{f.get('thermal_violation_ns', 0) / 1e6:.1f}",
    "stop": lambda f: f.get("stop_reason", "-"),
    "attention": lambda f: str(f.get("attention_backend", "-")),
}
WARMER_C = 3  # temperatures that differ by less are not listed


def differences(a: Figures, b: Figures) -> list[str]:
    """What the two processes recorded differently for a row, as short phrases (the same left out)."""
    found = [f"{label} {show(a)}/{show(b)}" for label, show in SHOWN.items() if show(a) != show(b)]
    temps = a.get("temperature_c") or [], b.get("temperature_c") or []
    known = [t for pair in temps for t in pair if t is not None]
    if temps[0] and temps[1] and known and max(known) - min(known) >= WARMER_C:
        found.append(f"temperature C {_span(temps[0])}/{_span(temps[1])}")
    found += _kernels(a.get("kernels"), b.get("kernels"))
    moved = _windows(a.get("window_medians_s"), b.get("window_medians_s"))
    return found + ([moved] if moved else [])


def _span(temps: list[int | None]) -> str:
    return "-".join("?" if t is None else str(t) for t in temps)


def _kernels(a: list[str] | None, b: list[str] | None) -> list[str]:
    if a is None or b is None or a == b:
        return []
    only_a, only_b = sorted(set(a) - set(b)), sorted(set(b) - set(a))
    first, second = "; ".join(k[:60] for k in only_a) or "-", "; ".join(k[:60] for k in only_b) or "-"
    return [f"kernels only in 1: {first}; only in 2: {second}"]


def _windows(a: list[float] | None, b: list[float] | None) -> str | None:
    """Each window's median in process 2 over process 1's, the one that moved most marked."""
    if not a or not b or len(a) != len(b):
        return None
    ratios = [y / x - 1 for x, y in zip(a, b, strict=True)]
    most = max(range(len(ratios)), key=lambda i: abs(ratios[i]))
    shown = ", ".join(("*" if i == most else "") + f"{r:+.2%}" for i, r in enumerate(ratios))
    return f"windows 2/1: {shown}"


def two_speeds(pair: Pair) -> str | None:
    """Which of a harness row's processes the GPU ran at two speeds (``windows.two_speeds``, at the default
    threshold, as the report reads them), or None."""
    found = [
        str(i)
        for i, f in ((1, pair.a), (2, pair.b))
        if windows.two_speeds(
            windows.spread(f.get("window_medians_s")),
            f.get("power_capped_discarded"),
            DEFAULT_REGRESSION_PCT,
        )
    ]
    return f"two speeds on the GPU in process {' and '.join(found)}" if found else None


def above_lines(gathered: Gathered, timer: str) -> list[str]:
    """Each row of ``timer`` whose processes 1 and 2 differ by more than ``ABOVE``, worst first."""
    found = sorted((p for p in pairs(gathered, timer, 1, 2) if p.dev > ABOVE), key=lambda p: -p.dev)
    lines = []
    for pair in found:
        said = differences(pair.a, pair.b) or ["nothing the processes recorded differs"]
        speeds = two_speeds(pair) if timer == "harness" else None
        said = [speeds, *said] if speeds else said
        lines.append(
            f"  {timer:8} {pair.dev:6.2%}  {pair.row[0]} {pair.row[1]}: {pair.a['median_s'] * 1e6:.3f} / "
            f"{pair.b['median_s'] * 1e6:.3f} us; {'; '.join(said)}"
        )
    return lines


def process_lines(gathered: Gathered) -> list[str]:
    lines = ["processes (timer, index, GPU, rows ok of rows, s from start to exit, s it measured, folder):"]
    for p in gathered.processes:
        wall = f"{p['wall_s']:.1f}" if p["wall_s"] is not None else "?"
        failed = "" if p["status"] == "ok" else f"  FAILED: {p['failure']}"
        gpu = (p["gpu_uuid"] or p["gpu"] or "cpu")[:16]
        lines.append(
            f"  {p['timer']:8} {p['index']}  {gpu:16} {p['rows_ok']:4} of "
            f"{p['rows']:4}  {wall:>7} s  {p['duration_s']:7.1f} s  {Path(p['folder']).name}{failed}"
        )
    return lines


def goal_lines(gathered: Gathered, timers: list[str], rows: list[Row]) -> list[str]:
    """Issue 62's goals, over the rows every timer measured in processes 1 and 2."""
    if "harness" not in timers:
        return []
    ours = pairs(gathered, "harness", 1, 2, rows)
    if not ours:
        return ["goals: no row the harness measured in both processes"]
    p95 = pct([p.dev for p in ours], 0.95)
    above = [p for p in ours if p.dev > ABOVE]
    at_two = {p.row for p in ours if two_speeds(p)}
    speeds = [p for p in above if p.row in at_two]
    one_speed = [p.dev for p in ours if p.row not in at_two]
    at_one = f"{pct(one_speed, 0.95):.3%}" if one_speed else "-"
    lines = [
        f"goal: harness p95 <= {AA_GOAL:.1%}: {p95:.3%} ({'met' if p95 <= AA_GOAL else 'NOT met'}); over the "
        f"{len(one_speed)} rows the GPU ran at one speed: {at_one}",
        f"goal: no row above {ABOVE:.0%}: {len(above)} rows above ({'met' if not above else 'NOT met'}), "
        f"{len(speeds)} of them at two speeds on the GPU (recorded on the row, never judged on what the "
        "switching can make)",
    ]
    theirs = pairs(gathered, "do_bench", 1, 2, rows)
    if theirs:
        share = p95 / max(pct([p.dev for p in theirs], 0.95), 1e-12)
        verdict = "met" if share <= SHARE_GOAL else "NOT met"
        lines.append(f"goal: harness p95 <= {SHARE_GOAL} x do_bench's: {share:.3f} x ({verdict})")
    walls = [p["wall_s"] for p in gathered.processes if p["timer"] == "harness" and p["wall_s"] is not None]
    if walls:
        per_row = max(walls) / max(1, len(gathered.selection["rows"]))
        lines.append(
            f"goal: each harness process no longer than today's ({TODAY_S} s for suite 0.19's round 1 of 319 "
            f"rows, 0.694 s a row): longest {max(walls):.1f} s, {per_row:.3f} s a row"
        )
    return lines


def median_lines(gathered: Gathered, timers: list[str], rows: list[Row]) -> list[str]:
    """Where each reference timer's medians lie against the harness's: their ratio, row by row."""
    lines = []
    for timer in timers[1:] if timers[:1] == ["harness"] else []:
        ratios = []
        for row in rows:
            ours = [gathered.rows[row]["harness"][i].get("median_s") for i in (1, 2)]
            theirs = [gathered.rows[row][timer][i].get("median_s") for i in (1, 2)]
            ratios.append(
                statistics.fmean(cast(list[float], ours)) / statistics.fmean(cast(list[float], theirs))
            )
        if ratios:
            lines.append(
                f"medians, harness / {timer}: p50 {statistics.median(ratios):.3f}, p5 "
                f"{pct(ratios, 0.05):.3f}, p95 {pct(ratios, 0.95):.3f} ({len(ratios)} rows)"
            )
    return lines


def table(gathered: Gathered) -> str:
    """The report: the processes, the A/A of each timer and its splits, the goals, the rows above 2 %."""
    timers = timers_of(gathered)
    selection = gathered.selection
    rows = common_rows(gathered, timers)
    gpus = sorted({p["gpu"] or "cpu" for p in gathered.processes})
    dtypes = ",".join(dict.fromkeys(r.partition(":")[2] for r in selection["rows"]))
    named = ", rows named" if selection["named"] else ""
    lines = [
        f"noise floor: {', '.join(gpus)}; {len(selection['rows'])} rows ({selection['profile']}, {dtypes}"
        f"{named}) on {selection['device']}",
        "",
        *process_lines(gathered),
        "",
        f"A/A, |median ratio - 1| between processes 1 and 2, over the {len(rows)} rows every timer measured "
        "in both:",
        f"{'timer':26}{COLUMNS}   the harness's p95 / its p95",
        *aa_lines(gathered, timers, rows),
        *median_lines(gathered, timers, rows),
    ]
    unpaired = [t for t in TIMERS if t not in timers and any(p["timer"] == t for p in gathered.processes)]
    if unpaired:
        lines.append(f"no A/A yet of {', '.join(unpaired)}: no row measured in both process 1 and process 2")
    by_duration = grouped(rows, lambda row: bucket_of(duration_of(gathered, row)), [b for _, b in BUCKETS])
    lines += ["", *split_lines(gathered, timers, "duration", by_duration)]
    lines += ["", *split_lines(gathered, timers, "family", grouped(rows, family_of))]
    if "harness" in timers and len(timers) > 1:
        lines += ["", *split_lines(gathered, timers, "what a reference reads", reads_of(gathered, rows))]
    lines += ["", *other_pairs(gathered, timers), *goal_lines(gathered, timers, rows), ""]
    lines.append(f"rows above {ABOVE:.0%} (medians of processes 1 / 2; what differed, 1/2):")
    for timer in timers:
        lines += above_lines(gathered, timer)
    return "\n".join(lines) + "\n"


def aa_lines(gathered: Gathered, timers: list[str], rows: list[Row]) -> list[str]:
    """Each timer's A/A over ``rows``, with the harness's p95 over its; and over all its rows where more."""
    lines = []
    ours = pairs(gathered, "harness", 1, 2, rows)
    harness_p95 = pct([p.dev for p in ours], 0.95) if ours else None
    for timer in timers:
        own, shared = pairs(gathered, timer, 1, 2), pairs(gathered, timer, 1, 2, rows)
        p95 = pct([p.dev for p in shared], 0.95) if shared else None
        relative = (
            f"   {harness_p95 / p95:7.3f}" if p95 and harness_p95 is not None and timer != "harness" else ""
        )
        lines.append(f"{timer:26}{spread(shared)}{relative}")
        if len(own) != len(shared):
            lines.append(f"{timer + ', all its rows':26}{spread(own)}")
    return lines


def other_pairs(gathered: Gathered, timers: list[str]) -> list[str]:
    """Every other pair of processes of a timer that ran more than two."""
    lines = []
    for timer in timers:
        indices = sorted({p["index"] for p in gathered.processes if p["timer"] == timer})
        for i, first in enumerate(indices):
            for second in indices[i + 1 :]:
                if (first, second) != (1, 2):
                    found = pairs(gathered, timer, first, second)
                    lines.append(f"{f'{timer} {first} against {second}':26}{spread(found)}")
    return lines + ([""] if lines else [])


def raw_document(gathered: Gathered) -> dict[str, object]:
    """``rows.json``: the selection, every process, and each row's figures by timer and process."""
    rows = [
        {
            "workload": row[0],
            "dtype": row[1],
            "family": family_of(row),
            "timers": {timer: {str(i): f for i, f in sorted(by.items())} for timer, by in timers.items()},
        }
        for row, timers in gathered.rows.items()
    ]
    return {"selection": gathered.selection, "processes": gathered.processes, "rows": rows}


def report(folders: list[Path], out: Path) -> str:
    """The report of ``folders``' processes, printed and written to ``out`` (table.txt, rows.json)."""
    gathered = gather(folders)
    text = table(gathered)
    out = jsonio.output_folder(out, "out")
    jsonio.write_text_atomic(out / "table.txt", text)
    jsonio.write_atomic(out / "rows.json", raw_document(gathered))
    print(text, end="", flush=True)
    return text


# --- the command line ----------------------------------------------------------------------------------


def _words(text: str) -> list[str]:
    return [word for word in text.split(",") if word]


def _timers(text: str) -> list[str]:
    words = _words(text)
    wrong = [w for w in words if w not in TIMERS]
    if wrong or not words:
        raise argparse.ArgumentTypeError(f"{','.join(wrong) or text!r}: use some of {','.join(TIMERS)}")
    return list(dict.fromkeys(words))


def _positive(kind: Callable[[str], Any], least: float) -> Callable[[str], Any]:
    def parse(text: str) -> Any:
        value = kind(text)
        if not value >= least or (isinstance(value, float) and not math.isfinite(value)):
            raise argparse.ArgumentTypeError(f"{text}: give a number of at least {least}")
        return value

    return parse


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(
        prog="python -m benchmarks.noise_floor", description=__doc__.splitlines()[0]
    )
    sub = top.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run the missing processes into --out, then report it")
    run.add_argument("--out", type=Path, required=True, help="the folder of this benchmark's processes")
    run.add_argument(
        "--timers", type=_timers, help="some of harness,do_bench,events (default: all; on a CPU no do_bench)"
    )
    run.add_argument("--processes", type=_positive(int, 2), default=2, help="processes of each timer (2)")
    run.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    run.add_argument("--profile", choices=PROFILES, default="default")
    run.add_argument("--dtypes", type=_words, default=["fp32_default", "bf16"], help="the suite's default")
    run.add_argument("--families", type=_words, default=[], help="only these families (conv,gemm,...)")
    run.add_argument("--rows", type=_words, default=[], help="only these WORKLOAD:DTYPE rows")
    run.add_argument("--budget-s", type=_positive(float, 1), default=540.0, help="start no process past it")
    run.add_argument("--python", default=sys.executable, help="the interpreter of every process")
    run.add_argument("--time-budget-s", type=_positive(float, 0.001), help="the harness's (a quick look)")
    merge = sub.add_parser("report", help="the report of one or more folders 'run' wrote")
    merge.add_argument("folders", type=Path, nargs="+")
    merge.add_argument(
        "--out", type=Path, help="where table.txt and rows.json go (default: the first folder)"
    )
    one = sub.add_parser("reference", help="(run starts it) one process of a reference timer")
    one.add_argument("--timer", choices=REFERENCES, required=True)
    one.add_argument("--index", type=_positive(int, 1), required=True)
    one.add_argument("--device", choices=("cuda", "cpu"), required=True)
    one.add_argument("--profile", choices=PROFILES, required=True)
    one.add_argument("--rows", type=_words, required=True)
    one.add_argument("--out", type=Path, required=True)
    return top


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        if args.command == "run":
            return run_all(args)
        if args.command == "report":
            report(args.folders, args.out or args.folders[0])
            return 0
        rows = chosen_rows(args.profile, [], [], args.rows)
        return reference_process(args.timer, args.index, args.device, args.profile, rows, args.out)
    except InputError as exc:
        for problem in exc.problems:
            print(f"error: {problem}", file=sys.stderr)
        return 2
    except HarnessError as exc:  # the machine cannot run it (no torch in --python, the disk full)
        print(f"error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
