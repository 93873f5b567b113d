"""``harness bisect``: the first release where one row changed, found by a binary search along the matrix's
release axis."""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING

from harness.backends import registry
from harness.cli import option_groups, requests
from harness.cli.checked_types import nonempty_path
from harness.cli.command import Command
from harness.cli.output import EXIT_OK, Output
from harness.errors import BackendUnavailable

if TYPE_CHECKING:
    from harness.plan.model import Plan


def arguments(parser: argparse.ArgumentParser) -> None:
    option_groups.matrix_arg(parser)
    parser.add_argument("--row", required=True, metavar="WORKLOAD:DTYPE", help="the row, e.g. sdpa:bf16")
    parser.add_argument("--good", required=True, help="a release on the axis where the row is as it was")
    parser.add_argument("--bad", required=True, help="a release on the axis where the row has changed")
    parser.add_argument(
        "--results",
        type=nonempty_path,
        action="append",
        help="results folder whose rounds are reused (repeatable; default: results/<matrix name>)",
    )
    option_groups.run_args(
        parser, cluster_help=False, out_default="results/<matrix name>-bisect/<workload>-<dtype>"
    )
    option_groups.verbosity_args(parser)


def handle(args: argparse.Namespace, out: Output) -> int:
    from harness.workflows.bisect import bisect, rounds_said, run_with

    plan = requests.plan(args.matrix, registry.realizing(args.backend), args)
    _runs_here(plan, args)
    workload, _, dtype = args.row.partition(":")
    results = args.out or Path("results") / f"{plan.name}-bisect" / f"{workload}-{dtype}"
    # a fresh search measures every release it needs again: no folder's earlier rounds are reused
    reuse = [] if args.fresh else args.results or [p for p in [Path("results") / plan.name] if p.is_dir()]
    run = run_with(requests.run_request(args, plan.backend, results), out.say, out.detail)
    args.kept_in = results  # what a Ctrl-C says was kept
    found = bisect(plan, args.row, args.good, args.bad, results, reuse, run, out.say)
    ratio = f"{found.ratio:.3f}" if found.ratio is not None else "n/a"
    ran = f", what ran: {found.what_ran}" if found.what_ran else ""
    if found.located and not found.significant:
        print(
            f"{found.row}: the likeliest step is {found.before.label} -> {found.after.label} "
            f"({found.verdict}, ratio {ratio}{ran}), but no step is shown to be a change: {args.bad} "
            f"against {args.good} is {found.ends}. The search followed each release's median; more rounds "
            f"(raise 'rounds:' in {args.matrix} past its {plan.rounds}) or a quieter host decide it"
        )
    elif found.located:
        print(
            f"{found.row}: the change began at {found.before.label} -> {found.after.label} "
            f"({found.verdict}, ratio {ratio}{ran})"
        )
    else:
        print(
            f"{found.row}: {args.bad} is not judged different from {args.good} ({found.verdict}, ratio "
            f"{ratio}): there is no change to locate; for a change, pick a bad release that a report of "
            "the sweep calls slower or faster (its 'Where each change began')"
        )
    for probe in found.probes:
        how = "measured" if probe.measured else "reused"
        print(f"  {probe.release.label}: {probe.verdict} ({rounds_said(probe.rounds)}, {how})")
    where = f"; new results in {results}/" if found.measured else "; every round was reused, none measured"
    print(
        f"measured {found.measured} of the {found.between} releases from {args.good} to {args.bad} "
        f"(a full sweep measures {found.between}){where}"
    )
    return EXIT_OK


def _runs_here(plan: Plan, args: argparse.Namespace) -> None:
    """Before any round: InputError for a row or release the matrix does not hold (exit 2), and
    BackendUnavailable (exit 3) where this host cannot run the cells the search needs: no torch where
    they ask for the installed one, or no GPU for a cuDNN release's cells (each round would fail)."""
    from harness.backends.host import has_nvidia_gpu, without_a_gpu
    from harness.workflows.bisect import cells_between, check_folders

    check_folders(args.results or [])  # bad input is said first, as exit 2
    needed = cells_between(plan, args.row, args.good, args.bad)
    requests.torch_check(dataclasses.replace(plan, cells=tuple(needed)), args)
    if plan.backend == "local" and args.backend != "slurm" and not has_nvidia_gpu():
        why = without_a_gpu(needed)
        if why:
            raise BackendUnavailable(f"bisect cannot run here: {why}")


COMMAND = Command(
    "bisect",
    "find the first release where one row changed, measuring as few releases as it can",
    "--matrix sweep.yaml --row conv2d_r50_3x3:bf16 --good 9.12.0.46 --bad 9.28.1.4",
    arguments,
    handle,
    more="A binary search along the matrix's release axis (cuDNN {wheel: X} releases, or torch "
    "versions)\nbetween a good and a bad release, for one row; results already in --results are reused.",
    codes=True,
)
