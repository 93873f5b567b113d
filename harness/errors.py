"""Errors the library raises; only ``harness.cli`` turns them into messages and exit codes.

HarnessError             something went wrong; exit 1
├── InputError           bad input (matrix, result documents, arguments); exit 2, one line per Problem
└── BackendUnavailable   the machine cannot realize what was asked (no torch, no cuDNN found); exit 3
    └── RunStopped       the run cannot go on (the engine went away, the disk is full); what
                         finished is kept and the next run resumes; exit 3
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
    exit_code = 1


class InputError(HarnessError):
    exit_code = 2

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = problems
        super().__init__("\n".join(str(p) for p in problems))


class BackendUnavailable(HarnessError):
    exit_code = 3


class RunStopped(BackendUnavailable):
    """The whole run must stop; nothing was written for the run in flight."""
