"""The command line: every subcommand's arguments, and values checked where they are parsed.

argparse turns an ``ArgumentTypeError`` into one ``error: argument --x: ...`` line and exit 2, so a
``--timeout-s nan`` is refused before anything runs instead of failing every run it would have timed.
"""

from __future__ import annotations

import argparse
import math
import re
from collections.abc import Callable
from pathlib import Path

from harness import __version__, images
from harness.backends import gpu_access, registry
from harness.errors import InputError, Problem
from harness.executors import k8s_jobs
from harness.executors.launch import RunRequest, SlurmAsk
from harness.plan.model import DEFAULT_ALPHA, DEFAULT_REGRESSION_PCT
from harness.results.resume import Mode

DEFAULT_MATRIX = Path("matrix.yaml")


def number(what: str, above: float, at_most: float) -> Callable[[str], float]:
    """An argparse type: a finite number in (above, at_most]; ``what`` says what it is in the error."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not (math.isfinite(value) and above < value <= at_most):
            raise argparse.ArgumentTypeError(
                f"{text!r} is not {what}: a number > {above:g} and <= {at_most:g}"
            )
        return value

    parse.__name__ = what  # argparse names the type in some messages
    return parse


def count(text: str) -> int:
    """An argparse type: a whole number >= 0."""
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number >= 0")
    return value


def memory(text: str) -> str:
    """An argparse type: a container memory limit as Docker reads it (16g, 512m, 1073741824)."""
    if not re.fullmatch(r"[1-9][0-9]{0,15}[bkmgBKMG]?", text):
        raise argparse.ArgumentTypeError(f"{text!r} is not a memory size such as 16g, 512m or 1073741824")
    return text


TIMEOUT = number("a time limit in seconds", 0, 7 * 86400)


def parser(description: str) -> argparse.ArgumentParser:
    """Every subcommand's arguments; ``args.command`` names the subcommand."""
    parser = argparse.ArgumentParser(prog="python -m harness", description=description)
    parser.add_argument("--version", action="version", version=f"harness {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    plan = sub.add_parser("plan", help="validate a matrix and list its cells (no side effects)")
    _matrix_arg(plan)
    plan.add_argument("--json", action="store_true", help="print the plan as JSON")

    validate = sub.add_parser("validate", help="check result documents against schemas/result.schema.json")
    validate.add_argument("files", nargs="+", type=Path)

    run = sub.add_parser("run", help="run the suite in every cell of a matrix")
    _matrix_arg(run)
    _run_args(run)

    imgs = sub.add_parser("images", help="render and build one image per cell (docker backend)")
    _matrix_arg(imgs)
    _build_args(imgs)
    imgs.add_argument("--dry-run", action="store_true", help="print each rendered Dockerfile; build nothing")
    imgs.add_argument("--log-dir", type=Path, help="build logs (default: results/<matrix name>/logs)")

    task = sub.add_parser("slurm-task", help=argparse.SUPPRESS)  # what each task of a Slurm array runs
    task.add_argument("--results", type=Path, required=True)
    task.add_argument("--tasks", type=Path, required=True)
    task.add_argument("--index", type=int, required=True)

    rerun = sub.add_parser("rerun", help="run the exact image a docker result came from again")
    rerun.add_argument("result", type=Path)
    rerun.add_argument("--out", type=Path, help="results folder for the new result (default: results/rerun)")
    rerun.add_argument("--timeout-s", type=TIMEOUT, default=3600.0)
    rerun.add_argument("--gpus", default="all")
    _gpu_access_arg(rerun)

    rep = sub.add_parser("report", help="validate and merge results into reports/, with verdicts")
    rep.add_argument(
        "--results",
        type=Path,
        action="append",
        help="results folder (repeatable: shards or machines of one matrix merge; "
        "default: results/<matrix name>)",
    )
    _matrix_arg(rep)
    rep.add_argument("--out", type=Path, help="report folder (default: reports/<plan name>)")
    _strict_arg(rep)

    cmp = sub.add_parser(
        "compare", help="ad-hoc comparison of two runs (result files or folders): A is the baseline"
    )
    cmp.add_argument("a", type=Path, metavar="A", help="baseline: a result file or a results folder")
    cmp.add_argument("b", type=Path, metavar="B", help="candidate: a result file or a results folder")
    cmp.add_argument(
        "--only",
        metavar="TEXT",
        help="in folders, take only result files whose name contains TEXT (e.g. a cell id)",
    )
    cmp.add_argument(
        "--threshold-pct", type=number("a regression threshold in %", 0, 1000), default=DEFAULT_REGRESSION_PCT
    )
    cmp.add_argument("--alpha", type=number("a significance level", 0, 0.5), default=DEFAULT_ALPHA)
    cmp.add_argument(
        "--out", type=Path, help="also write the full report (Markdown, HTML, CSV, verdict.json) here"
    )
    _strict_arg(cmp)

    repro = sub.add_parser(
        "repro", help="write a standalone reproducer (script, README, Dockerfiles) of one report row"
    )
    repro.add_argument(
        "--results", type=Path, action="append", required=True, help="results folder (repeatable)"
    )
    repro.add_argument("--workload", required=True, help="the row's workload, e.g. sdpa")
    repro.add_argument("--dtype", required=True, help="the row's dtype, e.g. bf16")
    repro.add_argument(
        "--candidate", help="text in the row's cell id or label, where several cells have the row"
    )
    repro.add_argument(
        "--knobs", help="the row's knobs as the report writes them, e.g. 'benchmark=0 deterministic=0 tf32=0'"
    )
    repro.add_argument(
        "--out", type=Path, help="folder for the reproducer (default: repro/<workload>-<dtype>)"
    )
    _build_args(repro)  # for docker cells' Dockerfiles

    qualify = sub.add_parser("qualify", help="plan + run + report; exit 0 only if every cell ran")
    _matrix_arg(qualify)
    _run_args(qualify)
    qualify.add_argument("--report-out", type=Path, help="report folder (default: reports/<plan name>)")
    _strict_arg(qualify)
    return parser


def _strict_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--strict", action="store_true", help="exit 1 also on inconclusive or missing comparisons"
    )


def _matrix_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--matrix", type=Path, default=DEFAULT_MATRIX, help="matrix file (default: matrix.yaml)"
    )


def _run_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", type=Path, help="results folder (default: results/<matrix name>)")
    parser.add_argument("--python", help="interpreter with torch for the local backend (default: this one)")
    parser.add_argument(
        "--timeout-s", type=TIMEOUT, default=3600.0, help="time limit per cell (default 3600)"
    )
    parser.add_argument(
        "--backend",
        choices=(*registry.KINDS, "slurm", "k8s"),
        help="override the matrix's backend; slurm: submit one array job, each task running the matrix's "
        "own backend (local or docker) on its node",
    )
    parser.add_argument("--slurm-partition", help="slurm: partition (default: the matrix's slurm.partition)")
    parser.add_argument("--slurm-account", help="slurm: account to charge")
    parser.add_argument(
        "--slurm-time", help="slurm: time limit per task, e.g. 30, 01:00:00 (default 01:00:00)"
    )
    parser.add_argument(
        "--slurm-gpus",
        type=count,
        help="slurm: GPUs per task (default 1 for a GPU suite, 0 for device: cpu)",
    )
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="k8s: print one Indexed Job per cell, submit nothing "
        "(without it, --backend k8s submits them through the configured cluster's API)",
    )
    parser.add_argument(
        "--k8s-registry", help="k8s: registry the cell images were pushed to (prefixes the tag)"
    )
    parser.add_argument(
        "--k8s-namespace", default="default", help="k8s: namespace of the Jobs (default: default)"
    )
    parser.add_argument(
        "--k8s-results-claim",
        default="cudnn-harness-results",
        help="k8s: PersistentVolumeClaim mounted at /results",
    )
    parser.add_argument(
        "--gpus",
        help="GPU ids to run on, one run per GPU at a time (e.g. 0,1, or 'all'); a suite with a multi-GPU "
        "workload gets them all, one run at a time (default: one run at a time on every GPU the backend "
        "sees)",
    )
    parser.add_argument(
        "--memory",
        type=memory,
        help="docker backend: memory limit per container, e.g. 16g (default: none); "
        "a cell past it fails as OOM",
    )
    _gpu_access_arg(parser)
    parser.add_argument(
        "--only",
        action="append",
        metavar="TEXT",
        help="run only the cells whose id contains TEXT (repeatable)",
    )
    again = parser.add_mutually_exclusive_group()
    again.add_argument(
        "--rerun-failed",
        action="store_true",
        help="run only the runs whose earlier result in --out failed (default: keep every valid result "
        "of the same image and suite version, and run what is missing)",
    )
    again.add_argument(
        "--fresh", action="store_true", help="run everything again; earlier results move to superseded/"
    )
    _build_args(parser)


def _gpu_access_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--gpu-access",
        choices=gpu_access.MODES,
        help="docker backend: how containers get their GPUs (default: the matrix's docker.gpu_access, else "
        "toolkit): toolkit = a device request (--gpus, needs the NVIDIA Container Toolkit); cdi = CDI names "
        "nvidia.com/gpu=N (Docker 25+, Podman); devices = /dev/nvidia* and the driver's libraries, read-only",
    )


def _build_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--wheelhouse", type=Path, help="build offline: pip --no-index --find-links DIR")
    parser.add_argument(
        "--ca-bundle", type=Path, help="extra CA bundle for builds behind a TLS-intercepting proxy"
    )
    parser.add_argument(
        "--index-url", help="torch wheel index (default: PyTorch's index for the CUDA variant)"
    )


def k8s_target(args: argparse.Namespace) -> k8s_jobs.Target:
    """Where --backend k8s sends its Jobs."""
    return k8s_jobs.Target(args.k8s_registry, args.k8s_namespace, args.k8s_results_claim, args.timeout_s)


def build_options(args: argparse.Namespace) -> images.BuildOptions:
    problems = []
    if args.wheelhouse is not None and not any(args.wheelhouse.glob("*.whl")):
        problems.append(Problem(str(args.wheelhouse), "--wheelhouse", "holds no .whl files"))
    if args.ca_bundle is not None and not args.ca_bundle.is_file():
        problems.append(Problem(str(args.ca_bundle), "--ca-bundle", "no such file"))
    if problems:
        raise InputError(problems)
    return images.BuildOptions(index_url=args.index_url, wheelhouse=args.wheelhouse, ca_bundle=args.ca_bundle)


def settings(args: argparse.Namespace, backend: str) -> registry.Settings:
    """How to make ``backend`` from what the command line says."""
    if backend == "docker":
        if args.command == "rerun":  # the image exists: nothing is built, and the GPUs are the container's
            return registry.Settings("docker", args.timeout_s, gpu_access=args.gpu_access, gpus=args.gpus)
        return registry.Settings(
            "docker",
            args.timeout_s,
            memory=args.memory,
            gpu_access=args.gpu_access,
            build=build_options(args),
        )
    return registry.Settings("local", args.timeout_s, python=args.python)


def run_request(args: argparse.Namespace, backend: str, out: Path) -> RunRequest:
    """What ``run`` and ``qualify`` ask: where, which cells, what to redo, on which GPUs or through Slurm."""
    mode = Mode.RERUN_FAILED if args.rerun_failed else (Mode.FRESH if args.fresh else Mode.RESUME)
    slurm = None
    if args.backend == "slurm":
        slurm = SlurmAsk(args.slurm_partition, args.slurm_account, args.slurm_time, args.slurm_gpus)
    return RunRequest(out, settings(args, backend), tuple(args.only or ()), mode, args.gpus, slurm)
