"""``compare`` on folders (issue 32, 5): a side's cells are never pooled. One cell a side is compared A -> B,
folders holding the same cells are compared cell by cell, anything else is refused naming each side's cells
and --cell; sides from different matrices or suite settings say so, on stderr and in the report."""

from __future__ import annotations

import csv
import io
import json
import shutil

import pytest

from harness import jsonio
from tests.conftest import run_cli
from tests.evidence import GPU_VERDICTS, RELEASE_ATLAS, TORCH_AXIS_H100

pytestmark = pytest.mark.slow  # every test here takes seconds (docs/development.md: the fast tests)

SHARDS = sorted(GPU_VERDICTS.glob("results-shard*"))  # one matrix: 3 cells each
REMAINING_PATH = RELEASE_ATLAS / "remaining-path"  # 17 cells
STEP_D4A_E4B = RELEASE_ATLAS / "step-d4a-e4b"  # 7 cells, lease 18 (an H100)
STEP_E4B = RELEASE_ATLAS / "step-e4b"  # 2 cells, lease 19 (another H100)
TORCH_AXIS = TORCH_AXIS_H100 / "results"  # 7 cells
BUNDLED, DISABLED = (
    "torch2.11.0-cu130_cudnn-bundled_fd7979a52b",
    "torch2.11.0-cu130_cudnn-disabled_ef610b7191",
)
CELLS = sorted({p.name.split(".r")[0] for p in SHARDS[0].glob("*.json.gz")})


def test_folders_whose_cells_differ_are_refused_naming_each_sides_cells_and_how_to_pick(tmp_path):
    out = tmp_path / "report"
    done = run_cli("compare", str(REMAINING_PATH), str(TORCH_AXIS), "--out", str(out))
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stderr.splitlines()
    assert any(": A: holds 17 cells: torch-installed_cudnn-bundled_2ecb882014, " in ln for ln in lines)
    assert any(ln.endswith("and 9 more") for ln in lines)  # 8 named, the rest counted
    assert any(": B: holds 7 cells: " in ln and "torch2.14.1_cudnn-wheel-9.28.1.4" in ln for ln in lines), (
        done.stderr
    )
    assert "--cell: a side's cells are never pooled" in done.stderr and "-a and -b forms" in done.stderr
    assert "verdicts:" not in done.stdout and not list(out.iterdir())  # nothing compared, nothing written


def test_a_cell_picked_on_each_side_is_compared_alone(tmp_path):
    done = run_cli("compare", str(SHARDS[0]), str(SHARDS[1]), "--cell", "bundled", "--format", "json")
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)
    assert rows and "cell" not in rows[0]  # one comparison: its rows as they always were
    assert all(r["rounds_baseline"] == 3 and r["rounds_candidate"] == 2 for r in rows)  # that cell's rounds
    # two different cells, one a side
    done = run_cli(
        "compare", str(SHARDS[0]), str(SHARDS[1]), "--cell-a", "bundled", "--cell-b", "disabled", "--out",
        str(tmp_path / "r"),
    )  # fmt: skip
    assert done.returncode in (0, 1), done.stderr
    verdict = json.loads((tmp_path / "r" / "verdict.json").read_text())
    assert [g["label"] for g in verdict["groups"]] == [
        f"A: {SHARDS[0]} ({BUNDLED})",
        f"B: {SHARDS[1]} ({DISABLED})",
    ]
    conv = next(
        c for c in verdict["comparisons"] if (c["workload"], c["dtype"]) == ("conv2d_r50_3x3", "bf16")
    )
    assert conv["ratio"] > 2  # cuDNN disabled against bundled: what a comparison of those two cells shows
    done = run_cli("compare", str(SHARDS[0]), str(SHARDS[1]), "--cell-b", "nosuch")
    assert done.returncode == 2 and "--cell-b: holds no cell whose id contains 'nosuch'" in done.stderr
    assert DISABLED in done.stderr


def test_folders_holding_the_same_cells_are_compared_cell_by_cell(tmp_path):
    out = tmp_path / "report"
    done = run_cli("compare", str(SHARDS[0]), str(SHARDS[1]), "--out", str(out))
    assert done.returncode == 0, done.stdout + done.stderr
    for cell in CELLS:
        assert f"\ncell {cell}:\n" in done.stdout
        verdict = json.loads((out / cell / "verdict.json").read_text())
        # each cell against itself, 3 rounds against 2: never another cell's runs pooled in
        assert {g["rounds_ok"] for g in verdict["groups"]} == {3, 2}, cell
        assert all(cell in g["label"] for g in verdict["groups"])
        assert verdict["counts"]["slower"] == verdict["counts"]["faster"] == 0  # A/A within each cell
    assert done.stdout.count("outcome: pass") == len(CELLS)
    as_json = run_cli("compare", str(SHARDS[0]), str(SHARDS[1]), "--format", "json")
    rows = json.loads(as_json.stdout)  # one document: every cell's rows, the cell first
    assert sorted({r["cell"] for r in rows}) == CELLS and next(iter(rows[0])) == "cell"
    assert as_json.stderr.count("outcome: pass") == len(CELLS)
    as_csv = run_cli("compare", str(SHARDS[0]), str(SHARDS[1]), "--format", "csv")
    table = list(csv.DictReader(io.StringIO(as_csv.stdout)))
    assert sorted({r["cell"] for r in table}) == CELLS and len(table) == len(rows)


def test_sides_from_different_matrices_are_named_on_stderr_and_read_first_in_the_report(tmp_path):
    out = tmp_path / "report"
    # cuDNN 9.26.1.1's cell in two matrices: lease 18's rows around the two steps and lease 19's e4b alone
    done = run_cli("compare", str(STEP_D4A_E4B), str(STEP_E4B), "--cell", "9.26.1.1", "--out", str(out))
    assert done.returncode == 0, done.stderr
    (note,) = [line for line in done.stderr.splitlines() if line.startswith("note: ")]
    assert "A and B come from different matrices" in note
    assert "A: 'release-atlas-step-d4a-e4b' (matrix sha256 54bfff66df61)" in note
    assert "B: 'release-atlas-step-e4b' (matrix sha256 96df3120c9fb)" in note
    text = (out / "report.md").read_text()
    first = text.split("## Read this first")[1].split("\n## ")[0]
    assert "A and B come from different matrices" in first and "release-atlas-step-e4b" in first


def test_sides_run_with_different_suite_settings_are_named(tmp_path):
    # the same matrix on both sides (its plan.json beside B's runs too), sampled for another time budget
    b = tmp_path / "b"
    b.mkdir()
    shutil.copy(SHARDS[1] / "plan.json", b)
    for path in SHARDS[1].glob(f"{BUNDLED}.*.json.gz"):
        doc = jsonio.read(path)
        command = doc["run"]["command"]
        assert command[command.index("--time-budget-s") + 1] == "2.0"
        command[command.index("--time-budget-s") + 1] = "0.5"
        for key in ("started_at", "finished_at"):  # another run, a century earlier and as long
            doc[key] = doc[key].replace("20", "19", 1)
        jsonio.write_atomic(b / path.name, doc)
    done = run_cli("compare", str(SHARDS[1]), str(b), "--cell", "bundled")
    assert done.returncode == 0, done.stderr
    notes = [line for line in done.stderr.splitlines() if line.startswith("note: ")]
    assert len(notes) == 1 and "different settings (time-budget-s 2.0 on A, 0.5 on B)" in notes[0], notes
    # one folder's own files on both sides: the same matrix and settings, nothing to note
    a_file, b_file = (next(SHARDS[0].glob(f"{cell}.r1.json.gz")) for cell in (BUNDLED, DISABLED))
    done = run_cli("compare", str(a_file), str(b_file))
    assert done.returncode in (0, 1) and "note:" not in done.stderr, done.stderr


def test_the_refusals_of_an_ad_hoc_compare_stay(tmp_path):
    # a run on both sides
    done = run_cli("compare", str(SHARDS[0]), str(SHARDS[0]))
    assert done.returncode == 2 and "compared with itself" in done.stderr
    # one cell of a side whose runs loaded different cuDNN runtimes
    a = tmp_path / "a"
    shutil.copytree(SHARDS[0], a)
    path = next(a.glob(f"{BUNDLED}.r2.json.gz"))
    doc = jsonio.read(path)
    doc["cudnn"]["runtime_version"] = "9.14.0"
    jsonio.write_atomic(path, doc)
    done = run_cli("compare", str(a), str(SHARDS[1]), "--cell", "bundled")
    assert done.returncode == 2, done.stdout
    assert f"results differ in cuDNN runtime within A {BUNDLED}" in done.stderr
    # another suite version on one side
    b = tmp_path / "b"
    b.mkdir()
    for path in SHARDS[1].glob(f"{BUNDLED}.*.json.gz"):
        doc = jsonio.read(path)
        doc["suite_version"] = "0.4"
        jsonio.write_atomic(b / path.name, doc)
    done = run_cli("compare", str(SHARDS[0]), str(b), "--cell", "bundled")
    assert done.returncode == 2 and "results differ in suite version" in done.stderr


@pytest.mark.slow
def test_compare_judges_each_workload_at_its_plans_threshold_as_report_does(tmp_path, write_matrix):
    # issue 41, 8: compare judged every row at 5 % where the matrix said 10 % for relu
    matrix = write_matrix("""
        schema_version: 1
        name: thresholds
        backend: local
        axes: {torch: [installed], cudnn: [bundled, disabled]}
        suite: {device: cpu, workloads: [relu, gemm], dtypes: [fp32], time_budget_s: 0.02, numerics: false}
        rounds: 3
        baseline: {cudnn: bundled}
        thresholds: {regression_pct: 5, per_workload: {relu: 10}}
    """)
    results = tmp_path / "r"
    done = run_cli("run", "--matrix", str(matrix), "--out", str(results), cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    done = run_cli("report", "--results", str(results), "--out", str(tmp_path / "report"))
    assert done.returncode in (0, 1), done.stdout + done.stderr  # an A/A on a CPU: its verdicts are noise
    assert f"report: {tmp_path / 'report' / 'summary.md'}, " in done.stdout  # the answer first (walk 3)
    reported = json.loads((tmp_path / "report" / "verdict.json").read_text())["comparisons"]
    # the same runs as two folders, one cell each, each beside its plan.json
    for side, cell in (("a", "bundled"), ("b", "disabled")):
        (tmp_path / side).mkdir()
        shutil.copy(results / "plan.json", tmp_path / side)
        for path in results.glob(f"*cudnn-{cell}_*.json.gz"):
            shutil.copy(path, tmp_path / side)
    done = run_cli("compare", str(tmp_path / "a"), str(tmp_path / "b"), "--out", str(tmp_path / "cmp"))
    assert done.returncode in (0, 1), done.stdout + done.stderr
    compared = json.loads((tmp_path / "cmp" / "verdict.json").read_text())["comparisons"]
    assert {c["workload"]: c["threshold_pct"] for c in compared} == {"relu": 10, "gemm": 5}
    # and the terminal says so after its rows (the walk found them only in --out's report)
    assert "\njudged at threshold 5% (relu 10%), alpha 0.002, from A's plan\n" in done.stdout, done.stdout
    # one judgement: the same rows, thresholds and verdicts as report's
    judged = {(c["workload"], c["threshold_pct"], c["verdict"], round(c["ratio"], 9)) for c in compared}
    assert judged == {
        (c["workload"], c["threshold_pct"], c["verdict"], round(c["ratio"], 9)) for c in reported
    }
    page = " ".join((tmp_path / "cmp" / "report.md").read_text().split())  # lines wrap at any space
    assert "threshold 5% (relu 10%), alpha 0.002, from A's plan" in page
    # a threshold given is every workload's
    given = run_cli("compare", str(tmp_path / "a"), str(tmp_path / "b"), "--threshold-pct", "7", "--out",
                    str(tmp_path / "given"))  # fmt: skip
    assert given.returncode in (0, 1), given.stdout + given.stderr
    compared = json.loads((tmp_path / "given" / "verdict.json").read_text())["comparisons"]
    assert {c["threshold_pct"] for c in compared} == {7}
    # a damaged plan.json is said as such, never as a missing one, nor passed over (walks 3 and 4)
    (tmp_path / "a" / "plan.json").write_text('{"schema_version": 1, "suite": {"cpu_rows": 3}}')
    one = run_cli("compare", str(tmp_path / "a"), str(tmp_path / "b"))
    assert one.returncode in (0, 1), one.stdout + one.stderr
    assert f"from B's plan; {tmp_path / 'a' / 'plan.json'} could not be read: " in one.stdout
    shutil.copy(tmp_path / "a" / "plan.json", tmp_path / "b" / "plan.json")
    damaged = run_cli("compare", str(tmp_path / "a"), str(tmp_path / "b"))
    assert damaged.returncode in (0, 1), damaged.stdout + damaged.stderr
    assert f"the defaults ({tmp_path / 'a' / 'plan.json'} could not be read: " in damaged.stdout
