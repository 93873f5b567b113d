"""``harness history add|list|reindex``: every run kept in a history folder, listed, its index rebuilt."""

from __future__ import annotations

import argparse
import json
import shlex
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path

from harness.cli import option_groups
from harness.cli.checked_types import count_up_to, nonempty_path
from harness.cli.command import Command
from harness.cli.option_groups import DEFAULT_MATRIX
from harness.cli.output import EXIT_OK, Output, counted
from harness.errors import one_line

NEWEST_MAX = 1_000_000
PROGRESS_EVERY = 50  # files: long work (validating, reindexing) says how far it is every so many


def arguments(parser: argparse.ArgumentParser) -> None:
    """Each action a subcommand of its own, so that its options may come before or after its folders
    (``history add --history H DIR``: one positional list beside the action read DIR as left over).
    --history and --matrix are taken before the action too; given there, the action's own absent
    ones (SUPPRESS) leave them as they are."""
    _where(parser, None, DEFAULT_MATRIX)
    actions = parser.add_subparsers(dest="action", required=True, metavar="{add,list,reindex}")
    add = actions.add_parser("add", help=ADD, description=ADD)
    add.add_argument("results", nargs="+", type=nonempty_path, help="results folders or files")
    listed = actions.add_parser("list", help=LIST, description=LIST)
    listed.add_argument("--json", action="store_true", help="print what it holds as JSON")
    listed.add_argument(
        "--newest",
        type=count_up_to(NEWEST_MAX),
        default=10,
        help=f"how many of the newest runs to show (at most {NEWEST_MAX:,})",
    )
    reindex = actions.add_parser("reindex", help=REINDEX, description=REINDEX)
    for action in (add, listed, reindex):
        _where(action, argparse.SUPPRESS, argparse.SUPPRESS)


ADD = "import results folders or files (each run once, however often it is added)"
LIST = "what the history holds: its contexts, builds and newest runs"
REINDEX = "rebuild the index from the documents"


def _where(parser: argparse.ArgumentParser, history: object, matrix: object) -> None:
    option_groups.history_arg(parser, default=history)
    option_groups.matrix_arg(parser, default=matrix)


def history_dir(args: argparse.Namespace) -> Path:
    """--history, else ``history/`` beside the matrix (site reads it so too)."""
    from harness.history.layout import default_for

    given: Path | None = args.history
    return given if given is not None else default_for(args.matrix)


def handle(args: argparse.Namespace, out: Output) -> int:
    from harness.history import add, listing

    root = history_dir(args)
    if args.action == "add":
        done = add.add(root, args.results, _progress(out))
        print(f"{len(done.added)} added, {len(done.already)} held already, {done.runs} in {root}")
        return EXIT_OK
    if args.action == "reindex":
        runs = add.reindex(root, _progress(out))
        print(f"reindexed {root}: {runs} run(s)")
        return EXIT_OK
    found = listing.listing(root, args.newest)
    if args.json:
        print(json.dumps(asdict(found), indent=1, default=str))
        return EXIT_OK
    _print_listing(found, args.prog)
    return EXIT_OK


def _progress(out: Output) -> Callable[[int, int], None]:
    return counted(
        out, PROGRESS_EVERY, "validating {total} result document(s)", "validated {done} of {total}"
    )


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
