"""Sessions are thin calls into ``python -m harness``; everything also works without nox.

    nox -s qualify              the main job: plan, run and report matrix.yaml (or -- --matrix FILE)
    nox -s plan|images|run|report   one step at a time; arguments after -- go to the CLI
    nox -s tests                the test suite
    nox -s lint                 ruff and mypy --strict
    nox -s wheel                the built wheel in a clean venv, away from the repository
    nox -s site                 every committed GPU result in one history, published as a site (build/site)

The virtualenv sees the system's site-packages, so a GPU host's existing CUDA build of torch is
used as it is. Where no torch is importable, HARNESS_TORCH (default 'torch==2.13.0') is installed.
"""

from __future__ import annotations

import glob
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


# Our own published tables: every committed GPU result (reports/*/: not the CPU runs of torch-axis-cpu, nor
# hostile-input's planted documents), in one history, published as a site. The site is not committed (it
# is regenerated); its screenshots are (reports/history-site/).
GPU_RESULTS = sorted(
    {
        os.path.dirname(path)
        for path in glob.glob("reports/*/**/*.json.gz", recursive=True)
        if not path.startswith(("reports/torch-axis-cpu/", "reports/hostile-input/"))
    }
)


@nox.session(**VENV)
def site(session: nox.Session) -> None:
    """Every committed GPU result in one history (build/history), published as a static site (build/site);
    arguments after -- go to 'harness site' (--full rebuilds every page)."""
    _install(session, torch=False)
    history = os.path.join("build", "history")
    session.run("python", "-m", "harness", "history", "add", *GPU_RESULTS, "--history", history)
    session.run("python", "-m", "harness", "history", "list", "--history", history)
    session.run(
        "python",
        "-m",
        "harness",
        "site",
        "--history",
        history,
        "--out",
        os.path.join("build", "site"),
        *session.posargs,
    )


# Pinned: a new release of the checker or of a stub package must not turn a clean clone's CI red.
LINT = ["ruff==0.17.6", "mypy==2.4.1"]
STUBS = [
    "pandas-stubs==3.1.0.261029",
    "scipy-stubs==1.17.1.5",
    "types-PyYAML==6.0.12.20261113",
    "types-tabulate==0.10.0.20261006",
    "types-jsonschema==4.26.0.20261006",
    "types-docker==7.2.0.20261006",
]
SOURCES = ["harness", "tests", "benchmarks", "noxfile.py"]


@nox.session(**VENV)
def lint(session: nox.Session) -> None:
    """ruff (lint and format) and mypy --strict over the package (pyproject.toml says how)."""
    _install(session)  # mypy reads the package's dependencies, torch included, as they are installed
    session.install(*LINT, *STUBS)
    session.run("python", "-m", "ruff", "check", *SOURCES)
    session.run("python", "-m", "ruff", "format", "--check", *SOURCES)
    session.run("python", "-m", "mypy")  # this environment's Python, whichever mypy it finds


@nox.session(venv_backend="venv")  # no system site-packages: only what the wheel declares
def wheel(session: nox.Session) -> None:
    """Build the wheel, install it in a clean venv, and run the CLI from another folder: the schemas and
    Dockerfile templates must come from the wheel, not from the repository."""
    repo, tmp = os.getcwd(), session.create_tmp()
    dist = os.path.join(tmp, "dist")
    session.run("python", "-m", "pip", "wheel", ".", "--no-deps", "--quiet", "--wheel-dir", dist)
    session.install(*glob.glob(os.path.join(dist, "*.whl")))
    session.chdir(tmp)
    session.run("harness", "--help", silent=True)
    session.run("harness", "plan", "--matrix", os.path.join(repo, "matrix.yaml"))
    session.run(
        "harness",
        "images",
        "--dry-run",
        "--matrix",
        os.path.join(repo, "reports/gpu-docker/matrix.yaml"),
        silent=True,
    )
    results = os.path.join(repo, "reports", "gpu-docker", "results")
    session.run("harness", "validate", *sorted(glob.glob(os.path.join(results, "*.json.gz"))))
    out = os.path.join(tmp, "report")
    session.run("harness", "report", "--results", results, "--out", out, success_codes=[1])  # its regression
