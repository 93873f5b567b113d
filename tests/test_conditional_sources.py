"""The seed's question by default (issue 58): cuDNN sources that are cells only where this host can make
them (``optional: true``) or only on one device (``device: cuda|cpu``), and ``{wheel: newest}``.

What a host makes of them is decided when the matrix is planned, by the real code that answers for this
machine (``backends.host.ThisHost``): NVIDIA's system cuDNN found by its files in a folder, the newest
``nvidia-cudnn-cu13`` release in a wheelhouse (chosen by the wheel files' names alone: the files here are
empty and nothing opens them) or on an index (a real HTTP index on localhost, or a closed port that refuses).
``ThisHost(gpu=True)`` is this machine said to have an NVIDIA GPU: the decisions a GPU host makes, on a CPU.
"""

from __future__ import annotations

import contextlib
import http.server
import json
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness import schemas
from harness.backends import packages, registry
from harness.backends.host import ThisHost, has_nvidia_gpu
from harness.errors import InputError
from harness.plan import matrix
from harness.plan.axes import CudnnSource
from harness.plan.model import Plan
from tests.conftest import REPO, cli_in_process, run_cli

RELEASES = ("9.20.0.48", "9.21.0.82", "9.26.1.1", "9.27.0.42", "9.28.1.4")
GPU_MATRIX = """
schema_version: 1
name: sources
axes:
  torch: [TORCH]
  cudnn:
    - bundled
    - {system: SYSTEM, device: cuda, optional: true}
    - {wheel: newest, device: cuda, optional: true}
    - {disabled: true, device: cpu}
suite: {workloads: [relu], dtypes: [fp32_default, bf16]}
baseline: {cudnn: bundled}
"""


def wheelhouse(folder: Path, versions: tuple[str, ...] = RELEASES) -> Path:
    """A wheelhouse of ``nvidia_cudnn_cu13`` wheels, named as PyPI names them, empty (only names are read),
    with an aarch64 wheel of a newer release and a cu12 wheel beside them, which this machine cannot use."""
    folder.mkdir(parents=True, exist_ok=True)
    for version in versions:
        (folder / f"nvidia_cudnn_cu13-{version}-py3-none-manylinux_2_27_x86_64.whl").touch()
    (folder / "nvidia_cudnn_cu13-9.99.0.1-py3-none-manylinux_2_27_aarch64.whl").touch()
    (folder / "nvidia_cudnn_cu12-9.99.0.2-py3-none-manylinux_2_27_x86_64.whl").touch()
    return folder


def system_cudnn(folder: Path, version: str = "9.14.0") -> Path:
    """A folder laid out as NVIDIA's Debian package lays out its libraries (only their names are read)."""
    folder.mkdir(parents=True)
    for lib in ("libcudnn", "libcudnn_ops"):
        (folder / f"{lib}.so.{version}").write_text(lib)
        (folder / f"{lib}.so.9").symlink_to(f"{lib}.so.{version}")
    return folder


def closed_port() -> int:
    """A localhost port nothing listens on: a connection to it is refused."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextlib.contextmanager
def simple_index(root: Path, page: str) -> Iterator[str]:
    """A PEP 503 index on localhost whose ``nvidia-cudnn-cu13`` page is ``page`` (HTML); its URL."""
    project = root / "simple" / "nvidia-cudnn-cu13"
    project.mkdir(parents=True)
    (project / "index.html").write_text(page)

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args: object, **kwargs: object) -> None:
            super().__init__(*args, directory=str(root), **kwargs)  # type: ignore[arg-type]

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/simple"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def plan_of(write_matrix, text: str, host: ThisHost) -> Plan:
    return matrix.load(write_matrix(text), ["relu"], registry.cell_problems, host=host)


def gpu_text(torch: str = '"2.11.0+cu130"', system: str = "auto") -> str:
    return GPU_MATRIX.replace("TORCH", torch).replace("SYSTEM", system)


def left_out(plan: Plan) -> dict[str, str]:
    return {left.cell.cudnn.label: left.why for left in plan.left_out}


def test_on_a_cpu_host_the_default_matrix_is_the_a_a_check_and_names_the_gpu_cells_it_leaves_out(tmp_path):
    # an index that refuses: a CPU host decides the GPU's sources by its device alone, asking nothing of it
    host = ThisHost(packages.PackageSource(f"http://127.0.0.1:{closed_port()}/simple"), gpu=False)
    plan = matrix.load(REPO / "matrix.yaml", None, registry.cell_problems, host=host)
    assert [c.cudnn.label for c in plan.cells] == ["bundled", "disabled"]
    assert [c.id for c in plan.cells] == [  # the ids the default matrix's CPU cells always had
        "torch-installed_cudnn-bundled_2ecb882014",
        "torch-installed_cudnn-disabled_79b59379da",
    ]
    assert plan.suite.dtypes == ("fp32_default", "bf16")  # PyTorch's default first
    gpu_only = "only where the suite runs on a GPU (device: cuda); here it runs on the CPU: this host has no "
    assert left_out(plan) == {"system:auto": gpu_only + "NVIDIA GPU", "wheel:newest": gpu_only + "NVIDIA GPU"}
    assert (
        plan.chosen == () and len(host._releases) == 0 and host._probed is None
    )  # no index, no interpreter asked


def test_a_gpu_host_with_a_cpu_build_of_torch_runs_the_a_a_check_too(write_matrix):
    # torch: installed is this test's CPU build: the interpreter's probe says so, and the suite would run
    # on the CPU, so the GPU's sources are left out and cuDNN disabled is the candidate
    host = ThisHost(packages.PackageSource(f"http://127.0.0.1:{closed_port()}/simple"), gpu=True)
    plan = plan_of(write_matrix, gpu_text("installed"), host)
    assert [c.cudnn.label for c in plan.cells] == ["bundled", "disabled"]
    why = left_out(plan)["wheel:newest"]
    assert why.endswith("here it runs on the CPU: torch 2.13.0+cpu (installed) is a CPU build"), why
    assert len(host._releases) == 0


def test_a_package_source_that_cannot_answer_is_asked_once_per_distribution(monkeypatch):
    asked = []

    def releases(distribution: str, source: packages.PackageSource) -> packages.Releases:
        asked.append(distribution)
        raise LookupError(f"no {distribution} here")

    monkeypatch.setattr(packages, "releases", releases)
    host = ThisHost(gpu=True)
    for _ in range(2):  # the failure is remembered and said again, the source never asked twice
        with pytest.raises(LookupError, match=r"^no nvidia-cudnn-cu13 here$"):
            host._available("nvidia-cudnn-cu13")
    assert asked == ["nvidia-cudnn-cu13"] and len(host._releases) == 1


def test_a_gpu_host_compares_its_system_cudnn_and_the_newest_release_in_a_wheelhouse(tmp_path, write_matrix):
    system = system_cudnn(tmp_path / "usr" / "lib")
    host = ThisHost(packages.PackageSource(wheelhouse=wheelhouse(tmp_path / "wheelhouse")), gpu=True)
    plan = plan_of(write_matrix, gpu_text(system=str(system)), host)
    assert [c.cudnn.label for c in plan.cells] == ["bundled", f"system:{system}", "wheel:9.28.1.4"]
    assert left_out(plan) == {
        "disabled": "only where the suite runs on the CPU (device: cpu); here it runs on a GPU: this host "
        "has an NVIDIA GPU and torch 2.11.0+cu130 is a CUDA 13.0 build"
    }
    chosen = {c.written: c for c in plan.chosen}
    newest = chosen[CudnnSource("wheel", "newest")]
    assert newest.cell_id == plan.cells[2].id and newest.cell_id.startswith(
        "torch2.11.0-cu130_cudnn-wheel-9.28.1.4"
    )
    assert (
        newest.how
        == f"the newest nvidia-cudnn-cu13 (of 5 releases) in the wheelhouse {tmp_path / 'wheelhouse'}"
    )
    assert chosen[CudnnSource("system", str(system))].how == f"9.14.0 in {system}"
    # the plan document keeps both, and reads back as it was written
    document = plan.to_json()
    assert document["left_out"][0]["cell"]["cudnn"] == "disabled" and len(document["chosen"]) == 2
    assert Plan.from_json(json.loads(json.dumps(document))) == plan
    assert schemas.problems("plan", json.loads(json.dumps(document)), "plan.json") == []


def test_what_a_gpu_host_cannot_make_is_left_out_and_named_not_failed(tmp_path, write_matrix):
    # no system cuDNN in the folder named; an index that refuses the connection
    refused = f"http://127.0.0.1:{closed_port()}/simple"
    host = ThisHost(packages.PackageSource(refused), gpu=True)
    plan = plan_of(write_matrix, gpu_text(system=str(tmp_path)), host)
    assert [c.cudnn.label for c in plan.cells] == ["bundled"]
    why = left_out(plan)
    assert why[f"system:{tmp_path}"].startswith(f"no cuDNN in {tmp_path}: give the folder of libcudnn.so.N")
    assert why["wheel:newest"].startswith(f"the package index is not reachable: {refused}: ")
    assert "refused" in why["wheel:newest"].lower()
    # a wheelhouse without cuDNN wheels, and torch builds that take no cuDNN wheel
    empty = ThisHost(packages.PackageSource(wheelhouse=wheelhouse(tmp_path / "none", ())), gpu=True)
    plan = plan_of(write_matrix, gpu_text(), empty)
    assert left_out(plan)["wheel:newest"] == (
        f"the wheelhouse {tmp_path / 'none'} holds no nvidia-cudnn-cu13 release with a wheel for x86_64 Linux"
    )
    plain = plan_of(write_matrix, gpu_text('"2.11.0"'), empty)
    assert "names no CUDA variant" in left_out(plain)["wheel:newest"]


@pytest.mark.skipif(has_nvidia_gpu(), reason="finds what this host has")
def test_no_system_cudnn_installed_is_said_with_where_it_was_looked_for(write_matrix, tmp_path):
    host = ThisHost(packages.PackageSource(wheelhouse=wheelhouse(tmp_path / "wheelhouse")), gpu=True)
    plan = plan_of(write_matrix, gpu_text(), host)
    why = left_out(plan)["system:auto"]
    if not why.startswith("no system cuDNN found in /usr/lib/x86_64-linux-gnu"):
        pytest.skip(f"this machine has NVIDIA's cuDNN installed: {why}")
    assert "or the ld.so cache; install NVIDIA's cuDNN package" in why


def test_the_newest_release_on_an_index_skips_yanked_files_and_other_machines_wheels(tmp_path, write_matrix):
    files = [f"nvidia_cudnn_cu13-{v}-py3-none-manylinux_2_27_x86_64.whl" for v in RELEASES[:3]]
    links = [f'<a href="../../files/{name}#sha256=00">{name}</a>' for name in files]
    links.append(
        '<a href="x/nvidia_cudnn_cu13-9.27.0.42-py3-none-manylinux_2_27_x86_64.whl" data-yanked="">y</a>'
    )
    links.append('<a href="x/nvidia_cudnn_cu13-9.30.0.1-py3-none-manylinux_2_27_aarch64.whl">a</a>')
    links.append('<a href="x/nvidia_cudnn_cu13-9.31.0rc1-py3-none-manylinux_2_27_x86_64.whl">rc</a>')
    links.append('<a href="x/nvidia_cudnn_cu13-0.0.0a0.tar.gz">sdist</a>')
    with simple_index(tmp_path, "<html><body>" + "<br/>".join(links) + "</body></html>") as url:
        found = packages.releases("nvidia-cudnn-cu13", packages.PackageSource(url))
        assert found.versions == RELEASES[:3] and found.where == f"the index {url}"
        plan = plan_of(write_matrix, gpu_text(), ThisHost(packages.PackageSource(url), gpu=True))
    assert "wheel:9.26.1.1" in [c.cudnn.label for c in plan.cells]
    credentials = url.replace("http://", "http://user:secret@")
    assert packages.shown_url(credentials) == url  # a message never shows a password


def test_an_index_answers_in_pep_691_json_too_and_one_without_the_project_says_so(tmp_path):
    files = [
        {"filename": f"nvidia_cudnn_cu13-{v}-py3-none-manylinux_2_27_x86_64.whl", "yanked": v == RELEASES[-1]}
        for v in RELEASES
    ]
    body = json.dumps({"meta": {"api-version": "1.1"}, "name": "nvidia-cudnn-cu13", "files": files}).encode()

    class Json(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            found = self.path == "/simple/nvidia-cudnn-cu13/"
            self.send_response(200 if found else 404)
            self.send_header("Content-Type", "application/vnd.pypi.simple.v1+json")
            self.end_headers()
            if found:
                self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Json)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/simple"
        found = packages.releases("nvidia-cudnn-cu13", packages.PackageSource(url))
        assert found.newest == "9.27.0.42"  # 9.28.1.4 is yanked there
        with pytest.raises(LookupError, match=f"the index {url} has no nvidia-cudnn-cu12"):
            packages.releases("nvidia-cudnn-cu12", packages.PackageSource(url))
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def test_the_terms_are_checked_and_a_source_that_must_be_made_and_cannot_is_bad_input(tmp_path, write_matrix):
    refused = ThisHost(packages.PackageSource(f"http://127.0.0.1:{closed_port()}/simple"), gpu=True)
    must = gpu_text().replace("{wheel: newest, device: cuda, optional: true}", "{wheel: newest}")
    with pytest.raises(InputError) as caught:
        plan_of(write_matrix, must, refused)
    (problem,) = caught.value.problems
    assert problem.field == "axes.cudnn[2]" and problem.line == 8
    assert "PyPI's newest cuDNN for torch 2.11.0+cu130: the package index is not reachable" in problem.message
    assert problem.message.endswith(
        "mark it optional: true to leave it out where it cannot be made, or name a release"
    )
    cases = {
        "{wheel: newest, device: gpu}": "axes.cudnn[2]",  # the device is cuda or cpu, as suite.device says
        "{wheel: newest, optional: yes please}": "axes.cudnn[2]",
        "{disabled: false, device: cpu}": "axes.cudnn[2]",
        "{bundled: true, device: cpu}": "axes.cudnn[2]: bundled is axes.cudnn[0] again; list a source once",
    }
    for entry, said in cases.items():
        text = gpu_text().replace("{wheel: newest, device: cuda, optional: true}", entry)
        with pytest.raises(InputError) as caught:
            plan_of(write_matrix, text, refused)
        assert any(said in str(p) for p in caught.value.problems), (entry, caught.value.problems)
    # a baseline that this host leaves out is no baseline
    text = gpu_text().replace("baseline: {cudnn: bundled}", "baseline: {cudnn: disabled}")
    with pytest.raises(InputError) as caught:
        plan_of(write_matrix, text, refused)
    assert "matches 2.11.0+cu130 / cuDNN disabled, which this host leaves out (only where" in str(
        caught.value
    )
    # without a host, a conditional source cannot be decided: the library says so rather than guess
    with pytest.raises(InputError, match="needs the host that runs the matrix to decide it"):
        matrix.load(write_matrix(gpu_text()), ["relu"], registry.cell_problems)


def test_plan_lists_the_cells_it_leaves_out_and_why(tmp_path, write_matrix):
    if has_nvidia_gpu():
        pytest.skip("this host has an NVIDIA GPU: the default matrix's cells are its GPU's")
    done = cli_in_process("plan", "--matrix", str(REPO / "matrix.yaml"))
    assert done.returncode == 0, done.stderr
    assert "2 cells x 1 knob sets" in done.stdout
    assert "left out here (2 cells of the matrix; not run, not failed):" in done.stdout
    assert "installed / cuDNN wheel:newest: only where the suite runs on a GPU" in done.stdout
    as_json = json.loads(cli_in_process("plan", "--matrix", str(REPO / "matrix.yaml"), "--json").stdout)
    assert [left["cell"]["cudnn"] for left in as_json["left_out"]] == [
        {"system": "auto"},
        {"wheel": "newest"},
    ]
    # the GPU's cells, decided as a run given this wheelhouse (or this index) would decide them
    path = write_matrix(gpu_text().replace("suite: {", "suite: {device: cuda, "))
    house = wheelhouse(tmp_path / "wheelhouse")
    done = cli_in_process("plan", "--matrix", str(path), "--wheelhouse", str(house))
    assert done.returncode == 0, done.stderr
    assert "chosen here: wheel:newest is cell torch2.11.0-cu130_cudnn-wheel-9.28.1.4_" in done.stdout
    assert (
        "cuDNN disabled: only where the suite runs on the CPU (device: cpu); here it runs on a GPU: "
        "suite.device is cuda" in done.stdout
    )
    refused = f"http://127.0.0.1:{closed_port()}/simple"
    done = run_cli("plan", "--matrix", str(path), "--index-url", refused)
    assert done.returncode == 0, done.stderr
    assert f"cuDNN wheel:newest: the package index is not reachable: {refused}: " in done.stdout
    done = cli_in_process("plan", "--matrix", str(path), "--wheelhouse", str(tmp_path / "nowhere"))
    assert done.returncode == 2 and "--wheelhouse: is not a folder" in done.stderr, done.stderr


def test_the_starter_explains_the_terms_it_sets():
    from harness.plan import starter

    for said in (
        "{wheel: newest}",
        "device: cuda | cpu",
        "optional: true",
        "fp32_default (fp32 under torch's",
    ):
        assert said in starter.STARTER


@pytest.mark.slow
def test_qualify_on_a_cpu_host_runs_the_a_a_check_and_names_what_it_left_out(tmp_path):
    if has_nvidia_gpu():
        pytest.skip("this host has an NVIDIA GPU: the default matrix's cells are its GPU's")
    text = (REPO / "matrix.yaml").read_text()
    start, end = text.index("suite:\n"), text.index("# Independent processes")
    small = "suite: {device: auto, workloads: [relu], dtypes: [fp32_default], time_budget_s: 0.02}\n"
    path = tmp_path / "matrix.yaml"
    path.write_text(text[:start] + small + text[end:].replace("rounds: 11", "rounds: 3"))
    report = tmp_path / "report"
    done = run_cli(
        "qualify", "--matrix", str(path), "--out", str(tmp_path / "results"), "--report-out", str(report)
    )
    assert done.returncode in (0, 1), (
        done.stdout + done.stderr
    )  # 1: the A/A's noise on a busy host, never a cell
    assert "left out here (2 cells of the matrix; not run, not failed):" in done.stdout
    assert "RUN FAILED" not in done.stdout and "error" not in done.stderr
    made = {p.name.split(".r")[0] for p in (tmp_path / "results").glob("*.json.gz")}
    assert made == {"torch-installed_cudnn-bundled_2ecb882014", "torch-installed_cudnn-disabled_79b59379da"}
    answer = " ".join(
        (report / "report.md")
        .read_text()
        .split("## Which cuDNN for this host\n", 1)[1]
        .split("\n## ")[0]
        .split()
    )
    assert answer.startswith("On this CPU cuDNN is not used: for the 1 row in fp32 (torch defaults), "), (
        answer
    )
    assert "checks the harness against itself (A/A)" in answer
    # and What to do next agrees: nothing to keep or ship where both cells run the same code (walk 3 read
    # "keep it" there)
    steps = (report / "report.md").read_text().split("## What to do next\n", 1)[1].split("\n## ")[0]
    assert (
        "Nothing to choose here: on a CPU these cells run the same code" in steps and "keep it" not in steps
    )
    assert (
        "**Left out on this host** (named, not run, not failed): NVIDIA's system cuDNN (system: auto) and "
        "PyPI's newest cuDNN (wheel: newest): only where the suite runs on a GPU (device: cuda)" in answer
    )
