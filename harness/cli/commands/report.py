"""``harness report``: results folders validated, merged and judged into a report, the gate its exit code."""

from __future__ import annotations

import argparse
from pathlib import Path

from harness.cli import option_groups, requests
from harness.cli.checked_types import nonempty_path
from harness.cli.command import Command
from harness.cli.output import Output, policy, said


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--results",
        type=nonempty_path,
        action="append",
        help="results folder (repeatable: shards or machines of one matrix merge; "
        "default: results/<matrix name>)",
    )
    option_groups.matrix_arg(parser)
    parser.add_argument("--out", type=nonempty_path, help="report folder (default: reports/<plan name>)")
    option_groups.strict_arg(parser)


def handle(args: argparse.Namespace, out: Output) -> int:
    from harness.report import pipeline

    dirs = args.results or [Path("results") / requests.plan(args.matrix).name]
    plan = pipeline.merged_plan(dirs)
    return said(pipeline.report(plan, dirs, args.out or Path("reports") / plan.name, policy(args), out.warn))


COMMAND = Command(
    "report",
    "validate and merge results into reports/, with verdicts",
    "--results results/smoke",
    arguments,
    handle,
    codes=True,
)
