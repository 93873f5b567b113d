"""Command-line values checked where they are parsed: finite numbers in range, folders that can be written.

argparse turns an ``ArgumentTypeError`` into one ``error: argument --x: ...`` line and exit 2, so a
``--timeout-s nan`` is refused before anything runs instead of failing every run it would have timed.
"""

from __future__ import annotations

import argparse
import math
import re
from collections.abc import Callable
from pathlib import Path

from harness.errors import InputError, Problem


def number(what: str, above: float, at_most: float) -> Callable[[str], float]:
    """An argparse type: a finite number in (above, at_most]; ``what`` says what it is in the error."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not (math.isfinite(value) and above < value <= at_most):
            raise argparse.ArgumentTypeError(
                f"{text!r} is not {what}: a number > {above:g} and <= {at_most:g}"
            )
        return value

    parse.__name__ = what  # argparse names the type in some messages
    return parse


def count(text: str) -> int:
    """An argparse type: a whole number >= 0."""
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number >= 0")
    return value


def memory(text: str) -> str:
    """An argparse type: a container memory limit as Docker reads it (16g, 512m, 1073741824)."""
    if not re.fullmatch(r"[1-9][0-9]{0,15}[bkmgBKMG]?", text):
        raise argparse.ArgumentTypeError(f"{text!r} is not a memory size such as 16g, 512m or 1073741824")
    return text


def output_folder(path: Path, option: str) -> Path:
    """``path`` as a folder this command may write into, created if missing; InputError (exit 2) naming
    ``option`` when it is a file, lies under a file, or cannot be created or written."""
    if path.exists() and not path.is_dir():
        raise InputError(
            [Problem(str(path), option, "is a file, not a folder; name a folder (it is created)")]
        )
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe = path / ".harness-write-test"
        probe.touch()
        probe.unlink()
    except OSError as exc:
        raise InputError(
            [
                Problem(
                    str(path),
                    option,
                    f"cannot be written here ({exc.strerror or exc}); name a writable folder",
                )
            ]
        ) from None
    return path
