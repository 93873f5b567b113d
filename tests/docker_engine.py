"""The real Docker engine for tests: the engine, a registry-free base image, an offline torch wheelhouse.

Without an engine these fixtures skip on a developer machine and FAIL in CI (CI=true), where
.ci/run installs and starts one; every test that needs the engine is marked ``engine``. Registered for
every test module in conftest.py.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import docker
import docker.errors
import pytest

from tests.conftest import run_cli

CACHE = Path(os.environ.get("HARNESS_TEST_CACHE", Path.home() / ".cache" / "cudnn-harness"))
BASE = "harness-test-base:bookworm"
PY = f"{sys.version_info.major}.{sys.version_info.minor}"
MATRIX = f"""
schema_version: 1
name: docker-cpu
backend: docker
axes:
  torch: ["2.13.0+cpu"]
  cudnn: [bundled, disabled]
  base_image: ["{BASE}"]
  python: ["3.11"]
suite: {{workloads: [relu, conv2d_r50_3x3], dtypes: [fp32], time_budget_s: 0.05}}
baseline: {{cudnn: bundled}}
"""


def run_matrix(matrix: Path, wheelhouse: Path, out: Path, *extra: str):
    """``python -m harness run`` of a docker matrix, offline from the wheelhouse."""
    return run_cli(
        "run",
        "--matrix",
        str(matrix),
        "--wheelhouse",
        str(wheelhouse),
        "--out",
        str(out),
        *extra,
        timeout=1800,
    )


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A test that asks for the engine, itself or through a fixture built on it, is marked ``engine``: the
    fixture is what needs one, so the mark cannot be forgotten (``-m "not engine"`` leaves them out)."""
    for item in items:
        if "engine" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.engine)


@pytest.fixture(scope="module")
def engine():
    try:
        client = docker.from_env(timeout=600)
        client.ping()
    except docker.errors.DockerException as exc:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI needs a running Docker engine (.ci/run starts one): {exc}")
        pytest.skip(f"no Docker engine: {exc}")
    before = _dangling(client)
    yield client
    # what this module's builds left untagged (a rebuilt tag's old image, a removed image's layers): a GB
    # and more each, on a CI machine whose disk may be small; images that were there before stay
    for image_id in _dangling(client) - before:
        with contextlib.suppress(docker.errors.APIError):  # in use, or gone with another
            client.images.remove(image_id, force=True)


def _dangling(client: docker.DockerClient) -> set[str]:
    return {image.id for image in client.images.list(filters={"dangling": True})}


@pytest.fixture(scope="module")
def base_image(engine):
    """A local Debian base with python3.11; made once with debootstrap, then kept as a tarball."""
    try:
        engine.images.get(BASE)
        return BASE
    except docker.errors.ImageNotFound:
        pass
    tarball = CACHE / "bookworm-minbase.tar"
    if not tarball.exists():
        root = CACHE / "bookworm-root"
        shutil.rmtree(root, ignore_errors=True)
        subprocess.run(
            [
                "debootstrap",
                "--variant=minbase",
                "--include=python3,python3-venv,python3-pip,ca-certificates",
                "bookworm",
                str(root),
            ],
            check=True,
            capture_output=True,
        )
        subprocess.run(["tar", "-C", str(root), "-cf", str(tarball), "."], check=True)
        shutil.rmtree(root, ignore_errors=True)
    repository, tag = BASE.split(":")
    engine.api.import_image_from_file(str(tarball), repository=repository, tag=tag)
    engine.images.get(BASE)  # raises if the import did not make it
    return BASE


@pytest.fixture(scope="module")
def wheelhouse() -> Path:
    """torch 2.13.0 (CPU) and its dependencies for Python 3.11, the base image's Python, and nvidia-ml-py
    (cell images install it from the same source)."""
    path = CACHE / "wheelhouse-torch-2.13.0-cp311"
    if not list(path.glob("torch-2.13.0*.whl")) or not list(path.glob("nvidia_ml_py-*.whl")):
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--quiet",
                "torch==2.13.0",
                "nvidia-ml-py",
                "-d",
                str(path),
                "--python-version",
                "3.11",
                "--only-binary=:all:",
            ],
            check=True,
        )
    return path
