"""Sessions are thin calls into ``python -m harness``; everything also works without nox.

    nox -s qualify              the main job: plan, run and report matrix.yaml (or -- --matrix FILE)
    nox -s plan|images|run|report   one step at a time; arguments after -- go to the CLI
    nox -s tests                the test suite
    nox -s lint                 ruff and mypy --strict
    nox -s wheel                the built wheel in a clean venv, away from the repository
    nox -s site                 every committed GPU result in one history, published as a site (build/site)

Which torch qualify and run measure (the local backend's ``torch: installed`` cells), said before anything
is installed, as ``measuring torch VERSION in PYTHON (TORCH'S FOLDER)``:

1. the torch of the interpreter ``-- --python PYTHON`` names, as it is;
2. else the torch of the Python that runs nox (a virtual environment, conda, a container's Python), as it
   is: the harness is given ``--python`` with that interpreter, and no torch is installed. (The session's
   virtualenv sees the *base* interpreter's site-packages, not a virtual environment's, so it would not
   find that torch; the harness's own code needs none.) plan is given the same ``--python``;
3. else the torch of the session's own virtualenv (it sees the system's site-packages), where it has one;
4. else HARNESS_TORCH (default 'torch==2.13.0') is installed into the session's virtualenv, after saying so
   with its download size as pip resolves it here (a dry run, then each file's size); where pip cannot
   (offline), the session stops, saying how to point the harness at an existing torch.

tests and lint import torch in the session's virtualenv itself: there HARNESS_TORCH is installed (said first,
with its size) where none is importable.
"""

from __future__ import annotations

import concurrent.futures
import glob
import json
import os
import shlex
import subprocess
import sys
import urllib.parse
import urllib.request
from typing import Any, NamedTuple

import nox
from nox.command import CommandFailed

nox.options.sessions = ["qualify"]
nox.options.reuse_venv = "yes"

VENV: dict[str, Any] = {"venv_backend": "venv", "venv_params": ["--system-site-packages"]}
TORCH = shlex.split(os.environ.get("HARNESS_TORCH", "torch==2.13.0"))
HERE = os.path.dirname(os.path.abspath(__file__))
# The local backend's own probe (standard library; finds torch without importing it): nox and the harness
# agree on which torch an interpreter has.
PROBE = os.path.join(HERE, "harness", "backends", "local", "interpreter_probe.py")
REPORT_PIP = (23, 2)  # pip --report; from 23.2 pip resolves from the index's metadata, downloading no wheel


class Torch(NamedTuple):
    version: str
    python: str
    folder: str


def _torch_of(python: str) -> Torch | None:
    """The torch ``python`` would import (None: none, or it does not run)."""
    try:
        done = subprocess.run([python, PROBE], capture_output=True, text=True, timeout=120, check=True)
        found = json.loads(done.stdout)
    except (OSError, subprocess.SubprocessError, ValueError):
        return None
    if not isinstance(found, dict) or not found.get("torch_dir"):
        return None
    return Torch(str(found.get("torch_version") or "(version unknown)"), python, str(found["torch_dir"]))


def _given_python(posargs: list[str]) -> str | None:
    """The interpreter ``-- --python PYTHON`` names (the CLI takes no abbreviation of it)."""
    for i, arg in enumerate(posargs):
        if arg == "--python" and i + 1 < len(posargs):
            return posargs[i + 1]
        if arg.startswith("--python="):
            return arg.removeprefix("--python=")
    return None


def _measured(session: nox.Session) -> list[str]:
    """Says which torch this run measures, installing HARNESS_TORCH only where none is importable; the
    options that point the harness at it (none where the session's own Python, or the user's, has it)."""
    given = _given_python(session.posargs)
    extra: list[str] = []
    if given is not None:
        torch = _torch_of(given)
        if torch is None:  # the harness says why its cells cannot run; nothing is installed for it
            session.warn(f"{given} (given by --python) has no torch that it can import")
            return extra
    elif (torch := _torch_of(sys.executable)) is not None:
        extra = ["--python", sys.executable]
    else:
        torch = _session_torch(session)
    session.log(f"measuring torch {torch.version} in {torch.python} ({torch.folder})")
    return extra


def _session_torch(session: nox.Session) -> Torch:
    """The torch in the session's virtualenv: HARNESS_TORCH, installed where none is importable there,
    after saying so with its download size."""
    python = os.path.join(session.bin, "python")
    torch = _torch_of(python)
    if torch is not None:
        return torch
    size = _download_size(session, python)
    session.log(
        f"no torch is importable by {sys.executable} nor in {_venv(session)}: installing "
        f"{' '.join(TORCH)} into it, {size}"
    )
    try:
        session.install(*TORCH)
    except CommandFailed:
        session.error(_cannot_install(session, "pip failed (above)"))
    torch = _torch_of(python)
    if torch is None:
        session.error(
            f"{python} finds no torch after installing {' '.join(TORCH)} (nox --no-install skips it)"
        )
    return torch


def _cannot_install(session: nox.Session, why: str) -> str:
    use = (
        f"To measure a torch you have, run nox with its Python (/path/to/python -m nox -s {session.name}) "
        f"or name it (nox -s {session.name} -- --python /path/to/python); or set"
        if session.name in ("qualify", "run")
        else "Set"
    )
    return (
        f"no torch is importable by {sys.executable} nor in {_venv(session)}, and {' '.join(TORCH)} cannot "
        f"be installed here: {why}. {use} HARNESS_TORCH to a requirement pip can install here (a wheel "
        "file, or 'torch==X --index-url URL')."
    )


def _venv(session: nox.Session) -> str:
    return os.path.dirname(session.bin)


def _download_size(session: nox.Session, python: str) -> str:
    """What installing HARNESS_TORCH downloads, as pip resolves it here (its dry run, then each file's
    size), in words; stops the session, saying how to use an existing torch, where pip cannot resolve it."""
    try:
        version = subprocess.run(
            [python, "-m", "pip", "--version"], capture_output=True, text=True, timeout=60, check=True
        ).stdout.split()[1]
    except (OSError, subprocess.SubprocessError, IndexError):
        return "its download size could not be found (the session's pip does not run)"
    if tuple(int(p) for p in version.split(".")[:2] if p.isdigit()) < REPORT_PIP:
        return f"its download size could not be found (pip {version} here would download it to learn it)"
    report = os.path.join(session.create_tmp(), "torch-install-report.json")
    command = [python, "-m", "pip", "install", "--dry-run", "--quiet", "--report", report, *TORCH]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=900)
    except subprocess.TimeoutExpired:
        session.error(_cannot_install(session, "pip's dry run did not finish in 15 min"))
    if done.returncode:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        session.error(_cannot_install(session, f"pip's dry run says {last!r}"))
    with open(report) as f:
        files = [str(item["download_info"]["url"]) for item in json.load(f)["install"]]
    with concurrent.futures.ThreadPoolExecutor(8) as pool:  # HEAD requests, a few hundred bytes each
        sizes = dict(zip(files, pool.map(_file_size, files), strict=True))
    known = {url: size for url, size in sizes.items() if size is not None}
    if not known:
        return f"its download size could not be found (no size for any of the {len(files)} files pip picks)"
    largest = max(known, key=known.__getitem__)
    name = os.path.basename(urllib.parse.unquote(urllib.parse.urlsplit(largest).path))
    unknown = f"; {len(files) - len(known)} more of unknown size" if len(known) < len(files) else ""
    files_ = f"{len(known)} file{'s' * (len(known) > 1)}"
    return (
        f"{_bytes(sum(known.values()))} in {files_} as pip resolves it here (the largest {name}, "
        f"{_bytes(known[largest])}{unknown})"
    )


def _bytes(n: int) -> str:
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= size:
            return f"{n / size:.2f} {unit}"
    return f"{n} bytes"


def _file_size(url: str) -> int | None:
    """A file's size from its URL: a local file's, or what the server says (None where it says nothing)."""
    parts = urllib.parse.urlsplit(url)
    try:
        if parts.scheme == "file":
            return os.path.getsize(urllib.request.url2pathname(parts.path))
        with urllib.request.urlopen(urllib.request.Request(url, method="HEAD"), timeout=20) as answer:
            length = answer.headers.get("Content-Length")
            return int(length) if length else None
    except (OSError, ValueError):
        return None


def _invoked(added: list[str]) -> dict[str, str]:
    """What tells the harness it runs in a nox session: the commands it suggests are then sessions
    (``python3 -m nox -s qualify -- ...``), without the options the session itself added."""
    nox_command = "nox" if os.path.basename(sys.argv[0]) == "nox" else "python3 -m nox"
    return {"HARNESS_NOX": nox_command, "HARNESS_NOX_ADDED": shlex.join(added)}


def _harness(session: nox.Session, command: str, *args: str, env: dict[str, str]) -> None:
    """``python -m harness COMMAND ARGS`` in the session. Where it fails, nox exits with the harness's own
    code, not its 1 for every failed session: the gate's 1 is a regression, 2 bad input and 3 a run that
    could not complete (README, "Reading the answer"), and a CI job must tell them apart."""
    try:
        session.run("python", "-m", "harness", command, *args, env=env)
    except CommandFailed as failed:
        code = getattr(failed, "return_code", None) or 1
        session.log(f"harness {command} exited {code}: nox exits {code} too")
        raise SystemExit(code) from None  # nox reports a failed session as 1; this leaves nox as it is


def _install(session: nox.Session, extras: str = "") -> None:
    session.install("-e", f".[{extras}]" if extras else ".")


@nox.session(**VENV)
def plan(session: nox.Session) -> None:
    """Validate the matrix and list its cells."""
    _install(session)
    given = _given_python(session.posargs) is not None
    here = [] if given or _torch_of(sys.executable) is None else ["--python", sys.executable]
    _harness(session, "plan", *here, *session.posargs, env=_invoked(here))


@nox.session(**VENV)
def images(session: nox.Session) -> None:
    """Render and build one image per cell (docker backend; --dry-run prints the Dockerfiles)."""
    _install(session)
    _harness(session, "images", *session.posargs, env=_invoked([]))


@nox.session(**VENV)
def run(session: nox.Session) -> None:
    """Run the suite in every cell."""
    here = _measured(session)
    _install(session)
    _harness(session, "run", *here, *session.posargs, env=_invoked(here))


@nox.session(**VENV)
def report(session: nox.Session) -> None:
    """Validate and merge results into reports/."""
    _install(session)
    _harness(session, "report", *session.posargs, env=_invoked([]))


@nox.session(**VENV)
def qualify(session: nox.Session) -> None:
    """Plan, run and report the matrix (the main job)."""
    here = _measured(session)
    _install(session)
    _harness(session, "qualify", *here, *session.posargs, env=_invoked(here))


@nox.session(**VENV)
def tests(session: nox.Session) -> None:
    """The test suite: real subprocesses, real CPU torch runs, the committed GPU results."""
    _session_torch(session)  # the tests import torch themselves
    _install(session, extras="test")
    # every test, as CI runs them: in parallel, a file per worker at a time (tests/conftest.py groups them)
    # (pytest-benchmark, where the system has it, would refuse to run beside xdist: these tests use none)
    # (what is passed after '--' comes after them; '-n 0' runs one process, as --pdb needs)
    workers = ["-n", str(min(os.cpu_count() or 1, 4)), "--dist", "loadgroup", "-p", "no:benchmark"]
    session.run("python", "-m", "pytest", *workers, *session.posargs)


# Our own published tables: every committed GPU result (lab/evidence/*/: not the CPU runs of site-cpu, nor
# hostile-input's planted documents), in one history, published as a site. The site is not committed (it is
# regenerated); its screenshots are (lab/evidence/history-site/).
GPU_RESULTS = sorted(
    {
        os.path.dirname(path)
        for path in glob.glob("lab/evidence/*/**/*.json.gz", recursive=True)
        if not path.startswith(("lab/evidence/hostile-input/", "lab/evidence/site-cpu/"))
    }
)


@nox.session(**VENV)
def site(session: nox.Session) -> None:
    """Every committed GPU result in one history (build/history), published as a static site (build/site);
    arguments after -- go to 'harness site' (--full rebuilds every page)."""
    _install(session)
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
    _session_torch(session)  # mypy reads the package's dependencies, torch included, as they are installed
    _install(session)
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
        os.path.join(repo, "lab/evidence/gpu-docker/matrix.yaml"),
        silent=True,
    )
    results = os.path.join(repo, "lab", "evidence", "gpu-docker", "results")
    session.run("harness", "validate", *sorted(glob.glob(os.path.join(results, "*.json.gz"))))
    out = os.path.join(tmp, "report")
    session.run("harness", "report", "--results", results, "--out", out, success_codes=[1])  # its regression
