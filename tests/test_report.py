"""The report rendered from the committed GPU results: what a reader must find in it."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from harness import compare, report, results
from harness.matrix import Plan
from tests.conftest import GPU_REPORT, run_cli


def render(tmp_path: Path) -> tuple[Plan, str, list[dict]]:
    results_dir = GPU_REPORT / "results"
    plan = Plan.from_json(json.loads((results_dir / "plan.json").read_text()))
    rendered = report.render(plan, results.load(results_dir), results_dir, tmp_path)
    assert rendered.failed_cells == () and rendered.missing_cells == ()
    with rendered.csv.open() as f:
        rows = list(csv.DictReader(f))
    return plan, rendered.markdown.read_text(), rows


def test_report_names_the_cudnn_each_cell_loaded(tmp_path):
    plan, text, _ = render(tmp_path)
    assert len(plan.cells) == 3
    cells = text.split("## Cells")[1].split("##")[0]
    bundled, system, disabled = (line for line in cells.splitlines() if line.startswith("| torch2.11.0"))
    assert "| 9.19.0 " in bundled and "site-packages/nvidia/cudnn/lib" in bundled and "(baseline)" in bundled
    assert "| 9.14.0 " in system and "/usr/lib/x86_64-linux-gnu" in system
    assert "cuDNN disabled" in disabled
    assert "NVIDIA H100 80GB HBM3" in text and "580.159.04" in text


def test_report_compares_every_workload_against_the_baseline(tmp_path):
    plan, text, rows = render(tmp_path)
    table = text.split("## Results")[1]
    lines = [ln for ln in table.splitlines() if ln.startswith("| conv2d_r50_3x3 ")]
    assert len(lines) == 4  # fp32/bf16 x cudnn.benchmark off/on
    assert all("×" in ln for ln in lines)
    ok = [r for r in rows if r["status"] == "ok"]
    assert len(ok) == 3 * 40
    medians = compare.medians(compare.long_form(results.load(GPU_REPORT / "results")), plan)
    ratios = compare.speedups(medians, plan.baseline_id)
    assert (ratios[plan.baseline_id] == 1.0).all()
    disabled = next(c.id for c in plan.cells if c.cudnn.kind == "disabled")
    conv = ratios.loc[("conv2d_r50_3x3", "bf16", "benchmark=0 deterministic=0 tf32=0"), disabled]
    assert conv < 0.5  # PyTorch's native conv is far slower than cuDNN's on the GPU


def test_every_result_file_is_linked_from_the_report(tmp_path):
    _, text, _ = render(tmp_path)
    for path in (GPU_REPORT / "results").glob("torch*.json"):
        assert f"({Path(report.os.path.relpath(GPU_REPORT / 'results', tmp_path)) / path.name})" in text


def test_committed_report_matches_a_fresh_render(tmp_path):
    done = run_cli("report", "--results", str(GPU_REPORT / "results"), "--out", str(tmp_path))
    assert done.returncode == 0, done.stderr
    fresh = (tmp_path / "results.csv").read_text()
    assert fresh == (GPU_REPORT / "results.csv").read_text()
    section = lambda p: p.read_text().split("## Results")[1]  # noqa: E731  (no links or dates in it)
    assert section(GPU_REPORT / "report.md") == section(tmp_path / "report.md")


def test_table_cells_can_never_break_a_markdown_table():
    text = report._table([["a|b", "line\nbreak", None]], ["h|1", "h2", "h3"])
    header, _rule, row = text.splitlines()
    assert row.count("|") - row.count("\\|") == header.count("|") - header.count("\\|") == 4
    assert "line<br>break" in row


def test_a_damaged_plan_file_is_bad_input_not_a_traceback(tmp_path):
    for text in ('{"name": 3}', "garbage", '{"cells": [], "baseline": "x"}'):
        (tmp_path / "plan.json").write_text(text)
        done = run_cli("report", "--results", str(tmp_path), "--out", str(tmp_path / "out"))
        assert (
            done.returncode == 2 and "not a plan written by" in done.stderr and "Traceback" not in done.stderr
        )
    done = run_cli("report", "--results", str(tmp_path / "nowhere"))
    assert done.returncode == 2 and "no plan.json here" in done.stderr


SUITE_REPORT = GPU_REPORT.parent / "gpu-suite-default"


def test_the_default_suite_results_are_valid_and_render(tmp_path):
    for path in sorted((SUITE_REPORT / "results").glob("torch*.json")):
        document, problems = results.check(path)
        assert problems == [], problems[:3]
        ok = [m for m in document["measurements"] if m["status"] == "ok"]
        assert len(ok) >= 250 and len({m["workload"] for m in ok}) >= 60
        assert {m["dtype"] for m in ok} == {"fp32", "tf32", "bf16", "fp16"}
        assert all(m["numerics"]["nan_count"] == 0 for m in ok if "numerics" in m)
        assert document["environment"]["gpu_state"]["nvml"] is True
        assert all(len(m["sm_clock_mhz"]) == m["stats"]["n"] for m in ok)
    done = run_cli("report", "--results", str(SUITE_REPORT / "results"), "--out", str(tmp_path))
    assert done.returncode == 0, done.stderr
    section = lambda p: p.read_text().split("## Results")[1]  # noqa: E731
    assert section(SUITE_REPORT / "report.md") == section(tmp_path / "report.md")
