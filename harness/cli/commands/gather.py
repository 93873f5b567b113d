"""``harness gather``: what Kubernetes pods wrote (a copy of the results volume), as a results folder."""

from __future__ import annotations

import argparse
from pathlib import Path

from harness import jsonio
from harness.cli import option_groups, requests
from harness.cli.checked_types import nonempty_path
from harness.cli.command import Command
from harness.cli.output import EXIT_BAD_INPUT, EXIT_OK, Output
from harness.errors import InputError


def arguments(parser: argparse.ArgumentParser) -> None:
    option_groups.matrix_arg(parser)
    parser.add_argument(
        "--from",
        dest="source",
        type=nonempty_path,
        required=True,
        help="the copy of the results volume (kubectl cp)",
    )
    parser.add_argument("--out", type=nonempty_path, help="results folder (default: results/<matrix name>)")
    parser.add_argument("--k8s-registry", help="registry the cell images were pushed to, as given to run")
    option_groups.build_args(parser)


def handle(args: argparse.Namespace, out: Output) -> int:
    from harness.executors.k8s import gather, jobs

    plan = requests.plan(args.matrix, "docker")
    if not args.source.is_dir():
        raise InputError.one(
            "--from", str(args.source), "is not a folder: give the copy of the results volume"
        )
    from harness.report import ownership

    ownership.refuse_inside_report(args.out or Path("results") / plan.name, "out")
    where = jsonio.output_folder(args.out or Path("results") / plan.name, "out")
    target = jobs.Target(args.k8s_registry)
    done = gather.gather(plan, args.source, where, requests.build_options(args), target, out.say)
    for name, why in done.refused:
        out.warn(f"error: {args.source / name}: {why}")
    print(
        f"gathered {len(done.kept)} results into {where}/, refused {len(done.refused)}; report with "
        f"'{args.prog} report --results {where}'"
    )
    return EXIT_BAD_INPUT if done.refused or not done.kept else EXIT_OK


COMMAND = Command(
    "gather",
    "collect what Kubernetes pods wrote (a copy of the results volume) into a results folder",
    "--matrix sweep.yaml --from volume-copy --out results/sweep",
    arguments,
    handle,
)
