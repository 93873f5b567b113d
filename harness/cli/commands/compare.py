"""``harness compare``: two runs (result files or folders), A the baseline, judged row by row and printed
as a table, Markdown, CSV or JSON; the gate is its exit code."""

from __future__ import annotations

import argparse
import csv
import io
import json
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from harness.cli import option_groups
from harness.cli.checked_types import nonempty_path, number
from harness.cli.command import Command
from harness.cli.output import EXIT_FAILED, EXIT_INFRASTRUCTURE, EXIT_OK, Output, policy, said
from harness.plan.model import DEFAULT_ALPHA, DEFAULT_REGRESSION_PCT
from harness.report.writers import choices

if TYPE_CHECKING:
    from harness.report import pipeline


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "a", type=nonempty_path, metavar="A", help="baseline: a result file or a results folder"
    )
    parser.add_argument(
        "b", type=nonempty_path, metavar="B", help="candidate: a result file or a results folder"
    )
    parser.add_argument(
        "--cell",
        metavar="TEXT",
        help="on each side, take only the cell whose id contains TEXT (e.g. bundled, or a whole cell id)",
    )
    parser.add_argument("--cell-a", metavar="TEXT", help="as --cell, for side A only (over --cell)")
    parser.add_argument("--cell-b", metavar="TEXT", help="as --cell, for side B only (over --cell)")
    parser.add_argument(
        "--only",
        metavar="TEXT",
        help="in folders, take only result files whose name contains TEXT (e.g. r1. for first rounds)",
    )
    parser.add_argument(
        "--threshold-pct",
        type=number("a regression threshold in %", 0, 1000),
        help="a row is slower or faster only beyond this change, for every workload (default: the "
        "thresholds of A's plan.json, per workload too, as report judges; B's where A has none; "
        f"{DEFAULT_REGRESSION_PCT:g} where neither has one)",
    )
    parser.add_argument(
        "--alpha",
        type=number("a significance level", 0, 0.5),
        help="significance level of the test (Welch's t or Mann-Whitney U; TOST uses 1 - 2 alpha; default: "
        f"A's plan's, else B's, {DEFAULT_ALPHA:g} where neither has one)",
    )
    parser.add_argument(
        "--out",
        type=nonempty_path,
        help="also write the full report (Markdown, HTML, CSV, verdict.json) here; cell by cell, one "
        "folder per cell in it",
    )
    parser.add_argument(
        "--only-changed", action="store_true", help="print only the rows whose verdict is not 'same'"
    )
    parser.add_argument(
        "--sort",
        choices=choices.SORTS,
        default="name",
        help="row order: the report's, or the largest change first",
    )
    parser.add_argument(
        "--format",
        choices=choices.FORMATS,
        default="table",
        help="what to print: a table, Markdown, CSV or JSON",
    )
    option_groups.strict_arg(parser)


def handle(args: argparse.Namespace, out: Output) -> int:
    from harness.report import pipeline

    asked = pipeline.CompareRequest(
        args.a,
        args.b,
        args.only,
        (args.cell_a or args.cell, args.cell_b or args.cell),
        args.threshold_pct,
        args.alpha,
    )
    compared = pipeline.compare(asked, policy(args), args.out, out.warn)
    pairs = compared.pairs
    # CSV and JSON are read by programs: their rows (every cell's in one table) alone go to stdout
    machine = args.format in ("csv", "json")
    summary = sys.stderr if machine else sys.stdout
    if machine:
        print(_compared(pairs, args))
    codes = []
    for pair in pairs:
        if len(pairs) > 1:  # cell by cell: each cell's rows and verdict under its id
            print(f"\n{'### ' if args.format == 'md' else ''}cell {pair.title}:", file=summary)
        if not machine:
            print(_compared([pair], args))
        codes.append(said(pair.report, summary))
    print(f"judged at {compared.judged}", file=summary)  # a table's rows never say which thresholds
    # a regression outranks an infrastructure failure, which outranks a pass
    return max(codes, key=(EXIT_OK, EXIT_INFRASTRUCTURE, EXIT_FAILED).index)


def _compared(pairs: Sequence[pipeline.Pair], args: argparse.Namespace) -> str:
    """compare's rows as --format asks: one pair's as they are; several pairs' (CSV, JSON) in one table
    with the cell first."""
    from harness.report.writers import terminal

    texts = [
        terminal.comparison(p.report.analysis.timing, args.format, args.only_changed, args.sort)
        for p in pairs
    ]
    if len(pairs) == 1:
        return texts[0]
    if args.format == "json":
        records = [
            {"cell": p.title, **row} for p, text in zip(pairs, texts, strict=True) for row in json.loads(text)
        ]
        return json.dumps(records, indent=1)
    table: list[list[str]] = []
    for p, text in zip(pairs, texts, strict=True):
        header, *rows = csv.reader(io.StringIO(text))
        table += [] if table else [["cell", *header]]
        table += [[p.title, *row] for row in rows]
    merged = io.StringIO()
    csv.writer(merged, lineterminator="\n").writerows(table)
    return merged.getvalue().rstrip("\n")


COMMAND = Command(
    "compare",
    "ad-hoc comparison of two runs (result files or folders): A is the baseline",
    "results/before results/after --cell bundled",
    arguments,
    handle,
    more="A side's cells are never pooled: one cell a side is compared A -> B; folders that hold the "
    "same cells\nare compared cell by cell; otherwise --cell (or --cell-a, --cell-b) picks one.\n"
    "Each row is judged over the per-round medians: with 3 to 6 rounds a side by Welch's t on their"
    " logs\n(A -> B and the ratio: their geometric means) and TOST for same, at the 1 - 2 alpha"
    " interval; with 7\n"
    "or more by the Mann-Whitney U test (their medians) and a 99%% bootstrap interval; with one round a\n"
    "side from that process's samples, never a verdict. The rounds column names the test.",
    codes=True,
)
