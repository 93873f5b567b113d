"""The docker backend against a real engine: build, cache, run, provenance, secrets, failures.

Needs a running Docker engine. Without one these tests skip on a developer machine and FAIL in CI
(CI=true), where .ci/run installs and starts the engine. The base image is a Debian bookworm minbase
made with debootstrap and imported (cached as a tarball between runs); torch comes from a local
wheelhouse (pip download torch==2.13.0), so no registry is needed.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import io
import json
import os
import secrets
import signal
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import docker
import pytest

from harness import jsonio
from harness.backends.packages import PackageSource
from harness.results import documents
from tests.conftest import harness_env, run_cli, start_cli
from tests.docker_engine import BASE, MATRIX, run_matrix


@pytest.fixture(scope="module")
def built(engine, base_image, wheelhouse, tmp_path_factory):
    """The two cells built from scratch tags (layer cache allowed), then built again."""
    root = tmp_path_factory.mktemp("docker")
    matrix = root / "matrix.yaml"
    matrix.write_text(MATRIX)
    # torch: image cells are built FROM the bundled cell image: they go first, or it cannot be removed
    ours = ("torch-image_", "torch2.13.0-cpu_cudnn-")
    stale = [
        i for i in engine.images.list(name="cudnn-harness-cell") if any(o in t for t in i.tags for o in ours)
    ]
    for image in sorted(stale, key=lambda i: not any("torch-image_" in t for t in i.tags)):
        engine.images.remove(image.id, force=True)
    args = ("--matrix", str(matrix), "--wheelhouse", str(wheelhouse), "--log-dir", str(root / "logs"))
    first = run_cli("images", *args, timeout=1800)
    second = run_cli("images", *args, timeout=600)
    return root, matrix, first, second


@pytest.mark.slow
def test_two_cells_build_and_an_unchanged_rebuild_builds_nothing(built):
    _, _, first, second = built
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-3000:]
    assert "2 built, 0 cached, 0 failed" in first.stdout
    assert second.returncode == 0
    assert "0 built, 2 cached, 0 failed" in second.stdout


@pytest.mark.slow
def test_images_carry_provenance_labels(engine, built):
    images = [
        i
        for i in engine.images.list(name="cudnn-harness-cell")
        if any("torch2.13.0-cpu_cudnn-" in t for t in i.tags)
    ]
    assert len(images) == 2
    for image in images:
        labels = image.labels
        assert labels["io.cudnn-harness.cell"] in image.tags[0]
        assert json.loads(labels["io.cudnn-harness.cell-spec"])["torch"] == "2.13.0+cpu"
        assert len(labels["io.cudnn-harness.matrix-sha256"]) == 64
        assert labels["org.opencontainers.image.base.name"] == BASE
        assert image.attrs["Config"]["User"] == "10001:10001"


@pytest.fixture(scope="module")
def ran(built, wheelhouse):
    root, matrix, _, _ = built
    done = run_cli(
        "qualify",
        "--matrix",
        str(matrix),
        "--wheelhouse",
        str(wheelhouse),
        "--out",
        str(root / "results"),
        "--report-out",
        str(root / "report"),
        timeout=1800,
    )
    return root, done


@pytest.mark.slow
def test_the_suite_runs_in_least_privilege_containers(ran):
    root, done = ran
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    loaded = documents.load(root / "results")
    assert loaded.quarantined == () and len(loaded.documents) == 2
    for doc in loaded.documents:
        assert doc["status"] == "ok" and doc["device"] == "cpu"
        assert [m["status"] for m in doc["measurements"]] == ["ok"] * 2, doc["measurements"]
        run = doc["run"]
        assert run["backend"] == "docker" and run["exit_code"] == 0
        assert run["container"] == {
            **run["container"],
            "user": "10001:10001",
            "read_only_rootfs": True,
            "network_mode": "none",
            "cap_drop": ["ALL"],
            "privileged": False,
            "gpus": False,
            "security_opt": ["no-new-privileges:true"],
        }
        assert run["image"]["id"].startswith("sha256:") and run["image"]["base"] == BASE
        assert run["image"]["base_id"].startswith("sha256:")
        assert doc["environment"]["python"]["executable"] == "/opt/venv/bin/python"
        assert doc["environment"]["torch"]["version"] == "2.13.0+cpu"
        assert (root / "results" / "logs" / f"{doc['cell']['id']}.r1.log").exists()
    assert "| relu " in (root / "report" / "report.md").read_text()


@pytest.mark.slow
def test_rerun_uses_the_exact_image(ran, tmp_path):
    root, _ = ran
    result = next((root / "results").glob("torch*bundled*.json.gz"))
    before = jsonio.read(result)
    done = run_cli("rerun", str(result), "--out", str(tmp_path), timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    after = jsonio.read(tmp_path / result.name)
    assert after["status"] == "ok" and after["run"]["image"]["id"] == before["run"]["image"]["id"]
    assert after["run"]["rerun_of"] == before["started_at"]
    assert documents.check(tmp_path / result.name)[1] == []


@pytest.mark.slow
def test_rerun_runs_only_what_the_harness_would_and_never_overwrites(ran, engine, tmp_path):
    """A result file is untrusted: a command or an image it names is not run unless the harness would."""
    import shutil

    root, _ = ran
    result = next((root / "results").glob("torch*bundled*.json.gz"))
    forged_dir = tmp_path / "forged"
    forged_dir.mkdir()
    shutil.copy(root / "results" / "plan.json", forged_dir / "plan.json")
    doc = jsonio.read(result)
    for field, value, says in (
        ("command", ["list"], "is not the command the harness runs"),
        (
            "image",
            {**doc["run"]["image"], "id": engine.images.get(BASE).id},
            "is not an image this harness built",
        ),
    ):
        forged = forged_dir / result.name
        jsonio.write_atomic(forged, {**doc, "run": {**doc["run"], field: value}})
        done = run_cli("rerun", str(forged), "--out", str(tmp_path / "out"), timeout=300)
        assert done.returncode == 2 and says in done.stderr and "Traceback" not in done.stderr, done.stderr
    # ids an engine would choke on, and a cell the plan lacks: refused before anything is written to --out
    other = tmp_path / "other"
    other.mkdir()
    (other / "plan.json").write_text('{"not": "touched"}')
    for forgery, says in (
        (
            {"run": {**doc["run"], "image": {**doc["run"]["image"], "id": "sha256:../../x"}}},
            "run.image.id",
        ),
        ({"run": {**doc["run"], "image": {**doc["run"]["image"], "id": "a b\n"}}}, "run.image.id"),
        ({"cell": {**doc["cell"], "python": "3.9"}}, "cell"),
    ):
        jsonio.write_atomic(forged_dir / result.name, {**doc, **forgery})
        for out in (tmp_path / "fresh", other):
            done = run_cli("rerun", str(forged_dir / result.name), "--out", str(out), timeout=300)
            assert done.returncode == 2 and says in done.stderr and "Traceback" not in done.stderr, (
                done.stderr
            )
    assert not (tmp_path / "fresh").exists() and (other / "plan.json").read_text() == '{"not": "touched"}'
    again = run_cli("rerun", str(result), "--out", str(tmp_path / "twice"), timeout=600)
    assert again.returncode == 0, again.stdout + again.stderr
    again = run_cli("rerun", str(result), "--out", str(tmp_path / "twice"), timeout=600)
    assert again.returncode == 0 and len(list((tmp_path / "twice" / "superseded").glob("*.json.gz"))) == 1


@pytest.mark.slow
def test_a_failed_build_fails_its_cell_and_the_others_run(engine, base_image, wheelhouse, tmp_path):
    matrix = tmp_path / "matrix.yaml"
    matrix.write_text(
        MATRIX.replace('torch: ["2.13.0+cpu"]', 'torch: ["2.13.0+cpu", "9.9.9+cpu"]')
        .replace("cudnn: [bundled, disabled]", "cudnn: [bundled]")
        .replace("baseline: {cudnn: bundled}", 'baseline: {torch: "2.13.0+cpu"}')
    )
    done = run_matrix(matrix, wheelhouse, tmp_path / "r")
    assert done.returncode == 1
    docs = {d["cell"]["torch"]: d for d in documents.load(tmp_path / "r").documents}
    assert docs["2.13.0+cpu"]["status"] == "ok"
    failed = docs["9.9.9+cpu"]
    assert failed["status"] == "failed" and failed["failure"]["stage"] == "build"
    assert "torch==9.9.9+cpu" in failed["failure"]["log_tail"]
    # issue 41: every image is built before any round is timed, the second cell's before the first's round 1
    build_log = tmp_path / "r" / "logs" / f"{failed['cell']['id']}.build.log"
    built_at = dt.datetime.fromtimestamp(build_log.stat().st_mtime, dt.timezone.utc)
    first_round = min(
        dt.datetime.fromisoformat(d["started_at"])
        for d in documents.load(tmp_path / "r").documents
        if d["status"] == "ok"
    )
    assert built_at <= first_round, (built_at, first_round)


@pytest.mark.slow
def test_no_ca_bundle_or_wheel_in_any_layer_or_the_history(engine, base_image, wheelhouse, tmp_path):
    marker = secrets.token_hex(16)
    ca = tmp_path / "corporate-ca.pem"
    ca.write_text(f"-----BEGIN CERTIFICATE-----\n{marker}\n-----END CERTIFICATE-----\n")
    matrix = tmp_path / "matrix.yaml"
    matrix.write_text(MATRIX.replace("cudnn: [bundled, disabled]", "cudnn: [bundled]"))
    done = run_cli(
        "images",
        "--matrix",
        str(matrix),
        "--wheelhouse",
        str(wheelhouse),
        "--ca-bundle",
        str(ca),
        "--log-dir",
        str(tmp_path / "logs"),
        timeout=1800,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    reference = next(
        line.split()[1] for line in done.stdout.splitlines() if line.startswith("torch2.13.0-cpu")
    )
    image = engine.images.get(reference)
    history = json.dumps(engine.api.history(image.id))
    assert marker not in history and "harness-build" not in history
    wheelhouse_files = {p.name for p in wheelhouse.glob("*.whl")}
    archive = io.BytesIO(b"".join(image.save()))
    names_seen = 0
    with tarfile.open(fileobj=archive) as outer:
        for member in outer.getmembers():
            if not member.name.endswith("layer.tar"):
                continue
            with tarfile.open(fileobj=outer.extractfile(member)) as layer:
                for entry in layer.getmembers():
                    names_seen += 1
                    assert "harness-build" not in entry.name, entry.name
                    assert Path(entry.name).name not in wheelhouse_files, entry.name
                    if entry.isfile() and entry.size < 1_000_000:
                        assert marker.encode() not in layer.extractfile(entry).read(), entry.name
    assert names_seen > 1000  # the scan really read the image
    engine.images.remove(image.id, force=True)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("mode", "says"),
    [
        ("toolkit", "NVIDIA Container Toolkit"),
        ("cdi", "nvidia-ctk cdi generate"),
        ("devices", "missing on this host; load the NVIDIA driver"),
    ],
)
def test_gpu_cells_a_host_cannot_serve_fail_with_what_to_install(ran, mode, says):
    """This engine has no GPU runtime, no CDI and the host no /dev/nvidia*: each mode says what is missing."""
    root, _ = ran
    from harness.backends.docker.backend import DockerBackend
    from harness.backends.docker.containers import ContainerRun
    from harness.backends.docker.dockerfile import BuildOptions
    from harness.plan.model import Cell, CudnnSource, Plan

    doc = jsonio.read(next((root / "results").glob("torch*bundled*.json.gz")))
    plan = Plan.from_json(json.loads((root / "results" / "plan.json").read_text()))
    gpu_cell = Cell("2.13.0+cu130", CudnnSource("bundled"), BASE, "3.11")
    backend = DockerBackend(BuildOptions(), gpu_access=mode)
    if "nvidia" in json.dumps(backend.client.info().get("Runtimes", {})) or Path("/dev/nvidiactl").exists():
        pytest.skip("this host can attach GPUs")
    run: dict = {}
    job = ContainerRun(
        gpu_cell,
        plan,
        doc["run"]["image"]["id"],
        ["list"],
        root / "gpu" / f"{mode}.log",
        __import__("datetime").datetime.now(__import__("datetime").timezone.utc),
    )
    failed = backend.containers.run(job, run)
    assert failed["status"] == "failed" and failed["failure"]["stage"] == "gpu-access", failed["failure"]
    assert says in failed["failure"]["reason"] and f"gpu_access {mode}" in failed["failure"]["reason"]
    assert run["gpu_access"]["mode"] == mode


def test_no_engine_is_a_clear_error(tmp_path):
    matrix = tmp_path / "matrix.yaml"
    matrix.write_text(MATRIX)
    done = run_cli(
        "images", "--matrix", str(matrix), env={**harness_env(), "DOCKER_HOST": f"unix://{tmp_path}/no.sock"}
    )
    assert (
        done.returncode == 3
        and "cannot reach the Docker engine" in done.stderr
        and "Traceback" not in done.stderr
    )


@pytest.mark.slow
def test_a_cell_past_its_time_limit_is_killed_and_recorded(built, wheelhouse, tmp_path):
    _, matrix, _, _ = built
    done = run_matrix(matrix, wheelhouse, tmp_path / "r", "--timeout-s", "1")
    assert done.returncode == 1
    docs = [jsonio.read(p) for p in (tmp_path / "r").glob("torch*.json.gz")]
    assert len(docs) == 2
    assert all(d["status"] == "failed" and "timed out after 1 s" in d["failure"]["reason"] for d in docs)
    assert not list((tmp_path / "r").glob(".cell-*"))  # scratch output folders are gone


@pytest.mark.slow
def test_runs_go_concurrently_one_gpu_id_each_and_ctrl_c_removes_every_container(built, wheelhouse, tmp_path):
    """Two cells at once with --gpus 0,1 (the ids travel as device requests; CPU cells ask for none)."""
    _, built_matrix, _, _ = built
    # a CPU suite: the ids only number concurrent runs (a GPU suite's ids must be this host's GPUs)
    matrix = tmp_path / "cpu.yaml"
    matrix.write_text(
        built_matrix.read_text().replace("time_budget_s: 0.05}", "time_budget_s: 0.05, device: cpu}")
    )
    assert "device: cpu" in matrix.read_text()
    out = tmp_path / "results"
    done = run_matrix(matrix, wheelhouse, out, "--gpus", "0,1")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    docs = sorted(documents.load(out).documents, key=lambda d: d["run"]["gpus"])
    assert [d["run"]["gpus"] for d in docs] == [["0"], ["1"]]
    assert docs[0]["started_at"] < docs[1]["finished_at"] and docs[1]["started_at"] < docs[0]["finished_at"]
    assert all(d["run"]["container"]["gpus"] is False for d in docs)  # a CPU suite gets no GPU at all

    slow = tmp_path / "slow.yaml"
    slow.write_text(matrix.read_text().replace("time_budget_s: 0.05", "time_budget_s: 30, min_time_s: 30"))
    stopped = tmp_path / "stopped"
    proc = start_cli(
        "run", "--matrix", str(slow), "--wheelhouse", str(wheelhouse), "--out", str(stopped), "--gpus", "0,1"
    )
    import docker

    client = docker.from_env()
    label = f"io.cudnn-harness.results={stopped.resolve()}"
    deadline = time.monotonic() + 300
    while len(client.containers.list(filters={"label": label})) < 2 and time.monotonic() < deadline:
        time.sleep(0.5)
    assert len(client.containers.list(filters={"label": label})) == 2, proc.communicate(timeout=60)[0]
    proc.send_signal(signal.SIGINT)
    output, _ = proc.communicate(timeout=120)
    assert proc.returncode == 130, output
    assert client.containers.list(all=True, filters={"label": label}) == []
    assert list(stopped.glob("*.r*.json.gz")) == []


@pytest.mark.slow
def test_a_gpu_run_asks_the_engine_for_exactly_its_gpu_ids(ran):
    root, _ = ran
    from harness.backends.docker.backend import DockerBackend
    from harness.backends.docker.dockerfile import BuildOptions
    from harness.plan.model import Cell, CudnnSource, Plan

    plan = Plan.from_json(json.loads((root / "results" / "plan.json").read_text()))
    gpu_cell = Cell("2.13.0+cu130", CudnnSource("bundled"), BASE, "3.11")
    backend = DockerBackend(BuildOptions())
    (request,) = backend.containers.attachment(gpu_cell, plan, ("1",), "toolkit").device_requests
    assert request["DeviceIDs"] == ["1"] and request["Capabilities"] == [["gpu"]] and not request.get("Count")
    (every,) = backend.containers.attachment(gpu_cell, plan, (), "toolkit").device_requests
    assert every["Count"] == -1  # without --gpus: every GPU, one run at a time
    (cdi,) = backend.containers.attachment(gpu_cell, plan, ("0", "1"), "cdi").device_requests
    assert cdi["Driver"] == "cdi" and cdi["DeviceIDs"] == ["nvidia.com/gpu=0", "nvidia.com/gpu=1"]


@pytest.mark.slow
def test_slurm_tasks_run_each_cell_in_its_container(built, wheelhouse, tmp_path):
    """--backend slurm with a docker matrix: each array task runs its cell's container on the node."""
    from tests.conftest import require_slurm

    require_slurm()
    _, matrix, _, _ = built
    out = tmp_path / "results"
    done = run_matrix(matrix, wheelhouse, out, "--backend", "slurm", "--slurm-time", "20")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "each task runs the docker backend there" in done.stdout
    docs = documents.load(out).documents
    assert len(docs) == 2 and all(d["status"] == "ok" for d in docs)
    for doc in docs:
        assert doc["run"]["backend"] == "docker" and doc["run"]["image"]["id"].startswith("sha256:")
        assert doc["run"]["container"]["user"] == "10001:10001" and doc["run"]["slurm"]["node"]


@pytest.mark.slow
def test_torch_from_the_image_builds_no_torch_layer_and_records_what_the_image_holds(
    built, wheelhouse, tmp_path
):
    """torch: image on a base that already holds torch (the bundled cell image stands in for an NGC
    PyTorch container); {system: image} on a base without NVIDIA's cuDNN fails its build saying so;
    with GPU access the host cannot serve, nothing can run: exit 3."""
    from harness.backends.docker.dockerfile import BuildOptions, render
    from harness.plan.model import Cell, CudnnSource

    base = render(
        Cell("2.13.0+cpu", CudnnSource("bundled"), BASE, "3.11"),
        BuildOptions(PackageSource(wheelhouse=wheelhouse)),
    )
    matrix = tmp_path / "image.yaml"
    text = f"""
schema_version: 1
name: docker-image-torch
backend: docker
docker: {{image_python: /opt/venv/bin/python}}
axes:
  torch: [image]
  cudnn: [bundled, disabled, {{system: image}}]
  base_image: ["{base.reference}"]
suite: {{workloads: [relu], dtypes: [fp32], time_budget_s: 0.05, device: cpu}}
baseline: {{cudnn: bundled}}
"""
    matrix.write_text(text)
    out = tmp_path / "r"
    done = run_cli("run", "--matrix", str(matrix), "--out", str(out), timeout=900)
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-3000:]
    docs = {d["cell"]["id"].split("_")[1]: d for d in documents.load(out).documents}
    assert sorted(docs) == ["cudnn-bundled", "cudnn-disabled", "cudnn-system-image"]
    for name in ("cudnn-bundled", "cudnn-disabled"):
        doc = docs[name]
        assert doc["status"] == "ok", doc["failure"]
        image = doc["run"]["image"]
        assert image["torch"] == "2.13.0+cpu" and image["python"] == "/opt/venv/bin/python"
        assert image["base"] == base.reference and image["base_id"].startswith("sha256:")
        assert doc["environment"]["torch"]["version"] == "2.13.0+cpu"
        assert doc["run"]["gpu_access"] == {"mode": "toolkit", "attached": False}
        assert (
            doc["run"]["container"]["user"] == "10001:10001" and doc["run"]["container"]["read_only_rootfs"]
        )
        build_log = (out / "logs" / f"{doc['cell']['id']}.build.log").read_text()
        assert "pip install" not in build_log and "Step " in build_log  # no torch layer was built
    failed = docs["cudnn-system-image"]
    assert failed["status"] == "failed" and failed["failure"]["stage"] == "build"
    assert "has no NVIDIA cuDNN in its ld.so cache" in failed["failure"]["log_tail"]

    # the same cells on the GPU, where the host has no GPU to give: every run fails with what to do
    matrix.write_text(text.replace(", device: cpu", "").replace(", {system: image}", ""))
    for mode, says in (("devices", "/dev/nvidia"), ("toolkit", "NVIDIA Container Toolkit")):
        if Path("/dev/nvidiactl").exists():
            pytest.skip("this host has a GPU")
        gpu = run_cli(
            "run", "--matrix", str(matrix), "--out", str(tmp_path / mode), "--gpu-access", mode, timeout=900
        )
        assert gpu.returncode == 3, gpu.stdout[-3000:] + gpu.stderr[-3000:]
        assert "nothing could run: gpu_access " + mode in gpu.stderr and says in gpu.stderr
        assert "Traceback" not in gpu.stdout + gpu.stderr
        for doc in documents.load(tmp_path / mode).documents:
            assert doc["failure"]["stage"] == "gpu-access" and doc["run"]["gpu_access"]["mode"] == mode


@pytest.mark.slow
def test_a_docker_row_becomes_two_dockerfiles_that_build_and_run_its_reproducer(
    ran, engine, wheelhouse, tmp_path
):
    root, _ = ran
    out = tmp_path / "repro"
    made = run_cli(
        "repro",
        "--results",
        str(root / "results"),
        "--workload",
        "conv2d_r50_3x3",
        "--dtype",
        "fp32",
        "--wheelhouse",
        str(wheelhouse),
        "--out",
        str(out),
    )
    assert made.returncode == 0, made.stdout + made.stderr
    lines = {}
    for side in ("baseline", "candidate"):
        dockerfile = (out / f"{side}.Dockerfile").read_text()
        assert "COPY repro.py /opt/repro/repro.py" in dockerfile and "COPY harness/" not in dockerfile
        assert f'"--side", "{side}"' in dockerfile and "torch==2.13.0+cpu" in dockerfile
        tag = f"cudnn-harness-cell:repro-{side}"
        try:
            engine.images.build(path=str(out), dockerfile=f"{side}.Dockerfile", tag=tag, rm=True)
            printed = engine.containers.run(
                tag, remove=True, network_mode="none", read_only=True, tmpfs={"/tmp": ""}
            )
        finally:  # where the build failed there is no image, and its error is the one to see
            with contextlib.suppress(docker.errors.ImageNotFound):
                engine.images.remove(tag, force=True)
        lines[side] = printed.decode().strip().splitlines()[-1]
        (tmp_path / f"{side}.jsonl").write_text(lines[side] + "\n")
    found = {side: json.loads(line) for side, line in lines.items()}
    assert found["baseline"]["torch"] == found["candidate"]["torch"] == "2.13.0+cpu"
    assert (found["baseline"]["cudnn_enabled"], found["candidate"]["cudnn_enabled"]) == (True, False)
    ratio = subprocess.run(
        [
            sys.executable,
            str(out / "repro.py"),
            "--ratio",
            str(tmp_path / "baseline.jsonl"),
            str(tmp_path / "candidate.jsonl"),
        ],
        capture_output=True,
        text=True,
        check=True,
        env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
    )
    summary = json.loads(ratio.stdout)
    assert summary["ratio"] == found["candidate"]["median_s"] / found["baseline"]["median_s"]
