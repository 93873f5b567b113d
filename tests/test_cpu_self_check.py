"""The default matrix on a CPU: the A/A check's rows (``suite.cpu_rows``) and its threshold
(``thresholds.cpu_regression_pct``), and the README's first-run figures tied to what they cite."""

from __future__ import annotations

import json
import re

import pytest

from harness import schemas
from harness.backends import packages, registry
from harness.backends.host import ThisHost
from harness.plan import matrix, starter
from harness.plan.model import Plan
from harness.report.analysis.model import View
from harness.report.sides import Thresholds
from tests.conftest import REPO
from tests.evidence import LAB

FIRST_RUN = LAB / "first-run"
README = (REPO / "README.md").read_text()
MATRIX = """\
schema_version: 1
name: cpu-check
backend: local
axes: {torch: [installed], cudnn: [bundled, disabled]}
suite: {workloads: [relu], dtypes: [fp32]}
baseline: {cudnn: bundled}
"""


def default_plan() -> Plan:
    host = ThisHost(packages.PackageSource("http://127.0.0.1:9/simple"), gpu=False)  # a CPU asks no index
    return matrix.load(REPO / "matrix.yaml", None, registry.cell_problems, host=host)


def test_the_default_matrix_measures_seven_fp32_rows_on_a_cpu_and_judges_them_at_its_cpu_threshold():
    plan = default_plan()
    assert plan.suite.rows_on("cpu") == tuple(plan.suite.cpu_rows) and len(plan.suite.cpu_rows) == 7
    assert all(row.endswith(":fp32_default") for row in plan.suite.cpu_rows)
    assert plan.suite.rows_on("cuda") == ()  # a GPU measures the profile's rows, in both dtypes
    view = View.from_plan(plan)
    assert view.on({"cpu"}).threshold_pct("gemm") == plan.cpu_regression_pct == 10
    assert view.on({"cuda"}).threshold_pct("gemm") == view.on({"cpu", "cuda"}).threshold_pct("gemm") == 5


def test_a_plan_without_a_cpu_threshold_keeps_its_form_and_one_with_it_comes_back_whole(write_matrix):
    path = write_matrix(MATRIX)
    plain = matrix.load(path, None, registry.cell_problems)
    assert "cpu_regression_pct" not in plain.to_json()["thresholds"]  # its plan.json hashes as before
    assert View.from_plan(plain).on({"cpu"}).threshold_pct("relu") == plain.regression_pct
    path = write_matrix(MATRIX + "thresholds: {regression_pct: 4, cpu_regression_pct: 12}\n")
    given = matrix.load(path, None, registry.cell_problems)
    back = Plan.from_json(json.loads(json.dumps(given.to_json())))
    assert back.cpu_regression_pct == 12 and back.regression_pct == 4
    assert Thresholds(4, 0.002, {}, "from A's plan", 12).told() == (
        "threshold 4% (12% on a CPU), alpha 0.002, from A's plan"
    )


def test_the_plans_of_the_shipped_matrices_are_valid_plan_documents_that_read_back_whole(tmp_path):
    # a run writes plan.json and reads it again on every later run into the folder: a key the matrix takes
    # but the plan schema does not (suite.cpu_rows, walk 3) refused every run after the first
    host = ThisHost(packages.PackageSource("http://127.0.0.1:9/simple"), gpu=False)  # a CPU asks no index
    for path in (REPO / "matrix.yaml", starter.write(tmp_path / "mine.yaml", force=False)):
        plan = matrix.load(path, None, registry.cell_problems, host=host)
        document = json.loads(json.dumps(plan.to_json()))
        assert schemas.problems("plan", document, "plan.json") == [], path
        assert Plan.from_json(document) == plan, path


@pytest.mark.parametrize("value", [0, -3, "ten"])
def test_a_cpu_threshold_that_is_no_positive_number_is_refused_naming_it(write_matrix, value):
    path = write_matrix(MATRIX + f"thresholds: {{cpu_regression_pct: {value}}}\n")
    with pytest.raises(Exception, match="cpu_regression_pct"):
        matrix.load(path, None, registry.cell_problems)


def test_the_readmes_first_run_figures_are_the_committed_measurements():
    install = json.loads((FIRST_RUN / "torch-install.json").read_text())
    assert f"{install['download_bytes'] / 1e9:.2f} GB to download in {install['wheels']} wheels" in README
    assert f"{install['installed_mib'] / 1024:.1f} GiB on disk" in README
    runs = [json.loads(line) for line in (FIRST_RUN / "runs.jsonl").read_text().splitlines()]
    quiet = [r for r in runs if r["set"] == "quiet"]
    loaded = [r for r in runs if r["set"] == "loaded"]
    assert len(quiet) == 5 and len(loaded) == 5
    said = re.search(r"quiet, in ([\d.]+) to ([\d.]+) s", README)
    assert said is not None
    walls = sorted(r["wall_s"] for r in quiet)
    assert (float(said[1]), float(said[2])) == (walls[0], walls[-1])
    assert all(r["verdicts"] == {"same": 7} for r in quiet)  # every row decided, and right
    said = re.search(r"it stopped in ([\d.]+) to ([\d.]+) s", README)
    assert said is not None
    walls = sorted(r["wall_s"] for r in loaded)
    assert (float(said[1]), float(said[2])) == (walls[0], walls[-1])
    assert all(r["stopped"].startswith("stopped after") and r["exit_code"] == 0 for r in loaded)  # said why
