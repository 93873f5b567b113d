#!/usr/bin/env python3
"""Reproducer of one row of a cudnn-harness report (the template `harness repro` fills in).

Needs only torch and the standard library. The workload is built and timed by the harness suite's own
code, carried verbatim in SOURCES below (same shapes, dtype, seeds, knobs and timer as the row), so the
numbers are the row's, not a re-implementation's.

    python repro.py                       # both sides, interleaved rounds, here (local cells)
    python repro.py --one [--side NAME]   # one process of one side: prints one JSON line
    python repro.py --ratio A.jsonl B.jsonl   # the ratio of two sides' --one lines (docker cells)
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import TypedDict


class SideRecipe(TypedDict):
    """How one side's environment is made, and what its result recorded of it."""

    cell: str
    label: str
    cudnn_enabled: bool
    system_lib_dir: str | None  # a system cuDNN the local backend shadowed in (None: the cell's own)
    torch: str | None
    cuda: str | None
    cudnn_runtime: str | None
    cudnn_built_for: str | None
    cudnn_libraries: list[str]
    compat_check_overridden: bool
    gpu: str | None
    driver: str | None
    python: str | None


class ScriptRow(TypedDict):
    """The row this script reproduces: its workload, how the suite measured it, and its two sides."""

    title: str
    workload: str
    family: str
    dtype: str
    knobs: dict[str, bool]
    device: str
    profile: str
    time_budget_s: float
    min_time_s: float
    report_ratio: float
    sides: dict[str, SideRecipe]  # baseline, then candidate


class OneProcess(TypedDict):
    """What one process of one side measured (``--one`` prints it as a JSON line)."""

    side: str
    median_s: float
    n: int
    timer: str
    params: dict[str, object]  # the workload's shape and settings, as its spec holds them
    torch: str
    cudnn: int | None
    cudnn_enabled: bool
    gpu: str | None
    attention_backend: str | None
    cudnn_used: bool
    top_kernel: str | None
    operators: list[str]


class Summary(TypedDict):
    """Both sides' processes and the ratio of their medians, beside the report's."""

    row: str
    medians_s: dict[str, float]
    ratio: float
    report_ratio: float
    within_5_pct_of_report: bool
    rounds: dict[str, int]
    what_ran: dict[str, list[str]]
    runs: dict[str, list[OneProcess]]


ROW: ScriptRow = json.loads("{}")  # filled in: the row, its workload, and how each side's environment is made
SOURCES: dict[str, str] = {}  # filled in: harness/suite files this workload needs, verbatim


def _suite_on_path() -> None:
    root = Path(tempfile.mkdtemp(prefix="repro-suite-"))
    for name, text in {"harness/__init__.py": "", "harness/suite/__init__.py": "", **SOURCES}.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    sys.path.insert(0, str(root))


def measure_here(side: str) -> OneProcess:
    """One process of ``side``: build the workload, time it as the suite does, and say what ran."""
    import importlib

    if ROW["knobs"]["deterministic"]:
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")  # before CUDA initializes
    import torch

    _suite_on_path()
    family = importlib.import_module(f"harness.suite.workloads.{ROW['family']}")
    from harness.suite import what_ran
    from harness.suite.measure import measure
    from harness.suite.precision import tf32_asked
    from harness.suite.timer import Timer
    from harness.suite.workloads.tensors import apply_knobs

    knobs, dtype, device = ROW["knobs"], ROW["dtype"], ROW["device"]
    apply_knobs(knobs, tf32=tf32_asked(dtype, knobs["tf32"]))
    torch.backends.cudnn.enabled = ROW["sides"][side]["cudnn_enabled"]
    spec = next(s for s in family.SPECS if s.id == ROW["workload"])
    built = family.build(spec, ROW["profile"], device, dtype)
    timer = Timer(device)
    mode = torch.enable_grad() if built.grad else torch.inference_mode()
    with mode:
        found = measure(built.fn, timer, ROW["time_budget_s"], ROW["min_time_s"]).to_json()
        ran = what_ran.record(built.fn, device)
    kernels = ran.get("kernels") or []
    return {
        "side": side,
        "median_s": found["stats"]["median"],
        "n": found["stats"]["n"],
        "timer": found["timer"],
        "params": built.params,
        "torch": torch.__version__,
        "cudnn": torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None,
        "cudnn_enabled": torch.backends.cudnn.enabled,
        "gpu": torch.cuda.get_device_name() if device == "cuda" else None,
        "attention_backend": ran["attention_backend"],
        "cudnn_used": ran["cudnn_used"],
        "top_kernel": kernels[0]["name"] if kernels else None,
        "operators": [o["name"] for o in ran["operators"]],
    }


def _environment(side: str, scratch: Path) -> dict[str, str]:
    """The process environment of ``side`` on this machine: a system cuDNN comes in through a shadow of
    site-packages (torch finds cuDNN by an RPATH, so LD_LIBRARY_PATH cannot switch it)."""
    env = dict(os.environ)
    lib_dir = ROW["sides"][side].get("system_lib_dir")
    if lib_dir:
        import torch

        site = Path(torch.__file__).resolve().parent.parent
        shadow = scratch / side / "site-packages"
        shadow.mkdir(parents=True)
        for entry in site.iterdir():
            if entry.name != "nvidia":
                (shadow / entry.name).symlink_to(entry)
        (shadow / "nvidia").mkdir()
        for entry in (site / "nvidia").iterdir() if (site / "nvidia").is_dir() else []:
            if entry.name != "cudnn":
                (shadow / "nvidia" / entry.name).symlink_to(entry)
        lib = shadow / "nvidia" / "cudnn" / "lib"
        lib.mkdir(parents=True)
        for library in sorted(Path(lib_dir).glob("libcudnn*.so*")):
            (lib / library.name).symlink_to(library.resolve())
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(shadow), env.get("PYTHONPATH")]))
        env["PYTORCH_SKIP_CUDNN_COMPATIBILITY_CHECK"] = "1"  # as the harness ran it; the row records it
    return env


def compare_here(rounds: int) -> Summary:
    """Interleaved rounds, one fresh process per side per round, as the harness ran the row."""
    sides = list(ROW["sides"])
    found: dict[str, list[OneProcess]] = {side: [] for side in sides}
    with tempfile.TemporaryDirectory(prefix="repro-env-") as scratch:
        envs = {side: _environment(side, Path(scratch)) for side in sides}
        for index in range(rounds):
            for side in sides:
                done = subprocess.run(
                    [sys.executable, os.path.abspath(__file__), "--one", "--side", side],
                    env=envs[side],
                    capture_output=True,
                    text=True,
                    check=False,
                )
                if done.returncode != 0:
                    sys.exit(f"{side} round {index + 1} failed:\n{done.stderr[-3000:]}")
                found[side].append(json.loads(done.stdout.strip().splitlines()[-1]))
                print(
                    f"round {index + 1} {side}: {found[side][-1]['median_s'] * 1e6:.1f} us", file=sys.stderr
                )
    return summary(found)


def summary(found: dict[str, list[OneProcess]]) -> Summary:
    baseline, candidate = list(ROW["sides"])
    medians = {side: statistics.median(r["median_s"] for r in rows) for side, rows in found.items()}
    ratio = medians[candidate] / medians[baseline]
    return {
        "row": ROW["title"],
        "medians_s": medians,
        "ratio": ratio,
        "report_ratio": ROW["report_ratio"],
        "within_5_pct_of_report": abs(ratio / ROW["report_ratio"] - 1) <= 0.05,
        "rounds": {side: len(rows) for side, rows in found.items()},
        "what_ran": {side: sorted({_what_ran(r) for r in rows}) for side, rows in found.items()},
        "runs": found,
    }


def _what_ran(run: OneProcess) -> str:
    """The largest kernel (on a CPU, the operators), and the attention backend where attention ran."""
    ran = run["top_kernel"] or ", ".join(run["operators"])
    return f"attention backend {run['attention_backend']}: {ran}" if run["attention_backend"] else ran


def main() -> None:
    parser = argparse.ArgumentParser(description=ROW.get("title", __doc__))
    parser.add_argument("--one", action="store_true", help="measure one process of --side and print JSON")
    parser.add_argument("--side", choices=list(ROW["sides"]), default="baseline")
    parser.add_argument("--rounds", type=int, default=7, help="processes per side (default 7, as the row)")
    parser.add_argument("--ratio", nargs=2, metavar=("BASELINE_JSONL", "CANDIDATE_JSONL"))
    args = parser.parse_args()
    if args.one:
        print(json.dumps(measure_here(args.side)))
    elif args.ratio:
        lines = [Path(p).read_text().split("\n") for p in args.ratio]
        rows = [[json.loads(line) for line in text if line.strip()] for text in lines]
        print(json.dumps(summary(dict(zip(ROW["sides"], rows, strict=True))), indent=1))
    else:
        print(json.dumps(compare_here(args.rounds), indent=1))


if __name__ == "__main__":
    main()
