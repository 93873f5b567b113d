"""Shared helpers: run the real CLI in a subprocess, write small matrices."""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import IO, Any

import pytest

pytest_plugins = ["tests.docker_engine"]  # engine, base_image, wheelhouse

REPO = Path(__file__).resolve().parent.parent
# A local matrix for hostile-input tests: BUDGET is replaced by the time budget under test.
HOSTILE_MATRIX = """\
schema_version: 1
name: hostile
backend: local
axes: {torch: [installed], cudnn: [bundled, disabled]}
suite: {workloads: [relu], dtypes: [fp32], time_budget_s: BUDGET}
baseline: {cudnn: bundled}
"""


# One machine-wide resource each: the Docker engine's images and the one-node Slurm cluster. Under
# pytest-xdist (``nox -s tests``: ``-n`` workers, ``--dist loadgroup``) their tests run on one worker, one
# after another; every other test file runs whole on some worker, so a module's fixtures are made once.
SERIAL = "engine-and-cluster"
CLUSTER_FILES = ("test_slurm.py",)


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups into the tests' ids
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        engine = "engine" in getattr(item, "fixturenames", ())  # as tests/docker_engine.py marks them
        serial = engine or item.path.name in CLUSTER_FILES
        item.add_marker(pytest.mark.xdist_group(SERIAL if serial else str(item.path.relative_to(REPO))))


@pytest.fixture(scope="session", autouse=True)
def _harness_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Environments and cuDNN releases the tests make go to a folder of the test session's, never the
    user's cache (a test that wants its own sets HARNESS_CACHE itself); so does uv's cache, which keys a
    wheel by the folder it was found in: each session's temporary wheelhouse added another 700 MB torch
    to the user's cache, until the disk filled. Both are removed when the session ends."""
    made = {
        name: tmp_path_factory.mktemp(folder)
        for name, folder in (("HARNESS_CACHE", "harness-cache"), ("UV_CACHE_DIR", "uv-cache"))
        if name not in os.environ
    }
    os.environ.update({name: str(path) for name, path in made.items()})
    yield
    for name, path in made.items():
        os.environ.pop(name, None)
        shutil.rmtree(path, ignore_errors=True)


def harness_env() -> dict[str, str]:
    existing = os.environ.get("PYTHONPATH")
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), *([existing] if existing else [])])}


def run_cli(
    *args: str,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float = 600,
    errors: str = "strict",
) -> subprocess.CompletedProcess[str]:
    """``python -m harness ARGS`` as a user runs it, to its end; ``env`` replaces :func:`harness_env`, and
    ``errors`` says how what it prints is read where that is not UTF-8."""
    return subprocess.run(
        [sys.executable, "-m", "harness", *args],
        cwd=cwd or REPO,
        env=harness_env() if env is None else env,
        capture_output=True,
        encoding="utf-8",
        errors=errors,
        timeout=timeout,
    )


def cli_in_process(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """``python -m harness ARGS`` run in this process (``cli.main``), its output captured, for a refusal
    that only the parser or a command's first checks make (exit code 2 and why): what ``run_cli`` answers,
    without a new interpreter's start. ``cwd``: where relative paths are read from (default: REPO)."""
    from harness.cli import main as cli

    out, err = io.StringIO(), io.StringIO()
    here = Path.cwd()
    os.chdir(cwd or REPO)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = cli.main(list(args), prog="python -m harness")
            except SystemExit as exc:  # argparse refused a value, or answered --help
                code = exc.code if isinstance(exc.code, int) else 0 if exc.code is None else 2
    finally:
        os.chdir(here)
    return subprocess.CompletedProcess(
        ["python", "-m", "harness", *args], code, out.getvalue(), err.getvalue()
    )


def _interruptible() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def start_cli(
    *args: str,
    env: Mapping[str, str] | None = None,
    stdout: int | IO[Any] = subprocess.PIPE,
    stderr: int | IO[Any] = subprocess.STDOUT,
    text: bool = True,
) -> subprocess.Popen[Any]:
    """``python -m harness ARGS`` started and left running, for a test that interrupts it or watches it
    while it runs; both streams come through ``stdout`` unless ``stderr`` says otherwise."""
    return subprocess.Popen(
        [sys.executable, "-m", "harness", *args],
        cwd=REPO,
        env=harness_env() if env is None else env,
        stdout=stdout,
        stderr=stderr,
        text=text,
        # Ctrl-C reaches the command as it reaches a user's: a test run started in the background of a
        # script (`bash .ci/run &`) inherits SIGINT ignored, and a Python started so never sees it
        preexec_fn=_interruptible,
    )


CHROMEDRIVER = shutil.which("chromedriver")
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="module")
def chromium() -> Iterator[Any]:
    """Debian's headless Chromium, driven through chromedriver (selenium), one per test module; its console
    kept (``get_log("browser")``). Skipped where either is missing, but CI must have both."""
    if not (CHROMEDRIVER and CHROMIUM):
        if os.environ.get("CI") == "true":
            pytest.fail("CI needs chromium and chromedriver (apt-get install chromium chromium-driver)")
        pytest.skip("no chromium/chromedriver here (apt-get install chromium chromium-driver)")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture
def write_matrix(tmp_path: Path):
    def write(text: str, name: str = "matrix.yaml") -> Path:
        path = tmp_path / name
        path.write_text(textwrap.dedent(text).lstrip())
        return path

    return write


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A folder outside every output folder, with a file the harness must never touch (see untouched)."""
    victim = tmp_path / "outside"
    victim.mkdir()
    (victim / "precious.txt").write_text("keep me\n")
    return victim


def timed_on_a_busy_host(path: Path, load_start: float = 2.9, load_end: float = 3.1, why: str = "") -> None:
    """Rewrite the result at ``path`` as a run a busy host timed: that load on 2 cores (``why``: the
    reason the suite gives, default ``load <load_end>``)."""
    from harness import jsonio

    doc = jsonio.read(path)
    doc["host"] = {
        "cores": 2,
        "threads": 1,
        "load_start": load_start,
        "load_end": load_end,
        "busy": True,
        "why": why or f"load {load_end:g}",
    }
    jsonio.write_atomic(path, doc)


def untouched(victim: Path) -> None:
    """The ``outside`` folder holds its one file, as it was."""
    assert [p.name for p in victim.iterdir()] == ["precious.txt"]
    assert (victim / "precious.txt").read_text() == "keep me\n"


def pytest_report_header() -> list[str]:
    try:
        import torch

        return [f"torch {torch.__version__}, CUDA available: {torch.cuda.is_available()}"]
    except ImportError:
        return ["torch: not installed"]


def require_slurm() -> None:
    """A Slurm cluster that answers (.ci/slurm-up starts one); skip without one here, FAIL in CI."""
    try:
        states = subprocess.run(
            ["sinfo", "-h", "-o", "%T"], capture_output=True, text=True, timeout=30
        ).stdout
    except (OSError, subprocess.SubprocessError) as exc:
        states = f"({exc})"
    if not any(s in states for s in ("idle", "mixed", "alloc")):
        found = states.strip() or "no node"
        message = f"no Slurm cluster answers here (sinfo: {found}); start one with .ci/slurm-up"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
