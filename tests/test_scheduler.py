"""The multi-GPU scheduler, on real suite processes: runs go concurrently one GPU each, never two on one
GPU, a multi-GPU workload's runs get every GPU and run alone, and Ctrl-C stops them all.

On a host without GPUs the GPU ids are only handed out (CUDA_VISIBLE_DEVICES is not set for a CPU
suite), which is enough to check the schedule; the GPU proof is the lab's gpu-multi.
"""

from __future__ import annotations

import datetime as dt
import signal
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from harness.results import documents
from tests.conftest import cli_in_process, run_cli, start_cli


def _matrix(tmp_path: Path, workloads: list[str], budget: float, rounds: int = 2) -> Path:
    path = tmp_path / "matrix.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "schema_version": 1,
                "name": "sched",
                "backend": "local",
                "axes": {"torch": ["installed"], "cudnn": ["bundled", "disabled"]},
                "suite": {
                    "profile": "smoke",
                    "device": "cpu",
                    "workloads": workloads,
                    "dtypes": ["fp32"],
                    "time_budget_s": budget,
                    # the whole budget: the noise target must not end early a run a test catches running
                    "min_time_s": min(budget, 60),
                    "numerics": False,
                },
                "rounds": rounds,
                "baseline": {"cudnn": "bundled"},
            }
        )
    )
    return path


def _runs(out: Path) -> list[dict]:
    docs = []
    for path in sorted(out.glob("*.r*.json.gz")):
        doc, problems = documents.check(path)
        assert not problems, problems
        docs.append(doc)
    return docs


def _interval(doc: dict) -> tuple[dt.datetime, dt.datetime]:
    return dt.datetime.fromisoformat(doc["started_at"]), dt.datetime.fromisoformat(doc["finished_at"])


def _overlap(a: dict, b: dict) -> bool:
    (a0, a1), (b0, b1) = _interval(a), _interval(b)
    return a0 < b1 and b0 < a1


@pytest.mark.slow
def test_runs_go_concurrently_one_gpu_each_and_never_two_on_one(tmp_path):
    out = tmp_path / "out"
    done = run_cli(
        "run", "--matrix", str(_matrix(tmp_path, ["gemm"], 1.5)), "--out", str(out), "--gpus", "0,1"
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "one run per GPU at a time" in done.stdout
    docs = _runs(out)
    assert len(docs) == 4 and all(d["status"] == "ok" for d in docs)
    assert sorted(tuple(d["run"]["gpus"]) for d in docs) == [("0",), ("0",), ("1",), ("1",)]
    pairs = [(a, b) for i, a in enumerate(docs) for b in docs[i + 1 :]]
    # both GPUs were busy at once, but no GPU ever had two runs
    assert any(_overlap(a, b) for a, b in pairs if a["run"]["gpus"] != b["run"]["gpus"])
    assert not any(_overlap(a, b) for a, b in pairs if a["run"]["gpus"] == b["run"]["gpus"])


@pytest.mark.slow
def test_a_multi_gpu_workload_gets_every_gpu_and_runs_alone(tmp_path):
    out = tmp_path / "out"
    matrix = _matrix(tmp_path, ["ddp_train_step"], 0.5, rounds=1)
    done = run_cli("run", "--matrix", str(matrix), "--out", str(out), "--gpus", "0,1")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "each run gets all of them" in done.stdout
    docs = _runs(out)
    assert len(docs) == 2 and [d["run"]["gpus"] for d in docs] == [["0", "1"], ["0", "1"]]
    assert not _overlap(*docs)
    for doc in docs:  # two gloo processes on a CPU: the same DDP path as NCCL on GPUs
        (m,) = doc["measurements"]
        assert m["status"] == "ok", m
        assert m["params"]["world_size"] == 2 and m["params"]["backend"] == "gloo"
        assert m["scaling"]["world_sizes"] == [1, 2] and m["scaling"]["efficiency"] > 0
        assert m["stats"]["median"] == pytest.approx(m["scaling"]["median_step_s"][1])


@pytest.mark.slow
def test_ctrl_c_stops_every_concurrent_run_and_keeps_nothing_partial(tmp_path):
    out = tmp_path / "out"
    proc = start_cli(
        "run", "--matrix", str(_matrix(tmp_path, ["gemm"], 5)), "--out", str(out), "--gpus", "0,1"
    )
    deadline = time.monotonic() + 120
    while len(list((out / "logs").glob("*.log.part"))) < 2 and time.monotonic() < deadline:
        time.sleep(0.2)
    time.sleep(1)
    assert proc.poll() is None, proc.communicate()[0]
    children = _suite_processes(out)
    assert len(children) == 2, children
    proc.send_signal(signal.SIGINT)
    output, _ = proc.communicate(timeout=60)
    assert proc.returncode == 130, output
    assert _suite_processes(out) == []
    assert list(out.glob("*.r*.json.gz")) == []
    # the next run sweeps what was left and runs everything
    done = run_cli(
        "run", "--matrix", str(_matrix(tmp_path, ["gemm"], 0.3)), "--out", str(out), "--gpus", "0,1"
    )
    assert done.returncode == 0 and len(_runs(out)) == 4, done.stdout + done.stderr


def _suite_processes(out: Path) -> list[str]:
    listed = subprocess.run(["ps", "-ewwo", "args"], capture_output=True, text=True).stdout.splitlines()
    return [line for line in listed if "harness.suite run" in line and str(out) in line]


@pytest.mark.parametrize(
    ("gpus", "message"),
    [("0,0", "names a GPU twice"), ("0,,1", "separated by commas"), ("0;rm", "separated by commas")],
)
def test_bad_gpu_lists_are_refused_before_anything_runs(tmp_path, gpus, message):
    out = tmp_path / "out"
    done = cli_in_process(
        "run", "--matrix", str(_matrix(tmp_path, ["gemm"], 0.1)), "--out", str(out), "--gpus", gpus
    )
    assert done.returncode == 2 and "--gpus" in done.stderr and message in done.stderr, done.stderr
    assert not out.exists()


def test_an_ok_run_whose_measurements_raised_says_so_in_its_progress_line():
    # issue 40's docker lease: 4 training steps raised "No usable temporary directory" and the console said
    # "ok, 15 measurements"; the count now names the errors, one printable line each
    from harness.executors.runs import ERROR_CHARS, outcome_of

    measurements = [
        {
            "workload": "train_resnet50",
            "dtype": "fp32",
            "status": "error",
            "error": "FileNotFoundError:\n\x1b[31mno /tmp",
        },
        {"workload": "relu", "dtype": "fp32", "status": "ok"},
        {"workload": "lstm", "dtype": "bf16", "status": "error", "error": "x" * 500},
    ]
    document = {"cell": {"id": "c"}, "status": "ok", "failure": None, "measurements": measurements}
    outcome = outcome_of(document, 1)  # type: ignore[arg-type]
    assert outcome.measured == (
        "3 measurements, 2 of them errors (first: train_resnet50 fp32: FileNotFoundError: [31mno /tmp)"
    )
    assert len(outcome.errors[1]) == ERROR_CHARS and outcome.errors[1].isprintable()
    clean = outcome_of({**document, "measurements": measurements[1:2]}, 1)  # type: ignore[arg-type]
    assert clean.measured == "1 measurements" and clean.errors == ()
