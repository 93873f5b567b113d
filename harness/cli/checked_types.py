"""The command line's argparse machinery: values checked where they are parsed, and how the parser behaves.

argparse turns an ``ArgumentTypeError`` into one ``error: argument --x: ...`` line and exit 2, so a
``--timeout-s nan`` is refused before anything runs instead of failing every run it would have timed.
The parser takes no abbreviated option, shows every default worth saying, answers a mistyped subcommand
with "did you mean", and reads versions only for ``--version``.
"""

from __future__ import annotations

import argparse
import difflib
import math
import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn

from harness import __version__
from harness.backends.docker import dockerfile
from harness.errors import bounded, shown

MESSAGE = 2000  # what the parser prints of any message (argparse echoes an unknown argument or choice whole)


def number(what: str, above: float, at_most: float) -> Callable[[str], float]:
    """An argparse type: a finite number in (above, at_most]; ``what`` says what it is in the error."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not (math.isfinite(value) and above < value <= at_most):
            raise argparse.ArgumentTypeError(
                f"{shown(text)} is not {what}: a number > {above:g} and <= {at_most:g}"
            )
        return value

    parse.__name__ = what  # argparse names the type in some messages
    return parse


def nonempty_path(text: str) -> Path:
    """An argparse type: a path that names something. An empty one would be read as '.', this folder:
    ``--out ''`` wrote a run's plan, lock, logs and results into the working directory."""
    if not text.strip():
        raise argparse.ArgumentTypeError(
            f"{shown(text)} is an empty path; name a file or folder, or leave the option out for its default"
        )
    return Path(text)


nonempty_path.__name__ = "path"


def interpreter(text: str) -> str:
    """An argparse type: an interpreter's path or name, never empty (an empty one would mean this one)."""
    if not text.strip():
        raise argparse.ArgumentTypeError(
            f"{shown(text)} is empty; name an interpreter, or leave the option out for this one"
        )
    return text


def count(text: str) -> int:
    """An argparse type: a whole number >= 0."""
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"{shown(text)} is not a whole number >= 0")
    return value


def count_up_to(limit: int) -> Callable[[str], int]:
    """An argparse type: a whole number in [0, ``limit``] (SQLite and a terminal hold nothing larger)."""

    def parse(text: str) -> int:
        value = count(text)
        if value > limit:
            raise argparse.ArgumentTypeError(f"{shown(text)} is more than {limit:,}; name at most {limit}")
        return value

    parse.__name__ = "count"
    return parse


def memory(text: str) -> str:
    """An argparse type: a container memory limit as Docker reads it (16g, 512m, 1073741824)."""
    if not re.fullmatch(r"[1-9][0-9]{0,15}[bkmgBKMG]?", text):
        raise argparse.ArgumentTypeError(
            f"{shown(text)} is not a memory size such as 16g, 512m or 1073741824"
        )
    return text


def slurm_setting(name: str) -> Callable[[str], str]:
    """An argparse type: the Slurm setting ``name`` (partition, account, time), one plain token as an
    '#SBATCH' line needs."""

    def parse(text: str) -> str:
        from harness.executors.slurm import request

        problem = request.setting_problem(name, text)
        if problem:
            raise argparse.ArgumentTypeError(problem)
        return text

    parse.__name__ = f"Slurm {name}"
    return parse


def index_url(text: str) -> str:
    """An argparse type: a package index URL, which an image build writes into its Dockerfile's RUN lines."""
    if not dockerfile.INDEX_URL_FORM.fullmatch(text):
        raise argparse.ArgumentTypeError(
            f"{shown(text)} is not a plain http(s) URL: {dockerfile.INDEX_URL_FIX}"
        )
    return text


TIMEOUT = number("a time limit in seconds", 0, 7 * 86400)


HIDDEN = ("slurm-task",)  # what each task of a Slurm array runs: not for people


class Help(argparse.RawDescriptionHelpFormatter):
    """Every option's default in its help, where it has one worth saying."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        default = action.default
        if (
            "default" in text
            or default in (None, False, True, argparse.SUPPRESS)
            or not action.option_strings
        ):
            return text
        return f"{text} (default: {default})"


class Version(argparse.Action):
    """``--version``: the suite's and the schemas' versions, read only when asked for."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *args: object, **kwargs: object) -> NoReturn:
        from harness.report.writers.verdict_json import VERDICT_SCHEMA_VERSION
        from harness.suite import RESULT_SCHEMA_VERSION, SUITE_VERSION

        parser._print_message(
            f"harness {__version__}, suite {SUITE_VERSION}, result schema {RESULT_SCHEMA_VERSION}, "
            f"verdict schema {VERDICT_SCHEMA_VERSION}\n",
            sys.stdout,
        )
        parser.exit()


class Parser(argparse.ArgumentParser):
    """No abbreviated options (``--gpu`` is not ``--gpus``), defaults shown, and "did you mean" for a
    mistyped subcommand."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        kwargs.setdefault("allow_abbrev", False)
        kwargs.setdefault("formatter_class", Help)
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]

    def error(self, message: str) -> NoReturn:
        wrong = re.search(r"invalid choice: '([^']*)' \(choose from (.*)\)", message)
        if wrong:
            choices = [c.strip(" '") for c in wrong.group(2).split(",")]
            choices = [c for c in choices if c not in HIDDEN]
            close = difflib.get_close_matches(wrong.group(1), choices, n=1)
            message = f"invalid choice: '{wrong.group(1)}'" + (
                f"; did you mean '{close[0]}'?" if close else f" (choose from {', '.join(choices)})"
            )
        super().error(bounded(message, MESSAGE))
