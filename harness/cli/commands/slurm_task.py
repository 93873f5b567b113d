"""``harness slurm-task``: one task of a Slurm array job, on its node; hidden from the help (the array job's
script runs it, never a person)."""

from __future__ import annotations

import argparse

from harness.cli.checked_types import nonempty_path
from harness.cli.command import Command
from harness.cli.output import EXIT_OK, Output


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--results", type=nonempty_path, required=True)
    parser.add_argument("--tasks", type=nonempty_path, required=True)
    parser.add_argument("--index", type=int, required=True)


def handle(args: argparse.Namespace, out: Output) -> int:
    from harness.executors.slurm import task

    task.run_task(args.results, args.tasks, args.index, out.say)
    return EXIT_OK  # the task ran: a failed cell is a result, not a failed task


COMMAND = Command("slurm-task", "", "", arguments, handle, hidden=True)
