"""The command line's parser, built from ``registry.COMMANDS``: each command's help line, description,
example and arguments come from its module in ``harness/cli/commands/``; their values are checked where
parsed (``checked_types``).

Building the parser loads no heavy library (scipy, pandas, jsonschema, rich, docker...): ``--help``
answers at once. What a command needs beyond its arguments is imported where it is used.
"""

from __future__ import annotations

import argparse

from harness.cli import registry
from harness.cli.checked_types import Parser, Version
from harness.cli.command import Command

PROG = "harness"  # the installed command; 'python -m harness' names itself (__main__)


EXIT_CODES = """exit codes:
  0    fine (report, compare, qualify: no regression)
  1    a regression (run: a cell failed)
  2    bad input: one 'error: FILE:LINE: FIELD: message' line per problem
  3    an infrastructure failure: runs that could not complete, or could not start on this host
       (no torch where the cells need it, no GPU they need); the error says the fix
  130  interrupted"""


def parser(description: str, prog: str = PROG) -> argparse.ArgumentParser:
    """Every subcommand's arguments; ``args.command`` names the subcommand. ``prog`` is how the command
    is called in its usage lines and examples."""
    parser = Parser(prog=prog, description=description, epilog=EXIT_CODES)
    parser.add_argument(
        "--version", action=Version, help="print the harness, suite and schema versions and exit"
    )
    shown = [command.name for command in registry.COMMANDS if not command.hidden]
    sub = parser.add_subparsers(dest="command", required=True, metavar="{" + ",".join(shown) + "}")
    for command in registry.COMMANDS:
        command.arguments(_subparser(sub, command))
    return parser


def _subparser(sub: argparse._SubParsersAction[Parser], command: Command) -> argparse.ArgumentParser:
    """A subcommand whose help says what it does in one line and shows an example to copy; a hidden one is
    parsed but never listed."""
    if command.hidden:
        return sub.add_parser(command.name)
    shown = f"example: %(prog)s {command.example}".rstrip()  # argparse writes the subcommand's own prog
    epilog = "\n\n".join(part for part in (command.more, shown, EXIT_CODES if command.codes else "") if part)
    return sub.add_parser(command.name, help=command.summary, description=command.summary, epilog=epilog)
