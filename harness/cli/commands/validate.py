"""``harness validate``: result documents checked against their schema and the facts it cannot state."""

from __future__ import annotations

import argparse
import sys

from harness.cli.checked_types import nonempty_path
from harness.cli.command import Command
from harness.cli.output import EXIT_BAD_INPUT, EXIT_OK, Output


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("files", nargs="+", type=nonempty_path, help="result files (.json or .json.gz)")


def handle(args: argparse.Namespace, out: Output) -> int:
    from harness.results import documents

    bad = 0
    for path in args.files:
        _, problems = documents.check(path)
        for problem in problems:
            print(f"error: {problem}", file=sys.stderr)
        bad += bool(problems)
        if not problems:
            print(f"ok: {path}")
    return EXIT_BAD_INPUT if bad else EXIT_OK


COMMAND = Command(
    "validate",
    "check result documents against schemas/result.schema.json",
    "results/smoke/torch-installed_cudnn-bundled_2ecb882014.r1.json.gz",
    arguments,
    handle,
)
