"""``python -m harness.suite list|run|facts``: the suite's command line, the orchestrator's only way in."""

from __future__ import annotations

import argparse
import copy
import datetime as dt
import itertools
import json
import os
import sys
import tempfile
import time
import traceback
from typing import Any

from harness.suite import RESULT_SCHEMA_VERSION, SUITE_VERSION, host, lifeline, source_sha256, windows
from harness.suite.catalog import CATALOG, FAMILY, for_profile
from harness.suite.contract import BuildsCalls, Built, MeasuresItself, Unsupported, WorkloadSpec
from harness.suite.document import Numerics
from harness.suite.phases import Phases
from harness.suite.share import ShareAsk, TimedShare

# a measurement's records beside its timing (suite 0.11: the timed share leaves them out)
RECORDS = ("peak_memory", "what_ran", "numerics")


class CudaContextLost(RuntimeError):
    """A measurement's error left the CUDA context unusable (a device-side assert, an illegal address):
    every later call would fail with the same error, so the cell stops and says which one did it."""


def main(argv: list[str] | None = None) -> int:
    lifeline.die_with_parent()
    parser = argparse.ArgumentParser(prog="python -m harness.suite")
    sub = parser.add_subparsers(dest="command", required=True)
    lister = sub.add_parser("list", help="print the workload catalog")
    lister.add_argument("--json", action="store_true")
    sub.add_parser("facts", help="print what this Python holds (torch, system cuDNN) as JSON")
    run = sub.add_parser("run", help="run workloads and write one result document")
    run.add_argument("--out", required=True, help="result JSON to write (atomically)")
    run.add_argument("--cell", default="{}", help="the cell spec as JSON, echoed into the result")
    run.add_argument("--expect-cudnn", default='{"source": "bundled"}', help="what cuDNN must be loaded")
    run.add_argument("--workloads", default="", help="comma-separated ids (default: all)")
    run.add_argument("--dtypes", default="fp32,bf16", help="any of fp32,tf32,bf16,fp16")
    run.add_argument(
        "--rows",
        default="",
        help="workload:dtype pairs to measure, not every workload x dtype (a late round: its undecided rows)",
    )
    run.add_argument("--knobs", default='[{"cudnn_benchmark": false, "deterministic": false, "tf32": false}]')
    run.add_argument("--profile", choices=("smoke", "default", "full"), default="smoke")
    run.add_argument("--device", choices=("auto", "cuda", "cpu"), default="auto")
    run.add_argument("--time-budget-s", type=float, default=2.0, help="sampling time limit per measurement")
    run.add_argument(
        "--min-time-s",
        type=float,
        default=0.0,
        help="measured time before the noise target may stop sampling (nvbench: 0.5)",
    )
    run.add_argument(
        "--timed-share",
        type=float,
        default=0.0,
        help="on a GPU, sample longer where timed work would be under this share of the process's wall time",
    )
    run.add_argument("--no-numerics", action="store_true", help="skip the fp64 reference and repeat checks")
    run.add_argument(
        "--no-what-ran",
        action="store_true",
        help="skip the profiled call that records the operators and kernels",
    )
    args = parser.parse_args(argv)
    if args.command == "list":
        return _list(args.json)
    if args.command == "facts":
        from harness.suite import image_facts

        print(json.dumps(image_facts.collect(), sort_keys=True))
        return 0
    return _run(args)


def _list(as_json: bool) -> int:
    if as_json:
        print(
            json.dumps(
                {
                    "suite_version": SUITE_VERSION,
                    "source_sha256": source_sha256(),
                    "workloads": [
                        {"id": s.id, "description": s.description, "dtypes": list(s.dtypes), "gpus": s.gpus}
                        for s in CATALOG.values()
                    ],
                }
            )
        )
    else:
        for spec in CATALOG.values():
            print(f"{spec.id:20} {spec.description}")
    return 0


def _run(args: argparse.Namespace) -> int:
    if args.rows:
        rows = [(w, d) for w, _, d in (pair.partition(":") for pair in args.rows.split(",") if pair)]
    else:
        workloads = [w for w in args.workloads.split(",") if w] or for_profile(args.profile)
        rows = list(itertools.product(workloads, args.dtypes.split(",")))
    unknown = list(dict.fromkeys(w for w, _ in rows if w not in CATALOG))
    if unknown:
        print(
            f"error: unknown workload(s) {', '.join(unknown)}; see 'python -m harness.suite list'",
            file=sys.stderr,
        )
        return 2
    started, clock_started = dt.datetime.now(dt.timezone.utc), time.perf_counter()
    doc: dict[str, Any] = {
        "schema_version": RESULT_SCHEMA_VERSION,
        "suite_version": SUITE_VERSION,
        "cell": json.loads(args.cell),
        "profile": args.profile,
        "started_at": started.isoformat(),
        "status": "failed",
        "failure": None,
        "warnings": [],
        "measurements": [],
    }
    setup = Phases(doc.setdefault("setup_s", {}))  # where the time goes before the first measurement
    try:
        import torch  # imported here so 'list' works without torch

        from harness.suite import cudnn_probe, environment
        from harness.suite.timer import Timer

        setup.done("import_torch")
        device = args.device
        if device == "auto":
            device = "cuda" if torch.cuda.is_available() else "cpu"
        if device == "cuda" and not torch.cuda.is_available():
            raise RuntimeError("device 'cuda' was asked for, but torch sees no CUDA GPU")
        doc["device"] = device
        threads, load_start = host.fix_threads(torch, device), host.load()
        doc["cudnn"] = cudnn_probe.probe(json.loads(args.expect_cudnn), device)
        setup.done("cudnn_probe")  # with a GPU, the CUDA context's creation too
        doc["environment"] = environment.collect(device)
        setup.done("environment")
        if doc["cudnn"]["distinct_builds"] > 1:
            doc["warnings"].append(
                "more than one cuDNN build is mapped into the process: "
                + ", ".join(doc["cudnn"]["loaded_libraries"])
            )
        if doc["cudnn"]["compatible_by_torch_rule"] is False:
            doc["warnings"].append(
                f"torch was compiled against cuDNN {doc['cudnn']['compile_version']} and refuses runtime "
                f"{doc['cudnn']['runtime_version']} by default; measured with "
                "PYTORCH_SKIP_CUDNN_COMPATIBILITY_CHECK=1"
            )
        if not doc["cudnn"]["verified"]:
            doc["failure"] = {"stage": "cudnn-check", "reason": doc["cudnn"]["verification"], "log_tail": ""}
        else:
            from harness.suite.gpu_state import GpuState

            gpu = GpuState(torch.cuda.current_device()) if device == "cuda" else None
            doc["environment"]["gpu_state"] = gpu.static() if gpu is not None else None
            if gpu is not None and gpu.missing:
                doc["warnings"].append(
                    f"no NVML: {gpu.missing}; SM clocks, power and the throttle guard are not recorded"
                )
            setup.done("gpu_state")
            timer = Timer(device)
            setup.done("timer")
            knob_sets = json.loads(args.knobs)
            total = len(knob_sets) * len(rows)
            share = TimedShare(args.timed_share if device == "cuda" else 0.0, total, clock_started)
            cells = list(itertools.product(knob_sets, rows))
            if device == "cpu":
                doc["measurements"].extend(_measure_windows(cells, args, timer))
            else:
                for knobs, (workload, dtype) in cells:
                    entry = _measure_shared(share, workload, dtype, knobs, args, device, timer, gpu)
                    doc["measurements"].append(entry)
                    _progress(len(doc["measurements"]), total, entry)
            if not args.no_numerics:
                _numerics_pass(doc["measurements"], args.profile, device)
            # the engine sub-libraries load when a workload first needs them, not at start
            doc["cudnn"]["loaded_after_run"] = cudnn_probe.mapped_cudnn_files()
            anyway = cudnn_probe.used_anyway(doc["cudnn"], doc["measurements"])
            if anyway:  # the cell's check and its warnings say so, not only the measurements
                doc["cudnn"]["verification"] += f"; {anyway}"
                doc["warnings"].append(anyway)
            doc["host"] = host.record(device, threads, load_start)
            doc["status"] = "ok"
    except Exception as exc:  # the cell fails as data; the orchestrator decides what it means
        doc["failure"] = {
            "stage": "cuda" if isinstance(exc, CudaContextLost) else "suite",
            "reason": f"{type(exc).__name__}: {exc}",
            "log_tail": traceback.format_exc()[-4000:],
        }
    finished = dt.datetime.now(dt.timezone.utc)
    doc["finished_at"] = finished.isoformat()
    doc["duration_s"] = (finished - started).total_seconds()
    _write_atomic(args.out, doc)
    return 0


def _measure_windows(
    cells: list[tuple[dict[str, bool], tuple[str, str]]], args: argparse.Namespace, timer: Any
) -> list[dict[str, Any]]:
    """On a CPU, every row timed in ``windows.WINDOWS`` passes over the rows, each window its share of
    the time budget, merged into one measurement per row (harness/suite/windows.py)."""
    share = copy.copy(args)
    share.time_budget_s = args.time_budget_s / windows.WINDOWS
    later = copy.copy(share)
    later.no_what_ran = True  # recorded once, in the first window
    parts: list[list[dict[str, Any]]] = [[] for _ in cells]
    merged: list[dict[str, Any]] = []
    for window in range(windows.WINDOWS):
        for index, (knobs, (workload, dtype)) in enumerate(cells):
            part = _measure_one(workload, dtype, knobs, later if window else share, "cpu", timer, None)
            parts[index].append(part)
            if window == windows.WINDOWS - 1:
                entry = windows.merge(parts[index])
                if entry.get("status") == "ok":  # host time: another process shows in the samples
                    why = host.stalled(entry["samples_s"], entry.get("batch", 1))
                    if why:
                        entry["stalled"] = why
                merged.append(entry)
                _progress(len(merged), len(cells), entry)
    return merged


def _measure_shared(
    share: TimedShare,
    workload: str,
    dtype: str,
    knobs: dict[str, bool],
    args: argparse.Namespace,
    device: str,
    timer: Any,
    gpu: Any,
) -> dict[str, Any]:
    """One row, sampled longer where the process's timed share asks it to (harness/suite/share.py)."""
    began = time.perf_counter()
    ask = share.ask(args.time_budget_s)
    entry = _measure_one(workload, dtype, knobs, args, device, timer, gpu, ask)
    timed_s = sum(entry.get("samples_s", ())) * entry.get("batch", 1)
    rested = bool(entry.get("power_rest_s"))
    # the records beside the timing are not the sampling's to pay back (suite 0.11)
    records_s = sum(entry.get("phases_s", {}).get(phase, 0.0) for phase in RECORDS)
    wall_s = time.perf_counter() - began
    share.add(timed_s, entry.get("sampling_wall_s", 0.0), wall_s - records_s, rested, records_s)
    return entry


def _measure_one(
    workload: str,
    dtype: str,
    knobs: dict[str, bool],
    args: argparse.Namespace,
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
            entry.update(family.measure(spec, args.profile, device, dtype, knobs, args.time_budget_s))
            entry["stats"] = summarize(entry["samples_s"])
            entry["status"], entry["wall_s"] = "ok", time.perf_counter() - start
            return entry
        if not isinstance(family, BuildsCalls):
            raise TypeError(f"workload family {spec.family} has neither build nor measure")
        built = family.build(spec, args.profile, device, dtype)
        entry["params"] = built.params
        build_s = time.perf_counter() - start
        mode = contextlib.nullcontext() if built.grad else torch.inference_mode()
        with mode:
            before = gpu.snapshot() if gpu is not None else {}
            entry.update(
                measure(built.fn, timer, args.time_budget_s, args.min_time_s, gpu, ask=ask, graphs=GRAPHS)
            )
            entry["phases_s"] = {"build": build_s, **entry["phases_s"]}
            if gpu is not None:
                entry["gpu_state"] = gpu_state.delta(before, gpu.snapshot())
            after = Phases(entry["phases_s"])  # the records beside the timing, on the same stopwatch
            if device == "cuda":
                entry["peak_memory_bytes"] = _peak_memory(built.fn)
                after.done("peak_memory")
            if not args.no_what_ran:
                try:
                    entry["what_ran"] = what_ran.record(built.fn, device)
                except Exception as exc:  # a record beside the timing: never a reason to lose the timing
                    text = str(exc).splitlines()[0] if str(exc) else ""
                    entry["what_ran_error"] = f"{type(exc).__name__}: {text}"[:500]
                after.done("what_ran")
    except Unsupported as exc:  # the workload says it cannot run here: not an error
        return {**entry, "status": "unsupported", "error": f"{exc}"[:500]}
    except Exception as exc:  # one measurement failing is data; the rest of the suite goes on
        text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        if device == "cuda" and not _cuda_usable():
            raise CudaContextLost(
                f"{workload} {dtype} raised {type(exc).__name__}: {text}; the CUDA context is unusable "
                "after it, so the cell stops here"
            ) from exc
        return {**entry, "status": "error", "error": f"{type(exc).__name__}: {text}"[:500]}
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


def _cuda_usable() -> bool:
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


def _numerics_pass(measurements: list[dict[str, Any]], profile: str, device: str) -> None:
    """The numerics of every measured row, once every row is timed (suite 0.11), each row built again.

    A process with numerics (a cell's first round) then times its rows in the same state as one without:
    an fp64 reference computed and held between two rows moved the next rows' medians (between
    processes, p95 1.58 % against 0.96 % where both or neither did, reports/quiet-cheap-h100/). A row
    whose check fails is an error, as it was when the check ran beside its timing."""
    import contextlib

    import torch

    from harness.suite import numerics
    from harness.suite.workloads.tensors import apply_knobs

    for entry in measurements:
        spec = CATALOG[entry["workload"]]
        family = FAMILY[spec.family]
        if entry["status"] != "ok" or not spec.numerics or not isinstance(family, BuildsCalls):
            continue
        knobs, dtype = entry["knobs"], entry["dtype"]
        start = time.perf_counter()
        apply_knobs(knobs, tf32=knobs["tf32"] or dtype == "tf32")
        try:
            built = family.build(spec, profile, device, dtype)
            with contextlib.nullcontext() if built.grad else torch.inference_mode():
                entry["numerics"] = _numerics(family, spec, profile, device, dtype, knobs, built, numerics)
            del built
        except Exception as exc:
            text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            if device == "cuda" and not _cuda_usable():
                raise CudaContextLost(
                    f"{entry['workload']} {dtype} raised {type(exc).__name__} in its numerics: {text}; the "
                    "CUDA context is unusable after it, so the cell stops here"
                ) from exc
            entry["status"], entry["error"] = "error", f"{type(exc).__name__}: {text}"[:500]
        finally:
            if device == "cuda":
                with contextlib.suppress(Exception):
                    torch.cuda.empty_cache()
        spent = time.perf_counter() - start
        entry["phases_s"]["numerics"] = spent
        entry["wall_s"] += spent
    _references.clear()


# the fp64 reference of the workload whose rows run now: every dtype of a workload is checked against the
# same one (its inputs are drawn in fp32 whatever the dtype), so it is computed once for them (suite 0.11)
_references: dict[str, tuple[list[Any] | None, str | None]] = {}


def _numerics(
    family: BuildsCalls,
    spec: WorkloadSpec,
    profile: str,
    device: str,
    dtype: str,
    knobs: dict[str, bool],
    built: Built,
    numerics: Any,
) -> Numerics:
    import torch

    key = json.dumps([spec.id, profile, device, knobs], sort_keys=True)
    if key not in _references:
        _references.clear()  # rows run a workload's dtypes one after another: one reference held at a time
        _references[key] = _reference(family, spec, profile, device, numerics)
    expected, note = _references[key]
    found: Numerics
    try:
        found = numerics.check(built.fn, expected, dtype, knobs["tf32"])
    except torch.OutOfMemoryError:
        found = numerics.check(built.fn, None, dtype, knobs["tf32"])
        note = "the fp64 reference did not fit in GPU memory"
    if note:
        found["reference_error"] = note
    return found


def _reference(
    family: BuildsCalls, spec: WorkloadSpec, profile: str, device: str, numerics: Any
) -> tuple[list[Any] | None, str | None]:
    """The fp64 reference's outputs, or None and why there are none."""
    import torch

    try:
        reference = family.build(spec, profile, device, "fp64").fn
    except (Unsupported, RuntimeError, NotImplementedError) as exc:
        return None, f"no fp64 reference: {str(exc).splitlines()[0][:200]}"
    try:
        return numerics.outputs(reference), None
    except torch.OutOfMemoryError:
        return None, "the fp64 reference did not fit in GPU memory"
    finally:
        del reference


def _progress(index: int, total: int, entry: dict[str, Any]) -> None:
    knobs = " ".join(f"{k}={int(v)}" for k, v in entry["knobs"].items())
    if entry["status"] == "ok":
        stats = entry["stats"]
        what = f"median {stats['median'] * 1e6:.1f} us (n={stats['n']}, {entry['stop_reason']})"
    else:
        what = f"{entry['status']}: {entry['error']}"
    print(
        f"[{index}/{total}] {entry['workload']} {entry['dtype']} {knobs}: {what}", file=sys.stderr, flush=True
    )


def _write_atomic(path: str, doc: dict[str, Any]) -> None:
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-", suffix=".json")
    try:
        with os.fdopen(fd, "w") as f:
            # one string from the C encoder: json.dump and any indent take the pure-Python one, 3x slower
            # on 120,000 samples (0.41 s against 0.13 s), and the GPU is held until the process exits
            f.write(json.dumps(doc, sort_keys=True, allow_nan=False))
            f.flush()
            os.fsync(f.fileno())
        mask = os.umask(0)
        os.umask(mask)
        os.chmod(tmp, 0o666 & ~mask)  # mkstemp's 0600 would hide the result from other users
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


if __name__ == "__main__":
    sys.exit(main())
