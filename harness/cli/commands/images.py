"""``harness images``: one image per cell of the docker backend, rendered (``--dry-run``) or built."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from harness import jsonio
from harness.cli import option_groups, requests
from harness.cli.checked_types import nonempty_path
from harness.cli.command import Command
from harness.cli.output import EXIT_FAILED, EXIT_OK, Output


def arguments(parser: argparse.ArgumentParser) -> None:
    option_groups.matrix_arg(parser)
    option_groups.build_args(parser)
    option_groups.verbosity_args(parser)
    parser.add_argument(
        "--dry-run", action="store_true", help="print each rendered Dockerfile; build nothing"
    )
    parser.add_argument(
        "--log-dir", type=nonempty_path, help="build logs (default: results/<matrix name>/logs)"
    )


def handle(args: argparse.Namespace, out: Output) -> int:
    from tabulate import tabulate

    from harness.backends.docker.dockerfile import render

    plan = requests.plan(args.matrix, "docker")
    options = requests.build_options(args)
    if args.dry_run:
        for cell in plan.cells:
            rendered = render(cell, options, plan.image_python)
            print(f"# ===== {rendered.reference}\n{rendered.dockerfile}")
        return EXIT_OK
    from harness.backends.docker.backend import build_all

    # the build logs' folder: a --log-dir as the user names it (a link there is followed once, here), else
    # logs/ of the results folder, where a planted link or file is refused before the engine is asked;
    # nothing is created before the engine answers
    if args.log_dir:
        log_dir = Path(os.path.realpath(args.log_dir))
    else:
        log_dir = Path("results") / plan.name / "logs"
        if os.path.lexists(log_dir):
            jsonio.real_folder(log_dir)
    rows = [
        [b.cell_id, b.image.reference, b.state, f"{b.seconds:.1f}", b.error or ""]
        for b in build_all(options, plan, log_dir, out.say, out.detail)
    ]
    print(tabulate(rows, headers=["cell", "image", "state", "seconds", "error"]))
    states = [row[2] for row in rows]
    print(f"{states.count('built')} built, {states.count('cached')} cached, {states.count('FAILED')} failed")
    return EXIT_FAILED if "FAILED" in states else EXIT_OK


COMMAND = Command(
    "images",
    "render and build one image per cell (docker backend)",
    "--matrix sweep.yaml --dry-run",
    arguments,
    handle,
)
