"""A torch-axis cell checks, from inside its process, the torch it imported and the NCCL torch loaded.

The rules are exercised on this machine's real torch (a CPU build, no NCCL) and on the loaded-library
facts a GPU process reports; the GPU evidence is the lab's torch-axis-h100 (each cell's `nccl` record)."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from harness import schemas
from harness.suite.probes import environment, nccl
from tests.conftest import REPO, harness_env
from tests.evidence import TORCH_AXIS_H100

WHEEL = ("nvidia-nccl-cu13", "2.29.7", "/env/site-packages/nvidia/nccl/lib")


@pytest.mark.parametrize(
    ("wanted", "ok"),
    [
        ("installed", True),
        ("image", True),
        (torch.__version__, True),  # this very build
        (torch.__version__.split("+")[0], True),  # a bare version takes any local variant
        ("2.9.0", False),
        (torch.__version__.split("+")[0] + "+cu999", False),  # another variant of the same version
    ],
)
def test_the_torch_a_process_imported_is_checked_against_the_cells(wanted, ok):
    verified, said = environment.torch_verification(wanted)
    assert verified is ok, said
    if not ok:
        assert f"asks for torch {wanted}" in said and torch.__version__ in said


def test_a_torch_without_nccl_passes_and_says_so(monkeypatch):
    monkeypatch.delattr(torch._C, "_nccl_version", raising=False)  # whatever torch this machine has
    record = nccl.probe()
    assert (record["runtime_version"], record["verified"]) == (None, True)
    assert record["verification"] == "torch was built without NCCL"


def test_an_nccl_that_cannot_be_read_is_said_and_never_loses_the_cell(monkeypatch):
    def broken() -> int:
        raise RuntimeError("no NCCL symbols")

    monkeypatch.setattr(torch._C, "_nccl_version", broken, raising=False)
    record = nccl.probe()
    assert record["verified"] is True and "could not be read, so it is not checked" in record["verification"]
    assert set(record) == {"runtime_version", "wheel_version", "loaded_libraries", "verified", "verification"}


@pytest.mark.parametrize(
    ("runtime", "files", "ok", "words"),
    [
        ("2.29.7", [WHEEL[2] + "/libnccl.so.2"], True, "NCCL 2.29.7 loaded from"),
        (
            "2.28.9",
            [WHEEL[2] + "/libnccl.so.2"],
            False,
            "installed at 2.29.7, but reports NCCL 2.28.9",
        ),
        (
            "2.29.7",
            ["/usr/lib/x86_64-linux-gnu/libnccl.so.2"],
            False,
            "but it came from /usr/lib/x86_64-linux-gnu",
        ),
        ("2.29.7", [WHEEL[2] + "/libnccl.so.2", "/opt/other/libnccl.so.2"], False, "came from /opt/other"),
        ("2.29.7", [], True, "no libnccl file mapped"),
    ],
)
def test_the_nccl_torch_loaded_must_be_the_wheel_beside_it(runtime, files, ok, words):
    verified, said = nccl._verify(runtime, files, WHEEL)
    assert verified is ok and words in said, said


def test_an_nccl_torch_pins_no_wheel_of_is_recorded_not_judged():
    verified, said = nccl._verify("2.28.9", ["/usr/lib/libnccl.so.2"], None)
    assert verified is True and "torch requires no NCCL wheel" in said and "/usr/lib" in said
    verified, said = nccl._verify("2.29.7", [], ("nvidia-nccl-cu13", "", "/x"))
    assert verified is False and "requires nvidia-nccl-cu13, but it is not installed beside torch" in said


@pytest.mark.parametrize(("wheel", "same"), [("2.29.7", True), ("2.29.7.post1", True), ("2.29.7+cu13", True),
    ("2.29.07", True), ("2.29", False), ("2.30.7", False)])  # fmt: skip
def test_nccl_versions_are_compared_as_numbers(wheel, same):
    assert (nccl._numbers(wheel) == nccl._numbers("2.29.7")) is same


def test_a_verification_stays_within_the_schemas_bound():
    stray = [f"/opt/{'x' * 300}{i}/libnccl.so.2" for i in range(30)]
    verified, said = nccl._verify("2.29.7", stray, WHEEL)
    assert verified is False and "and 26 more" in said and len(said) < 4000


@pytest.mark.slow
def test_a_cell_asking_for_another_torch_fails_its_check_and_measures_nothing(tmp_path):
    out = tmp_path / "result.json"
    cell = {"id": "torch2.9.0_cudnn-bundled_x", "torch": "2.9.0", "cudnn": "bundled"}
    command = [sys.executable, "-m", "harness.suite", "run", "--out", str(out), "--cell", json.dumps(cell)]
    command += ["--workloads", "relu", "--dtypes", "fp32", "--device", "cpu"]
    done = subprocess.run(command, cwd=REPO, env=harness_env(), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    doc = json.loads(out.read_text())
    assert doc["status"] == "failed" and doc["failure"]["stage"] == "torch-check", doc["failure"]
    assert doc["measurements"] == [] and doc["nccl"]["verified"] is True


def test_the_h100_torch_axis_results_record_the_nccl_each_build_pins():
    pins = {"2.11.0+cu130": "2.28.9", "2.13.0+cu130": "2.29.7", "2.14.1+cu130": "2.30.7"}
    seen = set()
    for path in sorted((TORCH_AXIS_H100 / "results").glob("*.json.gz")):
        doc = json.loads(gzip.decompress(path.read_bytes()))
        assert not schemas.problems("result", doc, path.name), path.name
        version = doc["environment"]["torch"]["version"]
        assert doc["nccl"]["verified"] and doc["nccl"]["runtime_version"] == pins[version], path.name
        assert doc["nccl"]["wheel_version"] == pins[version]
        seen.add(version)
    assert seen == set(pins)


def _planned(matrix: Path) -> tuple[str, bool]:
    """What ``plan`` printed of ``matrix``, and whether this host has an NVIDIA GPU."""
    done = subprocess.run(
        [sys.executable, "-m", "harness", "plan", "--matrix", str(matrix)],
        cwd=REPO, env=harness_env(), capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout, bool(shutil.which("nvidia-smi") or os.path.exists("/dev/nvidiactl"))


def test_plan_says_a_bare_torch_version_is_a_cuda_build_on_a_host_without_a_gpu(tmp_path):
    # issue 41: torch: '2.12.0' on a CPU-only host quietly installed CUDA builds, and plan said nothing
    matrix = tmp_path / "matrix.yaml"
    matrix.write_text(
        "schema_version: 1\nname: t\naxes: {torch: ['2.12.0', '2.13.0+cpu'], cudnn: [bundled]}\n"
        "suite: {device: cpu, workloads: [relu], dtypes: [fp32]}\nbaseline: {torch: '2.12.0'}\n"
    )
    planned, gpu = _planned(matrix)
    said = "note: this host has no NVIDIA GPU, and torch 2.12.0 from PyPI is a CUDA build"
    assert (said in planned) is (not gpu), planned
    if not gpu:  # the fix, for the bare version only
        assert "torch: ['2.12.0+cpu']" in planned and "download.pytorch.org/whl/cpu" in planned


def test_plan_says_cudnn_release_cells_need_a_gpu_on_a_host_without_one(tmp_path):
    # issue 41's walk: a cuDNN sweep on a CPU host planned without a word, then failed at its first run
    matrix = tmp_path / "sweep.yaml"
    matrix.write_text(
        "schema_version: 1\nname: s\naxes: {torch: [installed], cudnn: [bundled, {wheel: '9.15.1.9'}, "
        "{wheel: '9.28.1.4'}]}\nsuite: {workloads: [relu], dtypes: [fp32]}\nbaseline: {cudnn: bundled}\n"
    )
    planned, gpu = _planned(matrix)
    said = "note: this host has no NVIDIA GPU: the cells of cuDNN wheel:9.15.1.9, wheel:9.28.1.4 need one"
    assert (said in planned) is (not gpu), planned


@pytest.mark.slow
def test_an_installer_that_runs_for_minutes_says_so_as_it_goes(tmp_path, monkeypatch):
    # issue 41 item 5: building an environment of torch and its CUDA wheels printed nothing for minutes
    from harness.backends import packages

    monkeypatch.setattr(packages, "HEARTBEAT_S", 0.3)
    # nothing printed after the line the heartbeats quote: a heartbeat between a later line and the exit would
    # quote that instead on a slow host
    script = "import time; print('Downloading torch (\\x1b[1m527MiB)', flush=True); time.sleep(1.2)"
    said: list[str] = []
    code, tail = packages.run_logged(
        [sys.executable, "-c", script],
        tmp_path / "log",
        60,
        "installing torch==2.13.0",
        heartbeat=said.append,
    )
    assert code == 0 and tail[-1] == "Downloading torch (\x1b[1m527MiB)"
    assert len(said) >= 2, said
    assert said[0].startswith("installing torch==2.13.0: still running after ")
    assert said[-1].endswith("; last: Downloading torch ( [1m527MiB)") and said[-1].isprintable()
    with pytest.raises(packages.InstallError, match="timed out after 1 s"):
        packages.run_logged([sys.executable, "-c", "import time; time.sleep(30)"], tmp_path / "log2", 1, "x")


def test_an_installer_never_outlives_the_harness(tmp_path, monkeypatch):
    # Ctrl-C (or a console gone) while an installer runs: it is killed, not left writing into the cache
    from harness.backends import packages

    monkeypatch.setattr(packages, "HEARTBEAT_S", 0.2)
    pid_file = tmp_path / "pid"
    script = f"import os, time; open({str(pid_file)!r}, 'w').write(str(os.getpid())); time.sleep(60)"

    def interrupted(line: str) -> None:
        if pid_file.exists() and pid_file.read_text():  # once the installer surely runs (a slow host: late)
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        packages.run_logged([sys.executable, "-c", script], tmp_path / "log", 120, "x", heartbeat=interrupted)
    pid = int(pid_file.read_text())
    with pytest.raises(ProcessLookupError):  # killed and reaped: no such process
        os.kill(pid, 0)
