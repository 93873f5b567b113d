"""``harness repro``: one report row as a standalone reproducer (script, README, Dockerfiles)."""

from __future__ import annotations

import argparse
from pathlib import Path

from harness import jsonio
from harness.cli import option_groups, requests
from harness.cli.checked_types import nonempty_path
from harness.cli.command import Command
from harness.cli.output import EXIT_OK, GATE_EXIT, Output


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--results", type=nonempty_path, action="append", required=True, help="results folder (repeatable)"
    )
    parser.add_argument("--workload", required=True, help="the row's workload, e.g. sdpa")
    parser.add_argument("--dtype", required=True, help="the row's dtype, e.g. bf16")
    parser.add_argument(
        "--candidate", help="text in the row's cell id or label, where several cells have the row"
    )
    parser.add_argument(
        "--knobs", help="the row's knobs as the report writes them, e.g. 'benchmark=0 deterministic=0 tf32=0'"
    )
    parser.add_argument(
        "--out", type=nonempty_path, help="folder for the reproducer (default: repro/<workload>-<dtype>)"
    )
    option_groups.build_args(parser)  # for docker cells' Dockerfiles


def handle(args: argparse.Namespace, out: Output) -> int:
    from harness.report import pipeline
    from harness.report.analysis.release_gate import Policy
    from harness.results import folder
    from harness.workflows import repro

    plan = pipeline.merged_plan(args.results)
    where = args.out or Path("repro") / f"{args.workload}-{args.dtype}"
    jsonio.output_folder(where, "out")
    with folder.locked(where):  # two reproducers into one folder never mix their files
        written = repro.write(
            plan,
            args.results,
            repro.RowAsked(args.workload, args.dtype, args.candidate, args.knobs),
            where,
            Policy(GATE_EXIT),
            requests.build_options(args),
        )
    print(f"reproducer of {written.title}:")
    for path in written.files:
        print(f"  {path}")
    for note in written.notes:  # a side repro.py will refuse to run until it is given its Python
        out.warn(f"note: {note}")
    return EXIT_OK


COMMAND = Command(
    "repro",
    "write a standalone reproducer (script, README, Dockerfiles) of one report row",
    "--results results/smoke --workload conv2d_r50_3x3 --dtype bf16",
    arguments,
    handle,
)
