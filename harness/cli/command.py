"""What each module of ``harness/cli/commands/`` declares: its name, one line of help, an example to copy,
its arguments and its handler. ``registry`` lists them; the parser and the dispatch are built from it."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass

from harness.cli.output import Output


@dataclass(frozen=True)
class Command:
    """One subcommand. ``summary`` is its line in the list of commands and the top of its own help;
    ``example`` follows ``%(prog)s`` in its help; ``more`` is a paragraph before the example; ``codes``: its
    help ends with the exit codes; ``hidden``: parsed, but never listed (what the harness runs itself)."""

    name: str
    summary: str
    example: str
    arguments: Callable[[argparse.ArgumentParser], None]
    handle: Callable[[argparse.Namespace, Output], int]
    more: str = ""
    codes: bool = False
    hidden: bool = False
