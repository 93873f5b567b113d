"""Fault injection against the real Docker engine: what each fault keeps, what it loses, how the next run
heals.

Each test breaks one thing in the middle of a real matrix run (a container killed from outside, an
image removed, the engine restarted, the output disk full, a result file corrupted) and checks:
the fault is detected and named, every valid result is kept, nothing invalid is merged, and the
next run completes the matrix. Like the other docker tests these FAIL in CI when there is no engine.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import docker
import pytest

from harness import jsonio
from harness.backends.packages import PackageSource
from harness.results import documents
from tests.conftest import run_cli, start_cli
from tests.docker_engine import MATRIX, run_matrix

pytestmark = pytest.mark.slow  # every test here takes seconds (docs/development.md: the fast tests)

# long enough to be caught mid-run: the suite imports torch, then measures for a while
SLOW = MATRIX.replace("time_budget_s: 0.05", "time_budget_s: 1.0, min_time_s: 0.5")


def docs(folder: Path) -> dict[str, dict]:
    return {p.name: jsonio.read(p) for p in sorted(folder.glob("torch*.json.gz"))}


def wait_for_container(client, cell_text: str, timeout_s: float = 900) -> object:
    """The running container of the cell whose id contains ``cell_text``."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for container in client.containers.list(filters={"label": "io.cudnn-harness.cell"}):
            if cell_text in container.labels.get("io.cudnn-harness.cell", ""):
                return container
        time.sleep(0.1)
    raise AssertionError(f"no container for {cell_text} started within {timeout_s} s")


def test_an_out_of_memory_kill_fails_the_cell_with_its_reason_and_log(
    engine, base_image, wheelhouse, tmp_path
):
    # fault_host_oom allocates host memory in 64 MiB steps; the kernel stops it at the container's limit
    matrix = tmp_path / "matrix.yaml"
    matrix.write_text(
        MATRIX.replace("workloads: [relu, conv2d_r50_3x3]", "workloads: [relu, fault_host_oom]")
    )
    out = tmp_path / "r"
    done = run_matrix(matrix, wheelhouse, out, "--memory", "768m")
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-3000:]
    found = docs(out)
    assert len(found) == 2
    for name, doc in found.items():
        assert documents.check(out / name)[1] == []  # a failed result is still a valid document
        assert doc["status"] == "failed"
        assert "ran out of memory (limit 768m) and was killed by the OOM killer" in doc["failure"]["reason"]
        assert "[1/2] relu fp32" in doc["failure"]["log_tail"]  # the log shows how far the cell got
        assert doc["run"]["container"]["memory_limit_bytes"] == 768 << 20
    assert "ran out of memory" in done.stdout
    assert not engine.containers.list(
        all=True, filters={"label": f"io.cudnn-harness.results={out.resolve()}"}
    )


def test_a_container_killed_from_outside_fails_only_its_cell(engine, base_image, wheelhouse, tmp_path):
    matrix = tmp_path / "matrix.yaml"
    matrix.write_text(SLOW)
    out = tmp_path / "r"
    killer = threading.Thread(target=lambda: (time.sleep(2.0), wait_for_container(engine, "disabled").kill()))
    killer.start()
    done = run_matrix(matrix, wheelhouse, out)
    killer.join()
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-3000:]
    by_cudnn = {d["cell"]["cudnn"]: d for d in docs(out).values()}
    assert by_cudnn["bundled"]["status"] == "ok"  # kept: the other cell is untouched
    killed = by_cudnn["disabled"]
    assert (
        killed["status"] == "failed" and "was killed by SIGKILL (exit code 137" in killed["failure"]["reason"]
    )
    assert not engine.containers.list(
        all=True, filters={"label": f"io.cudnn-harness.results={out.resolve()}"}
    )

    # a corrupted result beside it is not trusted either: quarantined and measured again
    bundled_file = next(n for n, d in docs(out).items() if d["cell"]["cudnn"] == "bundled")
    (out / bundled_file).write_text('{"schema_version": 1, "status": "ok"')
    healed = run_matrix(matrix, wheelhouse, out)
    assert healed.returncode == 1  # the kill is kept as a failure by default ...
    assert "kept an earlier failure" in healed.stdout and "is quarantined" in healed.stdout
    retried = run_matrix(matrix, wheelhouse, out, "--rerun-failed")
    assert retried.returncode == 0, retried.stdout[-3000:]  # ... and --rerun-failed completes the matrix
    final = docs(out)
    assert [d["status"] for d in final.values()] == ["ok", "ok"]
    assert (out / "quarantine" / bundled_file).exists()
    for name in final:
        assert documents.check(out / name)[1] == []


def test_an_image_removed_after_its_build_is_built_again(engine, base_image, wheelhouse, tmp_path):
    matrix = tmp_path / "matrix.yaml"
    matrix.write_text(
        MATRIX.replace("cudnn: [bundled, disabled]", "cudnn: [disabled]").replace(
            "baseline: {cudnn: bundled}", "baseline: {cudnn: disabled}"
        )
    )
    from harness.backends.docker.backend import DockerBackend
    from harness.backends.docker.dockerfile import BuildOptions
    from harness.plan.matrix import load

    plan = load(matrix)
    backend = DockerBackend(BuildOptions(PackageSource(wheelhouse=wheelhouse)))
    cell = plan.cells[0]
    build = backend.build(cell, plan, tmp_path / "build.log")
    assert build.error is None
    engine.images.remove(build.image.reference, force=True)  # gone between this build and the run
    out = tmp_path / "r"
    finished = backend.run_cell(cell, plan, out)
    assert finished.document["status"] == "ok", finished.document.get("failure")
    assert finished.run["image"]["cached"] is False and engine.images.get(build.image.reference)


def _dockerd() -> tuple[int, list[str]] | None:
    found = subprocess.run(["pgrep", "-x", "dockerd"], capture_output=True, text=True).stdout.split()
    if len(found) != 1:
        return None
    pid = int(found[0])
    return pid, Path(f"/proc/{pid}/cmdline").read_bytes().decode().rstrip("\0").split("\0")


def test_an_engine_restart_mid_matrix_stops_the_run_and_the_next_run_completes(
    engine,
    base_image,
    wheelhouse,
    tmp_path,
):
    daemon = _dockerd()
    if daemon is None or os.geteuid() != 0:
        if os.environ.get("CI") == "true":
            pytest.fail("CI must run its own dockerd (started by .ci/run) so this test can restart it")
        pytest.skip("restarting the engine needs a dockerd this test can restart (root, one dockerd)")
    pid, cmdline = daemon
    matrix = tmp_path / "matrix.yaml"
    matrix.write_text(SLOW)
    out = tmp_path / "r"
    built = run_cli("images", "--matrix", str(matrix), "--wheelhouse", str(wheelhouse), timeout=1800)
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    proc = start_cli(
        "run",
        "--matrix",
        str(matrix),
        "--out",
        str(out),
        "--wheelhouse",
        str(wheelhouse),
        stderr=subprocess.PIPE,
    )
    # The engine stays down until the run has ended. Restarted at once, it could answer the run's next call
    # (a cell that finished within the engine's stop grace period, then the next cell), and the run would go
    # on as if nothing happened: right, but not the fault under test.
    try:
        wait_for_container(engine, "bundled")
        time.sleep(1.0)
        os.kill(pid, signal.SIGTERM)
        stdout, stderr = proc.communicate(timeout=600)
        for _ in range(600):
            if not Path(f"/proc/{pid}").exists():
                break
            time.sleep(0.1)
    finally:
        if proc.poll() is None:
            proc.kill()
        # started through a shell that exits at once: the engine outlives the tests, and no child of this
        # process is left running at its exit
        subprocess.run(
            ["sh", "-c", 'setsid "$@" >>/tmp/harness-test-dockerd.log 2>&1 &', "sh", *cmdline], check=True
        )
        for _ in range(120):
            if subprocess.run(["docker", "info"], capture_output=True).returncode == 0:
                break
            time.sleep(0.5)
    assert proc.returncode == 3, stdout[-2000:] + stderr[-2000:]
    assert (
        "the Docker engine went away while the cell was running; nothing was written for that run" in stderr
    )
    kept = docs(out)  # runs that finished before the engine went down are whole and kept
    assert len(kept) < 2 and all(d["status"] == "ok" for d in kept.values())
    assert all(documents.check(out / name)[1] == [] for name in kept)

    client = docker.from_env(timeout=600)
    resumed = run_matrix(matrix, wheelhouse, out)
    assert resumed.returncode == 0, resumed.stdout[-3000:] + resumed.stderr[-3000:]
    after = docs(out)
    assert [d["status"] for d in after.values()] == ["ok", "ok"]
    assert all(after[name]["started_at"] == doc["started_at"] for name, doc in kept.items())
    assert not list(out.glob(".cell-*")) and not list(out.rglob("*.part"))
    assert not client.containers.list(
        all=True, filters={"label": f"io.cudnn-harness.results={out.resolve()}"}
    )


def test_a_full_output_disk_stops_the_run_and_keeps_only_whole_results(
    engine, base_image, wheelhouse, tmp_path
):
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root")
    out = tmp_path / "small"
    out.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=48k", "tmpfs", str(out)], capture_output=True
    )
    if mounted.returncode != 0:
        if os.environ.get("CI") == "true":
            pytest.fail(f"cannot mount a tmpfs: {mounted.stderr.decode()}")
        pytest.skip("this machine cannot mount a tmpfs")
    try:
        # a few pages left: how far a run gets must not depend on how many samples its results hold
        (out / "filler").write_bytes(b"\0" * 40 * 1024)
        matrix = tmp_path / "matrix.yaml"
        matrix.write_text(MATRIX)
        done = run_matrix(matrix, wheelhouse, out)
        assert done.returncode == 3, done.stdout[-3000:] + done.stderr[-3000:]
        assert f"cannot write into {out} (No space left on device)" in done.stderr
        for path in out.glob("torch*.json.gz"):
            assert documents.check(path)[1] == []  # whatever is there is whole
        assert not list(out.glob(".tmp-*"))
    finally:
        subprocess.run(["umount", str(out)], check=True)
