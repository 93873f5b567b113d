"""Sessions are thin calls into ``python -m harness``; everything also works without nox.

    nox -s qualify              the main job: plan, run and report matrix.yaml (or -- --matrix FILE)
    nox -s plan|images|run|report   one step at a time; arguments after -- go to the CLI
    nox -s tests                the test suite
    nox -s lint                 ruff

The virtualenv sees the system's site-packages, so a GPU host's existing CUDA build of torch is
used as it is. Where no torch is importable, HARNESS_TORCH (default 'torch==2.13.0') is installed.
"""

from __future__ import annotations

import os
import shlex

import nox

nox.options.sessions = ["qualify"]
nox.options.reuse_venv = "yes"

VENV = {"venv_backend": "venv", "venv_params": ["--system-site-packages"]}
TORCH = shlex.split(os.environ.get("HARNESS_TORCH", "torch==2.13.0"))
HAS_TORCH = "import importlib.util; print(importlib.util.find_spec('torch') is not None)"


def _install(session: nox.Session, extras: str = "", torch: bool = True) -> None:
    session.install("-e", f".[{extras}]" if extras else ".")
    if torch and session.run("python", "-c", HAS_TORCH, silent=True).strip() != "True":
        session.install(*TORCH)


@nox.session(**VENV)
def plan(session: nox.Session) -> None:
    """Validate the matrix and list its cells."""
    _install(session, torch=False)
    session.run("python", "-m", "harness", "plan", *session.posargs)


@nox.session(**VENV)
def images(session: nox.Session) -> None:
    """Render and build one image per cell (docker backend; --dry-run prints the Dockerfiles)."""
    _install(session, torch=False)
    session.run("python", "-m", "harness", "images", *session.posargs)


@nox.session(**VENV)
def run(session: nox.Session) -> None:
    """Run the suite in every cell."""
    _install(session)
    session.run("python", "-m", "harness", "run", *session.posargs)


@nox.session(**VENV)
def report(session: nox.Session) -> None:
    """Validate and merge results into reports/."""
    _install(session, torch=False)
    session.run("python", "-m", "harness", "report", *session.posargs)


@nox.session(**VENV)
def qualify(session: nox.Session) -> None:
    """Plan, run and report the matrix (the main job)."""
    _install(session)
    session.run("python", "-m", "harness", "qualify", *session.posargs)


@nox.session(**VENV)
def tests(session: nox.Session) -> None:
    """The test suite: real subprocesses, real CPU torch runs, the committed GPU results."""
    _install(session, extras="test")
    session.run("python", "-m", "pytest", *session.posargs)


@nox.session(venv_backend="venv")
def lint(session: nox.Session) -> None:
    session.install("ruff")
    session.run("ruff", "check", "harness", "tests", "benchmarks", "noxfile.py")
    session.run("ruff", "format", "--check", "harness", "tests", "benchmarks", "noxfile.py")
