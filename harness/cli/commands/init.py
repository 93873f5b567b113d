"""``harness init``: a starter matrix.yaml, every key explained in a comment."""

from __future__ import annotations

import argparse
import shlex

from harness.cli import option_groups
from harness.cli.checked_types import nonempty_path
from harness.cli.command import Command
from harness.cli.output import EXIT_OK, Output


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--matrix",
        type=nonempty_path,
        default=option_groups.DEFAULT_MATRIX,
        help="where to write it (default: matrix.yaml)",
    )
    parser.add_argument("--force", action="store_true", help="replace a file already there")


def handle(args: argparse.Namespace, out: Output) -> int:
    from harness.plan import starter

    path = shlex.quote(str(starter.write(args.matrix, args.force)))
    print(
        f"wrote {path}; edit it, then '{args.prog} plan --matrix {path}' lists its cells and "
        f"'{args.prog} qualify --matrix {path}' runs and judges them"
    )
    return EXIT_OK


COMMAND = Command(
    "init",
    "write a starter matrix.yaml, every key explained in a comment",
    "",
    arguments,
    handle,
    more="The starter runs anywhere (no GPU or Docker engine needed); edit it, then 'plan' lists its "
    "cells\nand 'qualify' runs and judges them.",
)
