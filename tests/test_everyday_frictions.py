"""The frictions a week of everyday use found (issue 60): each refused, said or done as a user expects."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from harness.errors import InputError
from harness.report import ownership
from tests.conftest import HOSTILE_MATRIX as HOSTILE
from tests.conftest import REPO, cli_in_process

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


@pytest.mark.slow  # a report rendered: about 2 s
def test_a_report_folder_belongs_to_its_results_and_a_report_of_others_is_refused_there(tmp_path):
    import json
    import shutil

    from tests.evidence import GPU_FAULTS

    shutil.copytree(GPU_FAULTS, tmp_path / "study")  # the lab's layout: the report beside its results/
    shutil.copytree(GPU_FAULTS / "results", tmp_path / "B")
    own = cli_in_process("report", "--results", "study/results", "--out", "study", cwd=tmp_path)
    assert own.returncode == 3, own.stderr  # its own results (both runs failed): rendered again
    made_from = json.loads((tmp_path / "study" / "made-from.json").read_text())
    assert made_from["results"] == [str((tmp_path / "study" / "results").resolve())]
    report = (tmp_path / "study" / "report.md").read_bytes()
    other = cli_in_process("report", "--results", "B", "--out", "study", cwd=tmp_path)
    assert other.returncode == 2
    assert f"error: study: --out: holds the report of {tmp_path.resolve() / 'study' / 'results'}" in (
        other.stderr
    )
    assert "name another report folder, or delete that report's files from study first" in other.stderr
    assert (tmp_path / "study" / "report.md").read_bytes() == report
    ownership.refuse_inside_report(tmp_path / "study" / "results", "out")  # its own results: more rounds
    with pytest.raises(InputError, match=r"lies inside .*study, a report folder"):
        ownership.refuse_inside_report(tmp_path / "study" / "more", "out")
    legacy = tmp_path / "old"
    legacy.mkdir()
    (legacy / "report.md").write_text("a report from before reports named their results\n")
    older = cli_in_process("report", "--results", "B", "--out", "old", cwd=tmp_path)
    assert older.returncode == 2 and "does not record which results it was made from" in older.stderr


def test_qualify_refuses_another_results_report_folder_and_results_inside_a_report_before_running(
    tmp_path, write_matrix
):
    write_matrix(HOSTILE.replace("BUDGET", "0.02"))
    (tmp_path / "R").mkdir()
    (tmp_path / "R" / "made-from.json").write_text('{"schema_version": 1, "results": ["/elsewhere"]}')
    done = cli_in_process("qualify", "--out", "B", "--report-out", "R", cwd=tmp_path)
    assert done.returncode == 2 and "error: R: --report-out: holds the report of /elsewhere" in done.stderr
    inside = cli_in_process("qualify", "--out", "R/results", cwd=tmp_path)
    assert inside.returncode == 2
    assert f"error: R/results: --out: lies inside {(tmp_path / 'R').resolve()}, a report folder" in (
        inside.stderr
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["R", "matrix.yaml"]  # nothing ran, nothing made
    assert [p.name for p in (tmp_path / "R").iterdir()] == ["made-from.json"]


def test_an_unknown_key_whose_value_is_a_block_is_reported_on_the_keys_own_line(write_matrix, tmp_path):
    lines = (REPO / "matrix.yaml").read_text().splitlines()
    at = lines.index("knobs:")  # its value, a block, begins on the next line
    lines[at] = "knobz:"
    write_matrix("\n".join(lines) + "\n")
    done = cli_in_process("plan", cwd=tmp_path)
    assert done.returncode == 2
    assert f"error: matrix.yaml:{at + 1}: knobz: unknown key 'knobz'; did you mean 'knobs'?" in done.stderr


def _one_round(tmp_path: Path, busy: bool) -> Path:
    """The committed CPU torch-axis results cut to their first round, as a qualify that stopped there
    leaves them; ``busy``: one of them timed on a busy host."""
    import shutil

    from tests.conftest import timed_on_a_busy_host
    from tests.evidence import TORCH_AXIS_CPU_CUT

    results = tmp_path / "results"
    shutil.copytree(TORCH_AXIS_CPU_CUT / "results", results)
    for later in [*results.glob("*.r2.json.gz"), *results.glob("*.r3.json.gz")]:
        later.unlink()
    if busy:
        timed_on_a_busy_host(sorted(results.glob("*.r1.json.gz"))[0])
    return results


def _sections(report: Path) -> tuple[str, str]:
    text = report.read_text()
    first = text.split("## Read this first", 1)[1].split("\n## ", 1)[0]
    steps = text.split("## What to do next", 1)[1].split("\n## ", 1)[0]
    return first, steps


@pytest.mark.slow  # two reports rendered
def test_each_undecided_row_gets_the_one_next_step_a_run_again_would_take_in_every_section(tmp_path):
    # a busy round 1: qualify stopped there, and a run again keeps it and runs nothing (qualify's
    # rounds: test_qualify), so no section may say that a run again adds the missing rounds
    results = _one_round(tmp_path / "busy", busy=True)
    done = cli_in_process("report", "--results", str(results), "--out", str(tmp_path / "rb"))
    assert done.returncode == 0, done.stderr
    first, steps = _sections(tmp_path / "rb" / "report.md")
    summary = (tmp_path / "rb" / "summary.md").read_text()
    for text in (first, steps, summary):
        assert "adds the missing rounds" not in text and "need more rounds" not in text
    assert "keeps these rounds and adds none (What to do next has the command)" in first
    assert "--fresh" in first and "--fresh` moves them aside and measures again" in steps
    rows = {
        (m["workload"], m["dtype"])
        for path in results.glob("*.r1.json.gz")
        for m in json.loads(gzip.decompress(path.read_bytes()))["measurements"]
    }
    assert f"spoiled the {len(rows)} inconclusive or missing rows" in steps
    assert "\\--" not in summary and "and --fresh, so that the spoiled rounds" in summary
    gate = [line for line in done.stdout.splitlines() if line.startswith("  INCONCLUSIVE")]
    assert gate and all("measure again with --fresh" in line for line in gate)
    # the same round, quiet: a run stopped early, which a run again resumes with the rounds missing
    quiet = _one_round(tmp_path / "quiet", busy=False)
    done = cli_in_process("report", "--results", str(quiet), "--out", str(tmp_path / "rq"))
    first, steps = _sections(tmp_path / "rq" / "report.md")
    assert "a run again into this folder adds the missing rounds" in first
    assert "need more rounds" in steps and "--fresh" not in first + steps
    # a CPU run's host times in a CPU's terms
    text = (tmp_path / "rq" / "report.md").read_text()
    host = text.split("### Host time per call", 1)[1].split("\n#", 1)[0]
    assert "On a CPU both are host time" in host and "device time" not in host


CUDNN_RELEASES = """\
schema_version: 1
name: releases
backend: local
axes:
  torch: [installed]
  cudnn: [{wheel: 9.10.2.21}, {wheel: 9.11.0.98}, {wheel: 9.12.0.46}]
suite: {workloads: [relu], dtypes: [fp32], time_budget_s: 0.02}
baseline: {cudnn: {wheel: 9.10.2.21}}
"""


def test_bisect_of_cudnn_releases_on_a_host_without_a_gpu_refuses_before_any_round(tmp_path, write_matrix):
    from harness.backends.host import has_nvidia_gpu

    if has_nvidia_gpu():
        pytest.skip("this host has an NVIDIA GPU: its cuDNN release cells can run")
    write_matrix(CUDNN_RELEASES)
    ask = ["bisect", "--row", "relu:fp32", "--good", "9.10.2.21", "--bad", "9.12.0.46"]
    done = cli_in_process(*ask, cwd=tmp_path)
    assert done.returncode == 3, done.stdout + done.stderr
    assert "error: bisect cannot run here: this host has no NVIDIA GPU: the cells of cuDNN" in done.stderr
    assert "round" not in done.stdout + done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["matrix.yaml"]  # no results folder made
    wrong = cli_in_process("bisect", "--row", "relu:fp16", *ask[3:], cwd=tmp_path)
    assert wrong.returncode == 2 and "is not a row of the matrix" in wrong.stderr  # bad input first


SLOW_CELLS = """\
schema_version: 1
name: interrupted
backend: local
axes: {torch: [installed], cudnn: [bundled, disabled]}
suite: {workloads: [relu], dtypes: [fp32], time_budget_s: 3, device: cpu}
baseline: {cudnn: bundled}
rounds: 2
"""


@pytest.mark.slow  # a real run, interrupted after its first result
def test_ctrl_c_says_what_was_kept_and_the_command_that_goes_on_as_the_user_called_it(tmp_path):
    import signal
    import subprocess
    import sys
    import time

    from tests.conftest import harness_env, start_cli

    (tmp_path / "m.yaml").write_text(SLOW_CELLS)
    out = tmp_path / "r"
    # as the noxfile runs it: its own --python first, then the user's options after 'nox -s run --'
    added = ["--python", sys.executable]
    env = {**harness_env(), "HARNESS_NOX": "python3 -m nox", "HARNESS_NOX_ADDED": " ".join(added)}
    ask = ["--matrix", str(tmp_path / "m.yaml"), "--out", str(out), "--only", "cudnn", "--fresh"]
    proc = start_cli("run", *added, *ask, env=env, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and not list(out.glob("*.r1.json.gz")):
        time.sleep(0.1)
    assert proc.poll() is None, "the run ended before it could be interrupted"
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    kept = len(list(out.glob("*.json.gz")))
    assert kept >= 1 and f"interrupted: {kept} result{'s' * (kept != 1)} kept in {out}/" in stderr
    again = f"'python3 -m nox -s run -- --matrix {tmp_path / 'm.yaml'} --out {out} --only cudnn' goes on"
    assert again in stderr, stderr  # the user's options, not the session's --python, without --fresh


def test_a_suggested_command_keeps_the_users_options_and_is_called_as_the_user_called_it(monkeypatch):
    import argparse
    import sys

    from harness.cli import output

    typed = ["qualify", "--matrix", "m.yaml", "--report-out", "R", "--fresh"]
    args = argparse.Namespace(prog="python -m harness", argv=typed, command="qualify")
    monkeypatch.delenv("HARNESS_NOX", raising=False)
    fresh = output.suggested(args, "qualify", [*output.given(args), "--fresh"])
    assert fresh == "python -m harness qualify --matrix m.yaml --report-out R --fresh"
    monkeypatch.setenv("HARNESS_NOX", "nox")
    assert (
        output.suggested(args, "qualify", output.given(args))
        == "nox -s qualify -- --matrix m.yaml --report-out R"
    )
    assert (
        output.suggested(args, "repro", ["--results", "r"])
        == f"{sys.executable} -m harness repro --results r"
    )
