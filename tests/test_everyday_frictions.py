"""The frictions a week of everyday use found (issue 60): each refused, said or done as a user expects."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import cli_in_process

EMPTY_PATHS = [
    ("qualify", "--out"),
    ("qualify", "--report-out"),
    ("run", "--out"),
    ("report", "--out"),
    ("bisect", "--results"),
    ("history", "--history"),
    ("site", "--out"),
    ("plan", "--matrix"),
    ("plan", "--python"),
    ("compare", "--out"),
]


@pytest.mark.parametrize(("command", "option"), EMPTY_PATHS)
def test_an_empty_path_option_is_refused_with_exit_2_and_nothing_is_written(tmp_path, command, option):
    # an empty path reads as '.': qualify --out '' wrote plan.json, .lock, logs/ and results into the cwd
    extra = {"history": ["add", "results"], "compare": ["a", "b"], "bisect": ["--row", "r:fp32"]}
    done = cli_in_process(command, *extra.get(command, []), option, "", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert f"argument {option}: '' is empty" in done.stderr or f"argument {option}: '' is an empty path" in (
        done.stderr
    )
    assert list(tmp_path.iterdir()) == []
