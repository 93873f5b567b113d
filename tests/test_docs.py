"""The README is a user's manual, current with the code (issue 32, 7)."""

from __future__ import annotations

import re

from tests.conftest import REPO, run_cli

README = (REPO / "README.md").read_text()


def test_the_readme_is_a_manual_of_at_most_250_lines_with_two_set_up_commands():
    assert len(README.splitlines()) <= 250
    block = README.split("## Two commands on a fresh machine", 1)[1].split("```bash", 1)[1].split("```", 1)[0]
    assert [line.split("#")[0].strip() for line in block.strip().splitlines()] == [
        "python3 -m pip install nox && python3 -m nox -s qualify",
        "python3 -m pip install nox && python3 -m nox -s tests",
    ]


def test_every_document_the_readme_names_exists():
    written = {"reports/smoke/"}  # a run writes it
    named = set(re.findall(r"`((?:docs|lab|reports)/[\w./-]+)`", README)) - written
    assert named
    for name in named:
        assert (REPO / name).exists(), name


def test_every_command_the_readme_lists_is_one_the_cli_has():
    listed = set(re.findall(r"^harness (\w[\w-]*)", README, re.M))
    shown = run_cli("--help").stdout
    offered = set(re.search(r"\{([\w,-]+)\}", shown).group(1).split(","))  # type: ignore[union-attr]
    assert listed and listed <= offered, listed - offered
    assert offered - listed <= {"slurm-task"}, offered - listed


def test_the_readme_names_no_suite_version_but_the_current_one():
    from harness.suite import SUITE_VERSION

    named = set(re.findall(r"[Ss]uite (?:version )?(\d+\.\d+)", README))
    assert named <= {SUITE_VERSION}, named
