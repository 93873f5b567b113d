"""``python -m harness.suite list|run|facts``: the suite's command line, the orchestrator's only way in."""

from __future__ import annotations

import argparse
import datetime as dt
import itertools
import json
import os
import sys
import tempfile
import time
import traceback
from typing import cast

from harness.suite import RESULT_SCHEMA_VERSION, SUITE_VERSION, lifeline, source_sha256
from harness.suite.catalog import CATALOG, rows_of
from harness.suite.document import CellRecord, Dtype, Knobs, Measurement, SuiteResult
from harness.suite.numerics.sweep import numerics_pass
from harness.suite.probes import host
from harness.suite.rows import (
    Cell,
    CudaContextLost,
    Row,
    measure_windows,
    stranded_growth,
    windows_measured,
)
from harness.suite.settings import SuiteSettings
from harness.suite.timing import windows
from harness.suite.timing.phases import Phases
from harness.suite.timing.share import TimedShare


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
    run.add_argument("--knobs", default='[{"cudnn_benchmark": false, "deterministic": false, "tf32": false}]')
    SuiteSettings.add_arguments(run)
    args = parser.parse_args(argv)
    if args.command == "list":
        return _list(args.json)
    if args.command == "facts":
        from harness.suite.probes import image_facts

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
    settings = SuiteSettings.from_args(args)
    named = [pair.partition(":")[0] for pair in (*settings.rows, *settings.cpu_rows)]
    unknown = list(dict.fromkeys(w for w in (*settings.workloads, *named) if w not in CATALOG))
    if unknown:
        print(
            f"error: unknown workload(s) {', '.join(unknown)}; see 'python -m harness.suite list'",
            file=sys.stderr,
        )
        return 2
    started, clock_started = dt.datetime.now(dt.timezone.utc), time.perf_counter()
    doc: SuiteResult = {
        "schema_version": RESULT_SCHEMA_VERSION,
        "suite_version": SUITE_VERSION,
        "cell": cast(CellRecord, json.loads(args.cell)),  # the orchestrator's cell, echoed as it gave it
        "profile": settings.profile,
        "started_at": started.isoformat(),
        "status": "failed",
        "failure": None,
        "warnings": [],
        "measurements": [],
        "finished_at": "",  # both set below, before the document is written
        "duration_s": 0.0,
    }
    try:
        _checked_and_measured(doc, args, settings, clock_started)
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


def _rows(settings: SuiteSettings, device: str) -> list[tuple[str, str]]:
    """The (workload, dtype) rows a process on ``device`` measures: those named for it, else the profile's."""
    named = settings.rows_on(device)
    if named:
        return [(w, d) for w, _, d in (pair.partition(":") for pair in named)]
    return rows_of(settings.workloads, settings.profile, settings.dtypes)


def _checked_and_measured(
    doc: SuiteResult,
    args: argparse.Namespace,
    settings: SuiteSettings,
    clock_started: float,
) -> None:
    """The process's setup and checks into ``doc``, then its rows measured where the checks pass."""
    setup = Phases(doc.setdefault("setup_s", {}))  # where the time goes before the first measurement
    import torch  # imported here so 'list' works without torch

    from harness.suite.probes import cudnn, environment, nccl

    setup.done("import_torch")
    device = settings.device
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        raise RuntimeError("device 'cuda' was asked for, but torch sees no CUDA GPU")
    doc["device"] = device
    rows = _rows(settings, device)
    threads, load_start = host.fix_threads(torch, device), host.load()
    allocator = host.keep_freed_memory(device)
    doc["cudnn"] = cudnn.probe(cudnn.request(args.expect_cudnn), device)
    setup.done("cudnn_probe")  # with a GPU, the CUDA context's creation too
    doc["nccl"] = nccl.probe()
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
    torch_ok, torch_said = environment.torch_verification(str(doc["cell"].get("torch", "installed")))
    if not torch_ok:
        doc["failure"] = {"stage": "torch-check", "reason": torch_said[:4000], "log_tail": ""}
    elif not doc["cudnn"]["verified"]:
        doc["failure"] = {"stage": "cudnn-check", "reason": doc["cudnn"]["verification"], "log_tail": ""}
    elif not doc["nccl"]["verified"]:
        doc["failure"] = {"stage": "nccl-check", "reason": doc["nccl"]["verification"], "log_tail": ""}
    else:
        knobs = cast(list[Knobs], json.loads(args.knobs))  # the orchestrator's knob sets, as JSON
        # the rows' dtypes are modes: the result schema checks the document they are written into
        cells = list(itertools.product(knobs, cast(list[tuple[str, Dtype]], rows)))
        _measured(doc, settings, device, cells, clock_started, setup)
        doc["host"] = host.record(device, threads, load_start, allocator)
        doc["status"] = "ok"


def _measured(
    doc: SuiteResult,
    settings: SuiteSettings,
    device: str,
    cells: list[Cell],
    clock_started: float,
    setup: Phases,
) -> None:
    """The process's rows measured into ``doc``, then what the whole run says: stranded memory, numerics,
    the cuDNN libraries loaded on the way."""
    import torch

    from harness.suite.probes import cudnn
    from harness.suite.probes.gpu_state import GpuState
    from harness.suite.timing.timer import Timer

    gpu = None
    if device == "cuda":  # NVML finds the GPU by the UUID CUDA gave it (harness/suite/probes/gpu_state.py)
        gpu = GpuState(torch.cuda.current_device(), (doc["environment"].get("gpu") or {}).get("uuid"))
    doc["environment"]["gpu_state"] = gpu.static() if gpu is not None else None
    if gpu is not None and gpu.missing:
        doc["warnings"].append(
            f"no NVML: {gpu.missing}; SM clocks, power and the throttle guard are not recorded"
        )
    setup.done("gpu_state")
    timer = Timer(device, cpu_clock=host.CPU_CLOCK)
    setup.done("timer")
    plan = windows.for_device(device, settings)
    share = TimedShare(
        settings.timed_share if device == "cuda" else 0.0, windows_measured(cells, plan), clock_started
    )
    measured: dict[int, Measurement] = {}
    try:
        for index, entry in measure_windows(Row(settings, device, timer, gpu, share, plan), cells):
            measured[index] = entry
    finally:  # a lost CUDA context keeps what was measured before it, in the rows' order
        doc["measurements"].extend(measured[index] for index in sorted(measured))
    stranded = stranded_growth(doc["measurements"])
    if stranded:
        doc["warnings"].append(stranded)
    if settings.numerics:
        numerics_pass(doc["measurements"], settings.profile, device)
    # the engine sub-libraries load when a workload first needs them, not at start
    doc["cudnn"]["loaded_after_run"] = cudnn.mapped_cudnn_files()
    anyway = cudnn.used_anyway(doc["cudnn"], doc["measurements"])
    if anyway:  # the cell's check and its warnings say so, not only the measurements
        doc["cudnn"]["verification"] += f"; {anyway}"
        doc["warnings"].append(anyway)


def _write_atomic(path: str, doc: SuiteResult) -> None:
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
