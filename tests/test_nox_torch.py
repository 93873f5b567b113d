"""Which torch ``nox -s qualify`` measures (issue 58), through real nox runs of noxfile.py by a fresh virtual
environment's Python. A session's own virtualenv sees only the *base* interpreter's site-packages, so it would
not find the torch of the virtual environment that runs nox: the noxfile asks that Python itself, points the
harness at it and installs nothing; where no torch is importable anywhere it says what it installs, with the
download's size, before pip downloads it; and where pip cannot install one it says how to use an existing one.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from harness import jsonio
from tests.conftest import REPO

MATRIX = """\
schema_version: 1
name: nox-torch
backend: local
axes:
  torch: [installed]
  cudnn: [bundled, disabled]
suite: {profile: smoke, device: cpu, rows: ["relu:fp32"], time_budget_s: 0.1}
baseline: {cudnn: bundled}
rounds: 2
"""
HAS_TORCH = "import importlib.util, sys; sys.exit(importlib.util.find_spec('torch') is None)"
BASE = getattr(sys, "_base_executable", sys.executable)
MEASURING = re.compile(r"measuring torch (\S+) in (\S+) \((.+)\)")


def _has_torch(python: Path | str) -> bool:
    return subprocess.run([str(python), "-c", HAS_TORCH], check=False).returncode == 0


def _need(ok: bool, why: str) -> None:
    """Fail in CI, skip elsewhere, where this machine lacks what the test needs."""
    if not ok:
        if os.environ.get("CI") == "true":
            pytest.fail(why)
        pytest.skip(why)


def _user_venv(tmp_path: Path, torch_folder: str | None) -> Path:
    """A fresh venv of the base interpreter, with nox; with ``torch_folder``, its torch is that one (a .pth
    file naming the folder that holds it: nothing downloaded). Its Python."""
    _need(not _has_torch(BASE), f"the base interpreter {BASE} has a torch of its own, which sessions see")
    venv = tmp_path / "user-venv"
    subprocess.run([BASE, "-m", "venv", "--system-site-packages", str(venv)], check=True)
    python = venv / "bin" / "python"
    if torch_folder is not None:
        purelib = subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        (Path(purelib) / "user-torch.pth").write_text(os.path.dirname(torch_folder) + "\n")
    assert _has_torch(python) == (torch_folder is not None)
    if subprocess.run([str(python), "-c", "import nox"], capture_output=True, check=False).returncode:
        subprocess.run([str(python), "-m", "pip", "install", "--quiet", "nox"], check=True)  # as .ci/run does
    return python


def _session_venv(tmp_path: Path) -> Path:
    """The virtualenv nox made for the session: envdir/qualify, or a digest of its path where that path is
    long (as under CI's .nox/tests/tmp)."""
    (venv,) = [p for p in (tmp_path / "nox").iterdir() if p.is_dir()]
    return venv


def _nox(python: Path, tmp_path: Path, session: str, *posargs: str, **env: str) -> tuple[int, str]:
    """``python -m nox -s SESSION -- POSARGS`` on the repository's noxfile, its virtualenvs in tmp_path, from
    a shell that has not activated this test session's virtualenv; its exit code and all it printed."""
    ours = os.path.dirname(sys.executable)
    environ = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH", "HARNESS_TORCH")}
    environ["PATH"] = os.pathsep.join(p for p in environ.get("PATH", "").split(os.pathsep) if p != ours)
    environ["HARNESS_CACHE"] = str(tmp_path / "cache")
    command = [str(python), "-m", "nox", "-f", str(REPO / "noxfile.py"), "--envdir", str(tmp_path / "nox")]
    done = subprocess.run(
        [*command, "-s", session, "--", *posargs],
        cwd=tmp_path,
        env={**environ, **env},
        capture_output=True,
        text=True,
        timeout=1200,
    )
    return done.returncode, done.stdout + done.stderr


@pytest.mark.slow
def test_qualify_measures_the_torch_of_the_python_that_runs_nox_and_installs_none(tmp_path: Path) -> None:
    spec = importlib.util.find_spec("torch")
    assert spec and spec.submodule_search_locations, "the tests' environment has torch"
    folder = spec.submodule_search_locations[0]
    import torch

    version = str(torch.__version__)
    python = _user_venv(tmp_path, folder)
    (tmp_path / "matrix.yaml").write_text(MATRIX)
    results, reports = tmp_path / "results", tmp_path / "reports"
    code, out = _nox(
        python,
        tmp_path,
        "qualify",
        *("--matrix", str(tmp_path / "matrix.yaml"), "--out", str(results), "--report-out", str(reports)),
    )
    # 0, or the gate's 1 (a regression: not expected of an A/A pair, but a verdict, not a fault)
    gate = re.search(r"Command python -m harness qualify .* failed with exit code 1\b", out)
    assert code == 0 or gate, out[-6000:]

    assert MEASURING.findall(out) == [(version, str(python), folder)], out[-6000:]
    assert "no torch is importable" not in out and "pip install torch" not in out  # nothing of torch
    assert f"harness qualify --python {python} --matrix" in out  # the harness was pointed at it
    assert not _has_torch(_session_venv(tmp_path) / "bin" / "python")

    docs = [jsonio.read(path) for path in sorted(results.glob("*.json.gz"))]
    # 2 cells x 2 rounds; on a loaded machine qualify stops after round 1, whose rows a busy host spoiled
    assert len(docs) in (2, 4), sorted(p.name for p in results.iterdir())
    for doc in docs:
        assert doc["status"] == "ok", doc.get("failure")
        assert doc["environment"]["python"]["executable"] == str(python)
        assert doc["environment"]["torch"]["version"] == version
        assert doc["environment"]["torch"]["path"] == folder
        assert doc["run"]["identity"]["python"] == str(python)
        assert doc["run"]["identity"]["torch"] == version
    assert (reports / "verdict.json").is_file()
    # the harness's own exit code comes through nox, which would say 1 for every failure: bad input is 2
    code, out = _nox(python, tmp_path, "qualify", "--matrix", str(tmp_path / "no-such-matrix.yaml"))
    assert code == 2 and "harness qualify exited 2: nox exits 2 too" in out, out[-3000:]


def _a_torch_wheel(folder: Path) -> Path:
    """A small wheel of a package named torch (its version.py says 0.0.0+nox.test; nothing in it runs): what
    HARNESS_TORCH installs where no torch is importable, without a 2.5 GB download."""
    files = {
        "torch/__init__.py": "",
        "torch/version.py": "__version__ = '0.0.0+nox.test'\ncuda = None\n",
        "torch-0.0.0+nox.test.dist-info/METADATA": "Metadata-Version: 2.1\nName: torch\n"
        "Version: 0.0.0+nox.test\n",
        "torch-0.0.0+nox.test.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\n"
        "Tag: py3-none-any\n",
    }
    record = []
    for name, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        record.append(f"{name},sha256={digest},{len(text.encode())}")
    files["torch-0.0.0+nox.test.dist-info/RECORD"] = "\n".join(
        [*record, "torch-0.0.0+nox.test.dist-info/RECORD,,"]
    )
    wheel = folder / "torch-0.0.0+nox.test-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for name, text in files.items():
            archive.writestr(name, text)
    return wheel


@pytest.mark.slow
def test_where_no_torch_is_importable_it_says_what_it_installs_and_its_size_before_installing(
    tmp_path: Path,
) -> None:
    python = _user_venv(tmp_path, None)
    wheel = _a_torch_wheel(tmp_path)
    code, out = _nox(python, tmp_path, "qualify", "--help", HARNESS_TORCH=str(wheel))
    assert code == 0, out[-6000:]
    session = _session_venv(tmp_path)
    size = os.path.getsize(wheel)
    assert 1e3 <= size < 1e6
    kb = f"{size / 1e3:.2f} kB"
    said = (
        f"no torch is importable by {python} nor in {session}: installing {wheel} into it, {kb} in 1 file "
        f"as pip resolves it here (the largest {wheel.name}, {kb})"
    )
    assert said in out, out[-6000:]
    assert out.index(said) < out.index(f"python -m pip install {wheel}")  # said before pip installs it
    found = MEASURING.findall(out)
    assert found == [
        (
            "0.0.0+nox.test",
            str(session / "bin" / "python"),
            str(next(session.glob("lib/*/site-packages/torch"))),
        )
    ]
    assert "nox > python -m harness qualify --help\n" in out  # its own Python: no --python


@pytest.mark.slow
def test_where_pip_cannot_install_torch_it_stops_and_says_how_to_use_an_existing_one(tmp_path: Path) -> None:
    python = _user_venv(tmp_path, None)
    # pip with no index and no other source: as offline, it finds no torch to install
    offline = {
        "PIP_NO_INDEX": "1",
        "PIP_CONFIG_FILE": os.devnull,
        "PIP_FIND_LINKS": "",
        "PIP_EXTRA_INDEX_URL": "",
    }
    code, out = _nox(python, tmp_path, "qualify", **offline)
    assert code != 0
    session = _session_venv(tmp_path)
    assert (
        f"no torch is importable by {python} nor in {session}, and torch==2.13.0 cannot be installed here"
        in out
    )
    assert "No matching distribution found for torch==2.13.0" in out, out[-6000:]
    assert "run nox with its Python (/path/to/python -m nox -s qualify)" in out
    assert "nox -s qualify -- --python /path/to/python" in out
    assert "pip install" not in out  # it stopped before installing anything, the harness included
    assert not _has_torch(session / "bin" / "python")
