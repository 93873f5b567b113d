"""The Slurm backend against a real one-node Slurm cluster (.ci/slurm-up starts one from Debian's packages).

Without a cluster these tests skip on a developer machine and FAIL in CI (CI=true).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from harness.results import documents
from tests.conftest import cli_in_process, require_slurm, run_cli, start_cli


@pytest.fixture(scope="module")
def cluster() -> None:
    require_slurm()


def _matrix(tmp_path: Path, workload: str = "relu", budget: float = 0.2, **slurm) -> Path:
    path = tmp_path / "matrix.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "schema_version": 1,
                "name": "slurm-ci",
                "backend": "local",
                "axes": {"torch": ["installed"], "cudnn": ["bundled", "disabled"]},
                "suite": {
                    "profile": "smoke",
                    "device": "cpu",
                    "workloads": [workload],
                    "dtypes": ["fp32"],
                    "time_budget_s": budget,
                    # the whole budget: the noise target must not end early a run a test catches running
                    "min_time_s": min(budget, 60),
                    "numerics": False,
                },
                "rounds": 2,
                "baseline": {"cudnn": "bundled"},
                "slurm": {"time": "10", **slurm},
            }
        )
    )
    return path


def _results(out: Path) -> list[dict]:
    docs = []
    for path in sorted(out.glob("*.r*.json.gz")):
        document, problems = documents.check(path)
        assert problems == [], problems
        docs.append(document)
    return docs


def _array_tasks(job_name: str) -> list[tuple[str, str]]:
    listed = subprocess.run(
        ["squeue", "-h", "-r", "-n", job_name, "-o", "%i %T"], capture_output=True, text=True
    )
    return [tuple(line.split()) for line in listed.stdout.splitlines()]  # type: ignore[misc]


def _arrays(job_name: str) -> set[str]:
    """The job ids of the arrays of that name in the queue now."""
    return {task.split("_")[0] for task, _ in _array_tasks(job_name)}


def _new_tasks(job_name: str, before: set[str]) -> list[tuple[str, str]]:
    """The tasks of arrays submitted since ``before`` was taken: a test's own, never an earlier test's
    array still draining on a busy host."""
    return [(task, state) for task, state in _array_tasks(job_name) if task.split("_")[0] not in before]


@pytest.mark.slow
def test_a_cpu_matrix_runs_through_slurm_end_to_end(cluster, tmp_path):
    out, report = tmp_path / "results", tmp_path / "report"
    done = run_cli(
        "qualify",
        "--backend",
        "slurm",
        "--matrix",
        str(_matrix(tmp_path)),
        "--out",
        str(out),
        "--report-out",
        str(report),
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    # on a CPU round 1 runs alone; where a busy host spoiled every row of it, qualify stops there (CI
    # beside other jobs) and says so, else round 2 follows: the tasks are the rounds qualify decided on
    busy = re.search(r"stopped after round 1: the \d+ undecided rows were timed on a busy", done.stdout)
    rounds = 1 if busy else 2
    if busy:
        assert "a busy host spoiled these rows" in done.stderr, done.stderr[-3000:]
    tasks = 2 * rounds  # 2 cells
    submitted = re.findall(r"submitted array job \S+: (\d+) tasks?", done.stdout)
    assert sum(int(n) for n in submitted) == tasks and len(submitted) >= rounds, done.stdout[-3000:]
    assert done.stdout.count(": ok, 1 measurements") == tasks  # progress per task
    docs = _results(out)
    assert len(docs) == tasks and all(d["status"] == "ok" for d in docs)
    assert {d["run"]["round"] for d in docs} == set(range(1, rounds + 1))
    jobs = {d["run"]["slurm"]["job"].split("_")[0] for d in docs}
    assert len(jobs) == len(submitted)  # an array job per submission, one task per (cell, round)
    assert all(d["run"]["backend"] == "local" and d["run"]["slurm"]["node"] for d in docs)
    scripts = sorted((out / "slurm").glob("array-*.sh"))
    assert len(scripts) == len(submitted)
    assert all("#SBATCH --array=0-" in p.read_text() and "--time=10" in p.read_text() for p in scripts)
    assert (report / "report.md").is_file() and json.loads((report / "verdict.json").read_text())
    # run asks every round of the matrix: what qualify made is kept, only what it did not run is submitted
    again = run_cli("run", "--backend", "slurm", "--matrix", str(_matrix(tmp_path)), "--out", str(out))
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
    resubmitted = re.findall(r"submitted array job \S+: (\d+) tasks?", again.stdout)
    assert sum(int(n) for n in resubmitted) == 4 - tasks, again.stdout[-3000:]
    if tasks == 4:
        assert "submitted" not in again.stdout  # everything kept, nothing submitted
    else:
        assert f"{tasks} of 4 results kept" in again.stdout, again.stdout[-3000:]
    assert len(_results(out)) == 4


@pytest.mark.slow
def test_a_task_that_ends_without_a_result_is_reported_and_resubmitted(cluster, tmp_path):
    out = tmp_path / "results"
    matrix = _matrix(tmp_path, workload="gemm", budget=4)
    before = _arrays("harness-slurm-ci")
    proc = start_cli("run", "--backend", "slurm", "--matrix", str(matrix), "--out", str(out))
    deadline, victim = time.monotonic() + 120, None
    while victim is None and time.monotonic() < deadline:
        victim = next(
            (
                i
                for i, state in _new_tasks("harness-slurm-ci", before)
                if i.endswith("_0") and state == "RUNNING"
            ),
            None,
        )
        time.sleep(0.3)
    assert victim is not None, "task 0 never ran"
    time.sleep(1)
    subprocess.run(["scancel", victim], check=True)  # what a pre-emption or a node loss looks like to us
    output, _ = proc.communicate(timeout=300)
    assert proc.returncode == 3, output
    assert "ENDED WITHOUT A RESULT (CANCELLED" in output and "1 of 4 runs ended without a result" in output
    assert len(_results(out)) == 3
    again = run_cli("run", "--backend", "slurm", "--matrix", str(matrix), "--out", str(out))
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
    assert "1 task (" in again.stdout and "3 of 4 results kept" in again.stdout
    assert len(_results(out)) == 4


@pytest.mark.slow
def test_ctrl_c_cancels_the_array(cluster, tmp_path):
    out = tmp_path / "results"
    matrix = _matrix(tmp_path, workload="gemm", budget=5)
    before = _arrays("harness-slurm-ci")
    proc = start_cli("run", "--backend", "slurm", "--matrix", str(matrix), "--out", str(out))
    deadline = time.monotonic() + 120
    while (
        not any(state == "RUNNING" for _, state in _new_tasks("harness-slurm-ci", before))
        and time.monotonic() < deadline
    ):
        time.sleep(0.3)
    proc.send_signal(signal.SIGINT)
    output, _ = proc.communicate(timeout=120)
    assert proc.returncode == 130 and "cancelled array job" in output, output
    deadline = time.monotonic() + 60
    while _new_tasks("harness-slurm-ci", before) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert _new_tasks("harness-slurm-ci", before) == []


@pytest.mark.parametrize(
    ("args", "slurm", "field"),
    [
        (["--slurm-time", "forever"], {}, "--slurm-time"),
        ([], {"time": "soon"}, "slurm.time"),
        (["--gpus", "0"], {}, "--gpus"),
        (["--slurm-gpus", "-1"], {}, "--slurm-gpus"),
    ],
)
def test_bad_slurm_settings_are_refused_before_anything_is_submitted(tmp_path, args, slurm, field):
    out = tmp_path / "results"
    matrix = _matrix(tmp_path, **slurm)
    done = cli_in_process("run", "--backend", "slurm", "--matrix", str(matrix), "--out", str(out), *args)
    assert done.returncode == 2 and field in done.stderr, done.stderr
    assert not out.exists()


@pytest.mark.slow
def test_an_array_left_by_a_killed_run_is_not_swept_from_under_it(cluster, tmp_path):
    out = tmp_path / "results"
    matrix = _matrix(tmp_path, workload="gemm", budget=5)
    before = _arrays("harness-slurm-ci")
    proc = start_cli("run", "--backend", "slurm", "--matrix", str(matrix), "--out", str(out))
    deadline = time.monotonic() + 120
    while (
        not any(state == "RUNNING" for _, state in _new_tasks("harness-slurm-ci", before))
        and time.monotonic() < deadline
    ):
        time.sleep(0.3)
    proc.kill()  # no Ctrl-C: the orchestrator is gone, its array runs on
    proc.communicate(timeout=60)
    try:
        again = run_cli("run", "--backend", "slurm", "--matrix", str(matrix), "--out", str(out))
        assert again.returncode == 3 and "still runs into" in again.stderr and "scancel" in again.stderr, (
            again.stderr
        )
    finally:
        subprocess.run(["scancel", "-n", "harness-slurm-ci"], check=False)


def test_a_slurm_controller_that_does_not_answer_stops_the_run_with_a_message(tmp_path, monkeypatch):
    from harness.errors import BackendUnavailable
    from harness.executors.slurm import array

    hanging = tmp_path / "bin" / "squeue"  # a real process that never answers, first on PATH
    hanging.parent.mkdir()
    hanging.write_text("#!/bin/sh\nexec sleep 60\n")
    hanging.chmod(0o755)
    monkeypatch.setenv("PATH", f"{hanging.parent}:{os.environ['PATH']}")
    monkeypatch.setattr(array, "COMMAND_TIMEOUT_S", 0.5)
    # the message is the decision: squeue was given up on at the timeout set, not waited for
    with pytest.raises(BackendUnavailable, match=r"squeue did not answer in 0\.5 s"):
        array._queue("123")


def test_backend_settings_round_trip_through_the_tasks_file_and_its_schema():
    from harness import schemas
    from harness.backends import registry

    for settings in (
        registry.Settings("local", 60.0),  # no --python: the task names this interpreter, never null
        registry.Settings("docker", 60.0, memory="16g", gpu_access="devices"),
    ):
        raw = {**settings.to_json(), "tasks": [{"cell": "c", "round": 1}]}
        assert schemas.problems("slurm-tasks", raw, "tasks.json") == []
        assert registry.Settings.from_json(raw).to_json() == settings.to_json()
