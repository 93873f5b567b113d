"""Release sweeps: per-cell environments (a real CPU torch, installed offline), the local backend running a
cell in one, the release axis, bisect and the report's series (from one real CPU result, cloned along a
cuDNN wheel axis with a planted change), a wheel's cuDNN layout, and torch: image with {wheel: X}."""

from __future__ import annotations

import copy
import dataclasses
import datetime as dt
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from harness import jsonio, schemas
from harness.backends import packages, registry
from harness.backends.docker import dockerfile
from harness.backends.local import cache, cudnn_dirs, venvs
from harness.backends.packages import PackageSource
from harness.cli.requests import flagged
from harness.errors import InputError
from harness.executors import launch
from harness.plan import matrix
from harness.plan.model import Cell, CudnnSource, Plan
from harness.plan.releases import release_axis
from harness.results import documents, folder, resume
from harness.suite.catalog import CATALOG
from harness.suite.timing.summary import summarize
from harness.workflows import bisect as bisect_module
from harness.workflows.bisect import bisect, run_with
from tests.conftest import cli_in_process, run_cli
from tests.evidence import GPU_VERDICTS, TORCH_AXIS_CPU_CUT

TORCH = "2.13.0"  # the CPU build /etc/pip.conf's find-links holds: torch 2.13.0+cpu
PYTHON = f"{sys.version_info.major}.{sys.version_info.minor}"


@pytest.fixture(scope="session")
def wheelhouse(tmp_path_factory) -> Path:
    """torch 2.13.0+cpu and its dependencies, downloaded once: every install below is offline from here."""
    folder_ = tmp_path_factory.mktemp("wheelhouse")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--disable-pip-version-check",
            "--only-binary=:all:",
            "--dest",
            str(folder_),
            f"torch=={TORCH}",
        ],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert len(list(folder_.glob("torch-2.13.0+cpu-*.whl"))) == 1, sorted(p.name for p in folder_.iterdir())
    return folder_


def spec(wheelhouse: Path, torch: str = TORCH) -> venvs.EnvironmentSpec:
    return venvs.EnvironmentSpec(torch, PYTHON, packages.PackageSource(wheelhouse=wheelhouse), sys.executable)


def torch_version(python: str) -> str:
    return subprocess.run(
        [python, "-c", "import torch; print(torch.__version__)"],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    ).stdout.strip()


def site_file(environment: Path, name: str) -> Path:
    (found,) = environment.glob(f"lib/python*/site-packages/{name}")
    return found


# ---- 1. per-cell environments -------------------------------------------------------------------------


@pytest.fixture
def in_tmp(tmp_path, monkeypatch) -> Path:
    """A working folder that holds no Python distributions (see the cwd test below)."""
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    return tmp_path


@pytest.mark.slow
def test_an_environment_is_created_once_then_reused(wheelhouse, in_tmp):
    root, said = in_tmp / "cache", []
    first = venvs.ensure(root, spec(wheelhouse), said.append)
    assert first.created is True and first.path.parent == root / "envs"
    assert first.path.name.startswith(f"torch{TORCH}-py{PYTHON}-")
    assert any(line.startswith("creating the environment for torch 2.13.0") for line in said), said
    assert any(line.startswith("environment ready:") for line in said), said
    # both shown without -v (issue 41: minutes of silence while an environment was built)
    shown = [line for line in said if isinstance(line, packages.Milestone)]
    assert [line.split()[0] for line in shown] == ["creating", "environment"], said
    manifest = json.loads((first.path / cache.MANIFEST).read_text())
    assert manifest["lock_sha256"] == first.lock_sha256 and manifest["spec"] == spec(wheelhouse).key()
    assert ("torch", "2.13.0+cpu") in {(name, version) for name, version, _ in first.lock}
    assert "torch==2.13.0+cpu" in first.record()["distributions"]
    assert torch_version(first.python) == "2.13.0+cpu"

    said.clear()
    again = venvs.ensure(root, spec(wheelhouse), said.append)
    assert again.created is False and said == []
    assert (again.path, again.lock_sha256, again.lock) == (first.path, first.lock_sha256, first.lock)


@pytest.mark.slow
def test_another_package_source_is_another_environment(wheelhouse, in_tmp):
    root = in_tmp / "cache"
    other = in_tmp / "copy-of-the-wheelhouse"
    other.mkdir()
    for wheel in wheelhouse.iterdir():
        try:
            os.link(wheel, other / wheel.name)
        except OSError:
            shutil.copy2(wheel, other / wheel.name)
    first = venvs.ensure(root, spec(wheelhouse), lambda line: None)
    second = venvs.ensure(root, spec(other), lambda line: None)
    assert second.created is True and second.path != first.path
    assert sorted(p.name for p in (root / "envs").iterdir() if p.is_dir()) == sorted(
        [first.path.name, second.path.name]
    )
    # the same wheels: the same distributions, in a folder of its own
    assert [row[:2] for row in second.lock] == [row[:2] for row in first.lock]
    assert venvs.ensure(root, spec(wheelhouse), lambda line: None).created is False


@pytest.mark.slow
@pytest.mark.parametrize("damage", ["a file of torch is gone", "the manifest is gone (half-built)"])
def test_a_damaged_environment_is_built_again(wheelhouse, in_tmp, damage):
    root = in_tmp / "cache"
    first = venvs.ensure(root, spec(wheelhouse), lambda line: None)
    if damage.startswith("a file"):
        site_file(first.path, "torch/version.py").unlink()
    else:
        (first.path / cache.MANIFEST).unlink()
    said: list[str] = []
    again = venvs.ensure(root, spec(wheelhouse), said.append)
    assert again.created is True and again.path == first.path
    assert any("is damaged or half-built" in line for line in said), said
    assert again.lock_sha256 == first.lock_sha256  # the same wheels installed again
    assert site_file(again.path, "torch/version.py").is_file()
    assert torch_version(again.python) == "2.13.0+cpu"
    assert venvs.ensure(root, spec(wheelhouse), lambda line: None).created is False


@pytest.mark.slow
def test_a_torch_the_wheelhouse_lacks_is_an_install_error(wheelhouse, in_tmp):
    with pytest.raises(packages.InstallError) as caught:
        venvs.ensure(in_tmp / "cache", spec(wheelhouse, "0.0.1"), lambda line: None)
    assert isinstance(caught.value, LookupError)
    message = str(caught.value)
    assert "torch==0.0.1" in message and f"the wheelhouse {wheelhouse}" in message
    assert "cannot be found in" in message


@pytest.mark.slow
def test_a_wheelhouse_that_holds_torch_but_not_what_it_needs_names_what_is_missing(wheelhouse, in_tmp):
    # walk 3: "torch==2.13.0+cpu cannot be found in the wheelhouse" where torch was there and filelock not
    partial = in_tmp / "partial"
    partial.mkdir()
    for wheel in wheelhouse.glob("torch-*.whl"):
        shutil.copy(wheel, partial)
    with pytest.raises(packages.InstallError) as caught:
        venvs.ensure(in_tmp / "cache", spec(partial), lambda line: None)
    message = str(caught.value)
    assert re.search(
        rf"torch==\S+ needs [A-Za-z0-9._-]+, which cannot be found in the wheelhouse {partial}", message
    ), message


@pytest.mark.slow
def test_an_environment_is_reused_whatever_folder_the_harness_runs_from(wheelhouse, in_tmp, monkeypatch):
    """A user runs the harness from a checkout installed editable (as this repository, with its
    cudnn_matrix_harness.egg-info), or with PYTHONPATH set (as run_cli does): neither is in the
    environment, so neither may change its lock."""
    root = in_tmp / "cache"
    first = venvs.ensure(root, spec(wheelhouse), lambda line: None)
    for name in ("checkout", "on-pythonpath"):
        info = in_tmp / name / f"{name.replace('-', '_')}.egg-info"
        info.mkdir(parents=True)
        (info / "PKG-INFO").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    monkeypatch.chdir(in_tmp / "checkout")
    monkeypatch.setenv("PYTHONPATH", str(in_tmp / "on-pythonpath"))
    said: list[str] = []
    again = venvs.ensure(root, spec(wheelhouse), said.append)
    distributions = again.record()["distributions"]
    assert "checkout==1.0" not in distributions and "on-pythonpath==1.0" not in distributions
    assert (again.created, again.lock_sha256) == (False, first.lock_sha256), said


# ---- 2. the local backend runs a cell in its environment ----------------------------------------------

ENV_MATRIX = """\
schema_version: 1
name: env-cells
backend: local
axes:
  torch: ["2.13.0+cpu", "0.0.1"]
  cudnn: [bundled]
suite: {profile: smoke, device: cpu, workloads: [relu], dtypes: [fp32], time_budget_s: 0.02}
baseline: {torch: "2.13.0+cpu", cudnn: bundled}
rounds: 1
"""


@pytest.fixture(scope="module")
def env_run(wheelhouse, tmp_path_factory):
    """One real run of a matrix whose cells each ask for a torch: 2.13.0+cpu (in the wheelhouse) and 0.0.1
    (not there), with the environments in HARNESS_CACHE."""
    root = tmp_path_factory.mktemp("env-run")
    (root / "matrix.yaml").write_text(ENV_MATRIX)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(cache.CACHE_ENV, str(root / "cache"))

        def run() -> subprocess.CompletedProcess[str]:
            return run_cli(
                "run",
                "-v",
                "--matrix",
                str(root / "matrix.yaml"),
                "--out",
                str(root / "results"),
                "--wheelhouse",
                str(wheelhouse),
            )

        first = run()
        yield root, first, run
    shutil.rmtree(root / "cache", ignore_errors=True)  # an environment with torch in it: about 750 MB


def result_of(results: Path, torch: str) -> tuple[Path, dict[str, Any]]:
    (path,) = results.glob(Cell(torch, CudnnSource("bundled")).id + ".r1.json.gz")
    return path, jsonio.read(path)


@pytest.mark.slow
def test_a_cell_with_a_torch_version_runs_in_its_own_environment(env_run, wheelhouse):
    root, done, _ = env_run
    assert done.returncode == 1, done.stdout + done.stderr  # the 0.0.1 cell failed
    assert "creating the environment for torch 2.13.0+cpu" in done.stdout
    assert "environment ready" in done.stdout
    _, doc = result_of(root / "results", "2.13.0+cpu")
    assert doc["status"] == "ok", doc["failure"]
    assert [(m["workload"], m["dtype"], m["status"]) for m in doc["measurements"]] == [("relu", "fp32", "ok")]
    environment = doc["run"]["environment"]
    envs = root / "cache" / "envs"
    assert Path(environment["path"]).parent == envs and Path(environment["path"]).is_dir()
    assert "torch==2.13.0+cpu" in environment["distributions"]
    manifest = json.loads((Path(environment["path"]) / cache.MANIFEST).read_text())
    assert environment["lock_sha256"] == manifest["lock_sha256"]
    identity = doc["run"]["identity"]
    assert identity["environment"] == environment["lock_sha256"]
    assert identity["torch"] == "2.13.0+cpu"
    assert identity["python"] == str(Path(environment["path"]) / "bin" / "python")
    assert doc["run"]["command"][0] == identity["python"]
    assert doc["environment"]["torch"]["version"] == "2.13.0+cpu"


@pytest.mark.slow
def test_a_torch_that_cannot_be_found_fails_its_cell_only(env_run, wheelhouse):
    root, _, _ = env_run
    _, doc = result_of(root / "results", "0.0.1")
    assert doc["status"] == "failed"
    assert doc["failure"]["stage"] == "realize"
    assert "torch==0.0.1 cannot be found in" in doc["failure"]["reason"]
    assert str(wheelhouse) in doc["failure"]["reason"]
    assert doc["run"]["identity"]["environment"].startswith("none: torch==0.0.1")
    assert "environment" not in doc["run"]
    assert documents.check(root / "results" / f"{doc['cell']['id']}.r1.json.gz")[1] == []
    assert result_of(root / "results", "2.13.0+cpu")[1]["status"] == "ok"


@pytest.mark.slow
def test_a_run_again_keeps_the_result_and_a_damaged_environment_is_built_again(env_run):
    root, _, run = env_run
    _, before = result_of(root / "results", "2.13.0+cpu")
    again = run()
    assert again.returncode == 1, again.stdout + again.stderr
    assert "creating the environment for torch 2.13.0+cpu" not in again.stdout
    assert result_of(root / "results", "2.13.0+cpu")[1]["started_at"] == before["started_at"]
    assert "kept: a valid result made the same way" in again.stdout

    environment = Path(before["run"]["environment"]["path"])
    site_file(environment, "torch/version.py").unlink()
    damaged = run()
    assert damaged.returncode == 1, damaged.stdout + damaged.stderr
    assert f"environment {environment} is damaged or half-built" in damaged.stdout
    assert "creating the environment for torch 2.13.0+cpu" in damaged.stdout
    assert site_file(environment, "torch/version.py").is_file()
    manifest = json.loads((environment / cache.MANIFEST).read_text())
    # the same wheels give the same lock: the result was made the same way and is kept
    assert manifest["lock_sha256"] == before["run"]["environment"]["lock_sha256"]
    _, after = result_of(root / "results", "2.13.0+cpu")
    assert after["started_at"] == before["started_at"]
    assert not (root / "results" / folder.SUPERSEDED).exists()
    assert torch_version(str(environment / "bin" / "python")) == "2.13.0+cpu"


# ---- 3. the release axis ------------------------------------------------------------------------------


def wheel(version: str, torch: str = "installed") -> Cell:
    return Cell(torch, CudnnSource("wheel", version))


def test_cudnn_wheel_releases_are_ordered_as_versions():
    wheels = ["9.28.1.4", "9.15.1.9", "9.9.0.52", "9.12.0.46", "9.15.0.57", "9.14.0.64"]
    bundled, disabled = Cell("installed", CudnnSource("bundled")), Cell("installed", CudnnSource("disabled"))
    system = Cell("installed", CudnnSource("system", "9.14.0.64"))
    cells = [*map(wheel, wheels), bundled, disabled, system]
    axis = release_axis(cells, {bundled.id: "9.19.0"})
    assert axis is not None and axis.axis == "cudnn"
    assert [r.version for r in axis.releases] == [
        "9.9.0.52",
        "9.12.0.46",
        "9.14.0.64",
        "9.15.0.57",
        "9.15.1.9",
        "9.19.0",
        "9.28.1.4",
    ]
    assert axis.releases[5].label == "9.19.0 (bundled)" and axis.releases[5].cell_id == bundled.id
    assert set(axis.off_axis) == {disabled.id, system.id}
    assert axis.find("9.15.1").version == "9.15.1.9"  # a prefix naming one release
    assert axis.find("9.15") is None  # names two
    assert axis.find("9.19.0 (bundled)").cell_id == bundled.id
    assert axis.find("9.19.0").cell_id == bundled.id
    assert axis.find("9.28.1.4").cell_id == wheel("9.28.1.4").id
    assert axis.find(wheel("9.12.0.46").id).version == "9.12.0.46"
    assert axis.find("9.13") is None
    # without the version a run reported, bundled is not on the axis
    assert bundled.id in release_axis(cells).off_axis


def test_torch_builds_are_an_axis_and_one_release_is_none():
    cells = [Cell(t, CudnnSource("bundled")) for t in ("2.12.0", "2.13.0+cpu", "2.9.1")]
    axis = release_axis(cells)
    assert axis is not None and axis.axis == "torch"
    assert [r.version for r in axis.releases] == ["2.9.1", "2.12.0", "2.13.0+cpu"]
    assert axis.find("2.13.0+cpu").cell_id == cells[1].id
    assert release_axis([wheel("9.12.0.46"), Cell("installed", CudnnSource("disabled"))]) is None
    bundled = Cell("installed", CudnnSource("bundled"))
    assert release_axis([wheel("9.19.0"), bundled], {bundled.id: "9.19.0"}) is None  # one version
    assert release_axis([Cell("2.13.0+cpu", CudnnSource("bundled"))]) is None


# ---- 4 and 5. bisect and the report's series, from one real CPU result --------------------------------

WHEELS = [
    "9.12.0.46",
    "9.13.1.26",
    "9.14.0.64",
    "9.15.0.57",
    "9.15.1.9",
    "9.16.0.29",
    "9.17.1.4",
    "9.18.1.3",
    "9.28.1.4",
]
BUNDLED = "9.19.0"  # what torch reported loading in the bundled cell
PLANTED = "9.16.0.29"  # from this release on the row takes 1.5 times as long
SLOWER = 1.5
SWEEP = (
    """\
schema_version: 1
name: sweep
backend: local
axes:
  torch: [installed]
  cudnn: [bundled, """
    + ", ".join(f'{{wheel: "{v}"}}' for v in WHEELS)
    + """]
suite: {device: cpu, workloads: [relu], dtypes: [fp32], time_budget_s: 0.02}
baseline: {cudnn: bundled}
rounds: 3
"""
)
# The real rounds' medians are scaled to their common median times these (a fixed 0.4% spread): on a loaded
# 2-core machine one process's CPU relu median differs from the next one's by far more than 1.5x (seen here:
# 8.0 ms, 7.8 us, 12 ms), and the verdicts must follow the planted change, not this machine's load.
SPREAD = (1.0, 1.004, 0.996)


@pytest.fixture(scope="module")
def real_rounds(tmp_path_factory) -> list[dict[str, Any]]:
    """Three real rounds of CPU relu fp32, run by the CLI."""
    root = tmp_path_factory.mktemp("real")
    (root / "one.yaml").write_text(
        "schema_version: 1\nname: one\naxes: {torch: [installed], cudnn: [bundled]}\n"
        "suite: {device: cpu, workloads: [relu], dtypes: [fp32], time_budget_s: 0.02}\n"
        "baseline: {cudnn: bundled}\nrounds: 3\n"
    )
    done = run_cli("run", "--matrix", str(root / "one.yaml"), "--out", str(root / "results"))
    assert done.returncode == 0, done.stdout + done.stderr
    docs = [jsonio.read(p) for p in folder.result_files(root / "results")]
    assert sorted(d["run"]["round"] for d in docs) == [1, 2, 3]
    assert all(d["status"] == "ok" for d in docs)
    return sorted(docs, key=lambda d: d["run"]["round"])


def row_of(doc: dict[str, Any]) -> dict[str, Any]:
    (m,) = [m for m in doc["measurements"] if (m["workload"], m["dtype"]) == ("relu", "fp32")]
    return m


def clones(real: list[dict[str, Any]], cell: Cell, factor: float) -> list[dict[str, Any]]:
    """The real rounds as ``cell``'s (valid documents): each round's samples scaled to the rounds' common
    median times its SPREAD, then every timing of the row times ``factor``."""
    common = statistics.median(row_of(d)["stats"]["median"] for d in real)
    out = []
    for doc, spread in zip(real, SPREAD, strict=True):
        doc = copy.deepcopy(doc)
        doc["cell"] = {"id": cell.id, **cell.to_json()}
        m = row_of(doc)
        scale = common * spread * factor / m["stats"]["median"]
        m["samples_s"] = [s * scale for s in m["samples_s"]]
        m["stats"] = dict(summarize(m["samples_s"]))
        m.pop("window_medians_s", None)  # the windows' medians are the real run's, not the scaled ones
        m.pop("stalled", None)
        # whatever load the real run met: these tests judge the sweep, not this machine
        doc["host"] = {**doc["host"], "busy": False, "why": "", "load_start": None, "load_end": None}
        if m.get("first_call_s"):
            m["first_call_s"] *= factor
        if cell.cudnn.kind == "wheel":
            doc["cudnn"]["runtime_version"] = ".".join(str(cell.cudnn.value).split(".")[:3])
        elif cell.cudnn.kind == "bundled":
            doc["cudnn"]["runtime_version"] = BUNDLED
        out.append(doc)
    return out


def release_of(cell: Cell) -> str:
    return str(cell.cudnn.value) if cell.cudnn.kind == "wheel" else BUNDLED


def numbers(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.split("."))


def factor_of(cell: Cell) -> float:
    return SLOWER if numbers(release_of(cell)) >= numbers(PLANTED) else 1.0


def write_cell(results: Path, real: list[dict[str, Any]], cell: Cell, rounds: int = 3) -> None:
    made = clones(real, cell, factor_of(cell))
    for index in range(rounds):
        doc = copy.deepcopy(made[index % len(made)])
        if index >= len(made):  # a further round: the same timings, a run of its own an hour on
            doc["run"]["round"] = index + 1
            for key in ("started_at", "finished_at"):
                moved = dt.datetime.fromisoformat(doc[key]) + dt.timedelta(hours=index)
                doc[key] = moved.isoformat()
        path = folder.result_path(results, cell.id, doc["run"]["round"])
        jsonio.write_atomic(path, doc, compact=True)
        assert documents.check(path)[1] == [], path


@pytest.fixture
def sweep(tmp_path) -> tuple[Path, Plan]:
    path = tmp_path / "sweep.yaml"
    path.write_text(SWEEP)
    return path, matrix.load(path, ["relu", "gemm"], registry.cell_problems)


def by_release(plan: Plan, version: str) -> Cell:
    return next(c for c in plan.cells if c.cudnn.value == version)


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        pytest.param(
            ["--row", "gemm:bf16", "--good", "9.12.0.46", "--bad", "9.28.1.4"],
            r"gemm:bf16: (--)?row: is not a row of the matrix; give WORKLOAD:DTYPE, one of .*relu:fp32",
            id="unknown-row",
        ),
        pytest.param(
            ["--row", "relu:fp32", "--good", "9.11.0.98", "--bad", "9.28.1.4"],
            r"9\.11\.0\.98: (--)?good: is not a release of the cudnn axis; "
            r"one of 9\.12\.0\.46, .*9\.28\.1\.4$",
            id="release-not-on-the-axis",
        ),
        pytest.param(
            ["--row", "relu:fp32", "--good", "9.15.1", "--bad", "9.15.1.9"],
            r"9\.15\.1\.9: (--)?bad: is the good release; give two different releases",
            id="good-equals-bad",
        ),
    ],
)
def test_bisect_refuses_bad_input_before_anything_runs(sweep, tmp_path, args, expected):
    path, _ = sweep
    out = tmp_path / "bisect-out"
    done = cli_in_process("bisect", "--matrix", str(path), *args, "--out", str(out), cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr
    assert re.search(expected, lines[0]), lines[0]
    assert not out.exists() and not (tmp_path / "results").exists()


def test_bisect_takes_a_matrix_that_runs_a_profile_or_lists_rows(write_matrix):
    # issue 41: bisect needed the matrix to list its workloads; a profile's rows and `rows` are rows too
    for suite, row, other in (
        ("{device: cpu, profile: smoke, dtypes: [fp32, bf16]}", "relu:bf16", "train_resnet50:fp32"),
        ("{device: cpu, rows: ['relu:fp32', 'gemm:bf16']}", "gemm:bf16", "gemm:fp32"),
    ):
        text = SWEEP.replace(
            "suite: {device: cpu, workloads: [relu], dtypes: [fp32], time_budget_s: 0.02}", f"suite: {suite}"
        )
        plan = matrix.load(write_matrix(text), list(CATALOG), registry.cell_problems)
        axis, found, lo, hi = bisect_module._checked(plan, row, WHEELS[0], WHEELS[-1])
        assert found == tuple(row.split(":")) and lo < hi, axis
        with pytest.raises(InputError, match=r"is not a row of the matrix"):
            bisect_module._checked(plan, other, WHEELS[0], WHEELS[-1])


def test_bisect_needs_a_release_axis(write_matrix, tmp_path):
    path = write_matrix("""
schema_version: 1
name: flat
axes: {torch: [installed], cudnn: [bundled, disabled, {system: "9.14.0.64"}]}
suite: {device: cpu, workloads: [relu], dtypes: [fp32]}
baseline: {cudnn: bundled}
""")
    done = cli_in_process(
        "bisect",
        "--matrix",
        str(path),
        "--row",
        "relu:fp32",
        "--good",
        "bundled",
        "--bad",
        "disabled",
        cwd=tmp_path,
    )
    assert done.returncode == 2, done.stdout + done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith(f"error: {path}: axes: has no release axis: list cuDNN releases ({{wheel: X}}")
    assert not (tmp_path / "results").exists()


def test_a_fresh_bisect_moves_what_its_folder_held_before_the_search_counts_a_round(tmp_path):
    # a probe's own fresh start moved aside the rounds the search had just counted, so its next
    # comparison found them missing: the folder is emptied once, before the search reads it
    out = tmp_path / "bisect-out"
    shutil.copytree(GPU_VERDICTS / "results-shard2", out)
    before = sorted(p.name for p in out.glob("*.json.gz"))
    assert before
    request = launch.RunRequest(out, registry.Settings("local", 60.0), mode=resume.Mode.FRESH)
    run_with(request, lambda line: None)
    assert not list(out.glob("*.json.gz"))  # nothing left for the search to count
    assert sorted(p.name for p in (out / folder.SUPERSEDED).glob("*.json.gz")) == before  # moved, not lost


def fake_runner(real: list[dict[str, Any]], calls: list[str]):
    """bisect's ``run``: the probed cell's rounds, cloned from the real ones, where a GPU run would go."""

    def run(plan: Plan, out: Path) -> list[Any]:
        (cell,) = plan.cells
        assert plan.suite.workloads == ("relu",) and plan.suite.dtypes == ("fp32",)
        calls.append(cell.id)
        write_cell(out, real, cell, plan.rounds)
        return []

    return run


@pytest.mark.slow
def test_bisect_finds_the_planted_release_measuring_fewer_than_a_sweep(sweep, real_rounds, tmp_path):
    _, plan = sweep
    calls: list[str] = []
    said: list[str] = []
    found = bisect(
        plan,
        "relu:fp32",
        "9.12.0.46",
        "9.28.1.4",
        tmp_path / "out",
        [],
        fake_runner(real_rounds, calls),
        said.append,
    )
    assert (found.before.version, found.after.version) == ("9.15.1.9", PLANTED)
    assert found.verdict == "slower" and found.ratio == pytest.approx(SLOWER, rel=0.01)
    assert found.row == "relu fp32"
    assert found.between == len(WHEELS) and found.measured < found.between
    assert found.measured == len(calls) == len(set(calls))
    measured = set(calls)
    assert by_release(plan, "9.12.0.46").id in measured and by_release(plan, "9.28.1.4").id in measured
    assert by_release(plan, "9.15.1.9").id in measured and by_release(plan, PLANTED).id in measured
    probes = {p.release.version: p for p in found.probes}
    assert probes["9.12.0.46"].verdict == "good" and probes["9.28.1.4"].verdict == "bad"
    assert probes["9.15.1.9"].verdict == "same" and probes[PLANTED].verdict == "slower"
    assert all(p.measured and p.rounds == 3 for p in found.probes)
    assert any("the change is between 9.15.1.9 and 9.16.0.29" in line for line in said), said


@pytest.mark.slow
def test_bisect_reuses_the_releases_a_results_folder_holds(sweep, real_rounds, tmp_path):
    _, plan = sweep
    reuse = tmp_path / "earlier"
    kept = ["9.12.0.46", "9.15.1.9", "9.28.1.4"]
    for version in kept:
        write_cell(reuse, real_rounds, by_release(plan, version))
    folder.write_plan(reuse, plan)  # a results folder, as 'run' writes one: bisect refuses what report does
    calls: list[str] = []
    found = bisect(
        plan,
        "relu:fp32",
        "9.12.0.46",
        "9.28.1.4",
        tmp_path / "out",
        [reuse],
        fake_runner(real_rounds, calls),
        print,
    )
    assert (found.before.version, found.after.version) == ("9.15.1.9", PLANTED)
    assert not {by_release(plan, v).id for v in kept} & set(calls)
    assert found.measured == len(calls) == 2  # 9.17.1.4, then 9.16.0.29
    assert {p.release.version: p.measured for p in found.probes} == {
        "9.12.0.46": False,
        "9.28.1.4": False,
        "9.15.1.9": False,
        "9.17.1.4": True,
        PLANTED: True,
    }


@pytest.mark.slow
def test_bisect_searches_from_a_newer_good_release_to_an_older_bad_one(sweep, real_rounds, tmp_path):
    _, plan = sweep
    calls: list[str] = []
    found = bisect(
        plan, "relu:fp32", "9.28", "9.12", tmp_path / "out", [], fake_runner(real_rounds, calls), print
    )
    # going back in time the row became faster, between the same two releases
    assert (found.before.version, found.after.version) == (PLANTED, "9.15.1.9")
    assert found.verdict == "faster" and found.ratio == pytest.approx(1 / SLOWER, rel=0.01)
    assert found.measured == len(calls) < found.between == len(WHEELS)


@pytest.mark.slow
def test_bisect_says_when_good_and_bad_do_not_differ(sweep, real_rounds, tmp_path):
    # not bad input (issue 41): the two ends were measured, and the answer is that there is nothing to locate
    _, plan = sweep
    found = bisect(
        plan,
        "relu:fp32",
        "9.12.0.46",
        "9.15.1.9",
        tmp_path / "out",
        [],
        fake_runner(real_rounds, []),
        print,
    )
    assert found.located is False and found.verdict in ("same", "inconclusive")
    assert (found.before.version, found.after.version) == ("9.12.0.46", "9.15.1.9")
    assert [p.release.version for p in found.probes] == ["9.12.0.46", "9.15.1.9"] and found.measured == 2


@pytest.mark.slow
def test_bisect_names_the_likeliest_step_when_the_ends_are_undecided(
    sweep, real_rounds, tmp_path, monkeypatch
):
    # issue 41 item 6 (as asv's find): a change right at the threshold leaves the two ends inconclusive; the
    # search follows the medians and names the likeliest step, saying that it is not significant
    monkeypatch.setattr(sys.modules[__name__], "SLOWER", 1.048)
    plan = dataclasses.replace(sweep[1], rounds=5)  # undecided ends take more rounds, up to these
    found = bisect(
        plan,
        "relu:fp32",
        "9.12.0.46",
        "9.28.1.4",
        tmp_path / "out",
        [],
        fake_runner(real_rounds, []),
        print,
    )
    assert found.ends == "inconclusive" and found.located and found.significant is False
    assert (found.before.version, found.after.version) == ("9.15.1.9", PLANTED)
    assert found.ratio == pytest.approx(1.048, rel=0.01)
    # the undecided ends took the matrix's rounds, and the summary counts them (walk 3 read 3 where 11 ran)
    assert found.probes[0].rounds == found.probes[1].rounds == 5


def test_a_bisects_progress_leaves_kept_runs_to_verbose():
    from harness.workflows.bisect import _Quiet

    said: list[str] = []
    verbose: list[str] = []
    quiet = _Quiet(said.append, verbose.append)
    lines = [
        "[1/3] c round 1: kept: a valid result made the same way (suite version and settings)",
        "[2/3] c round 2: ok, 1 measurements in 2.0 s",
        "3 of 3 results kept from earlier runs into out/",
        "[3/3] c round 3: FAILED: boom",
    ]
    for line in lines:
        quiet(line)
    assert said == [lines[1], lines[3]] and verbose == [lines[0], lines[2]]
    _Quiet(said.append, None)(lines[0])  # no verbose channel: dropped
    assert said == [lines[1], lines[3]]


@pytest.fixture(scope="module")
def series_report(real_rounds, tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess[str]]:
    """Every release's rounds (the planted change from 9.16.0.29 on) and the matrix's plan in one folder,
    reported by the CLI."""
    root = tmp_path_factory.mktemp("series")
    (root / "sweep.yaml").write_text(SWEEP)
    plan = matrix.load(root / "sweep.yaml", ["relu"], registry.cell_problems)
    results = root / "results"
    for cell in plan.cells:
        write_cell(results, real_rounds, cell)
    folder.write_plan(results, plan)
    done = run_cli("report", "--results", str(results), "--out", str(root / "report"))
    return root / "report", done


@pytest.mark.slow
def test_the_report_shows_the_series_and_where_the_change_began(series_report):
    out, done = series_report
    # against the bundled cuDNN (9.19.0, after the change) the releases before it are faster, none slower
    assert done.returncode == 0, done.stdout + done.stderr
    text = (out / "report.md").read_text()
    assert "**Outcome: pass** (exit code 0): 5 faster, 4 same." in text
    labels = [*WHEELS[:-1], f"{BUNDLED} (bundled)", WHEELS[-1]]
    across = text.split("## Across cuDNN releases")[1].split("\n## ")[0]
    header = next(line for line in across.splitlines() if line.startswith("|"))
    cells = [c.strip() for c in header.strip("|").split("|")]
    assert cells == ["workload", "mode", "knobs", *labels], header
    relu = next(line for line in across.splitlines() if line.startswith("| relu"))
    assert relu.count("▼") == 1
    began = text.split("## Where each change began")[1].split("\n## ")[0]
    changes = [line for line in began.splitlines() if line.startswith("| relu")]
    assert len(changes) == 1, began
    assert re.search(
        r"relu fp32 \(TF32 off\)(?: \[.*\])?: 9\.15\.1\.9 -> 9\.16\.0\.29, the same kernels, ratio 1\.5\d\d "
        r"\(slower\)",
        changes[0],
    ), changes[0]
    series_csv = (out / "series.csv").read_text().splitlines()
    assert series_csv[0].split(",") == ["workload", "dtype", "mode", "knobs", *labels]
    assert series_csv[1].startswith("relu,fp32,fp32 (TF32 off),")
    changes_csv = (out / "changes.csv").read_text().splitlines()
    assert len(changes_csv) == 2 and "9.15.1.9,9.16.0.29,slower" in changes_csv[1]


@pytest.mark.slow
def test_verdict_json_carries_the_series(series_report):
    out, _ = series_report
    verdict = json.loads((out / "verdict.json").read_text())
    assert schemas.problems("verdict", verdict, "verdict.json") == []
    series = verdict["series"]
    assert series["axis"] == "cudnn"
    assert [r["version"] for r in series["releases"]] == [*WHEELS[:-1], BUNDLED, WHEELS[-1]]
    assert series["off_axis"] == []
    (change,) = series["changes"]
    assert (change["workload"], change["dtype"], change["before"], change["after"]) == (
        "relu",
        "fp32",
        "9.15.1.9",
        PLANTED,
    )
    assert change["verdict"] == "slower" and change["ratio"] == pytest.approx(SLOWER, rel=0.01)
    (row,) = series["rows"]
    assert change["mode"] == row["mode"] == "fp32 (TF32 off)"  # the mode named beside its id
    expected = [1 / SLOWER] * 5 + [1.0] * 5  # the baseline is the bundled cuDNN, after the change
    assert row["ratios"] == pytest.approx(expected, rel=0.01)


# ---- 6. a cuDNN wheel's layout as a system folder -----------------------------------------------------


def test_read_install_reads_a_wheels_layout_from_its_header(tmp_path):
    root = tmp_path / "cudnn-9.18.1"
    lib, include = root / "nvidia" / "cudnn" / "lib", root / "nvidia" / "cudnn" / "include"
    lib.mkdir(parents=True)
    include.mkdir()
    for name in ("libcudnn.so.9", "libcudnn_graph.so.9"):
        (lib / name).write_bytes(b"\x7fELF not a real library")
    (include / "cudnn_version.h").write_text(
        "#ifndef CUDNN_VERSION_H_\n#define CUDNN_MAJOR 9\n#define CUDNN_MINOR 18\n"
        "#define CUDNN_PATCHLEVEL 1\n#define CUDNN_VERSION (CUDNN_MAJOR * 10000)\n#endif\n"
    )
    for given in (root, root / "nvidia" / "cudnn", lib):
        assert cudnn_dirs.read_install(given) == cudnn_dirs.CudnnInstall(lib, "9.18.1"), given
        assert cudnn_dirs.find_system(str(given)) == cudnn_dirs.CudnnInstall(lib, "9.18.1"), given
    empty = tmp_path / "empty"
    empty.mkdir()
    assert cudnn_dirs.read_install(empty) is None
    with pytest.raises(LookupError) as caught:
        cudnn_dirs.find_system(str(empty))
    message = str(caught.value)
    assert message.startswith(f"no cuDNN in {empty}: give the folder of libcudnn.so.N")
    assert "nvidia/cudnn/lib" in message


# ---- 7. torch: image with {wheel: X} ------------------------------------------------------------------

NGC = "nvcr.io/nvidia/pytorch:25.10-py3"
CUDNN_WHEEL = "nvidia_cudnn_cu13-9.18.1.3-py3-none-manylinux_2_27_x86_64.whl"


def image_wheel_cell(version: str = "9.18.1.3") -> Cell:
    return Cell("image", CudnnSource("wheel", version), NGC)


def test_an_image_torch_takes_a_cudnn_wheel_from_the_wheelhouse(tmp_path):
    wheels = tmp_path / "wheelhouse"
    wheels.mkdir()
    for name in (CUDNN_WHEEL, "nvidia_cudnn_cu13-9.19.0.56-py3-none-manylinux_2_27_x86_64.whl"):
        (wheels / name).write_bytes(b"PK not read by render")
    (wheels / "torch-2.11.0+cu130-cp312-cp312-linux_x86_64.whl").write_bytes(b"PK")
    rendered = dockerfile.render(
        image_wheel_cell(), dockerfile.BuildOptions(PackageSource(wheelhouse=wheels))
    )
    copied = {k: v for k, v in rendered.context.items() if not k.startswith("harness/")}
    assert copied == {f"cudnn-wheel/{CUDNN_WHEEL}": wheels / CUDNN_WHEEL}
    text = rendered.dockerfile
    assert f"FROM {NGC} AS cell" in text
    assert "COPY cudnn-wheel/ /tmp/harness-build/cudnn-wheel/" in text
    assert "pip download" not in text
    removed = text.index('rm -rf "$site/nvidia/cudnn" "$site"/nvidia_cudnn_cu*.dist-info')
    assert removed < text.index('-m zipfile -e "$wheel" "$site"')
    assert "nvidia_cudnn_cu$cu-9.18.1.3-*.whl" in text
    assert rendered.expect_cudnn.to_json() == {"source": "wheel", "version": "9.18.1.3"}

    with pytest.raises(InputError) as caught:
        dockerfile.render(
            image_wheel_cell("9.17.0.1"), dockerfile.BuildOptions(PackageSource(wheelhouse=wheels))
        )
    (problem,) = caught.value.problems
    # the library names the setting; the command line says it as --wheelhouse (argument_values.flagged)
    assert problem.field == problem.setting == "wheelhouse" and "9.17.0.1" in problem.message
    assert flagged(problem).field == "--wheelhouse"


def test_an_image_torch_without_a_wheelhouse_downloads_the_release_with_the_images_pip():
    rendered = dockerfile.render(image_wheel_cell(), dockerfile.BuildOptions())
    text = rendered.dockerfile
    assert (
        "/usr/bin/python3 -m pip download --no-cache-dir --disable-pip-version-check --no-deps "
        '--only-binary=:all: -d /tmp/harness-build/cudnn-wheel "nvidia-cudnn-cu$cu==9.18.1.3"'
    ) in text
    assert "COPY cudnn-wheel/" not in text
    assert text.index("pip download") < text.index('rm -rf "$site/nvidia/cudnn"')
    assert text.index('rm -rf "$site/nvidia/cudnn"') < text.index("-m zipfile -e")
    assert not [k for k in rendered.context if not k.startswith("harness/")]
    assert rendered.expect_cudnn.to_json() == {"source": "wheel", "version": "9.18.1.3"}


def test_an_index_url_other_cells_refuse_is_refused_for_an_image_torch_wheel_too():
    """--index-url reaches a RUN line unquoted: a value with a line break would end that line. A
    concrete torch's image refuses it; torch: image with {wheel: X} must too."""
    options = dockerfile.BuildOptions(PackageSource(index_url="https://pypi.example/simple\n"))
    with pytest.raises(InputError, match="is not a plain http"):
        dockerfile.render(Cell("2.11.0+cu130", CudnnSource("bundled"), "auto", "3.12"), options)
    with pytest.raises(InputError, match="is not a plain http"):
        dockerfile.render(image_wheel_cell(), options)


IMAGE_MATRIX = f"""
schema_version: 1
name: ngc
backend: docker
axes:
  torch: [image]
  base_image: ["{NGC}"]
  cudnn: [bundled, CUDNN]
baseline: {{cudnn: bundled}}
"""


def test_the_matrix_takes_torch_image_with_a_wheel_but_not_with_a_system_version(write_matrix):
    plan = matrix.load(
        write_matrix(IMAGE_MATRIX.replace("CUDNN", '{wheel: "9.18.1.3"}')), ["relu"], registry.cell_problems
    )
    assert {(c.torch, c.cudnn.label) for c in plan.cells} == {
        ("image", "bundled"),
        ("image", "wheel:9.18.1.3"),
    }
    path = write_matrix(IMAGE_MATRIX.replace("CUDNN", '{system: "9.14.0.64"}'))
    with pytest.raises(InputError) as caught:
        matrix.load(path, ["relu"], registry.cell_problems)
    assert any("torch: image takes cudnn bundled" in str(p) for p in caught.value.problems), [
        str(p) for p in caught.value.problems
    ]


@pytest.mark.slow
def test_an_environment_adds_the_companions_its_source_holds_and_goes_on_without_the_others(
    wheelhouse, in_tmp, monkeypatch
):
    # nvidia-ml-py (NVML) in the source: installed beside torch; torchvision not there: said, and left out
    source = in_tmp / "wheelhouse"
    source.mkdir()
    for wheel in wheelhouse.iterdir():
        os.link(wheel, source / wheel.name)
    download = [sys.executable, "-m", "pip", "download", "--disable-pip-version-check", "--no-deps"]
    done = subprocess.run(
        [*download, "--only-binary=:all:", "--dest", str(source), "nvidia-ml-py"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    said: list[str] = []
    monkeypatch.delenv("UV_CACHE_DIR", raising=False)  # the session's shared one, set by conftest
    made = venvs.ensure(in_tmp / "cache", spec(source), said.append)
    names = {name for name, _, _ in made.lock}
    assert "nvidia-ml-py" in names and "torchvision" not in names, sorted(names)
    assert ("torch", "2.13.0+cpu") in {(name, version) for name, version, _ in made.lock}  # never moved
    assert any(
        line.startswith("the environment for torch 2.13.0 goes on without torchvision") for line in said
    )
    assert venvs.ensure(in_tmp / "cache", spec(source), said.append).created is False
    # uv's own cache lies in the harness's (issue 41: 6.4 GB of it had gone outside HARNESS_CACHE)
    assert packages.uv() is None or (in_tmp / "cache" / "uv").is_dir()


@pytest.mark.slow
def test_a_bisect_that_reused_every_round_says_so_and_where_its_default_folder_is(tmp_path):
    # issue 41's walk: "new results in DIR/" where nothing was measured (DIR was never made), and
    # --help's default --out was not where bisect writes
    out = tmp_path / "bisect"
    done = run_cli(
        "bisect",
        "--matrix",
        str(TORCH_AXIS_CPU_CUT / "matrix.yaml"),
        "--row",
        "gemm:fp32",
        "--good",
        "2.12.0",
        "--bad",
        "2.13.0",
        "--results",
        str(TORCH_AXIS_CPU_CUT / "results"),
        "--out",
        str(out),
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "  2.12.0: good (3 rounds, reused)" in done.stdout
    assert done.stdout.rstrip().endswith("every round was reused, none measured") and not out.exists()
    helped = " ".join(run_cli("bisect", "--help").stdout.split())  # as one line: --help wraps its words
    assert "results/<matrix name>-bisect/<workload>-<dtype>" in helped and "--slurm-partition " not in helped
