"""benchmarks/noise_floor.py (issue 62): the harness's A/A beside the standard timers' on the same rows.

The report is checked on real files: two processes of the harness on an H200 (``lab/evidence/main-job-h200``)
and reference processes written in the shape a reference process writes; the whole run on a CPU, on one
row, is the slow test.
"""

from __future__ import annotations

import json
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks import noise_floor
from harness import jsonio
from tests.conftest import REPO, harness_env
from tests.evidence import LAB

MAIN_JOB = LAB / "main-job-h200" / "main-job"
BUNDLED = "torch-installed_cudnn-bundled_2ecb882014"


def harness_medians(round_index: int) -> dict[tuple[str, str], float]:
    doc = jsonio.read(MAIN_JOB / f"{BUNDLED}.r{round_index}.json.gz")
    return {(m["workload"], m["dtype"]): m["stats"]["median"] for m in doc["measurements"]}


def reference_doc(timer: str, index: int, medians: dict[tuple[str, str], float], clock: float) -> dict:
    """A reference process's document as ``reference_process`` writes it, every row at ``clock`` MHz."""
    rows = [
        {"workload": w, "dtype": d, "status": "ok", "median_s": s, "calls": 1, "sm_clock_mhz": clock}
        for (w, d), s in medians.items()
    ]
    return {
        "timer": timer,
        "index": index,
        "device": "cuda",
        "settings": {},
        "torch": "2.11.0+cu130",
        "triton": "3.6.0",
        "gpu": "NVIDIA H200",
        "gpu_uuid": "GPU-test",
        "started_at": "2026-01-01T00:00:00+00:00",
        "duration_s": 30.0,
        "process_wall_s": 33.0,
        "status": "ok",
        "failure": None,
        "rows": rows,
    }


def folder_of(path: Path, medians: dict[tuple[str, str], float], harness: bool) -> Path:
    """A folder as ``run`` leaves it: its selection (the smoke profile's rows), and the harness's two
    processes where ``harness``."""
    path.mkdir()
    selection = {
        "device": "cuda",
        "profile": "smoke",
        "dtypes": ["fp32_default", "bf16"],
        "rows": [f"{w}:{d}" for w, d in medians],
        "named": False,
        "time_budget_s": None,
    }
    jsonio.write_atomic(path / "selection.json", selection)
    (path / "reference").mkdir()
    if harness:
        (path / "harness").mkdir()
        for round_index in (1, 2):
            name = f"{BUNDLED}.r{round_index}.json.gz"
            shutil.copy(MAIN_JOB / name, path / "harness" / name)
    return path


def test_the_report_merges_folders_and_says_what_differed_where_two_processes_differ_by_over_2_percent(
    tmp_path, capsys
):
    first, second = harness_medians(1), harness_medians(2)
    moved = ("gemm", "bf16")
    later = {row: s * (1.05 if row == moved else 1.001) for row, s in first.items()}
    one = folder_of(tmp_path / "one", first, harness=True)
    jsonio.write_atomic(one / "reference" / "do_bench.p1.json", reference_doc("do_bench", 1, first, 1980))
    slower = reference_doc("do_bench", 2, later, 1980)
    next(r for r in slower["rows"] if (r["workload"], r["dtype"]) == moved)["sm_clock_mhz"] = 1755
    jsonio.write_atomic(one / "reference" / "do_bench.p2.json", slower)
    two = folder_of(tmp_path / "two", first, harness=False)  # the events in another call
    jsonio.write_atomic(two / "reference" / "events.p1.json", reference_doc("events", 1, first, 1980))
    jsonio.write_atomic(two / "reference" / "events.p2.json", reference_doc("events", 2, first, 1980))

    assert noise_floor.main(["report", str(one), str(two), "--out", str(tmp_path / "merged")]) == 0
    text = (tmp_path / "merged" / "table.txt").read_text()
    assert text == capsys.readouterr().out
    dev = sorted(abs(second[row] / first[row] - 1) for row in first)
    p95 = dev[round(0.95 * (len(dev) - 1))]
    harness_line = next(line for line in text.splitlines() if line.startswith("harness  "))
    assert f"{len(dev)} {statistics.median(dev):7.3%} {p95:7.3%} {max(dev):7.3%}" in harness_line
    do_bench_line = next(line for line in text.splitlines() if line.startswith("do_bench  "))
    assert f"{p95 / 0.001:7.3f}" in do_bench_line  # the harness's p95 over do_bench's (0.1 % but one row)
    assert "  do_bench  5.00%  gemm bf16: 5.632 / 5.914 us; SM clock MHz 1980/1755\n" in text
    assert "\nby family " in text and "\nby duration " in text
    raw = json.loads((tmp_path / "merged" / "rows.json").read_text())
    assert {(p["timer"], p["index"]) for p in raw["processes"]} == {
        (t, i) for t in noise_floor.TIMERS for i in (1, 2)
    }
    assert all(set(r["timers"]) == set(noise_floor.TIMERS) for r in raw["rows"])
    gemm = next(r for r in raw["rows"] if (r["workload"], r["dtype"]) == moved)
    assert gemm["timers"]["harness"]["2"]["median_s"] == second[moved]
    assert gemm["timers"]["harness"]["1"]["timer"] == "cuda_graph"


def test_a_row_two_folders_both_measured_in_one_timer_s_process_is_refused(tmp_path, capsys):
    medians = harness_medians(1)
    folders = []
    for name in ("one", "two"):
        folder = folder_of(tmp_path / name, medians, harness=False)
        jsonio.write_atomic(
            folder / "reference" / "events.p1.json", reference_doc("events", 1, medians, 1980)
        )
        folders.append(str(folder))
    assert noise_floor.main(["report", *folders, "--out", str(tmp_path / "merged")]) == 2
    assert "events process 1 measured conv2d_r50_7x7s2 fp32_default in" in capsys.readouterr().err
    assert not (tmp_path / "merged").exists()


@pytest.mark.parametrize(
    ("words", "said"),
    [
        (["--rows", "nosuch:fp32"], "nosuch:fp32: rows: names no workload"),
        (["--rows", "relu:int8"], "relu:int8: rows: give WORKLOAD:DTYPE"),
        (["--families", "conv,nope"], "nope: families: is no family; use attention, conv,"),
        (["--dtypes", "fp64"], "fp64: dtypes: is no dtype"),
        (["--timers", "do_bench"], "do_bench: timers: needs a GPU"),
    ],
)
def test_a_run_asked_for_what_cannot_be_measured_says_which_setting_and_writes_nothing(
    tmp_path, capsys, words, said
):
    out = tmp_path / "out"
    assert noise_floor.main(["run", "--device", "cpu", "--out", str(out), *words]) == 2
    assert said in capsys.readouterr().err
    assert not out.exists()


def test_what_differed_lists_only_what_the_two_processes_recorded_differently():
    a: noise_floor.Figures = {"timer": "cuda_graph", "sm_clock_mhz": 1980.0, "temperature_c": [40, 41]}
    b: noise_floor.Figures = {"timer": "cuda_event", "sm_clock_mhz": 1980.0, "temperature_c": [40, 42]}
    a.update(window_medians_s=[1.0, 1.0, 1.0], kernels=["k1", "k2"], power_capped_discarded=0)
    b.update(window_medians_s=[1.0, 1.04, 1.01], kernels=["k1", "k3"], power_capped_discarded=12)
    said = noise_floor.differences(a, b)
    assert said == [
        "timer cuda_graph/cuda_event",
        "power-capped samples 0/12",
        "kernels only in 1: k2; only in 2: k3",
        "windows 2/1: +0.00%, *+4.00%, +1.00%",
    ]


@pytest.mark.slow
def test_a_cpu_run_times_one_row_in_two_processes_of_each_timer_and_resumes_where_it_stopped(tmp_path):
    out = tmp_path / "floor"
    command = [sys.executable, "-m", "benchmarks.noise_floor", "run", "--device", "cpu", "--profile", "smoke"]
    command += ["--rows", "relu:fp32", "--time-budget-s", "0.05", "--out", str(out)]
    done = subprocess.run(command, cwd=REPO, env=harness_env(), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    raw = json.loads((out / "rows.json").read_text())
    assert [(p["timer"], p["index"], p["status"]) for p in raw["processes"]] == [
        ("harness", 1, "ok"),
        ("events", 1, "ok"),
        ("harness", 2, "ok"),
        ("events", 2, "ok"),
    ]
    [row] = raw["rows"]
    assert (row["workload"], row["dtype"]) == ("relu", "fp32")
    for timer in ("harness", "events"):
        assert all(row["timers"][timer][i]["median_s"] > 0 for i in ("1", "2"))
    assert row["timers"]["harness"]["1"]["timer"] == "perf_counter"
    assert (out / "table.txt").read_text() in done.stdout
    again = subprocess.run(command, cwd=REPO, env=harness_env(), capture_output=True, text=True, timeout=300)
    assert again.returncode == 0 and "starting" not in again.stdout  # every process is there already
    other = [word if word != "relu:fp32" else "gelu:fp32" for word in command]
    refused = subprocess.run(other, cwd=REPO, env=harness_env(), capture_output=True, text=True, timeout=300)
    assert refused.returncode == 2 and "holds processes of other rows or settings (rows)" in refused.stderr


def test_a_timer_whose_second_process_has_not_run_yet_is_named_and_the_others_are_read(tmp_path, capsys):
    medians = harness_medians(1)
    folder = folder_of(tmp_path / "one", medians, harness=False)
    jsonio.write_atomic(
        folder / "reference" / "do_bench.p1.json", reference_doc("do_bench", 1, medians, 1980)
    )
    for index in (1, 2):
        doc = reference_doc("events", index, medians, 1980)
        jsonio.write_atomic(folder / "reference" / f"events.p{index}.json", doc)
    assert noise_floor.main(["report", str(folder)]) == 0
    text = capsys.readouterr().out
    assert "no A/A yet of do_bench: no row measured in both process 1 and process 2" in text
    assert f"\nevents{'':20}  22  0.000%  0.000%  0.000%\n" in text


def test_a_reference_document_altered_by_hand_is_refused_naming_the_file_and_the_key(tmp_path, capsys):
    medians = harness_medians(1)
    folder = folder_of(tmp_path / "one", medians, harness=False)
    doc = reference_doc("events", 1, medians, 1980)
    doc["rows"][3]["sm_clock_mhz"] = "1980 MHz"
    jsonio.write_atomic(folder / "reference" / "events.p1.json", doc)
    assert noise_floor.main(["report", str(folder), "--out", str(tmp_path / "out")]) == 2
    said = capsys.readouterr().err
    assert "events.p1.json: rows[3].sm_clock_mhz: is not what a reference process writes there" in said
    assert not (tmp_path / "out").exists()


def test_the_report_splits_rows_by_what_the_references_read_and_counts_the_gpu_s_two_speed_rows(
    tmp_path, capsys
):
    first = harness_medians(1)
    launched = ("relu", "bf16")  # the reference timers read the host's eager launches on it: 1.5x the graph
    theirs = {row: s * (1.5 if row == launched else 1.0) for row, s in first.items()}
    one = folder_of(tmp_path / "one", first, harness=True)
    for index in (1, 2):
        jsonio.write_atomic(
            one / "reference" / f"do_bench.p{index}.json", reference_doc("do_bench", index, theirs, 1980)
        )
    capped = ("gemm", "bf16")  # process 1 ran it at two speeds under the power limit
    path = one / "harness" / f"{BUNDLED}.r1.json.gz"
    doc = jsonio.read(path)
    (m,) = [m for m in doc["measurements"] if (m["workload"], m["dtype"]) == capped]
    fastest = min(m["samples_s"])
    m["window_medians_s"], m["power_capped_discarded"] = [fastest, fastest * 1.06, fastest], 40
    jsonio.write_atomic(path, doc)

    assert noise_floor.main(["report", str(one), "--out", str(tmp_path / "report")]) == 0
    text = capsys.readouterr().out
    rows = len(first)
    assert f"\nthe device (< 1.10x graph) | {'':9}{rows - 1:4} " in text
    assert f"\nthe host (>= 1.10x graph)  | {'':9}{1:4} " in text
    assert f"over the {rows - 1} rows the GPU ran at one speed: " in text
    assert (
        noise_floor.two_speeds(
            next(p for p in noise_floor.pairs(noise_floor.gather([one]), "harness", 1, 2) if p.row == capped)
        )
        == "two speeds on the GPU in process 1"
    )
