"""The committed proof of the containerized path on a GPU (the lab's gpu-docker): what it claims holds."""

from __future__ import annotations

import subprocess
import sys

import pytest

from harness.results import documents
from tests.conftest import REPO, harness_env
from tests.evidence import GPU_DOCKER, GPU_VERDICTS

pytestmark = pytest.mark.lab  # the lab's claims (tests/lab/)


def test_every_docker_result_ran_in_a_least_privilege_container_with_the_gpu_in_devices_mode():
    loaded = documents.load(GPU_DOCKER / "results")
    assert loaded.quarantined == () and len(loaded.documents) == 21
    for doc in loaded.documents:
        run = doc["run"]
        assert doc["status"] == "ok" and doc["device"] == "cuda" and run["backend"] == "docker"
        assert (
            run["gpu_access"]["mode"] == "devices" and "/dev/nvidiactl" in run["gpu_access"]["device_nodes"]
        )
        assert run["container"]["user"] == "10001:10001" and run["container"]["read_only_rootfs"] is True
        assert run["container"]["network_mode"] == "none" and run["container"]["cap_drop"] == ["ALL"]
        assert (
            run["image"]["torch"] == "2.11.0+cu130"
            and run["image"]["python"] == "/opt/torch/.venv/bin/python3"
        )
        assert doc["environment"]["gpu_state"]["nvml"] is True  # NVML inside the container
        if doc["cell"]["cudnn"] == {"system": "image"}:
            assert doc["cudnn"]["runtime_version"] == "9.14.0"
            assert doc["cudnn"]["loaded_dirs"] == ["/usr/lib/x86_64-linux-gnu"] and doc["cudnn"]["verified"]
            assert run["env_overrides"]["PYTORCH_SKIP_CUDNN_COMPATIBILITY_CHECK"] == "1"


def test_the_backend_comparison_says_what_the_readme_quotes():
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "lab.studies.backend_agreement",
            str(GPU_DOCKER / "results"),
            str(GPU_DOCKER / "local"),
            "--docker-verdicts",
            str(GPU_DOCKER / "report" / "verdicts.csv"),
            "--verdicts",
            f"local 3 rounds={GPU_DOCKER / 'report-local' / 'verdicts.csv'}",
            "--verdicts",
            f"gpu-verdicts={GPU_VERDICTS / 'verdicts.csv'}",
            "--rerun",
            str(next((GPU_DOCKER / "rerun").glob("*.json.gz"))),
        ],
        cwd=REPO,
        env=harness_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "0 of 30 rows differ in verdict from gpu-verdicts" in out
    assert "all rows: |ratio - 1| p50 0.160 %, p95 0.524 %, max 0.856 % over 45" in out
    assert (
        "rerun of torch-image_cudnn-bundled_577b61122c round 1: |ratio - 1| p50 0.158 %, p95 0.477 %" in out
    )
    assert "docker: 18 runs: wall 29.3 s" in out
    assert out == (GPU_DOCKER / "agreement.txt").read_text().split("\n", 2)[2]  # after the command line
