"""``harness repro``: a report row as a standalone reproducer, generated from a real CPU run and run here."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import run_cli

pytestmark = pytest.mark.slow  # every test here takes seconds (docs/development.md: the fast tests)

MATRIX = """
schema_version: 1
name: repro-cpu
axes: {torch: [installed], cudnn: [bundled, disabled]}
suite:
  {workloads: [relu, conv2d_r50_3x3], dtypes: [fp32], time_budget_s: 0.05, min_time_s: 0.02, numerics: false}
rounds: 2
baseline: {cudnn: bundled}
"""
ROW = ("--workload", "conv2d_r50_3x3", "--dtype", "fp32")


@pytest.fixture(scope="module")
def qualified(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("repro")
    (root / "matrix.yaml").write_text(MATRIX)
    done = run_cli(
        "qualify",
        "--matrix",
        str(root / "matrix.yaml"),
        "--out",
        str(root / "results"),
        "--report-out",
        str(root / "report"),
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return root


def standalone(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """The script as someone upstream runs it: another folder, no harness on any path."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run(
        [sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600, check=False
    )


def imported_modules(source: str) -> set[str]:
    """What ``source`` imports when it runs (not what only a type checker reads)."""
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            node.body = []
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module.split(".")[0])
    return found


def test_the_reproducer_needs_only_torch_and_runs_both_sides_as_the_row_did(qualified, tmp_path):
    out = tmp_path / "repro"
    done = run_cli("repro", "--results", str(qualified / "results"), *ROW, "--out", str(out))
    assert done.returncode == 0, done.stdout + done.stderr
    shown = sorted(p.name for p in out.iterdir() if p.name != ".lock")  # .lock: held while it was written
    assert shown == ["README.md", "repro.py"]  # local cells: no Dockerfile
    script = (out / "repro.py").read_text()
    namespace: dict = {}
    exec(compile(script.split("\ndef ", 1)[0], "repro.py", "exec"), namespace)  # its ROW and SOURCES
    row, sources = namespace["ROW"], namespace["SOURCES"]
    allowed = set(sys.stdlib_module_names) | {"torch", "harness"}  # harness: the sources it carries
    for name, text in {"repro.py": script, **sources}.items():
        assert imported_modules(text) <= allowed, name
    assert "harness/suite/workloads/conv.py" in sources and "harness/suite/measure.py" in sources
    verdict = json.loads((qualified / "report" / "verdict.json").read_text())
    (judged,) = [c for c in verdict["comparisons"] if c["workload"] == "conv2d_r50_3x3"]
    assert row["report_ratio"] == pytest.approx(judged["ratio"])
    assert row["sides"]["candidate"]["cudnn_enabled"] is False and row["sides"]["baseline"]["cudnn_enabled"]
    assert row["knobs"] == {"cudnn_benchmark": False, "deterministic": False, "tf32": False}

    ran = standalone(str(out / "repro.py"), "--rounds", "2", cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr[-3000:]
    found = json.loads(ran.stdout)
    assert found["rounds"] == {"baseline": 2, "candidate": 2}
    assert found["ratio"] == pytest.approx(found["medians_s"]["candidate"] / found["medians_s"]["baseline"])
    assert found["report_ratio"] == row["report_ratio"] and isinstance(found["within_5_pct_of_report"], bool)
    assert [r["cudnn_enabled"] for r in found["runs"]["candidate"]] == [False, False]
    assert all(r["params"]["batch"] >= 1 and r["timer"] == "perf_counter" for r in found["runs"]["baseline"])
    assert all("aten::" in text for texts in found["what_ran"].values() for text in texts)
    readme = (out / "README.md").read_text()
    assert judged["group"] in readme and f"{judged['ratio']:.3f}" in readme and "python3 repro.py" in readme


def test_one_process_per_side_and_the_ratio_of_their_lines(qualified, tmp_path):
    out = tmp_path / "repro"
    assert run_cli("repro", "--results", str(qualified / "results"), *ROW, "--out", str(out)).returncode == 0
    for side in ("baseline", "candidate"):
        one = standalone(str(out / "repro.py"), "--one", "--side", side, cwd=tmp_path)
        assert one.returncode == 0, one.stderr[-3000:]
        (tmp_path / f"{side}.jsonl").write_text(one.stdout)
    ratio = standalone(
        str(out / "repro.py"),
        "--ratio",
        str(tmp_path / "baseline.jsonl"),
        str(tmp_path / "candidate.jsonl"),
        cwd=tmp_path,
    )
    assert ratio.returncode == 0, ratio.stderr
    found = json.loads(ratio.stdout)
    lines = {s: json.loads((tmp_path / f"{s}.jsonl").read_text()) for s in ("baseline", "candidate")}
    assert found["ratio"] == pytest.approx(lines["candidate"]["median_s"] / lines["baseline"]["median_s"])


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("--workload", "nosuch", "--dtype", "fp32"), "matches no row"),
        ((*ROW, "--knobs", "benchmark=1 deterministic=0 tf32=0"), "matches no row"),
        ((*ROW, "--candidate", "bundled"), "matches no row"),  # the baseline is no candidate
    ],
)
def test_a_row_that_is_not_exactly_one_row_is_bad_input(qualified, tmp_path, args, says):
    out = tmp_path / "repro"
    done = run_cli("repro", "--results", str(qualified / "results"), *args, "--out", str(out))
    assert done.returncode == 2 and says in done.stderr and "conv2d_r50_3x3" in done.stderr, done.stderr
    assert not out.exists() or not [p for p in out.iterdir() if p.name != ".lock"]
