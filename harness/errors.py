"""Errors the library raises; only ``harness.cli`` turns them into messages and exit codes.

HarnessError             something went wrong
├── InputError           bad input (matrix, result documents, arguments): one line per Problem
└── BackendUnavailable   the machine cannot realize what was asked (no torch, no cuDNN found)
    └── RunStopped       the run cannot go on (the engine went away, the disk is full); what
                         finished is kept and the next run resumes
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Problem:
    """One thing wrong with one input, located as precisely as we can."""

    source: str
    field: str
    message: str
    line: int | None = None

    def __str__(self) -> str:
        where = f"{self.source}:{self.line}" if self.line else self.source
        field = f" {self.field}:" if self.field else ""
        return f"{where}:{field} {self.message}"


class HarnessError(Exception):
    pass


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
