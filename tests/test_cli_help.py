"""The command line as a person meets it: help, version, mistakes."""

from __future__ import annotations

import os
import pty
import re
import subprocess
import sys

import pytest

from harness import __version__
from harness.suite import SUITE_VERSION
from tests.conftest import REPO, harness_env, run_cli


def test_help_lists_the_commands_people_use_and_the_exit_codes():
    done = run_cli("--help")
    assert done.returncode == 0
    assert "SUPPRESS" not in done.stdout and "slurm-task" not in done.stdout
    for command in ("plan", "run", "report", "compare", "repro", "qualify"):
        assert f"\n    {command} " in done.stdout
    assert "exit codes:" in done.stdout and "3    an infrastructure failure" in done.stdout


def test_every_option_says_what_it_does_and_run_groups_them_by_backend():
    for command in ("run", "qualify", "report", "compare", "repro", "images", "rerun", "plan"):
        text = run_cli(command, "--help").stdout
        options = [line.split()[0] for line in text.splitlines() if line.startswith("  --")]
        assert options, command
        described = text.split("options:")[1]
        for option in options:
            line = described.split(option, 1)[1].split("\n  -")[0]
            assert len(line.split()) > 1, f"{command} {option} has no help"
    text = run_cli("run", "--help").stdout
    for group in (
        "local backend:",
        "docker backend:",
        "slurm (--backend slurm):",
        "kubernetes (--backend k8s):",
    ):
        assert group in text
    assert "(default: 0.002)" in run_cli("compare", "--help").stdout


def test_the_version_names_the_suite_and_schemas():
    done = run_cli("--version")
    assert (
        done.stdout.strip()
        == f"harness {__version__}, suite {SUITE_VERSION}, result schema 1, verdict schema 1"
    )


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("qualfy",), "did you mean 'qualify'?"),
        (("run", "--gpu", "0"), "unrecognized arguments: --gpu 0"),  # no abbreviation: --gpu is not --gpus
        (("report", "--res", "x"), "unrecognized arguments: --res x"),
    ],
)
def test_a_mistyped_command_or_an_abbreviated_option_is_refused_before_anything_runs(args, says):
    done = run_cli(*args)
    assert done.returncode == 2 and says in done.stderr, done.stderr
    assert "running" not in done.stdout


def test_gpu_ids_for_a_gpu_suite_must_be_this_hosts_gpus(tmp_path, write_matrix):
    # device auto: refused before anything runs, where nvidia-smi lists no GPU 99 (or no GPU at all)
    path = write_matrix("""
schema_version: 1
name: gpus
axes: {torch: [installed], cudnn: [bundled]}
suite: {workloads: [relu], dtypes: [fp32], time_budget_s: 0.02}
baseline: {cudnn: bundled}
""")
    done = run_cli("run", "--matrix", str(path), "--out", str(tmp_path / "r"), "--gpus", "99")
    assert done.returncode == 2 and "--gpus: 99" in done.stderr, done.stderr
    assert ("nvidia-smi" in done.stderr or "not a GPU of this host" in done.stderr) and not (
        tmp_path / "r"
    ).exists()


SMOKE = """
schema_version: 1
name: loud
axes: {torch: [installed], cudnn: [bundled]}
suite: {workloads: [relu], dtypes: [fp32], time_budget_s: 0.02, numerics: false, what_ran: false}
rounds: 2
baseline: {cudnn: bundled}
"""


def test_progress_lines_carry_their_time_and_verbosity_chooses_how_many(tmp_path, write_matrix):
    path = write_matrix(SMOKE)
    normal = run_cli("run", "--matrix", str(path), "--out", str(tmp_path / "a"))
    assert normal.returncode == 0, normal.stderr
    lines = normal.stdout.splitlines()
    assert lines and all(re.match(r"\[\d\d:\d\d:\d\d\] ", line) for line in lines), lines
    assert any("round 2: ok" in line for line in lines) and not any("median" in line for line in lines)
    verbose = run_cli("run", "--matrix", str(path), "--out", str(tmp_path / "b"), "-v")
    assert any("relu fp32" in line and "median" in line for line in verbose.stdout.splitlines())
    quiet = run_cli("run", "--matrix", str(path), "--out", str(tmp_path / "c"), "--quiet")
    assert quiet.returncode == 0 and quiet.stdout == ""
    assert len(list((tmp_path / "c").glob("*.json.gz"))) == 2  # quiet, not idle


def test_a_terminal_gets_a_live_bar_of_the_runs_with_elapsed_time_and_time_left(tmp_path, write_matrix):
    path = write_matrix(SMOKE)
    main, replica = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "harness", "run", "--matrix", str(path), "--out", str(tmp_path / "r")],
        stdout=replica,
        stderr=replica,
        cwd=REPO,
        env={**harness_env(), "COLUMNS": "120", "TERM": "xterm"},
    )
    os.close(replica)
    seen = b""
    while True:
        try:
            chunk = os.read(main, 4096)
        except OSError:  # the other end closed: the run is over
            break
        if not chunk:
            break
        seen += chunk
    assert proc.wait(timeout=600) == 0
    text = seen.decode(errors="replace")
    assert "runs" in text and "0/2" in text and "left" in text and "0:00:0" in text, text[-2000:]
    assert "round 2: ok" in text and not re.search(
        r"\[\d\d:\d\d:\d\d\] running", text
    )  # a terminal: no times
