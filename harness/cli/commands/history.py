"""``harness history add|list|reindex``: every run kept in a history folder, listed, its index rebuilt."""

from __future__ import annotations

import argparse
import json
import shlex
from dataclasses import asdict
from pathlib import Path

from harness.cli import option_groups
from harness.cli.checked_types import count_up_to
from harness.cli.command import Command
from harness.cli.output import EXIT_OK, Output
from harness.errors import one_line

NEWEST_MAX = 1_000_000


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("action", choices=("add", "list", "reindex"), help="what to do")
    parser.add_argument("results", nargs="*", type=Path, help="add: results folders or files")
    option_groups.history_arg(parser)
    option_groups.matrix_arg(parser)
    parser.add_argument("--json", action="store_true", help="list: print what it holds as JSON")
    parser.add_argument(
        "--newest",
        type=count_up_to(NEWEST_MAX),
        default=10,
        help=f"list: how many of the newest runs to show (at most {NEWEST_MAX:,})",
    )


def history_dir(args: argparse.Namespace) -> Path:
    """--history, else ``history/`` beside the matrix (site reads it so too)."""
    from harness.history.layout import default_for

    given: Path | None = args.history
    return given if given is not None else default_for(args.matrix)


def handle(args: argparse.Namespace, out: Output) -> int:
    from harness.history import add, listing

    root = history_dir(args)
    if args.action == "add":
        done = add.add(root, args.results)
        out.say(
            f"added {len(done.added)} run(s) to {root}; {len(done.already)} it held already; "
            f"it holds {done.runs} run(s)"
        )
        print(f"{len(done.added)} added, {len(done.already)} held already, {done.runs} in {root}")
        return EXIT_OK
    if args.action == "reindex":
        runs = add.reindex(root)
        print(f"reindexed {root}: {runs} run(s)")
        return EXIT_OK
    found = listing.listing(root, args.newest)
    if args.json:
        print(json.dumps(asdict(found), indent=1, default=str))
        return EXIT_OK
    _print_listing(found, args.prog)
    return EXIT_OK


def _print_listing(found: object, prog: str) -> None:
    from tabulate import tabulate

    from harness.history.listing import Listing

    assert isinstance(found, Listing)
    print(f"{found.history}: {found.runs} run(s), {found.rows} row(s), {len(found.contexts)} context(s)\n")

    def clean(text: str) -> str:
        return one_line(text, 80)

    table = [
        [
            clean(c.context.gpu),
            clean(c.context.driver),
            f"{c.context.suite} ({c.context.profile})",
            c.runs,
            c.failed,
            clean(", ".join(c.torch)),
            clean(", ".join(c.cudnn)),
            c.last[:19],
        ]
        for c in found.contexts
    ]
    headers = ["GPU", "driver", "suite", "runs", "failed", "torch builds", "cuDNN releases", "last run"]
    print(tabulate(table, headers=headers))
    if found.newest:
        print("\nnewest runs:")
        lines = [
            [
                r.finished_at[:19],
                clean(r.cell_id),
                r.round,
                r.status,
                clean(r.torch),
                clean(r.cudnn),
                clean(r.context.gpu),
            ]
            for r in found.newest
        ]
        print(tabulate(lines, headers=["finished", "cell", "round", "status", "torch", "cuDNN", "GPU"]))
    print(
        f"\n'{prog} site --history {shlex.quote(str(found.history))} --out site' publishes it as a static "
        "site"
    )


COMMAND = Command(
    "history",
    "keep every run: add results to a history, list it, rebuild its index",
    "add results/sweep --history history",
    arguments,
    handle,
    more="A history keeps each result document as it came (named by its digest) and an index derived\n"
    "from them; a run is imported once however often it is added, and never altered.",
)
