"""Reports and verdicts rendered from the committed GPU results: what a reader and a release gate must
find."""

from __future__ import annotations

import io
import json
import math
import os
import re
import shutil
from pathlib import Path
from xml.etree import ElementTree

import pandas as pd
import pytest

from harness import jsonio, schemas
from harness.report.analysis.model import Analysis, View
from harness.report.sections import run_sections
from harness.report.writers import document, markdown
from harness.results import documents
from tests.conftest import run_cli
from tests.evidence import GPU_LOCAL_CUDNN_SOURCES, GPU_MULTI, GPU_VERDICTS, RELEASE_ATLAS

SHARDS = sorted(GPU_VERDICTS.glob("results-shard*"))


@pytest.fixture(scope="module")
def verdict_report(tmp_path_factory) -> tuple[Path, object]:
    out = tmp_path_factory.mktemp("verdicts")
    args = [a for shard in SHARDS for a in ("--results", str(shard))]
    done = run_cli("report", *args, "--out", str(out))
    return out, done


def section(text: str, title: str) -> str:
    return text.split(f"## {title}")[1].split("\n## ")[0].split("\n### ")[0]


@pytest.mark.slow
def test_report_names_the_cudnn_each_cell_loaded(tmp_path):
    done = run_cli("report", "--results", str(GPU_LOCAL_CUDNN_SOURCES / "results"), "--out", str(tmp_path))
    assert done.returncode == 0, done.stderr
    cells = section((tmp_path / "report.md").read_text(), "Groups (cells)")
    bundled, system, disabled = (ln for ln in cells.splitlines() if "| torch2.11.0" in ln)
    assert "| 9.19.0 " in bundled and "site-packages/nvidia/cudnn/lib" in bundled and "(baseline)" in bundled
    assert "| 9.14.0 " in system and "/usr/lib/x86_64-linux-gnu" in system
    assert "cuDNN disabled" in disabled
    text = (tmp_path / "report.md").read_text()
    assert "NVIDIA H100 80GB HBM3" in text and "580.159.04" in text


@pytest.mark.slow
def test_seven_rounds_call_the_real_regressions_and_exit_1(verdict_report):
    out, done = verdict_report
    assert done.returncode == 1, done.stdout + done.stderr
    verdict = json.loads((out / "verdict.json").read_text())
    assert schemas.problems("verdict", verdict, "verdict.json") == []
    assert verdict["outcome"] == "regression" and verdict["exit_code"] == 1
    assert all(g["rounds_ok"] == 7 for g in verdict["groups"])
    by = {(c["group"].split("_")[1], c["workload"], c["dtype"]): c for c in verdict["comparisons"]}
    sdpa = by[("cudnn-system-auto", "sdpa", "bf16")]  # NVIDIA's cuDNN 9.14 on attention, reproduced
    assert sdpa["verdict"] == "slower" and sdpa["ratio"] > 1.4 and sdpa["p_value"] < 0.002
    assert sdpa["ci_low"] > 1.05 and sdpa["rounds_baseline"] == sdpa["rounds_candidate"] == 7
    for workload in ("conv2d_r50_3x3", "conv2d_r50_1x1_bwd_weight"):  # cuDNN off: PyTorch's native convs
        assert by[("cudnn-disabled", workload, "bf16")]["verdict"] == "slower"
    assert by[("cudnn-system-auto", "conv2d_r50_3x3", "bf16")]["verdict"] == "same"
    assert "outcome: regression (exit 1)" in done.stdout


@pytest.mark.slow
def test_the_gpu_rows_say_what_ran_and_the_sdpa_reproducer_agrees(verdict_report):
    # the reading of the 9.14 attention row: torch dispatched away from cuDNN, cuDNN did not get slower
    out, _ = verdict_report
    verdict = json.loads((out / "verdict.json").read_text())
    by = {(c["group"].split("_")[1], c["workload"], c["dtype"]): c for c in verdict["comparisons"]}
    sdpa = by[("cudnn-system-auto", "sdpa", "bf16")]
    assert (sdpa["what_ran"], sdpa["ran_change"]) == ("changed", "attention backend cudnn -> flash")
    forced = by[("cudnn-system-auto", "sdpa_cudnn_s2048", "bf16")]  # 9.14's own attention kernel: faster
    assert forced["verdict"] == "faster"
    assert forced["ran_change"].startswith("largest kernel: cudnn_generated")
    for workload in ("conv2d_r50_3x3", "conv2d_r50_1x1_bwd_weight", "batchnorm2d", "lstm"):
        assert by[("cudnn-disabled", workload, "fp32")]["ran_change"].startswith("cuDNN -> no cuDNN")
    assert by[("cudnn-disabled", "sdpa", "bf16")]["what_ran"] == "same"  # cuDNN's attention all the same
    assert all(c["ran_baseline"] and c["ran_candidate"] for c in verdict["comparisons"])  # every side named
    # PyTorch's own kernel in every cell
    depthwise = by[("cudnn-system-auto", "conv2d_depthwise_mbv2", "fp32")]
    assert depthwise["ran_baseline"] == "at::native::conv_depthwise2d_forward_kernel"
    changed = section((out / "report.md").read_text(), "What changed")
    assert "| cuDNN -> no cuDNN | 7 | 7 slower |" in changed
    cells = section((out / "report.md").read_text(), "Groups (cells)")
    assert cells.count("7/7 ok, 7 asked") == 3  # three shards of 3 + 2 + 2 rounds
    repro = json.loads((GPU_VERDICTS / "repro-sdpa-bf16" / "output.json").read_text())
    assert repro["within_5_pct_of_report"] and abs(repro["ratio"] / sdpa["ratio"] - 1) < 0.05
    assert repro["report_ratio"] == pytest.approx(sdpa["ratio"])
    assert "flash" in repro["what_ran"]["candidate"][0] and "cudnn" in repro["what_ran"]["baseline"][0]


@pytest.mark.slow
def test_every_number_links_to_the_result_file_it_came_from(verdict_report):
    out, _ = verdict_report
    text = (out / "report.md").read_text()
    targets = dict(re.findall(r"^\[(\d+)\]: (.+)$", text, flags=re.M))  # reference-style links
    for shard in SHARDS:
        for path in shard.glob("torch*.json.gz"):
            assert str(Path(os.path.relpath(path, out))) in targets.values()
    rows = [
        ln for ln in section(text, "Verdicts against the baseline").splitlines() if ln.startswith("| sdpa ")
    ]
    for row in rows:  # baseline and candidate medians link to their measurements, each its own small file
        used = re.findall(r"\]\[(\d+)\]", row)
        assert len(used) >= 2 and all(targets[n].startswith("measurements/") for n in used)
        for n in used:
            extract = json.loads((out / targets[n]).read_text())
            assert extract["measurement"]["workload"] == "sdpa" and "samples_s" not in extract["measurement"]
            assert (out / targets[n]).stat().st_size < 20_000  # the result file it names holds 100s of KB
            source = (out / targets[n]).parent / extract["result_file"]
            measured = jsonio.read(source)["measurements"][extract["measurement_index"]]
            assert measured["stats"] == extract["measurement"]["stats"]
    assert max(len(line) for line in text.splitlines()) <= 300


@pytest.mark.slow
def test_committed_verdict_report_matches_a_fresh_render(verdict_report):
    out, _ = verdict_report
    fresh, committed = (
        pd.read_csv(d / "verdicts.csv").drop(columns=["baseline_files", "candidate_files"])
        for d in (out, GPU_VERDICTS)
    )
    pd.testing.assert_frame_equal(fresh, committed)

    def cells(d):  # the table's text; its links depend on --out
        return [
            [c.strip().split("](")[0] for c in ln.split(" | ")]
            for ln in section((d / "report.md").read_text(), "Verdicts against the baseline").splitlines()
            if ln.startswith("| ")
        ]

    assert cells(out) == cells(GPU_VERDICTS)


@pytest.mark.slow
def test_results_made_before_precision_modes_read_fp32_as_tf32_off(verdict_report):
    """Suite 0.19 and older measured fp32 with TF32 off and recorded no math flags: every row and the
    method say fp32 (TF32 off), and that the flags are what the mode asked, not a record."""
    out, _ = verdict_report
    text = (out / "report.md").read_text()
    verdicts = section(text, "Verdicts against the baseline").splitlines()
    header = next(ln for ln in verdicts if ln.startswith("| workload"))
    assert header.startswith("| workload | mode |")
    modes = {ln.split(" | ")[1] for ln in verdicts if ln.startswith("| ") and ln not in (header,)} - {"---"}
    assert modes == {"fp32 (TF32 off)", "bf16"}
    method = text.split("### Precision modes and math flags\n")[1].split("\n## ")[0]
    assert (
        "| fp32 (TF32 off) | A, B, C | off | off |  |  | no (suite before 0.20): as the mode asked |"
        in method
    )
    table = pd.read_csv(out / "verdicts.csv")
    assert set(zip(table["dtype"], table["mode"], strict=True)) == {
        ("fp32", "fp32 (TF32 off)"),
        ("bf16", "bf16"),
    }


@pytest.mark.slow
def test_an_a_a_comparison_of_the_same_cell_calls_no_regression_and_names_both_gpus(tmp_path):
    # the bundled cell of two shards of one matrix (3 and 2 rounds), each shard's rounds on another H100
    args = ("--cell", "bundled", "--out", str(tmp_path))
    done = run_cli("compare", str(SHARDS[0]), str(SHARDS[1]), *args)
    assert done.returncode == 0, done.stdout + done.stderr
    verdict = json.loads((tmp_path / "verdict.json").read_text())
    assert verdict["counts"]["slower"] == verdict["counts"]["faster"] == 0
    # 3 rounds against 2: no row is shown slower, faster or the same; each says why, and all lie close
    assert verdict["counts"]["inconclusive"] == len(verdict["comparisons"]) == 15
    assert all("3+2 rounds decide nothing" in c["reason"] for c in verdict["comparisons"])
    assert all(abs(c["ratio"] - 1) < 0.02 for c in verdict["comparisons"])
    environment = section((tmp_path / "report.md").read_text(), "Environment of every run")
    assert "These runs used 2 physical GPUs" in environment
    assert "1b0e855f" in environment and "18da512d" in environment


@pytest.mark.slow
def test_results_that_must_not_be_compared_are_refused(tmp_path):
    other = tmp_path / "other-machine"
    shutil.copytree(SHARDS[1], other)
    for path in other.glob("torch*.json.gz"):
        doc = jsonio.read(path)
        doc["environment"]["gpu"]["name"] = "NVIDIA H200"
        doc["environment"]["gpu"]["driver_version"] = "590.1"
        jsonio.write_atomic(path, doc)
    done = run_cli(
        "report", "--results", str(SHARDS[0]), "--results", str(other), "--out", str(tmp_path / "r")
    )
    assert done.returncode == 2, done.stdout
    assert "results differ in device" in done.stderr and "NVIDIA H200" in done.stderr
    assert "results differ in driver" in done.stderr
    assert not (tmp_path / "r").exists()  # nothing half-written
    done = run_cli("compare", str(SHARDS[0]), str(other), "--only", "bundled")
    assert done.returncode == 2 and "results differ in device" in done.stderr


@pytest.mark.slow
def test_a_different_suite_version_is_refused(tmp_path):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    source = next(SHARDS[0].glob("*bundled*.json.gz"))
    shutil.copy(source, a)
    doc = jsonio.read(source)
    doc["suite_version"] = "0.2"
    # another run, a century earlier and as long (the same run twice would count once)
    doc["started_at"] = doc["started_at"].replace("20", "19", 1)
    doc["finished_at"] = doc["finished_at"].replace("20", "19", 1)
    b.write_text(json.dumps(doc))
    done = run_cli("compare", str(a), str(b))
    assert done.returncode == 2 and "results differ in suite version" in done.stderr


@pytest.mark.slow
def test_compare_refuses_bad_input_and_moves_nothing(tmp_path):
    good = next(SHARDS[0].glob("*bundled*.json.gz"))
    broken = tmp_path / "broken.json"
    broken.write_text('{"schema_version": 1, "truncated')
    done = run_cli("compare", str(good), str(broken))
    assert done.returncode == 2 and "not valid JSON" in done.stderr and "Traceback" not in done.stderr
    assert broken.exists()  # an ad-hoc compare refuses; it does not quarantine someone's file
    done = run_cli("compare", str(good), str(tmp_path / "nowhere.json"))
    assert done.returncode == 2 and "no such file or folder" in done.stderr


@pytest.mark.slow
def test_one_round_per_side_gives_numbers_but_no_verdict(tmp_path):
    a, b = (next(SHARDS[0].glob(f"*{k}*.r1.json.gz")) for k in ("bundled", "disabled"))
    done = run_cli("compare", str(a), str(b))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "pass-with-inconclusive" in done.stdout and "one process per side" in done.stdout
    assert run_cli("compare", str(a), str(b), "--strict").returncode == 1


def test_a_number_links_to_the_lower_median_file_and_ties_go_to_the_first_file_by_name():
    from harness.report.analysis.frames import lower_median_row

    rows = pd.DataFrame({"median_s": [2.0, 1.0, 1.0, 3.0], "file": ["d", "c", "b", "a"]})
    for order in ([0, 1, 2, 3], [3, 2, 1, 0], [2, 0, 3, 1]):  # the order files were read in does not matter
        assert lower_median_row(rows.iloc[order], "median_s")["file"] == "c"  # 1.0 (b), 1.0 (c), 2.0, 3.0
    tied = pd.DataFrame({"median_s": [1.0, 1.0, 1.0], "file": ["z", "y", "x"]})
    assert lower_median_row(tied, "median_s")["file"] == "y"


def test_table_cells_can_never_break_a_markdown_table():
    text = markdown.table(
        [["a|b", "line\nbreak", None, document.Value("x|y", href="f (1).json")]], ["h|1", "h2", "h3", "h4"]
    )
    header, _rule, row = text.splitlines()
    assert row.count("|") - row.count("\\|") == header.count("|") - header.count("\\|") == 5
    # both parentheses encoded: CommonMark takes a target with an unbalanced "(" for text, not a link
    assert "line<br>break" in row and "(f%20%281%29.json)" in row


@pytest.mark.slow
def test_a_damaged_plan_file_is_bad_input_not_a_traceback(tmp_path):
    for text in ('{"name": 3}', "garbage", '{"cells": [], "baseline": "x"}'):
        (tmp_path / "plan.json").write_text(text)
        done = run_cli("report", "--results", str(tmp_path), "--out", str(tmp_path / "out"))
        assert (
            done.returncode == 2 and "not a plan written by" in done.stderr and "Traceback" not in done.stderr
        )
    done = run_cli("report", "--results", str(tmp_path / "nowhere"))
    assert done.returncode == 2 and "no plan.json here" in done.stderr


@pytest.mark.slow
def test_the_atlas_results_are_valid_and_loaded_exactly_the_cudnn_they_asked_for():
    # every PyPI release from 9.19.1.2 to 9.28.1.4 that a committed atlas lease loaded, each through the
    # shadow
    paths = sorted(RELEASE_ATLAS.glob("*/torch*.json.gz"))
    releases = set()
    for path in paths:
        document, problems = documents.check(path)
        assert problems == [], problems[:3]
        ok = [m for m in document["measurements"] if m["status"] == "ok"]
        assert ok and {m["dtype"] for m in ok} <= {"fp32", "tf32", "bf16", "fp16"}  # lease 19: one row
        assert document["environment"]["gpu_state"]["nvml"] is True
        assert all(len(m["sm_clock_mhz"]) == m["stats"]["n"] for m in ok)
        cudnn, source = document["cudnn"], document["cell"]["cudnn"]
        assert cudnn["verified"] is True and cudnn["distinct_builds"] == 1, cudnn["verification"]
        if isinstance(source, dict) and "wheel" in source:
            # the release's own folder, loaded through the shadow; torch's own check holds for these
            release = source["wheel"]
            releases.add(release)
            # in the run's harness cache (lease 15's two runs side by side had one each)
            (loaded,) = cudnn["loaded_dirs"]
            assert loaded.startswith("/var/tmp/") and loaded.endswith(
                f"/cudnn/nvidia-cudnn-cu13-{release}/nvidia/cudnn/lib"
            ), loaded
            assert cudnn["runtime_version"] == ".".join(release.split(".")[:3])
            assert cudnn["compat_check_overridden"] is False
    assert len(releases) >= 15, sorted(releases)


@pytest.mark.slow
def test_runs_on_several_gpus_went_concurrently_one_gpu_each():
    # release-atlas: 4 cells x 3 rounds with --gpus 0,1,2,3 on a 4-GPU H200 host
    runs = sorted((RELEASE_ATLAS / "results").glob("*.r*.json.gz"))
    assert len(runs) == 12
    docs = []
    for path in runs:
        document, problems = documents.check(path)
        assert problems == [] and document["status"] == "ok", problems[:3]
        docs.append(document)
    assert sorted({tuple(d["run"]["gpus"]) for d in docs}) == [("0",), ("1",), ("2",), ("3",)]
    assert all(d["environment"]["env"]["CUDA_VISIBLE_DEVICES"] == d["run"]["gpus"][0] for d in docs)

    def overlap(a: dict, b: dict) -> bool:
        return (
            a["started_at"] < b["finished_at"] and b["started_at"] < a["finished_at"]
        )  # ISO times, one zone

    pairs = [(a, b) for i, a in enumerate(docs) for b in docs[i + 1 :]]
    assert any(overlap(a, b) for a, b in pairs if a["run"]["gpus"] != b["run"]["gpus"])
    assert not any(overlap(a, b) for a, b in pairs if a["run"]["gpus"] == b["run"]["gpus"])
    # one GPU against two: benchmarks/multi_gpu.py's printout (GPU_MULTI)
    assert "ratio 1.96x (target >= 1.9x: met)" in (GPU_MULTI / "run-output.txt").read_text()


@pytest.mark.slow
def test_a_ddp_result_reports_its_scaling(tmp_path):
    done = run_cli("report", "--results", str(GPU_MULTI / "ddp"), "--out", str(tmp_path))
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    scaling = section((tmp_path / "report.md").read_text(), "Multi-GPU scaling")
    assert "ddp_train_step" in scaling and "1: 13.286 ms" in scaling and "2: 13.128 ms" in scaling
    for efficiency in ("1.012", "0.980", "1.004", "0.872", "0.913", "0.929"):  # three runs x fp32, bf16
        assert efficiency in scaling
    paths = sorted((GPU_MULTI / "ddp").glob("*.r*.json.gz"))
    assert len(paths) == 3
    for path in paths:
        document, problems = documents.check(path)
        assert problems == [] and document["run"]["gpus"] == ["0", "1"]
        assert all(
            m["params"]["backend"] == "nccl" and m["params"]["world_size"] == 2
            for m in document["measurements"]
        )


@pytest.mark.slow
def test_a_report_says_what_ran_on_each_side_and_groups_the_changes(tmp_path):
    # Real H100 results of one cell on both sides (A/A), given what a profiled call would record:
    # cuDNN's attention kernel everywhere, except that side B's sdpa ran the flash backend.
    cudnn_sdpa = "cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7"
    flash = "void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<64, 128, 128, 4>>(Flash_fwd_params)"
    sides = {  # the bundled cell of two shards of one matrix
        "a": SHARDS[0] / "torch2.11.0-cu130_cudnn-bundled_fd7979a52b.r1.json.gz",
        "b": SHARDS[1] / "torch2.11.0-cu130_cudnn-bundled_fd7979a52b.r1.json.gz",
    }
    for side, source in sides.items():
        doc = jsonio.read(source)
        for m in doc["measurements"]:
            if m["status"] != "ok":
                continue
            sdpa = m["workload"] == "sdpa" and m["dtype"] == "bf16"
            kernel, backend = (flash, "flash") if sdpa and side == "b" else (cudnn_sdpa, "cudnn")
            m["what_ran"] = {
                "operators": [{"name": f"aten::_scaled_dot_product_{backend}_attention", "calls": 1}],
                "kernels": [{"name": kernel, "calls": 1, "share": 1.0}],
                "attention_backend": backend if m["workload"].startswith("sdpa") else None,
                "cudnn_used": backend == "cudnn",
                "profile_s": 0.01,
            }
        jsonio.write_atomic(tmp_path / f"{side}.json.gz", doc)
    out = tmp_path / "report"
    done = run_cli("compare", str(tmp_path / "a.json.gz"), str(tmp_path / "b.json.gz"), "--out", str(out))
    assert done.returncode in (0, 1), done.stdout + done.stderr
    verdict = json.loads((out / "verdict.json").read_text())
    assert schemas.problems("verdict", verdict, "verdict.json") == []
    by_row = {(c["workload"], c["dtype"]): c for c in verdict["comparisons"]}
    assert by_row[("sdpa", "bf16")]["what_ran"] == "changed"
    assert by_row[("sdpa", "bf16")]["ran_change"] == "attention backend cudnn -> flash"
    others = [c for key, c in by_row.items() if key != ("sdpa", "bf16")]
    assert others and all(c["what_ran"] == "same" and c["ran_change"] is None for c in others)
    text = (out / "report.md").read_text()
    changed = section(text, "What changed")
    assert "attention backend cudnn -> flash" in changed and "sdpa bf16 (B)" in changed
    assert f"{len(others)} rows ran the same kernels on both sides" in changed
    assert text.index("## What changed") < text.index("## Verdicts against the baseline")
    table = section(text, "Verdicts against the baseline")
    assert "| what ran " in table and f"same: {cudnn_sdpa}" in table  # what ran, named


@pytest.mark.slow
def test_a_cell_run_with_cudnn_benchmark_off_and_on_compares_the_two_and_names_what_each_picked(
    tmp_path, write_matrix
):
    # a real CPU run: the autotuner has nothing to pick here, so both sides name the same operators
    path = write_matrix("""
schema_version: 1
name: autotune
axes: {torch: [installed], cudnn: [bundled]}
knobs: {cudnn_benchmark: [false, true]}
suite: {workloads: [conv2d_r50_3x3], dtypes: [fp32], time_budget_s: 0.05, numerics: false}
rounds: 2
baseline: {cudnn: bundled}
""")
    out = tmp_path / "report"
    done = run_cli("qualify", "--matrix", str(path), "--out", str(tmp_path / "r"), "--report-out", str(out))
    assert done.returncode == 0, done.stdout + done.stderr
    verdict = json.loads((out / "verdict.json").read_text())
    assert schemas.problems("verdict", verdict, "verdict.json") == []
    (row,) = verdict["autotuning"]
    assert (row["workload"], row["knobs"], row["rounds_off"], row["rounds_on"]) == (
        "conv2d_r50_3x3",
        "deterministic=0 tf32=0",
        2,
        2,
    )
    assert row["basis"] == "rounds" and row["ratio"] > 0 and row["verdict"] in ("same", "inconclusive")
    assert row["pick"] == "same" and row["picked_off"] == row["picked_on"]
    assert "aten::" in row["picked_on"]  # on a CPU the operators name what ran
    table = section((out / "report.md").read_text(), "Auto-tuning: cudnn_benchmark off -> on")
    assert "| conv2d_r50_3x3 " in table and "same kernels" in table and "aten::" in table


@pytest.mark.slow
def test_compare_prints_like_pyperf_and_filters_sorts_and_formats(tmp_path):
    a = next(SHARDS[0].glob("*bundled*.r1.json.gz"))
    b = next(SHARDS[0].glob("*disabled*.r1.json.gz"))
    table = run_cli("compare", str(a), str(b))
    assert table.returncode == 0, table.stderr
    conv = next(
        line for line in table.stdout.splitlines() if line.startswith("conv2d_r50_3x3 ") and " bf16 " in line
    )
    assert re.search(r"\d+\.\d (us|ms) -> \d+\.\d (us|ms) +\d+\.\d\dx slower", conv), conv
    as_json = run_cli("compare", str(a), str(b), "--format", "json", "--sort", "ratio", "--only-changed")
    rows = json.loads(as_json.stdout)  # the summary went to stderr
    assert "outcome:" in as_json.stderr and rows
    assert all(r["verdict"] != "same" for r in rows)
    sizes = [abs(math.log(r["ratio"])) for r in rows]
    assert sizes == sorted(sizes, reverse=True)
    assert all(
        r["ratio"] == pytest.approx(r["median_candidate_s"] / r["median_baseline_s"], rel=0.05) for r in rows
    )
    as_csv = run_cli("compare", str(a), str(b), "--format", "csv")
    frame = pd.read_csv(io.StringIO(as_csv.stdout))
    assert {"median_baseline_s", "median_candidate_s", "ratio", "verdict"} <= set(frame.columns)
    markdown = run_cli("compare", str(a), str(b), "--format", "md").stdout
    assert markdown.splitlines()[0].startswith("| workload ") and "| --- |" in markdown.splitlines()[1]
    out = tmp_path / "report"
    assert run_cli("compare", str(a), str(b), "--out", str(out)).returncode == 0
    files = pd.read_csv(out / "verdicts.csv")["baseline_files"]
    assert all(isinstance(json.loads(f), list) for f in files)  # JSON arrays, not Python reprs


@pytest.mark.slow
def test_the_markdown_answers_first_gpu_outcome_warnings_scorecard_then_the_method(verdict_report):
    out, done = verdict_report
    text = (out / "report.md").read_text()
    first = text.split("\n## ")[0]
    assert "NVIDIA H100 80GB HBM3 · driver 580.159.04 · torch 2.11.0+cu130" in first
    assert "**Outcome: regression** (exit code 1): 8 slower, 1 faster, 21 same." in first
    order = [text.index(f"## {s}") for s in ("Scorecard", "Read this first", "Method", "Verdicts against")]
    assert order == sorted(order)
    warnings = section(text, "Read this first")
    assert "spread over 2 physical GPUs" in warnings and "PYTORCH_SKIP_CUDNN_COMPATIBILITY_CHECK" in warnings
    scorecard = section(text, "Scorecard")
    system, disabled = (ln for ln in scorecard.splitlines() if ln.startswith("| B:") or ln.startswith("| C:"))
    assert "| 1 " in system and "sdpa bf16: 1.54x slower" in system
    # B's compatibility-override warning; C's: cuDNN disabled, yet its attention ran cuDNN
    assert system.endswith("| 1 |") and disabled.endswith("| 1 |")
    assert "yet 2 measurement(s) ran cuDNN all the same: sdpa bf16, sdpa_cudnn_s2048 bf16" in warnings
    assert "conv2d_r50_3x3 bf16: 6.74x slower" in disabled
    # the summary lists faster rows too, the largest change first
    summary = [ln for ln in done.stdout.splitlines() if ln.startswith(("  SLOWER", "  FASTER"))]
    assert "conv2d_r50_3x3 bf16" in summary[0] and summary[-1].startswith("  FASTER") and len(summary) == 9


@pytest.mark.slow
def test_ci_systems_get_a_short_summary_and_junit_xml(verdict_report, tmp_path):
    out, _ = verdict_report
    verdict = json.loads((out / "verdict.json").read_text())
    summary = (out / "summary.md").read_text()
    assert (
        "**Outcome: regression** (exit code 1)" in summary
        and "| B: 2.11.0+cu130 / cuDNN system:auto |" in summary
    )
    rows = [
        ln
        for ln in summary.splitlines()
        if ln.startswith("| conv2d")
        or ln.startswith("| sdpa")
        or ln.startswith("| lstm")
        or ln.startswith("| batchnorm")
    ]
    assert len(rows) == 9 and rows[0].startswith(
        "| conv2d_r50_3x3 | bf16 | C | slower | 6.737"
    )  # largest first
    suites = ElementTree.parse(out / "junit.xml").getroot()
    cases = suites.findall("./testsuite/testcase")
    assert len(cases) == len(verdict["comparisons"])
    failed = {c.get("name") for c in cases if c.find("failure") is not None}
    assert len(failed) == verdict["counts"]["slower"] + verdict["counts"]["failed"] == 8
    assert "sdpa bf16 [benchmark=0 deterministic=0 tf32=0]" in failed
    # a big report's summary still fits a pull-request comment
    done = run_cli("report", "--results", str(RELEASE_ATLAS / "results"), "--out", str(tmp_path))
    assert done.returncode == 1  # lease 1: 324 rows, 3 releases against bundled, 60 rows slower
    big = (tmp_path / "summary.md").read_text()
    counts = json.loads((tmp_path / "verdict.json").read_text())["counts"]
    assert len(big.encode()) < 64 * 1024 and f"{counts['inconclusive']} inconclusive" in big
    skipped = ElementTree.parse(tmp_path / "junit.xml").getroot().findall("./testsuite/testcase/skipped")
    assert len(skipped) == counts["inconclusive"] > 0  # inconclusive rows are skipped, not passed


def test_a_cells_result_files_are_listed_in_round_order(tmp_path):
    # issue 41: the Groups table linked r1, r10, r11, r2
    docs = [
        ({"status": "ok", "device": "cpu", "run": {"round": n}}, str(tmp_path / f"c.r{n}.json.gz"))
        for n in (1, 10, 11, 2)
    ]
    empty = pd.DataFrame()
    analysis = Analysis(empty, empty, empty, empty, empty, None, {"c": docs}, {})  # type: ignore[arg-type]
    view = View("n", "c", ("c",), {"c": "c"}, 5.0, 0.002, 11, "")
    section = run_sections.cells(view, analysis, tmp_path, {"c": "A"})
    files = section.rows[0][-1]
    assert [link.text for link in files] == ["r1", "r2", "r10", "r11"], files


@pytest.mark.slow
def test_a_run_stopped_short_of_three_rounds_says_so_first_and_calls_nothing_same(tmp_path):
    # lease 11's committed results, with round 3 of one cell gone: as a run stopped before its end leaves them
    results = tmp_path / "stem-bf16"
    shutil.copytree(RELEASE_ATLAS / "stem-bf16", results)
    (stopped,) = results.glob("*9.24.1.1*.r3.json.gz")
    stopped.unlink()
    out = tmp_path / "report"
    done = run_cli("report", "--results", str(results), "--out", str(out))
    assert done.returncode in (0, 1), done.stderr
    summary = (out / "summary.md").read_text()
    outcome = summary.index("**Outcome:")
    caution = summary.index("1 of the 6 groups hold fewer rounds than the 3 asked of every row (C 2)")
    assert outcome < caution < summary.index("**What to do next:**")
    verdicts = pd.read_csv(out / "verdicts.csv")
    short = verdicts[verdicts["group"].str.contains("9.24.1.1")]
    assert len(short) == 2 and set(short["verdict"]) == {"inconclusive"}
    assert short["reason"].str.contains("decide nothing (smallest p", regex=False).all()
    assert (verdicts[~verdicts["group"].str.contains("9.24.1.1")]["verdict"] != "inconclusive").any()
