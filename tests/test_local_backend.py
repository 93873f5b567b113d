"""The local backend for real: subprocesses of this Python and its CPU torch, and the cuDNN shadow."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from harness import jsonio
from harness.backends.local import cudnn_dirs
from harness.backends.local.backend import LocalBackend
from harness.errors import BackendUnavailable
from harness.plan import matrix
from harness.results import documents, folder
from tests.conftest import cli_in_process, run_cli

SMOKE = """
schema_version: 1
name: local-test
axes:
  torch: [installed]
  cudnn: [bundled, disabled, {system: auto}]
suite:
  workloads: [relu, conv2d_r50_3x3]
  dtypes: [fp32]
  time_budget_s: 0.02
baseline: {torch: installed, cudnn: bundled}
rules:
  include:
    - {torch: "1.0.0+cu999", cudnn: bundled}
"""


@pytest.fixture(scope="module")
def smoke_run(tmp_path_factory) -> tuple[Path, Path, subprocess.CompletedProcess[str]]:
    """One real qualify run, shared: bundled and disabled run; system and the wrong torch fail."""
    root = tmp_path_factory.mktemp("smoke")
    path = root / "matrix.yaml"
    path.write_text(SMOKE)
    done = run_cli(
        "qualify",
        "--matrix",
        str(path),
        "--out",
        str(root / "results"),
        "--report-out",
        str(root / "report"),
        cwd=root,
    )
    return root, path, done


@pytest.mark.slow
def test_qualify_runs_every_cell_and_reports_failed_ones(smoke_run):
    root, path, done = smoke_run
    plan = matrix.load(path)
    assert done.returncode == 3, done.stdout + done.stderr  # two cells could not run on this machine
    assert "outcome: infrastructure-failure (exit 3)" in done.stdout
    assert done.stdout.count("RUN FAILED:") == 2
    loaded = documents.load(root / "results")
    assert loaded.quarantined == ()
    by_source = {d["cell"]["id"]: d for d in loaded.documents}
    assert set(by_source) == {c.id for c in plan.cells}
    for cell in plan.cells:
        doc = by_source[cell.id]
        assert doc["run"]["backend"] == "local"
        assert (root / "results" / "logs" / f"{cell.id}.r1.log").exists()
        if cell.torch == "1.0.0+cu999":
            assert doc["status"] == "failed"
            # a concrete torch gets an environment of its own; this build exists on no index
            assert "torch==1.0.0+cu999 cannot be found in" in doc["failure"]["reason"]
        elif cell.cudnn.kind == "system":
            assert doc["status"] == "failed"
            assert (
                "no system cuDNN found in" in doc["failure"]["reason"]
                or "CPU build" in doc["failure"]["reason"]
            )
        else:
            assert doc["status"] == "ok", doc["failure"]
            assert [m["workload"] for m in doc["measurements"]] == ["relu", "conv2d_r50_3x3"]
            assert all(m["status"] == "ok" and m["stats"]["median"] > 0 for m in doc["measurements"])
            assert doc["cudnn"]["enabled"] is (cell.cudnn.kind != "disabled")


@pytest.mark.slow
def test_the_report_shows_every_cell_and_the_failures(smoke_run):
    root, _, _ = smoke_run
    text = (root / "report" / "report.md").read_text()
    assert "## Failed runs" in text and "torch==1.0.0+cu999 cannot be found in" in text
    assert "| relu " in text and "| conv2d_r50_3x3 " in text
    assert "**Outcome: infrastructure-failure** (exit code 3)" in text
    csv = (root / "report" / "results.csv").read_text().splitlines()
    assert csv[0].startswith("group,") and len(csv) == 1 + 2 * 2 + 2  # 2 cells x 2 workloads + 2 failed cells
    verdict = json.loads((root / "report" / "verdict.json").read_text())
    assert verdict["outcome"] == "infrastructure-failure" and verdict["exit_code"] == 3
    assert len(verdict["failed_runs"]) == 2
    # one round per side: the disabled cell is judged on the raw samples of its one process
    assert {c["basis"] for c in verdict["comparisons"]} == {"samples"}


@pytest.mark.slow
def test_rerunning_the_report_is_stable(smoke_run):
    root, _, _ = smoke_run
    done = run_cli("report", "--results", str(root / "results"), "--out", str(root / "report2"))
    assert done.returncode == 3  # runs failed and nothing regressed: an infrastructure failure
    strip = lambda p: [ln for ln in p.read_text().splitlines() if not ln.startswith("Rendered")]  # noqa: E731
    assert (
        strip(root / "report" / "report.md")[2:] != []
        and (root / "report2" / "results.csv").read_text() == (root / "report" / "results.csv").read_text()
    )


def test_a_python_without_torch_is_warned_by_plan_and_refused_by_run_and_qualify_with_exit_3(
    tmp_path, write_matrix
):
    # a matrix whose cells name torch builds needs no torch beside the harness (issue 41): only a
    # torch: installed cell does; where every cell does, plan warns and run and qualify refuse up front
    # with exit 3 (the run could not complete), writing nothing: issue 60 saw exit 1, "a regression",
    # and an empty reports/<name>/
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = str(venv / "bin" / "python")
    LocalBackend(python)  # no torch there: still a backend
    with pytest.raises(BackendUnavailable, match="no such interpreter"):
        LocalBackend(str(tmp_path / "nope"))
    write_matrix("""
schema_version: 1
name: no-torch
axes: {torch: [installed], cudnn: [bundled]}
suite: {workloads: [relu], dtypes: [fp32], time_budget_s: 0.02, device: cpu}
baseline: {cudnn: bundled}
rounds: 1
""")
    planned = cli_in_process("plan", "--python", python, cwd=tmp_path)
    assert planned.returncode == 0 and f"warning: {python} has no torch" in planned.stderr
    assert "run and qualify refuse to start (exit 3)" in planned.stderr
    for command in ("run", "qualify"):
        done = cli_in_process(command, "--python", python, cwd=tmp_path)
        assert done.returncode == 3, done.stdout + done.stderr
        assert f"error: no run could start: {python} has no torch" in done.stderr
        assert "(--python)" in done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["matrix.yaml", "venv"]  # no results, no reports


@pytest.mark.slow
def test_a_cell_that_outlives_its_time_limit_fails_and_the_next_runs(tmp_path, write_matrix):
    path = write_matrix("""
schema_version: 1
name: slow
axes: {torch: [installed], cudnn: [bundled, disabled]}
suite: {workloads: [relu], dtypes: [fp32], time_budget_s: 0.02}
baseline: {cudnn: bundled}
""")
    done = run_cli("run", "--matrix", str(path), "--out", str(tmp_path / "r"), "--timeout-s", "0.5")
    assert done.returncode == 1
    docs = [jsonio.read(p) for p in sorted((tmp_path / "r").glob("torch*.json.gz"))]
    assert len(docs) == 2 and all(d["status"] == "failed" for d in docs)
    assert all("timed out after" in d["failure"]["reason"] for d in docs)


def fake_cudnn(directory: Path, version: str) -> Path:
    """A directory laid out like NVIDIA's packages: versioned files and soname links."""
    directory.mkdir(parents=True)
    for lib in ("libcudnn", "libcudnn_graph", "libcudnn_ops"):
        (directory / f"{lib}.so.{version}").write_text(f"{lib} {version}")
        (directory / f"{lib}.so.9").symlink_to(f"{lib}.so.{version}")
    return directory


def test_read_install_and_find_a_system_cudnn_by_directory(tmp_path):
    lib = fake_cudnn(tmp_path / "cudnn" / "lib", "9.14.0")
    assert cudnn_dirs.read_install(lib) == cudnn_dirs.CudnnInstall(lib, "9.14.0")
    assert cudnn_dirs.find_system(str(lib)).version == "9.14.0"
    with pytest.raises(LookupError, match="no cuDNN in"):
        cudnn_dirs.find_system(str(tmp_path))
    with pytest.raises(LookupError, match=r"no system cuDNN 9\.99"):
        cudnn_dirs.find_system("9.99")


def test_the_shadow_makes_python_see_the_chosen_cudnn_and_nothing_else(tmp_path):
    site = tmp_path / "site-packages"
    (site / "fakepkg").mkdir(parents=True)
    (site / "fakepkg" / "__init__.py").write_text("")
    fake_cudnn(site / "nvidia" / "cudnn" / "lib", "9.19.0")
    (site / "nvidia" / "cublas" / "lib").mkdir(parents=True)
    system = fake_cudnn(tmp_path / "usr" / "lib", "9.14.0")
    shadow = cudnn_dirs.build_shadow(site, system, tmp_path / "shadow")

    # What torch does before loading libtorch_cuda: the first sys.path entry with nvidia/cudnn/lib wins.
    probe = (
        "import fakepkg, glob, json, os, sys\n"
        "found = [p for e in sys.path for p in sorted(glob.glob(os.path.join(e, "
        "'nvidia/cudnn/lib/libcudnn*.so.*[0-9]')))]\n"
        "first = os.path.dirname(found[0])\n"
        "print(json.dumps({'pkg': fakepkg.__file__, 'first_dir': first,\n"
        "  'libs': sorted(os.path.realpath(os.path.join(first, f)) for f in os.listdir(first)),\n"
        "  'cublas': [p for e in sys.path for p in glob.glob(os.path.join(e, 'nvidia/cublas/lib'))][:1]}))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe],
        env={**os.environ, "PYTHONPATH": str(shadow)},
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    seen = json.loads(out)
    assert seen["pkg"].startswith(str(shadow))
    assert seen["first_dir"] == str(shadow / "nvidia" / "cudnn" / "lib")
    assert {Path(p).parent for p in seen["libs"]} == {system}
    assert {Path(p).name for p in seen["libs"]} == {
        "libcudnn.so.9.14.0",
        "libcudnn_graph.so.9.14.0",
        "libcudnn_ops.so.9.14.0",
    }
    assert seen["cublas"] == [str(shadow / "nvidia" / "cublas" / "lib")]
    assert not (
        site / "nvidia" / "cudnn" / "lib" / "libcudnn.so.9.19.0"
    ).is_symlink()  # the original is untouched


@pytest.mark.slow
def test_only_runs_a_subset_and_the_plan_keeps_every_cell(tmp_path, write_matrix):
    path = write_matrix(SMOKE)
    done = run_cli("run", "--matrix", str(path), "--out", str(tmp_path / "r"), "--only", "disabled")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "running 1 of 4 cells" in done.stdout
    assert [p.name.split("_")[1] for p in (tmp_path / "r").glob("torch*.json.gz")] == ["cudnn-disabled"]
    plan = json.loads((tmp_path / "r" / "plan.json").read_text())
    assert len(plan["cells"]) == 4 and plan["baseline"] in {c["id"] for c in plan["cells"]}
    report = run_cli("report", "--results", str(tmp_path / "r"), "--out", str(tmp_path / "rep"))
    text = (tmp_path / "rep" / "report.md").read_text()
    assert report.returncode == 3 and "## Failed runs" in text and ": no result file" in text


@pytest.mark.slow
def test_qualify_adds_rounds_only_for_the_rows_still_undecided(tmp_path, write_matrix):
    # conv's 1000 % threshold decides it in 3 rounds (a 90 % one did not always: with one outlying round
    # on a loaded CPU, Welch's t has some 2 degrees of freedom and a ×3 wide interval); relu's 0.01 %
    # leaves it undecided, so only relu runs a 4th round, in both cells; the fp64 numerics run in round 1
    path = write_matrix("""
        schema_version: 1
        name: sequential
        axes: {torch: [installed], cudnn: [bundled, disabled]}
        suite: {workloads: [relu, conv2d_r50_3x3], dtypes: [fp32], time_budget_s: 0.02}
        rounds: 4
        baseline: {cudnn: bundled}
        thresholds: {regression_pct: 5, per_workload: {conv2d_r50_3x3: 1000, relu: 0.01}}
        """)
    out, report = tmp_path / "results", tmp_path / "report"
    done = run_cli("qualify", "--matrix", str(path), "--out", str(out), "--report-out", str(report))
    assert done.returncode in (0, 1), done.stdout + done.stderr
    # which rows are still undecided after 3 rounds depends on the host's noise: relu's 0.01 % always is,
    # conv on a quiet host is not; a row a busy host spoiled in those rounds no round can decide, so it is
    # not run again (every row spoiled: the rounds stop); round 4 runs exactly the rows qualify named
    loaded = documents.load(out)
    spoiled = {
        m["workload"]
        for d in loaded.documents
        if d["run"]["round"] <= 3
        for m in d["measurements"]
        if d["host"]["busy"] or m.get("stalled")
    }
    again = re.search(
        r"round 4 of at most 4: \d+ rows? still undecided.*; running (.+) again in 2 cells", done.stdout
    )
    rerun = {row.split()[0] for row in again.group(1).split(", ")} if again else set()
    assert not rerun & spoiled and rerun <= {"relu", "conv2d_r50_3x3"}
    assert ("relu" in rerun) == ("relu" not in spoiled), done.stdout
    if not rerun:  # only spoiled rows were left: after round 1 (which runs alone on a CPU) or round 3
        assert re.search(r"stopped after (round 1|3 rounds): the", done.stdout), done.stdout
        assert "--fresh" in done.stderr
    rounds = {(d["cell"]["id"], d["run"]["round"]): d for d in loaded.documents}
    plan = matrix.load(path)
    ran = (1, 2, 3, 4) if rerun else (1,) if "stopped after round 1" in done.stdout else (1, 2, 3)
    assert set(rounds) == {(c.id, r) for c in plan.cells for r in ran}
    for (_cell, round_index), doc in rounds.items():
        measured = {m["workload"] for m in doc["measurements"]}
        assert measured == (rerun if round_index == 4 else {"relu", "conv2d_r50_3x3"})
        has_numerics = any("numerics" in m for m in doc["measurements"])
        assert has_numerics == (round_index == 1)
        assert all(set(m["phases_s"]) >= {"build", "sampling"} for m in doc["measurements"])
        assert {"import_torch", "timer"} <= set(doc["setup_s"])
    assert folder.stored_plan(out).rounds == 4  # the folder keeps the whole plan for later reports
    verdict = json.loads((report / "verdict.json").read_text())
    rows = {r["workload"]: r for r in verdict["comparisons"]}
    if "conv2d_r50_3x3" not in rerun | spoiled and len(ran) > 1:  # decided in 3 rounds
        assert (rows["conv2d_r50_3x3"]["rounds_baseline"], rows["conv2d_r50_3x3"]["verdict"]) == (3, "same")
        assert "3+3 rounds, Welch's t on log medians" in rows["conv2d_r50_3x3"]["reason"]
    relu_rounds = 4 if "relu" in rerun else len(ran)
    assert rows["relu"]["rounds_baseline"] == rows["relu"]["rounds_candidate"] == relu_rounds
