"""``harness rerun``: the exact image a docker result came from, run again."""

from __future__ import annotations

import argparse
from pathlib import Path

from harness.cli import option_groups, requests
from harness.cli.checked_types import TIMEOUT, nonempty_path
from harness.cli.command import Command
from harness.cli.output import EXIT_FAILED, EXIT_OK, Output


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "result", type=nonempty_path, help="a docker result file (.json.gz) whose image runs again"
    )
    parser.add_argument(
        "--out", type=nonempty_path, help="results folder for the new result (default: results/rerun)"
    )
    parser.add_argument("--timeout-s", type=TIMEOUT, default=3600.0, help="time limit for the run")
    parser.add_argument("--gpus", default="all", help="GPU ids the container gets, e.g. 0,1, or 'all'")
    option_groups.gpu_access_arg(parser)


def handle(args: argparse.Namespace, out: Output) -> int:
    from harness.executors import rerun

    where = args.out or Path("results") / "rerun"
    doc, path = rerun.rerun(args.result, requests.settings(args, "docker"), where, out.say)
    failure = f": {doc['failure']['reason']}" if doc["failure"] else ""
    print(f"{doc['cell']['id']}: {doc['status']}{failure} -> {path}")
    return EXIT_OK if doc["status"] == "ok" else EXIT_FAILED


COMMAND = Command(
    "rerun",
    "run the exact image a docker result came from again",
    "results/sweep/torch2.11.0-cu130_cudnn-bundled_6d1f1e3a2b.r1.json.gz --out results/rerun",
    arguments,
    handle,
)
