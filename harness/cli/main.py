"""``harness init|plan|run|validate|report|compare|qualify|...``: the entry, and the one place that turns
what the library raises into messages and exit codes.

Exit codes: 0 fine (qualify/report/compare: no regression), 1 a regression (or, for run, a failed
cell), 2 bad input, 3 an infrastructure failure (runs that could not complete, or this machine
cannot run what was asked), 130 interrupted. A regression outranks an infrastructure failure.

Each command is a module of ``harness/cli/commands/`` (its arguments and its handler), listed in
``registry``; what every command shares (exit codes, where lines go) is ``output``'s. A handler imports
what it needs (pandas, scipy, jsonschema...) when it runs, so that ``--help`` and a mistyped command
answer at once.
"""

from __future__ import annotations

import os
import sys

from harness.cli import parser, registry, requests
from harness.cli.console import NORMAL, Console, InertStream
from harness.cli.output import (
    EXIT_BAD_INPUT,
    EXIT_FAILED,
    EXIT_INFRASTRUCTURE,
    EXIT_INTERRUPTED,
    EXIT_PIPE,
    Output,
    interrupted,
)
from harness.errors import BackendUnavailable, HarnessError, InputError, listed

DESCRIPTION = (
    "Which PyTorch x cuDNN combination should we ship, and what changes if we switch? Plan a version "
    "matrix, run the workload suite in every cell, and judge each cell against the baseline."
)


def main(argv: list[str] | None = None, prog: str = parser.PROG) -> int:
    """The command's exit code (the installed ``harness`` script calls this; ``python -m harness`` passes
    its own ``prog``). Everything it prints passes through ``InertStream``: result text never drives the
    terminal; a reader that leaves (``| head``) ends it quietly, as it ends Unix tools."""
    streams = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = InertStream(sys.stdout), InertStream(sys.stderr)
    try:
        code = _command(argv, prog)
        sys.stdout.flush()  # here, where a reader that left is caught, not at the interpreter's exit
        return code
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), streams[0].fileno())  # nothing more to flush at exit
        return EXIT_PIPE
    finally:
        sys.stdout, sys.stderr = streams


def _command(argv: list[str] | None, prog: str) -> int:
    given = list(sys.argv[1:] if argv is None else argv)
    args = parser.parser(DESCRIPTION, prog).parse_args(given)
    args.prog = prog  # what the next steps a command suggests are called with
    args.argv = given  # and the options they keep
    out = Output(Console(getattr(args, "verbosity", NORMAL)))
    try:
        return registry.BY_NAME[args.command].handle(args, out)
    except InputError as exc:  # the library names what the command line gave by its setting; here, its flag
        for problem in listed(exc.problems):  # one format, bounded, for every command
            out.warn(f"error: {requests.flagged(problem)}")
        return EXIT_BAD_INPUT
    except BackendUnavailable as exc:  # this machine cannot run what was asked, or the run had to stop
        out.warn(f"error: {requests.flagged_error(exc)}")
        return EXIT_INFRASTRUCTURE
    except HarnessError as exc:
        out.warn(f"error: {requests.flagged_error(exc)}")
        return EXIT_FAILED
    except KeyboardInterrupt:
        interrupted(args, out)
        return EXIT_INTERRUPTED
    finally:
        out.console.close()
