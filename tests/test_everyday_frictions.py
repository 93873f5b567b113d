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


@pytest.mark.parametrize(
    "order",
    [
        ["add", "--history", "H", "results"],
        ["add", "results", "--history", "H"],
        ["--history", "H", "add", "results"],
    ],
)
def test_history_add_takes_its_options_before_or_after_its_folders_and_says_its_count_once(tmp_path, order):
    from tests.history_docs import make, write

    write(tmp_path / "results", make(0))
    done = cli_in_process("history", *order, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("added") == 1 and "1 added, 0 held already, 1 in H" in done.stdout
    assert (tmp_path / "H" / "index.sqlite").is_file()
    listed = cli_in_process("history", "list", "--history", "H", "--json", cwd=tmp_path)
    assert listed.returncode == 0 and '"runs": 1' in listed.stdout, listed.stderr


def test_history_add_with_no_folder_is_refused_naming_what_is_missing(tmp_path):
    done = cli_in_process("history", "add", "--history", "H", cwd=tmp_path)
    assert done.returncode == 2 and "results" in done.stderr
    assert list(tmp_path.iterdir()) == []
