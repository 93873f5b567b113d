"""``harness repro``: a report row as a standalone reproducer, generated from a real CPU run and run here;
a row across torch builds, each side in its own environment (two real environments made by the local
backend, the committed CPU runs of torch 2.12.0 and 2.13.0 whose environments are not on this machine)."""

from __future__ import annotations

import ast
import gzip
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness import jsonio
from harness.backends.local import cache
from tests.conftest import REPO, cli_in_process, harness_env, run_cli
from tests.evidence import TORCH_AXIS_CPU_CUT

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


def standalone(*args: str, cwd: Path, python: str = sys.executable) -> subprocess.CompletedProcess[str]:
    """The script as someone upstream runs it: another folder, no harness on any path."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run(
        [python, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600, check=False
    )


def torch_here() -> str:
    import torch

    return str(torch.__version__)


def row_of(script: str) -> tuple[dict, dict]:
    """A reproducer's ROW and SOURCES, as it holds them."""
    namespace: dict = {}
    exec(compile(script.split("\ndef ", 1)[0], "repro.py", "exec"), namespace)
    return namespace["ROW"], namespace["SOURCES"]


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
    row, sources = row_of(script)
    allowed = set(sys.stdlib_module_names) | {"torch", "harness"}  # harness: the sources it carries
    for name, text in {"repro.py": script, **sources}.items():
        assert imported_modules(text) <= allowed, name
    assert "harness/suite/workloads/conv.py" in sources and "harness/suite/timing/measure.py" in sources
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
    # one environment on both sides: both run under the Python that runs repro.py, each checking its torch
    assert row["own_interpreters"] is False and row["sides"]["baseline"]["torch"] == torch_here()
    assert found["torch"] == {"baseline": [torch_here()], "candidate": [torch_here()]}
    readme = (out / "README.md").read_text()
    assert judged["group"] in readme and f"{judged['ratio']:.3f}" in readme and "python3 repro.py" in readme
    assert "dtype `fp32`: fp32 (TF32 off)" in readme and "Both sides recorded the same environment" in readme


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
    swapped = standalone(
        str(out / "repro.py"),
        "--ratio",
        str(tmp_path / "candidate.jsonl"),
        str(tmp_path / "baseline.jsonl"),
        cwd=tmp_path,
    )
    assert swapped.returncode == 2 and "holds a line of the candidate side" in swapped.stderr, swapped.stderr


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


# ---- a row across torch builds: each side in its own environment ----------------------------------------

TORCH_BUILDS = """
schema_version: 1
name: repro-torch-builds
axes: {torch: ["2.13.0", "2.13.0+cpu"], cudnn: [bundled]}
suite: {device: cpu, workloads: [relu], dtypes: [fp32_default], time_budget_s: 0.05, min_time_s: 0.02,
        numerics: false}
rounds: 2
baseline: {torch: "2.13.0"}
"""
CPU_AXIS = TORCH_AXIS_CPU_CUT / "results"  # PyPI's 2.12.0 and 2.13.0, made on another host
CPU_ROW = ("--workload", "maxpool2d", "--dtype", "fp32")


@pytest.fixture(scope="module")
def torch_builds(tmp_path_factory) -> Iterator[Path]:
    """A real qualify of two torch cells, each realized by the local backend as an environment of its own
    (both from the CPU build the wheelhouse holds, torch 2.13.0+cpu: the one cheap enough to install twice
    here), in a cache of the test's own."""
    root = tmp_path_factory.mktemp("torch-builds")
    wheelhouse = root / "wheelhouse"
    pip = [sys.executable, "-m", "pip", "download", "--disable-pip-version-check", "--only-binary=:all:"]
    done = subprocess.run(
        [*pip, "--dest", str(wheelhouse), "torch==2.13.0"], capture_output=True, text=True, timeout=900
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    (root / "matrix.yaml").write_text(TORCH_BUILDS)
    done = run_cli(
        "qualify",
        "--matrix",
        str(root / "matrix.yaml"),
        "--out",
        str(root / "results"),
        "--report-out",
        str(root / "report"),
        "--wheelhouse",
        str(wheelhouse),
        env={**harness_env(), cache.CACHE_ENV: str(root / "cache")},
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    yield root
    for big in ("cache", "wheelhouse"):  # two torch environments and a wheel: about 1 GB; the rest stays
        shutil.rmtree(root / big, ignore_errors=True)


def test_a_row_across_torch_builds_runs_each_side_under_its_own_environments_python(torch_builds, tmp_path):
    out = tmp_path / "repro"
    args = ("--workload", "relu", "--dtype", "fp32_default", "--out", str(out))
    done = run_cli("repro", "--results", str(torch_builds / "results"), *args)
    assert done.returncode == 0 and "note:" not in done.stderr, done.stdout + done.stderr
    row, sources = row_of((out / "repro.py").read_text())
    recorded = {}  # each side's environment, as its results recorded it
    for side in ("baseline", "candidate"):
        cell = row["sides"][side]["cell"]
        docs = [jsonio.read(p) for p in sorted((torch_builds / "results").glob(f"{cell}.r*.json.gz"))]
        (environment,) = {doc["run"]["environment"]["path"] for doc in docs}
        recorded[side] = Path(environment)
        assert row["sides"][side]["interpreter"] == str(recorded[side] / "bin" / "python")
        assert row["sides"][side]["torch"] == "2.13.0+cpu" == docs[0]["environment"]["torch"]["version"]
    assert recorded["baseline"] != recorded["candidate"] and row["own_interpreters"] is True
    # precision.py is imported by tensors.apply_knobs inside the function and by the script: carried verbatim
    precision = REPO / "harness" / "suite" / "precision.py"
    assert sources["harness/suite/precision.py"] == precision.read_text()
    readme = (out / "README.md").read_text()
    assert "dtype `fp32_default`: fp32 (torch defaults)" in readme and row["title"].startswith(
        "relu fp32 (torch"
    )
    assert all(f"`{recorded[side] / 'bin' / 'python'}` (torch 2.13.0+cpu)" in readme for side in recorded)

    # run by a Python without torch: each side can only have imported the torch of its own environment
    bare = tmp_path / "bare"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(bare)], check=True)
    ran = standalone(
        str(out / "repro.py"), "--rounds", "1", python=str(bare / "bin" / "python"), cwd=tmp_path
    )
    assert ran.returncode == 0, ran.stderr[-3000:]
    found = json.loads(ran.stdout)
    assert found["torch"] == {"baseline": ["2.13.0+cpu"], "candidate": ["2.13.0+cpu"]}
    for side, environment in recorded.items():
        (run,) = found["runs"][side]
        assert run["python"] == str(environment / "bin" / "python")
        assert Path(run["torch_path"]).is_relative_to(environment) and run["torch_git"]
        assert run["params"] and run["timer"] == "perf_counter"


def test_a_side_whose_environment_is_not_here_is_refused_never_run_with_another_torch(tmp_path):
    out = tmp_path / "repro"
    done = run_cli("repro", "--results", str(CPU_AXIS), *CPU_ROW, "--out", str(out))
    assert done.returncode == 0, done.stdout + done.stderr
    row, _ = row_of((out / "repro.py").read_text())
    sides = row["sides"]
    assert (sides["baseline"]["torch"], sides["candidate"]["torch"]) == ("2.12.0+cu130", "2.13.0+cu130")
    assert row["own_interpreters"] is True and sides["baseline"]["install"] == "torch==2.12.0"
    for side in sides:
        assert not Path(sides[side]["interpreter"]).exists()  # made on another host, in its /tmp
        assert f"the {side} side's Python, {sides[side]['interpreter']} (torch " in done.stderr

    ran = standalone(str(out / "repro.py"), "--rounds", "1", cwd=tmp_path)
    assert ran.returncode == 2 and ran.stdout == "", ran.stderr
    assert sides["baseline"]["interpreter"] + ", which is not on this machine" in ran.stderr
    assert "pip install torch==2.12.0" in ran.stderr and "--python baseline=" in ran.stderr

    # a Python of another build named for a side: its process refuses it, naming both builds
    here = [f"--python={side}={sys.executable}" for side in sides]
    ran = standalone(str(out / "repro.py"), "--rounds", "1", *here, cwd=tmp_path)
    assert ran.returncode == 2 and ran.stdout == "", ran.stderr
    assert "the baseline side's result recorded torch 2.12.0+cu130 (git 7661cd9c6b84)" in ran.stderr
    assert f"imported torch {torch_here()}" in ran.stderr and "--python baseline=PATH" in ran.stderr
    one = standalone(str(out / "repro.py"), "--one", "--side", "candidate", cwd=tmp_path)
    assert one.returncode == 2 and one.stdout == "", one.stderr
    assert "recorded torch 2.13.0+cu130" in one.stderr and f"imported torch {torch_here()}" in one.stderr


def test_a_row_across_torch_builds_whose_python_is_not_recorded_is_bad_input(tmp_path):
    results = tmp_path / "results"
    shutil.copytree(CPU_AXIS, results)
    for path in results.glob("torch2.13.0_*.json.gz"):  # the candidate's results, as older ones held it
        doc = jsonio.read(path)
        del doc["environment"]["python"]["executable"]
        path.write_bytes(gzip.compress(json.dumps(doc).encode()))
    done = cli_in_process("repro", "--results", str(results), *CPU_ROW, "--out", str(tmp_path / "repro"))
    assert done.returncode == 2, done.stdout + done.stderr
    assert "torch2.13.0_cudnn-bundled_bf9211f300" in done.stderr and "records no interpreter" in done.stderr
    assert not (tmp_path / "repro" / "repro.py").exists()
