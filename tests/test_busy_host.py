"""A busy or stalled host is recorded and flagged, never judged; the CPU suite runs with a fixed thread
count; a CPU matrix of cuDNN sources reads as the A/A check it is (issue 32, 1).

The decisions are asserted on given samples and given results, not on this host's noise.
"""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest

from benchmarks import busy_host
from harness import jsonio
from harness.report.sections import run_sections
from harness.suite.probes import host
from tests.conftest import REPO, run_cli, timed_on_a_busy_host
from tests.evidence import RELEASE_ATLAS, TORCH_AXIS_CPU_CUT

CPU_AXIS = TORCH_AXIS_CPU_CUT / "results"


def test_samples_quantized_at_the_scheduler_tick_are_a_stalled_measurement():
    quiet = [10e-6 + i * 1e-8 for i in range(200)]
    assert host.stalled(quiet) is None
    ticks = quiet[:190] + [4e-3 + 10e-6] * 10  # 5 % of the samples lost a 4 ms tick
    assert "scheduler tick" in (host.stalled(ticks) or "")
    slow = [1e-3] * 50 + [4e-3] * 60  # a median four times the fastest: no tick, but the host stalled it
    assert "median is 4.0x its fastest" in (host.stalled(slow) or "")
    assert host.stalled([2.4e-4] * 50 + [4e-4] * 60) is None  # an LSTM on a quiet CPU: bimodal, 1.7x
    assert host.stalled([5e-3, 6e-3, 5.1e-3, 5.2e-3, 5.05e-3]) is None  # milliseconds of work: no tick
    assert host.stalled([1e-6, 1e-3]) is None  # too few samples to say


@pytest.mark.slow
def test_a_busy_host_is_recorded_and_its_rows_are_never_a_verdict(tmp_path):
    results = tmp_path / "results"
    shutil.copytree(CPU_AXIS, results)
    timed_on_a_busy_host(sorted(results.glob("*.json.gz"))[0], 3.7, 4.1, "load 4.1 on 2 cores")
    out = tmp_path / "report"
    done = run_cli("report", "--results", str(results), "--out", str(out))
    assert done.returncode == 0, done.stdout + done.stderr
    verdict = jsonio.read(out / "verdict.json")
    assert verdict["comparisons"] and all(
        r["verdict"] == "inconclusive" and r["reason"].startswith("busy host:")
        for r in verdict["comparisons"]
    )
    text = (out / "report.md").read_text()
    first_section = text.split("## Read this first", 1)[1].split("\n## ", 1)[0]
    assert "The host was busy in 1 of 6 runs (load 4.1 on 2 cores)" in first_section
    assert "Run again with nothing else running" in first_section and "--fresh" in first_section
    # the next steps agree: no more rounds on that host, but a fresh run on a quiet one (issue 41, 3)
    steps = text.split("## What to do next", 1)[1].split("\n## ", 1)[0]
    assert "A busy host (busy in 1 of 6 runs) spoiled the" in steps and "need more rounds" not in steps
    assert "--fresh" in steps, steps
    # torch builds on a CPU: the answer says that what it compares is not cuDNN (walk 3)
    answer = " ".join(text.split("## Which cuDNN for this host\n", 1)[1].split("\n## ")[0].split())
    assert "cuDNN is not used on a CPU, so this compares what else the cells differ in, not cuDNN" in answer
    assert "**keep torch 2.12.0** (A, the baseline)" in answer and "cuDNN (torch" not in answer


@pytest.mark.slow
def test_the_cpu_suite_fixes_and_records_its_threads_and_the_load(tmp_path, write_matrix):
    matrix = write_matrix(
        "schema_version: 1\nname: threads\nbackend: local\naxes: {torch: [installed], cudnn: [bundled, "
        "disabled]}\nsuite: {workloads: [relu], dtypes: [fp32], time_budget_s: 0.02, device: cpu}\n"
        "baseline: {cudnn: bundled}\n"
    )
    out = tmp_path / "results"
    done = run_cli("run", "--matrix", str(matrix), "--out", str(out))
    assert done.returncode == 0, done.stdout + done.stderr
    for path in sorted(out.glob("*.json.gz")):
        doc = jsonio.read(path)
        assert doc["host"]["threads"] == host.CPU_THREADS == doc["environment"]["torch"]["num_threads"]
        assert doc["host"]["cores"] >= 1 and isinstance(doc["host"]["busy"], bool)
        busy = doc["host"]["busy"]  # whatever this host's load was, the result says which and why
        assert bool(doc["host"]["why"]) == busy
        # each sample in the clock it is judged in, the same calls in the other clock beside it (issue 41)
        for m in doc["measurements"]:
            other = "thread_cpu_stats" if host.CPU_CLOCK == "wall" else "wall_stats"
            assert m["clock"] == host.CPU_CLOCK and m[other]["n"] == m["stats"]["n"] == len(m["samples_s"])
            assert "other_samples_s" not in m and 0 < m[other]["min"] <= m[other]["median"]
    report = tmp_path / "report"
    run_cli("report", "--results", str(out), "--out", str(report))
    text = (report / "report.md").read_text()
    first_section = text.split("## Read this first", 1)[1].split("\n## ", 1)[0]
    assert "checks the harness against itself (A/A): same is the right answer" in first_section
    assert f"CPU rows are timed in {run_sections.CLOCKS[host.CPU_CLOCK]}" in text  # the method says which
    verdict = jsonio.read(report / "verdict.json")
    assert {r["clock"] for r in verdict["comparisons"]} == {host.CPU_CLOCK}


def test_the_default_matrix_is_the_cpu_a_a_check_it_says_it_is():
    text = (REPO / "matrix.yaml").read_text()
    assert "A/A" in text and "- {disabled: true, device: cpu}" in text  # on a CPU: bundled against disabled
    assert Path(REPO / "matrix.yaml").stat().st_size < 4000


def test_the_busy_host_benchmark_reads_what_its_processes_took():
    results = RELEASE_ATLAS / "stem-bf16"  # lease 11: 6 cells x 3 rounds
    count, seconds = busy_host.processes_s(results)
    files = sorted(results.glob("*.r*.json.gz"))
    total = sum(json.loads(gzip.decompress(path.read_bytes()))["duration_s"] for path in files)
    assert count == 18 and seconds == pytest.approx(total) and seconds > 0
