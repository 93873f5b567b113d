"""Hostile input to what a cell is set up from (issue 42): environments and their cache, cuDNN releases,
wheelhouses; and bisect, and results that contradict themselves.

1. A file problem in the environment code (a cache that is a file, a planted lock, a log planted as a
   folder, a library link loop) is the cell's failed result naming the file, never a traceback.
2. No read blocks or runs unbounded: a FIFO or a link to /dev/zero in the cache, in a cuDNN folder or in a
   wheelhouse.
3. A wheelhouse entry named ``*.whl`` that is no file (a folder, a link loop, a dangling link) is refused.
4. A cell's set-up error is that cell's failed result, with its reason: the other cells run.
5. Nothing planted in the cache is followed where the harness writes, a forged manifest never points a cell
   outside the cache, and a damaged entry (a link loop in its place) is built again.
6. What an interpreter answers is bounded; a run never writes a result its own ``validate`` refuses.
7. ``bisect`` refuses what ``report`` refuses.
8. A result that contradicts itself is refused by ``validate``, naming the field.

Each test here failed before its fix. The cuDNN releases are a small wheel made here, installed offline
by the real installer (uv, else pip).
"""

from __future__ import annotations

import base64
import copy
import datetime as dt
import hashlib
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from harness import jsonio
from harness.backends import packages, registry
from harness.backends.host import has_nvidia_gpu
from harness.backends.local import cache, cudnn_dirs, cudnn_releases, venvs
from harness.errors import InputError
from harness.plan import matrix
from harness.plan.model import Cell, Plan
from harness.results import documents, folder, validity
from harness.suite.timing.summary import summarize
from harness.workflows.bisect import bisect
from tests.conftest import HOSTILE_MATRIX, REPO, cli_in_process, harness_env, run_cli, untouched
from tests.evidence import GPU_LOCAL_ROUNDS, LAB

PYTHON = f"{sys.version_info.major}.{sys.version_info.minor}"
VERSION = "9.1.0.70"  # the small wheel's release
HEADER = "#define CUDNN_MAJOR 9\n#define CUDNN_MINOR 1\n#define CUDNN_PATCHLEVEL 0\n"
NO_TRACEBACK = "Traceback"


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def make_cudnn_wheel(wheelhouse: Path, version: str = VERSION, header: str = HEADER) -> Path:
    """An ``nvidia-cudnn-cu13`` wheel of a few bytes: a library file and its header, as NVIDIA lays them."""
    wheelhouse.mkdir(parents=True, exist_ok=True)
    info = f"nvidia_cudnn_cu13-{version}.dist-info"
    files = {
        "nvidia/cudnn/lib/libcudnn.so.9": b"\x7fELF not really\n",
        "nvidia/cudnn/include/cudnn_version.h": header.encode(),
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: nvidia-cudnn-cu13\nVersion: {version}\n".encode(),
        f"{info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = [_record_line(name, data) for name, data in files.items()] + [f"{info}/RECORD,,"]
    wheel = wheelhouse / f"nvidia_cudnn_cu13-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for name, data in files.items():
            archive.writestr(name, data)
        archive.writestr(f"{info}/RECORD", "\n".join(record) + "\n")
    return wheelhouse


@pytest.fixture
def cudnn_wheelhouse(tmp_path: Path) -> Path:
    return make_cudnn_wheel(tmp_path / "wheelhouse")


def release(root: Path, wheelhouse: Path, said: list[str] | None = None) -> cudnn_releases.CudnnRelease:
    """The small release, from ``wheelhouse`` into the cache ``root``."""
    source = packages.PackageSource(wheelhouse=wheelhouse)
    return cudnn_releases.ensure(root, "13", VERSION, source, (said if said is not None else []).append)


def entry_of(root: Path) -> Path:
    return root / "cudnn" / f"nvidia-cudnn-cu13-{VERSION}"


def cpu_matrix(tmp_path: Path, torch: str = "installed", cudnn: str = "bundled", baseline: str = "") -> Path:
    """A local CPU matrix of one relu row: ``cudnn`` lists the axis's values, the first is the baseline."""
    baseline = baseline or cudnn
    path = tmp_path / "matrix.yaml"
    path.write_text(
        "schema_version: 1\nname: four\nbackend: local\n"
        f"axes: {{torch: [{torch!r}], cudnn: [{cudnn}]}}\n"
        "suite: {profile: smoke, device: cpu, workloads: [relu], dtypes: [fp32], time_budget_s: 0.02}\n"
        f"baseline: {{cudnn: {baseline}}}\n"
    )
    return path


def only_result(out: Path) -> dict:
    (path,) = out.glob("*.r1.json.gz")
    return jsonio.read(path)


# ---- 1. file problems in the environment code ---------------------------------------------------------


@pytest.mark.parametrize("planted", ["cache", "envs"])
def test_a_cache_that_is_a_file_fails_the_cell_naming_it(tmp_path, planted):
    root = tmp_path / "cache"
    if planted == "cache":
        root.write_text("not a folder\n")
        where = root
    else:
        root.mkdir()
        where = root / "envs"
        where.write_text("not a folder\n")
    env = {**harness_env(), cache.CACHE_ENV: str(root)}
    out = tmp_path / "out"
    done = run_cli("run", "--matrix", str(cpu_matrix(tmp_path, "2.13.0")), "--out", str(out), env=env)
    assert done.returncode == 1, done.stdout[-2000:] + done.stderr[-2000:]
    assert NO_TRACEBACK not in done.stdout + done.stderr
    failure = only_result(out)["failure"]
    assert f"{where} is a file where the harness keeps a folder of its cache" in failure["reason"]
    assert f"point {cache.CACHE_ENV} at another folder" in failure["reason"]


@pytest.mark.parametrize("planted", ["link", "folder", "fifo"])
def test_a_lock_planted_in_the_cache_is_refused_naming_it(tmp_path, cudnn_wheelhouse, outside, planted):
    root = tmp_path / "cache"
    lock = entry_of(root).with_name(entry_of(root).name + ".lock")
    lock.parent.mkdir(parents=True)
    if planted == "link":
        lock.symlink_to(outside / "precious.txt")
    elif planted == "folder":
        lock.mkdir()
    else:
        os.mkfifo(lock)
    with pytest.raises(cache.CacheError) as refused:
        release(root, cudnn_wheelhouse)
    assert f"{lock} is " in str(refused.value) and "where the harness keeps a lock file" in str(refused.value)
    assert isinstance(refused.value, LookupError)  # what a cell's set-up turns into its failed result
    untouched(outside)


def test_an_install_log_planted_as_a_folder_is_replaced(tmp_path, cudnn_wheelhouse):
    root = tmp_path / "cache"
    log = entry_of(root).with_name(entry_of(root).name + ".log")
    (log / "deep").mkdir(parents=True)
    found = release(root, cudnn_wheelhouse)
    assert found.version == VERSION and log.is_file()


def test_a_library_link_loop_is_no_cudnn_and_no_traceback(tmp_path):
    lib = tmp_path / "loop" / "lib"
    lib.mkdir(parents=True)
    (lib / "libcudnn.so.9").symlink_to(lib / "libcudnn.so.9")
    assert cudnn_dirs.read_install(tmp_path / "loop") is None
    out = tmp_path / "out"
    matrix = cpu_matrix(tmp_path, cudnn=f"{{system: {lib}}}")
    done = run_cli("run", "--matrix", str(matrix), "--out", str(out))
    assert done.returncode == 1, done.stdout[-2000:] + done.stderr[-2000:]
    assert NO_TRACEBACK not in done.stdout + done.stderr
    assert f"no cuDNN in {lib}" in only_result(out)["failure"]["reason"]


# ---- 2. reads that block or never end -----------------------------------------------------------------


def _unblocking(code: str) -> subprocess.CompletedProcess[str]:
    """``code`` run in a Python of its own, killed after 60 s: a read that blocks fails the test, not the
    session."""
    return subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, env=harness_env(), capture_output=True, text=True, timeout=60
    )


@pytest.mark.parametrize("header", ["fifo", "/dev/zero"])
def test_a_header_that_is_a_fifo_or_a_device_is_not_read(tmp_path, header):
    include, lib = tmp_path / "cudnn" / "include", tmp_path / "cudnn" / "lib"
    include.mkdir(parents=True)
    lib.mkdir()
    (lib / "libcudnn.so.9").write_bytes(b"not a library\n")
    if header == "fifo":
        os.mkfifo(include / "cudnn_version.h")
    else:
        (include / "cudnn_version.h").symlink_to(header)
    done = _unblocking(
        "from pathlib import Path; from harness.backends.local import cudnn_releases as c; "
        f"print(c.header_version(Path({str(lib)!r})))"
    )
    assert done.returncode == 0 and done.stdout.strip() == "None", done.stderr[-2000:]


def test_a_library_that_is_a_fifo_is_never_loaded(tmp_path):
    lib = tmp_path / "cudnn" / "lib"
    lib.mkdir(parents=True)
    os.mkfifo(lib / "libcudnn.so.9")  # no header beside it: the library itself would be asked its version
    # the loader is a process of its own (held by a FIFO until its timeout): none may start
    done = _unblocking(
        "import subprocess; from pathlib import Path; from harness.backends.local import cudnn_dirs; "
        "started, run = [], subprocess.run; "
        "subprocess.run = lambda *a, **k: started.append(a) or run(*a, **k); "
        f"print(cudnn_dirs.read_install(Path({str(lib)!r})), len(started))"
    )
    assert done.returncode == 0 and done.stdout.strip() == "None 0", done.stdout + done.stderr[-2000:]


@pytest.mark.parametrize("fifo", ["entry", "manifest", "header"])
def test_a_fifo_in_a_release_folder_is_never_read_and_the_release_is_installed_again(
    tmp_path, cudnn_wheelhouse, fifo
):
    root = tmp_path / "cache"
    first = release(root, cudnn_wheelhouse)
    entry = entry_of(root)
    if fifo == "entry":
        jsonio.remove_tree(entry)
        os.mkfifo(entry)
    elif fifo == "manifest":
        (entry / cache.MANIFEST).unlink()
        os.mkfifo(entry / cache.MANIFEST)
    else:
        header = entry / "nvidia" / "cudnn" / "include" / "cudnn_version.h"
        header.unlink()
        os.mkfifo(header)
    done = _unblocking(
        "from pathlib import Path; from harness.backends.local import cudnn_releases as c; "
        "from harness.backends import packages as p; "
        f"r = c.ensure(Path({str(root)!r}), '13', {VERSION!r}, "
        f"p.PackageSource(wheelhouse=Path({str(cudnn_wheelhouse)!r})), print); print(r.lib_dir)"
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == str(first.lib_dir)
    if fifo != "header":  # a header is checked when the release is installed; its size is what later uses see
        assert "is damaged or half-built: installing it again" in done.stdout
        assert (entry / cache.MANIFEST).is_file()


# ---- 3. wheelhouse entries that are not files (and FIFOs, class 2) ------------------------------------


def _plant_wheel(wheelhouse: Path, kind: str) -> Path:
    planted = wheelhouse / "planted-1.0-py3-none-any.whl"
    if kind == "fifo":
        os.mkfifo(planted)
    elif kind == "folder":
        planted.mkdir()
    elif kind == "loop":
        planted.symlink_to(planted)
    else:
        planted.symlink_to(wheelhouse / "gone.whl")
    return planted


@pytest.mark.parametrize("kind", ["fifo", "folder", "loop", "dangling"])
@pytest.mark.parametrize("command", ["run", "images"])
def test_a_wheelhouse_entry_that_is_no_file_is_refused(tmp_path, cudnn_wheelhouse, kind, command):
    planted = _plant_wheel(cudnn_wheelhouse, kind)
    matrix = cpu_matrix(tmp_path)
    if command == "images":  # a docker matrix, rendered only (no engine needed to refuse its input)
        matrix.write_text(
            "schema_version: 1\nname: four\nbackend: docker\n"
            "axes: {torch: ['2.13.0+cpu'], python: ['3.12'], cudnn: [bundled]}\n"
            "suite: {profile: smoke, device: cpu, workloads: [relu], dtypes: [fp32]}\n"
            "baseline: {cudnn: bundled}\n"
        )
    args = ["--matrix", str(matrix), "--wheelhouse", str(cudnn_wheelhouse)]
    args += ["--out", str(tmp_path / "out")] if command == "run" else ["--dry-run"]
    done = run_cli(command, *args, timeout=120)
    assert done.returncode == 2, done.stdout[-2000:] + done.stderr[-2000:]
    assert f"{planted}: --wheelhouse: is " in done.stderr and "named like a wheel" in done.stderr
    assert NO_TRACEBACK not in done.stderr
    assert not (tmp_path / "out").exists()


def test_the_wheelhouse_check_is_the_librarys_own(tmp_path, cudnn_wheelhouse):
    planted = _plant_wheel(cudnn_wheelhouse, "loop")
    with pytest.raises(InputError) as refused:
        packages.wheels(cudnn_wheelhouse)
    assert [p.source for p in refused.value.problems] == [str(planted)]


# ---- 4. a cell's set-up error is the cell's --------------------------------------------------------------


def _system_cudnn(where: Path, major: str = "9") -> Path:
    """A folder NVIDIA's package could have made: ``libcudnn.so.9.1.0`` and its header (contents are never
    loaded: the cells below fail before anything runs)."""
    (where / "lib").mkdir(parents=True)
    (where / "lib" / "libcudnn.so.9.1.0").write_bytes(b"not a library\n")
    (where / "include").mkdir()
    (where / "include" / "cudnn_version.h").write_text(HEADER.replace("MAJOR 9", f"MAJOR {major}"))
    return where


def _cells(out: Path) -> dict[str, dict]:
    return {p.name.split(".r")[0]: jsonio.read(p) for p in out.glob("*.r1.json.gz")}


@pytest.mark.slow
def test_a_torch_folder_that_does_not_exist_fails_that_cell_and_the_others_run(tmp_path):
    python = _lying_python(tmp_path, "2.13.0+cpu")
    system = _system_cudnn(tmp_path / "cudnn")
    matrix = cpu_matrix(tmp_path, cudnn=f"bundled, {{system: {system / 'lib'}}}", baseline="bundled")
    out = tmp_path / "out"
    done = run_cli("run", "--matrix", str(matrix), "--out", str(out), "--python", str(python))
    assert done.returncode == 1, done.stdout[-2000:] + done.stderr[-2000:]
    assert "cannot write into" not in done.stderr and NO_TRACEBACK not in done.stdout + done.stderr
    results = _cells(out)
    assert len(results) == 2  # the other cell ran
    failed = next(d for d in results.values() if d["status"] == "failed")
    assert failed["failure"]["stage"] == "realize"
    assert (
        f"says its torch is in {tmp_path / 'gone' / 'torch'}, which is no folder"
        in failed["failure"]["reason"]
    )


def test_a_header_whose_version_is_too_long_for_a_file_name_fails_that_cell(tmp_path):
    system = _system_cudnn(tmp_path / "cudnn", major="9" * 300)
    (system / "lib" / "libcudnn.so.9.1.0").rename(system / "lib" / "libcudnn.so.9")  # a wheel's name
    matrix = cpu_matrix(tmp_path, cudnn=f"{{system: {system / 'lib'}}}")
    out = tmp_path / "out"
    done = run_cli("run", "--matrix", str(matrix), "--out", str(out))
    assert done.returncode == 1, done.stdout[-2000:] + done.stderr[-2000:]
    assert "cannot write into" not in done.stderr and NO_TRACEBACK not in done.stdout + done.stderr
    assert f"no cuDNN in {system / 'lib'}" in only_result(out)["failure"]["reason"]


# ---- 5. links and forged files in the cache -----------------------------------------------------------


def test_an_install_log_planted_as_a_link_is_never_appended_through(tmp_path, cudnn_wheelhouse, outside):
    root = tmp_path / "cache"
    log = entry_of(root).with_name(entry_of(root).name + ".log")
    log.parent.mkdir(parents=True)
    log.symlink_to(outside / "precious.txt")
    assert release(root, cudnn_wheelhouse).version == VERSION
    untouched(outside)
    assert not log.is_symlink() and log.is_file()


@pytest.mark.parametrize(
    "forged",
    [
        {"lib_dir": "../../../outside"},
        {"lib_dir": "/usr/lib"},
        {"sizes": {"../../../outside/precious.txt": 8}},
    ],
    ids=["relative", "absolute", "sizes"],
)
def test_a_forged_release_manifest_never_points_outside_the_cache(tmp_path, cudnn_wheelhouse, forged):
    root = tmp_path / "cache"
    release(root, cudnn_wheelhouse)
    manifest_path = entry_of(root) / cache.MANIFEST
    manifest = jsonio.read(manifest_path)
    jsonio.write_atomic(manifest_path, {**manifest, **forged})
    said: list[str] = []
    again = release(root, cudnn_wheelhouse, said)
    assert jsonio.real_path(again.lib_dir).is_relative_to(jsonio.real_path(root))
    assert any("is damaged or half-built: installing it again" in line for line in said)


def test_a_library_planted_as_a_link_in_a_release_is_not_trusted(tmp_path, cudnn_wheelhouse, outside):
    root = tmp_path / "cache"
    lib_dir = release(root, cudnn_wheelhouse).lib_dir
    (lib_dir / "libcudnn_evil.so.9").symlink_to(outside / "precious.txt")
    said: list[str] = []
    again = release(root, cudnn_wheelhouse, said)
    assert sorted(p.name for p in again.lib_dir.iterdir()) == ["libcudnn.so.9"]
    assert any("installing it again" in line for line in said)
    untouched(outside)


@pytest.mark.parametrize("planted", ["loop", "link", "file"])
def test_a_release_planted_in_the_cache_is_built_again(tmp_path, cudnn_wheelhouse, outside, planted):
    root = tmp_path / "cache"
    entry = entry_of(root)
    entry.parent.mkdir(parents=True)
    if planted == "loop":
        entry.symlink_to(entry)
    elif planted == "link":
        entry.symlink_to(outside, target_is_directory=True)
    else:
        entry.write_text("planted\n")
    found = release(root, cudnn_wheelhouse)
    assert cache.is_entry(entry) and found.lib_dir == entry / "nvidia" / "cudnn" / "lib"
    untouched(outside)
    assert release(root, cudnn_wheelhouse).lib_dir == found.lib_dir  # and reused, once whole


@pytest.mark.parametrize("planted", ["loop", "fifo"])
def test_an_environment_planted_as_a_link_loop_or_a_fifo_is_cleared_and_made_again(
    tmp_path, cudnn_wheelhouse, planted
):
    root = tmp_path / "cache"
    spec = venvs.EnvironmentSpec(
        "0.0.1", PYTHON, packages.PackageSource(wheelhouse=cudnn_wheelhouse), sys.executable
    )
    entry = root / "envs" / spec.folder_name()
    entry.parent.mkdir(parents=True)
    if planted == "loop":
        entry.symlink_to(entry)
    else:
        os.mkfifo(entry)
    said: list[str] = []
    with pytest.raises(packages.InstallError, match=r"torch==0\.0\.1 cannot be found in"):
        venvs.ensure(root, spec, said.append)  # the wheelhouse holds no torch: made, then refused
    assert f"environment {entry} is damaged or half-built" in said[0]
    assert cache.is_entry(entry) and (entry / "bin" / "python").exists()  # the planted thing is gone


# ---- 6. what an interpreter answers ---------------------------------------------------------------------


def _lying_python(tmp_path: Path, torch_version: str) -> Path:
    """An interpreter that answers the harness's probe with ``torch_version`` and is Python otherwise."""
    script = tmp_path / "python-that-lies"
    fields = {
        "python": "3.11.7",
        "torch_version": torch_version,
        "torch_cuda": None,
        "torch_dir": str(tmp_path / "gone" / "torch"),
        "cudnn_wheel": None,
    }
    answer = json.dumps(fields)
    script.write_text(
        f"#!/bin/sh\ncase \"$1\" in *interpreter_probe.py) echo '{answer}'; exit 0;; esac\n"
        f'exec {sys.executable} "$@"\n'
    )
    script.chmod(0o755)
    return script


def test_an_interpreter_that_answers_a_torch_version_of_5000_characters_is_refused(tmp_path):
    python = _lying_python(tmp_path, "2." + "9" * 5000)
    out = tmp_path / "out"
    done = run_cli("run", "--matrix", str(cpu_matrix(tmp_path)), "--out", str(out), "--python", str(python))
    assert done.returncode == 2, done.stdout[-2000:] + done.stderr[-2000:]
    assert f"{python}: answers a torch_version of 5002 characters" in done.stderr
    assert NO_TRACEBACK not in done.stderr
    assert not list(out.glob("*.json.gz"))


def test_a_run_never_writes_a_result_its_own_validate_refuses(tmp_path):
    doc = jsonio.read(next(GPU_LOCAL_ROUNDS.glob("*.r1.json.gz")))
    run = doc.pop("run")
    run.pop("plan_sha256", None)
    ok = next(i for i, m in enumerate(doc["measurements"]) if m["status"] == "ok")
    doc["measurements"][ok]["stats"]["median"] *= 2  # what a suite that lies, or is broken, could write
    written = folder.write_result(tmp_path, Cell.from_json(doc["cell"]), doc, run)
    assert written["status"] == "failed" and written["failure"]["stage"] == "validate"
    assert f"measurements[{ok}].stats.median" in written["failure"]["reason"]
    (path,) = tmp_path.glob("*.json.gz")
    assert documents.check(path)[1] == []  # valid: the next run keeps it, and never writes another
    # a result gathered from a pod, not run here, is refused whole instead (gather names it), and nothing
    # is written
    path.unlink()
    with pytest.raises(InputError) as refused_:
        folder.write_result(tmp_path, Cell.from_json(doc["cell"]), doc, run, refuse_invalid=True)
    assert f"measurements[{ok}].stats.median" in str(refused_.value.problems[0])
    assert not list(tmp_path.glob("*.json.gz"))


# ---- 7. bisect refuses what report refuses --------------------------------------------------------------

RELEASES = ["9.12.0.46", "9.14.0.64", "9.16.0.29"]
SEARCH = (
    "schema_version: 1\nname: search\nbackend: local\naxes:\n  torch: [installed]\n  cudnn: ["
    + ", ".join(f'{{wheel: "{v}"}}' for v in RELEASES)
    + f"]\nsuite: {{device: cpu, workloads: [relu], dtypes: [fp32], time_budget_s: 0.02}}\n"
    f'baseline: {{cudnn: {{wheel: "{RELEASES[0]}"}}}}\nrounds: 3\n'
)


def search_plan(tmp_path: Path) -> tuple[Path, Plan]:
    path = tmp_path / "search.yaml"
    path.write_text(SEARCH)
    return path, matrix.load(path, ["relu"], registry.cell_problems)


def reused(tmp_path: Path, plan: Plan, real: dict, forge=None) -> Path:
    """A results folder with its plan and three valid rounds of each release, made from one real CPU result
    (``forge(doc, release)`` alters each document afterwards)."""
    where = tmp_path / "earlier"
    folder.write_plan(where, plan)
    for cell in plan.cells:
        for round_index in (1, 2, 3):
            doc = copy.deepcopy(real)
            doc["cell"] = folder.cell_record(cell)
            doc["run"]["round"] = round_index
            for key in ("started_at", "finished_at"):
                doc[key] = (validity.instant(doc[key]) + dt.timedelta(minutes=round_index)).isoformat()
            doc["cudnn"]["runtime_version"] = ".".join(str(cell.cudnn.value).split(".")[:3])
            if forge is not None:
                forge(doc, str(cell.cudnn.value))
            jsonio.write_atomic(folder.result_path(where, cell.id, round_index), doc, compact=True)
    return where


def never_run(plan: Plan, out: Path) -> list:
    raise AssertionError(f"bisect ran {[c.id for c in plan.cells]}: it should have refused its input first")


@pytest.mark.slow
def test_bisect_refuses_rounds_of_another_cpu_model(tmp_path, cpu_result):
    _, plan = search_plan(tmp_path)

    def elsewhere(doc: dict, release: str) -> None:
        if release == RELEASES[-1]:
            doc["environment"]["host"]["cpu_model"] = "Another CPU, another machine"

    where = reused(tmp_path, plan, cpu_result, elsewhere)
    with pytest.raises(InputError) as refused_:
        bisect(plan, "relu:fp32", RELEASES[0], RELEASES[-1], tmp_path / "out", [where], never_run, print)
    assert "results differ in device" in str(refused_.value.problems[0])
    assert "Another CPU, another machine" in str(refused_.value.problems[0])


@pytest.mark.slow
def test_bisect_refuses_a_release_whose_every_result_loaded_another_cudnn(tmp_path, cpu_result):
    _, plan = search_plan(tmp_path)

    def misfiled(doc: dict, release: str) -> None:
        if release == RELEASES[-1]:
            doc["cudnn"]["runtime_version"] = "9.1.0"

    where = reused(tmp_path, plan, cpu_result, misfiled)
    with pytest.raises(InputError) as refused_:
        bisect(plan, "relu:fp32", RELEASES[0], RELEASES[-1], tmp_path / "out", [where], never_run, print)
    problems = [str(p) for p in refused_.value.problems]
    assert len(problems) == 4 and all("refused as invalid" in p for p in problems[:3]), problems
    assert all("cudnn.runtime_version: is '9.1.0'" in p for p in problems[:3]), problems


@pytest.mark.parametrize("given", ["missing", "file"])
def test_bisect_refuses_a_results_option_that_is_no_results_folder(tmp_path, given):
    path, _ = search_plan(tmp_path)
    results = tmp_path / "results-here"
    if given == "file":
        results.write_text("not a folder\n")
    args = ["--row", "relu:fp32", "--good", RELEASES[0], "--bad", RELEASES[-1]]
    done = cli_in_process(
        "bisect", "--matrix", str(path), *args, "--out", str(tmp_path / "o"), "--results", str(results)
    )
    assert done.returncode == 2, done.stdout[-2000:] + done.stderr[-2000:]
    what = "is a file" if given == "file" else "does not exist"
    assert f"{results}: --results: {what}; name a results folder" in done.stderr
    assert not (tmp_path / "o").exists()


@pytest.mark.slow
def test_bisect_whose_cells_cannot_run_here_ends_with_the_reason_before_any_round_not_a_traceback(tmp_path):
    path, _ = search_plan(tmp_path)  # wheel cells under a CPU torch: every probe would fail at its set-up
    args = ["--row", "relu:fp32", "--good", RELEASES[0], "--bad", RELEASES[-1]]
    done = run_cli("bisect", "--matrix", str(path), *args, "--out", str(tmp_path / "o"))
    if has_nvidia_gpu():
        pytest.skip("this host has a GPU: the cells of cuDNN releases run here")
    assert done.returncode == 3, done.stdout[-2000:] + done.stderr[-2000:]
    assert NO_TRACEBACK not in done.stderr
    assert "bisect cannot run here: this host has no NVIDIA GPU" in done.stderr
    assert not (tmp_path / "o").exists()  # no round was run


# ---- 8. results that contradict themselves --------------------------------------------------------------


@pytest.fixture(scope="module")
def cpu_result(tmp_path_factory) -> dict:
    """One real CPU result of this machine: its host block, its windows."""
    where = tmp_path_factory.mktemp("cpu-result")
    matrix = where / "matrix.yaml"
    matrix.write_text(
        HOSTILE_MATRIX.replace("BUDGET", "0.05").replace("cudnn: [bundled, disabled]", "cudnn: [bundled]")
    )
    done = run_cli("run", "--matrix", str(matrix), "--out", str(where / "out"))
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return only_result(where / "out")


def gpu_result(cudnn: str = "wheel") -> dict:
    """A committed GPU result (suite 0.16: windows, host) of a ``{wheel: X}`` cell, or of ``bundled``."""
    for path in sorted(LAB.glob("**/*.r1.json.gz")):
        doc = jsonio.read(path)
        if (
            doc.get("suite_version") == "0.16"
            and doc["status"] == "ok"
            and (cudnn in str(doc["cell"]["cudnn"]))
        ):
            return doc
    raise AssertionError(f"no committed suite 0.16 result of a {cudnn} cell")


def refused(tmp_path: Path, doc: dict) -> str:
    """What ``validate`` says of ``doc``, which it must refuse (exit 2)."""
    path = tmp_path / "forged.json.gz"
    jsonio.write_atomic(path, doc)
    done = run_cli("validate", str(path))
    assert done.returncode == 2, done.stdout[-2000:] + done.stderr[-2000:]
    assert NO_TRACEBACK not in done.stderr
    return done.stdout + done.stderr


def first_windowed(doc: dict) -> tuple[int, dict]:
    return next((i, m) for i, m in enumerate(doc["measurements"]) if m.get("window_medians_s"))


@pytest.mark.slow
def test_a_cpu_run_that_says_it_was_not_busy_under_a_load_above_its_cores_is_refused(tmp_path, cpu_result):
    doc = copy.deepcopy(cpu_result)
    assert validity.problems(doc, "real") == []
    doc["host"].update(busy=False, why="", load_start=doc["host"]["cores"] * 8.0)
    assert "host.busy: is false, but the run recorded a load of" in refused(tmp_path, doc)


@pytest.mark.slow
@pytest.mark.parametrize("source", ["cpu", "gpu"])
def test_window_medians_outside_every_sample_are_refused(tmp_path, cpu_result, source):
    doc = copy.deepcopy(cpu_result if source == "cpu" else gpu_result())
    i, m = first_windowed(doc)
    m["window_medians_s"] = [max(m["samples_s"]) * 3] * len(m["window_medians_s"])
    said = refused(tmp_path, doc)
    assert f"measurements[{i}].window_medians_s: has a fastest window median of" in said


@pytest.mark.slow
def test_more_windows_than_samples_are_refused(tmp_path):
    doc = gpu_result()
    i, m = first_windowed(doc)
    m["window_medians_s"] = [m["stats"]["median"]] * (
        len(m["samples_s"]) + (m.get("contended_discarded") or 0) + 1
    )
    m["window_medians_s"] = m["window_medians_s"][:16]  # the schema's most; a row of few samples
    m["samples_s"] = m["samples_s"][: len(m["window_medians_s"]) - 1]
    m["stats"] = summarize(m["samples_s"])
    m["contended_discarded"] = 0
    if "sm_clock_mhz" in m and m["sm_clock_mhz"] is not None:
        m["sm_clock_mhz"] = m["sm_clock_mhz"][: len(m["samples_s"])]
    assert f"measurements[{i}].window_medians_s: lists {len(m['window_medians_s'])} windows" in refused(
        tmp_path, doc
    )


@pytest.mark.slow
def test_a_result_that_loaded_another_cudnn_than_its_cell_names_is_refused(tmp_path):
    doc = gpu_result()
    doc["cudnn"]["runtime_version"] = "9.1.0"
    said = refused(tmp_path, doc)
    assert "cudnn.runtime_version: is '9.1.0', but the cell names cuDNN" in said
