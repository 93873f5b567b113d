"""``harness report|compare|repro``: the commands that read results folders, print what they found and pick
the gate's exit code."""

from __future__ import annotations

import argparse
import csv
import io
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from harness import jsonio
from harness.cli import requests
from harness.cli.output import EXIT_FAILED, EXIT_INFRASTRUCTURE, EXIT_OK, GATE_EXIT, Output, policy, said

if TYPE_CHECKING:
    from harness.report import pipeline as folders


def report(args: argparse.Namespace, out: Output) -> int:
    from harness.report import pipeline as folders

    dirs = args.results or [Path("results") / requests.plan(args.matrix).name]
    plan = folders.merged_plan(dirs)
    return said(folders.report(plan, dirs, args.out or Path("reports") / plan.name, policy(args), out.warn))


def compare(args: argparse.Namespace, out: Output) -> int:
    from harness.report import pipeline as folders

    asked = folders.CompareRequest(
        args.a,
        args.b,
        args.only,
        (args.cell_a or args.cell, args.cell_b or args.cell),
        args.threshold_pct,
        args.alpha,
    )
    compared = folders.compare(asked, policy(args), args.out, out.warn)
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


def _compared(pairs: Sequence[folders.Pair], args: argparse.Namespace) -> str:
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


def repro(args: argparse.Namespace, out: Output) -> int:
    from harness.report import pipeline as folders
    from harness.report.analysis.release_gate import Policy
    from harness.results import folder
    from harness.workflows import repro

    plan = folders.merged_plan(args.results)
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
