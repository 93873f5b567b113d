#!/usr/bin/env python3
"""Reproducer of one row of a cudnn-harness report (the template `harness repro` fills in).

Needs only torch and the standard library. The workload is built and timed by the harness suite's own
code, carried verbatim in SOURCES below (same shapes, dtype, seeds, knobs and timer as the row), so the
numbers are the row's, not a re-implementation's.

    python repro.py                       # both sides, interleaved rounds, here (local cells)
    python repro.py --python SIDE=PATH    # ... with SIDE run by another Python with the same torch
    python repro.py --one [--side NAME]   # one process of one side: prints one JSON line
    python repro.py --ratio A.jsonl B.jsonl   # the ratio of two sides' --one lines (docker cells)

Each side's process checks first that the torch it imported is the build the side's result recorded, and
refuses (exit 2) where it is not: a row across torch builds is never measured with one torch for both.
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
from typing import NoReturn, TypedDict


class SideRecipe(TypedDict):
    """How one side's environment is made, and what its result recorded of it."""

    cell: str
    label: str
    cudnn_enabled: bool
    cudnn_lib_dir: str | None  # a cuDNN the local backend shadowed in, system or a release's (None: torch's)
    torch: str  # the build the side's process must import: torch.__version__ as its result recorded it
    torch_git: str | None  # and its torch.version.git_version, where recorded
    interpreter: str | None  # the Python that ran the side's result (its environment's, for a torch build)
    environment: str | None  # local, a torch build: the cell's virtual environment
    install: str | None  # what makes that torch elsewhere, e.g. torch==2.13.0 (None: the cell took any)
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
    backend: str  # local, docker or k8s: how the cells ran
    own_interpreters: bool  # the sides recorded other environments (a torch build, a Python): each its own
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
    python: str  # the interpreter that ran it
    torch: str
    torch_git: str | None
    torch_path: str  # the folder of the torch it imported
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
    torch: dict[str, list[str]]  # each side's torch builds, as its processes imported them
    what_ran: dict[str, list[str]]
    runs: dict[str, list[OneProcess]]


ROW: ScriptRow = json.loads("{}")  # filled in: the row, its workload, and how each side's environment is made
SOURCES: dict[str, str] = {}  # filled in: harness/suite files this workload needs, verbatim


def refuse(message: str) -> NoReturn:
    """Exit 2, as the harness does for bad input: what is wrong and what to do, on stderr."""
    print(f"repro.py: {message}", file=sys.stderr)
    sys.exit(2)


def _build(version: str, git: str | None) -> str:
    return f"{version} (git {git[:12]})" if git else version


def check_torch(side: str, version: str, git: str | None, where: str) -> None:
    """Refuse a side whose process imported another torch than the build its result recorded: a row across
    torch builds measured with one torch for both would answer another question."""
    recipe = ROW["sides"][side]
    wanted, wanted_git = recipe["torch"], recipe["torch_git"]
    if version == wanted and not (wanted_git and git and git != wanted_git):
        return
    ran = f" (its result ran under {recipe['interpreter']})" if recipe["interpreter"] else ""
    refuse(
        f"the {side} side's result recorded torch {_build(wanted, wanted_git)}, but {where} imported torch "
        f"{_build(version, git)}: run the {side} side under a Python that holds torch {wanted}{ran}"
    )


def _suite_on_path() -> None:
    root = Path(tempfile.mkdtemp(prefix="repro-suite-"))
    for name, text in {"harness/__init__.py": "", "harness/suite/__init__.py": "", **SOURCES}.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    sys.path.insert(0, str(root))


def measure_here(side: str) -> OneProcess:
    """One process of ``side``: check its torch, build the workload, time it as the suite does, and say
    what ran."""
    import importlib

    if ROW["knobs"]["deterministic"]:
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")  # before CUDA initializes
    if ROW["sides"][side]["compat_check_overridden"]:  # as the harness ran it; the row records it
        os.environ.setdefault("PYTORCH_SKIP_CUDNN_COMPATIBILITY_CHECK", "1")
    try:
        import torch
    except ImportError as exc:
        wanted = ROW["sides"][side]["torch"]
        refuse(f"the {side} side needs torch {wanted}, but {sys.executable} cannot import torch ({exc})")

    git = getattr(torch.version, "git_version", None)
    check_torch(side, str(torch.__version__), git, f"this process ({sys.executable}, {torch.__file__})")
    _suite_on_path()
    family = importlib.import_module(f"harness.suite.workloads.{ROW['family']}")
    from harness.suite.precision import tf32_asked
    from harness.suite.probes import what_ran
    from harness.suite.timing.measure import measure
    from harness.suite.timing.timer import Timer
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
        "python": sys.executable,
        "torch": str(torch.__version__),
        "torch_git": git,
        "torch_path": os.path.dirname(torch.__file__),
        "cudnn": torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None,
        "cudnn_enabled": torch.backends.cudnn.enabled,
        "gpu": torch.cuda.get_device_name() if device == "cuda" else None,
        "attention_backend": ran["attention_backend"],
        "cudnn_used": ran["cudnn_used"],
        "top_kernel": kernels[0]["name"] if kernels else None,
        "operators": [o["name"] for o in ran["operators"]],
    }


def interpreters(asked: dict[str, str]) -> dict[str, str]:
    """The Python that runs each side: ``--python SIDE=PATH``; else, where the sides' results recorded other
    environments (a row across torch builds), the one each side's result ran under; else this one."""
    chosen: dict[str, str] = {}
    for side, recipe in ROW["sides"].items():
        own = recipe["interpreter"] if ROW["own_interpreters"] else sys.executable
        python = asked.get(side) or own
        if not python or not os.path.isfile(python) or not os.access(python, os.X_OK):
            refuse(_no_interpreter(side, python, side in asked))
        chosen[side] = python
    return chosen


def _no_interpreter(side: str, python: str | None, asked: bool) -> str:
    recipe = ROW["sides"][side]
    if asked:
        return f"--python {side}={python}: no such executable"
    recorded = f"its result ran under {python}, which is not on this machine" if python else "none recorded"
    make = (
        f"python3 -m venv {side}-env && {side}-env/bin/pip install {recipe['install']}"
        if recipe["install"]
        else f"a Python whose torch is {recipe['torch']}"
    )
    docker = "; or build and run each side's Dockerfile (README.md)" if ROW["backend"] == "docker" else ""
    return (
        f"the {side} side runs torch {recipe['torch']} in its own environment, and {recorded}: make one "
        f"({make}) and name it: python3 repro.py --python {side}={side}-env/bin/python{docker}"
    )


def _site_packages(python: str) -> Path:
    """Where ``python`` finds torch, asked without importing it."""
    ask = "import importlib.util as u; s = u.find_spec('torch'); print(s.origin if s else '')"
    done = subprocess.run([python, "-c", ask], capture_output=True, text=True, check=False)
    origin = done.stdout.strip()
    if done.returncode != 0 or not origin:
        refuse(f"{python} has no torch")
    return Path(origin).resolve().parent.parent


def _environment(side: str, python: str, scratch: Path) -> dict[str, str]:
    """The process environment of ``side`` on this machine: a system cuDNN or a release's comes in through
    a shadow of the side's site-packages (torch finds cuDNN by an RPATH, so LD_LIBRARY_PATH cannot switch
    it), as the harness ran it."""
    env = dict(os.environ)
    lib_dir = ROW["sides"][side]["cudnn_lib_dir"]
    if lib_dir:
        site = _site_packages(python)
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
    return env


def compare_here(rounds: int, asked: dict[str, str]) -> Summary:
    """Interleaved rounds, one fresh process per side per round, each side under its own Python, as the
    harness ran the row."""
    sides = list(ROW["sides"])
    pythons = interpreters(asked)
    for side in sides:
        print(f"{side}: {pythons[side]}, torch {ROW['sides'][side]['torch']}", file=sys.stderr)
    found: dict[str, list[OneProcess]] = {side: [] for side in sides}
    with tempfile.TemporaryDirectory(prefix="repro-env-") as scratch:
        envs = {side: _environment(side, pythons[side], Path(scratch)) for side in sides}
        for index in range(rounds):
            for side in sides:
                done = subprocess.run(
                    [pythons[side], os.path.abspath(__file__), "--one", "--side", side],
                    env=envs[side],
                    capture_output=True,
                    text=True,
                    check=False,
                )
                if done.returncode == 2:  # the side refused: another torch than its result's, or none
                    said = (done.stderr.strip().splitlines() or [""])[-1].removeprefix("repro.py: ")
                    refuse(f"{said}; name it with: python3 repro.py --python {side}=PATH")
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
        "torch": {side: sorted({r["torch"] for r in rows}) for side, rows in found.items()},
        "what_ran": {side: sorted({_what_ran(r) for r in rows}) for side, rows in found.items()},
        "runs": found,
    }


def _what_ran(run: OneProcess) -> str:
    """The largest kernel (on a CPU, the operators), and the attention backend where attention ran."""
    ran = run["top_kernel"] or ", ".join(run["operators"])
    return f"attention backend {run['attention_backend']}: {ran}" if run["attention_backend"] else ran


def _asked_pythons(parser: argparse.ArgumentParser, given: list[str]) -> dict[str, str]:
    asked: dict[str, str] = {}
    for item in given:
        side, _, path = item.partition("=")
        if side not in ROW["sides"] or not path:
            parser.error(f"--python {item}: give SIDE=PATH, SIDE one of {', '.join(ROW['sides'])}")
        asked[side] = path
    return asked


def ratio_of(paths: list[str]) -> Summary:
    """The sides' ``--one`` lines (from their images), each checked to be its side's, with its torch."""
    found: dict[str, list[OneProcess]] = {}
    for side, path in zip(ROW["sides"], paths, strict=True):
        lines = [json.loads(line) for line in Path(path).read_text().split("\n") if line.strip()]
        for line in lines:
            if line.get("side") != side:
                refuse(f"{path} holds a line of the {line.get('side')} side, given as the {side} side's")
            check_torch(side, str(line.get("torch")), line.get("torch_git"), f"a line of {path}")
        found[side] = lines
    return summary(found)


def main() -> None:
    parser = argparse.ArgumentParser(description=ROW.get("title", __doc__))
    parser.add_argument("--one", action="store_true", help="measure one process of --side and print JSON")
    parser.add_argument("--side", choices=list(ROW["sides"]), default="baseline")
    parser.add_argument("--rounds", type=int, default=7, help="processes per side (default 7, as the row)")
    parser.add_argument("--ratio", nargs=2, metavar=("BASELINE_JSONL", "CANDIDATE_JSONL"))
    parser.add_argument(
        "--python",
        action="append",
        default=[],
        metavar="SIDE=PATH",
        help="run SIDE under this Python (its torch must be the side's recorded build); repeatable",
    )
    args = parser.parse_args()
    asked = _asked_pythons(parser, args.python)
    if args.one:
        print(json.dumps(measure_here(args.side)))
    elif args.ratio:
        print(json.dumps(ratio_of(args.ratio), indent=1))
    else:
        print(json.dumps(compare_here(args.rounds, asked), indent=1))


if __name__ == "__main__":
    main()
