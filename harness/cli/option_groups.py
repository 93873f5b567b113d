"""Option groups several subcommands share: the matrix, verbosity, the gate's strictness, and what a run
takes (results folder, GPUs, backends' settings, Slurm, Kubernetes)."""

from __future__ import annotations

import argparse
from pathlib import Path

from harness.backends import registry
from harness.backends.docker import gpu_access
from harness.cli.checked_types import (
    TIMEOUT,
    count,
    index_url,
    interpreter,
    memory,
    nonempty_path,
    slurm_setting,
)
from harness.cli.console import NORMAL, QUIET, VERBOSE

DEFAULT_MATRIX = Path("matrix.yaml")


def verbosity_args(parser: argparse.ArgumentParser) -> None:
    loud = parser.add_mutually_exclusive_group()
    loud.add_argument(
        "-q",
        "--quiet",
        dest="verbosity",
        action="store_const",
        const=QUIET,
        default=NORMAL,
        help="print only warnings, errors and the summary",
    )
    loud.add_argument(
        "-v",
        "--verbose",
        dest="verbosity",
        action="store_const",
        const=VERBOSE,
        help="also print what each run says as it goes (the suite's measurements, image builds)",
    )


def strict_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--strict", action="store_true", help="exit 1 also on inconclusive or missing comparisons"
    )


def history_arg(
    parser: argparse.ArgumentParser,
    what: str = "the history folder (default: history/ beside the --matrix file)",
    default: object = None,
) -> None:
    parser.add_argument("--history", type=nonempty_path, metavar="DIR", default=default, help=what)


def matrix_arg(parser: argparse.ArgumentParser, default: object = DEFAULT_MATRIX) -> None:
    parser.add_argument(
        "--matrix", type=nonempty_path, default=default, help="matrix file (default: matrix.yaml)"
    )


CLUSTER_OPTIONS = (  # lines of their own: the help formatter keeps a description's lines as written
    "--backend slurm: --slurm-partition, --slurm-account, --slurm-time, --slurm-gpus\n"
    "('python -m harness run --help' explains each; Kubernetes Jobs: 'run --backend k8s')"
)


def run_args(
    parser: argparse.ArgumentParser, cluster_help: bool = True, out_default: str = "results/<matrix name>"
) -> None:
    """The options of a run. ``cluster_help`` False (qualify, bisect): the Slurm and Kubernetes options are
    taken but listed in one line, so that a first look at --help is not mostly cluster settings;
    ``out_default``: where the results go without --out, as --help says it."""
    parser.add_argument("--out", type=nonempty_path, help=f"results folder (default: {out_default})")
    parser.add_argument(
        "--timeout-s", type=TIMEOUT, default=3600.0, help="time limit per cell (default 3600)"
    )
    parser.add_argument(
        "--backend",
        choices=(*registry.KINDS, "slurm", "k8s"),
        help="override the matrix's backend; slurm: submit one array job, each task running the matrix's "
        "own backend (local or docker) on its node",
    )
    parser.add_argument(
        "--gpus",
        help="GPU ids to run on, one run per GPU at a time (e.g. 0,1, or 'all'); a suite with a multi-GPU "
        "workload gets them all, one run at a time (default: one run at a time on every GPU the backend "
        "sees)",
    )
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
        "--fresh",
        action="store_true",
        help="run everything again: first, everything earlier runs left in --out (every result, logs/, "
        "quarantine/) moves to superseded/",
    )
    local = parser.add_argument_group("local backend")
    local.add_argument(
        "--python",
        type=interpreter,
        help="interpreter with torch for the local backend's torch: installed cells (default: this one); "
        "a cell with a torch version runs in an environment of its own, kept in $HARNESS_CACHE "
        "(default ~/.cache/cudnn-harness)",
    )
    build_args(parser.add_argument_group("packages (docker images; local environments and cuDNN wheels)"))
    docker = parser.add_argument_group("docker backend")
    docker.add_argument(
        "--memory",
        type=memory,
        help="memory limit per container, e.g. 16g (default: none); a cell past it fails as OOM",
    )
    gpu_access_arg(docker)
    if not cluster_help:
        clusters = parser.add_argument_group("cluster backends", CLUSTER_OPTIONS)
        _cluster_args(clusters, clusters, shown=False)
        return
    _cluster_args(
        parser.add_argument_group("slurm (--backend slurm)"),
        parser.add_argument_group("kubernetes (--backend k8s)"),
        shown=True,
    )


def _cluster_args(queue: argparse._ArgumentGroup, k8s: argparse._ArgumentGroup, shown: bool) -> None:
    def said(text: str) -> str:
        return text if shown else argparse.SUPPRESS

    queue.add_argument(
        "--slurm-partition",
        type=slurm_setting("partition"),
        help=said("partition (default: the matrix's slurm.partition)"),
    )
    queue.add_argument("--slurm-account", type=slurm_setting("account"), help=said("account to charge"))
    queue.add_argument(
        "--slurm-time",
        type=slurm_setting("time"),
        help=said("time limit per task, e.g. 30, 01:00:00 (default 01:00:00)"),
    )
    queue.add_argument(
        "--slurm-gpus", type=count, help=said("GPUs per task (default 1 for a GPU suite, 0 for device: cpu)")
    )
    k8s.add_argument(
        "--dry-run",
        action="store_true",
        help=said(
            "print one Indexed Job per cell, submit nothing "
            "(without it, --backend k8s submits them through the configured cluster's API)"
        ),
    )
    k8s.add_argument(
        "--k8s-registry", help=said("registry the cell images were pushed to (prefixes the tag)")
    )
    k8s.add_argument(
        "--k8s-namespace", default="default", help=said("namespace of the Jobs (default: default)")
    )
    k8s.add_argument(
        "--k8s-results-claim",
        default="cudnn-harness-results",
        help=said("PersistentVolumeClaim mounted at /results"),
    )


def gpu_access_arg(parser: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    parser.add_argument(
        "--gpu-access",
        choices=gpu_access.MODES,
        help="how containers get their GPUs (default: the matrix's docker.gpu_access, else "
        "toolkit): toolkit = a device request (--gpus, needs the NVIDIA Container Toolkit); cdi = CDI names "
        "nvidia.com/gpu=N (Docker 25+, Podman); devices = /dev/nvidia* and the driver's libraries, read-only",
    )


def build_args(parser: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    parser.add_argument(
        "--wheelhouse",
        type=nonempty_path,
        help="install offline, from this folder of wheels alone (pip --no-index --find-links DIR): image "
        "builds, and the local backend's cell environments and cuDNN wheels",
    )
    parser.add_argument(
        "--ca-bundle", type=nonempty_path, help="extra CA bundle for builds behind a TLS-intercepting proxy"
    )
    parser.add_argument(
        "--index-url",
        type=index_url,
        help="package index (default: images: PyTorch's index for the CUDA variant, PyPI for a plain "
        "version; the local backend: the installer's default, PyPI)",
    )
