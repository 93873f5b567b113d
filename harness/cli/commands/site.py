"""``harness site``: a history published as a static site (no server; it opens from file://)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

from harness.cli import option_groups
from harness.cli.checked_types import nonempty_path
from harness.cli.command import Command
from harness.cli.commands.history import history_dir
from harness.cli.output import EXIT_OK, Output, counted

PROGRESS_EVERY = 100  # rows: a long build says how far it is every so many


def arguments(parser: argparse.ArgumentParser) -> None:
    option_groups.history_arg(parser)
    option_groups.matrix_arg(parser)
    parser.add_argument("--out", type=nonempty_path, default=Path("site"), help="site folder (default: site)")
    parser.add_argument(
        "--full", action="store_true", help="rebuild every page (default: only the pages new runs touch)"
    )


def handle(args: argparse.Namespace, out: Output) -> int:
    from harness.site import build

    done = build.build(history_dir(args), args.out, args.full, _progress(out))
    largest = (
        f"; the largest file written: {done.largest[0]} ({done.largest[1] / 1024:.0f} KiB)"
        if done.largest[0]
        else ""
    )
    print(
        f"site of {done.runs} run(s) and {done.rows} row(s) in {done.out}: {done.written} file(s) written, "
        f"{done.kept} unchanged, {done.rows_rebuilt} row page(s) rebuilt{largest}; open "
        f"{done.out / 'index.html'}"
    )
    return EXIT_OK


def _progress(out: Output) -> Callable[[int, int], None]:
    return counted(
        out,
        PROGRESS_EVERY,
        "site: {total} rows, each kept where unchanged or rebuilt",
        "site: {done} of {total} rows",
    )


COMMAND = Command(
    "site",
    "publish a history as a static site (no server; opens from file://)",
    "--history history --out site",
    arguments,
    handle,
)
