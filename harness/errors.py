"""Errors the library raises; only ``harness.cli`` turns them into messages and exit codes.

HarnessError             something went wrong
├── InputError           bad input (matrix, result documents, arguments): one line per Problem
└── BackendUnavailable   the machine cannot realize what was asked (no torch, no cuDNN found)
    └── RunStopped       the run cannot go on (the engine went away, the disk is full); what
                         finished is kept and the next run resumes

The library names a value its caller gave by the setting it sets ("out", "gpus", "slurm_time"), never by
a command-line flag: a Problem's ``setting`` and a HarnessError's ``setting`` say which, and the command
line shows that setting's flag instead.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Generic, TypeVar

# what a Problem keeps of each part: a refusal of a hostile document never echoes a megabyte of it
LIMITS = {"source": 400, "field": 200, "message": 600}


def bounded(text: str, limit: int) -> str:
    """``text``, cut to ``limit`` characters with how much was left out."""
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text) - limit} characters more)"


def one_line(text: str, limit: int) -> str:
    """``text`` as one line of a progress message: every character that is not printable (a line break, an
    escape) a space, runs of spaces one, cut to ``limit`` characters. For text we did not write."""
    printable = "".join(c if c.isprintable() else " " for c in text)
    return " ".join(printable.split())[:limit]


SHOWN = 200  # what a refusal quotes of a value it refuses: a 100 KB option is never echoed whole


def shown(value: object) -> str:
    """``value`` as a refusal quotes it: its repr, cut to ``SHOWN`` characters."""
    return bounded(repr(value), SHOWN)


@dataclass(frozen=True)
class Problem:
    """One thing wrong with one input, located as precisely as we can, each part of bounded size."""

    source: str
    field: str
    message: str
    line: int | None = None
    setting: str | None = None  # a setting the caller gave, named in ``source`` or ``field``

    def __post_init__(self) -> None:
        for name, limit in LIMITS.items():
            object.__setattr__(self, name, bounded(str(getattr(self, name)), limit))

    def named(self, name: str) -> Problem:
        """The problem with its setting called ``name`` (the command line's flag for it)."""
        if self.setting is None:
            return self
        return dataclasses.replace(
            self,
            source=name if self.source == self.setting else self.source,
            field=name if self.field == self.setting else self.field,
        )

    def __str__(self) -> str:
        where = f"{self.source}:{self.line}" if self.line else self.source
        field = f" {self.field}:" if self.field else ""
        return f"{where}:{field} {self.message}"


MAX_PROBLEMS = 20  # what one refusal lists; the rest are counted
NOT_LISTED = "more problems, not listed"


def listed(problems: list[Problem]) -> list[Problem]:
    """``problems`` as a refusal lists them: the first ``MAX_PROBLEMS``, then how many more there are (an
    add over thousands of bad files says the first few, not 40,000 lines)."""
    if len(problems) <= MAX_PROBLEMS or (
        len(problems) == MAX_PROBLEMS + 1 and problems[-1].message.endswith(NOT_LISTED)  # bounded already
    ):
        return problems
    more = len(problems) - MAX_PROBLEMS
    return [*problems[:MAX_PROBLEMS], Problem("…", "", f"and {more} {NOT_LISTED}")]


class HarnessError(Exception):
    def __init__(self, *args: object, setting: str | None = None) -> None:
        super().__init__(*args)
        self.setting = setting  # the setting the caller gave that the error is about, if one is


class InputError(HarnessError):
    def __init__(self, problems: list[Problem]) -> None:
        self.problems = problems
        super().__init__("\n".join(str(p) for p in problems))

    @classmethod
    def one(cls, source: str, field: str, message: str) -> InputError:
        return cls([Problem(source, field, message)])


class BackendUnavailable(HarnessError):
    pass


class RunStopped(BackendUnavailable):
    """The whole run must stop; nothing was written for the run in flight."""


K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class Remembered(Generic[K, V]):
    """What ``make`` gives for each key, made once: a LookupError it raised is remembered as well, and
    raised again (its message) each time the key is asked, so a matrix asks the network or the installer
    once per key however many cells share it."""

    def __init__(self) -> None:
        self._made: dict[K, V] = {}
        self._failed: dict[K, str] = {}  # key -> why it could not be made

    def __len__(self) -> int:  # how many keys were asked: made or failed
        return len(self._made) + len(self._failed)

    def get(self, key: K, make: Callable[[], V]) -> V:
        if key not in self._made and key not in self._failed:
            try:
                self._made[key] = make()
            except LookupError as exc:
                self._failed[key] = str(exc)
        if key in self._failed:
            raise LookupError(self._failed[key])
        return self._made[key]
