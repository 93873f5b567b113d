"""The command line's console: what each verbosity shows of what a backend says during a run."""

from __future__ import annotations

import io

from harness.backends.packages import Milestone
from harness.cli.console import NORMAL, QUIET, VERBOSE, Console


def _shown(verbosity: int, *lines: str) -> list[str]:
    stream = io.StringIO()
    console = Console(verbosity, stream)
    for line in lines:
        console.detail(line)
    return [line.split("] ", 1)[1] for line in stream.getvalue().splitlines()]


def test_a_milestone_shows_without_v_and_the_rest_only_with_it():
    said = (Milestone("creating the environment for torch 2.13.0"), "suite: relu fp32 window 2")
    assert _shown(NORMAL, *said) == ["    creating the environment for torch 2.13.0"]
    assert _shown(VERBOSE, *said) == [
        "    creating the environment for torch 2.13.0",
        "    suite: relu fp32 window 2",
    ]
    assert _shown(QUIET, *said) == []
