"""Figures for the docker backend on the test matrix, measured side by side in one run.

1. cold build of the two cells (cell images, their intermediate images and the build cache removed);
2. warm rebuild with nothing changed;
3. container start overhead per cell: create + start + wait + remove of a container running the
   suite's `list`, against the same command in a local subprocess (median of N each);
4. bytes the two cell images share (layers common to both) and bytes that are each one's own.

Needs a Docker engine, the local base image and the wheelhouse the tests use. From the repo root:
    python -m benchmarks.docker_cells --wheelhouse ~/.cache/cudnn-harness/wheelhouse-torch-2.13.0-cp311
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

import docker

import harness
from harness.backends import registry
from harness.backends.docker import dockerfile
from harness.backends.packages import PackageSource
from harness.plan import matrix

MATRIX = """
schema_version: 1
name: docker-bench
backend: docker
axes:
  torch: ["2.13.0+cpu"]
  cudnn: [bundled, disabled]
  base_image: ["harness-test-base:bookworm"]
  python: ["3.11"]
baseline: {cudnn: bundled}
"""


def images_cli(matrix_path: Path, wheelhouse: Path, log_dir: Path) -> float:
    start = time.monotonic()
    subprocess.run(
        [
            sys.executable,
            "-m",
            "harness",
            "images",
            "--matrix",
            str(matrix_path),
            "--wheelhouse",
            str(wheelhouse),
            "--log-dir",
            str(log_dir),
        ],
        check=True,
        capture_output=True,
    )
    return time.monotonic() - start


def layer_sizes(client: docker.DockerClient, image_id: str) -> list[tuple[str, int]]:
    """(layer diff id, bytes) from the bottom up, read exactly from the image's `docker save` archive."""
    image = client.images.get(image_id)
    with tempfile.TemporaryFile() as archive:
        for chunk in image.save():
            archive.write(chunk)
        archive.seek(0)
        with tarfile.open(fileobj=archive) as tar:
            manifest = json.load(tar.extractfile("manifest.json"))[0]
            sizes = [tar.getmember(name).size for name in manifest["Layers"]]
    return list(zip(image.attrs["RootFS"]["Layers"], sizes, strict=True))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--wheelhouse", type=Path, required=True)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    client = docker.from_env(timeout=600)
    work = Path(tempfile.mkdtemp(prefix="docker-bench-"))
    matrix_path = work / "matrix.yaml"
    matrix_path.write_text(MATRIX)
    plan = matrix.load(matrix_path, cell_rules=registry.cell_problems)
    rendered = [
        dockerfile.render(c, dockerfile.BuildOptions(PackageSource(wheelhouse=args.wheelhouse)))
        for c in plan.cells
    ]

    for image in client.images.list(name=dockerfile.IMAGE_REPO):
        if any("torch2.13.0-cpu_cudnn-" in t for t in image.tags):
            client.images.remove(image.id, force=True)
    client.images.prune(filters={"dangling": True})
    cold = images_cli(matrix_path, args.wheelhouse, work / "logs")
    warm = images_cli(matrix_path, args.wheelhouse, work / "logs")
    print(f"cold build, 2 cells:            {cold:7.1f} s")
    print(f"warm rebuild, nothing changed:  {warm:7.1f} s   (cold / warm = {cold / warm:.0f}x)")

    env_dir = str(Path(harness.__file__).resolve().parent.parent)
    local, container = [], []
    for _ in range(args.repeat):
        start = time.monotonic()
        subprocess.run(
            [sys.executable, "-m", "harness.suite", "list"],
            check=True,
            capture_output=True,
            env={"PYTHONPATH": env_dir, "PATH": "/usr/bin:/bin"},
        )
        local.append(time.monotonic() - start)
        start = time.monotonic()
        client.containers.run(
            rendered[0].reference,
            ["list"],
            remove=True,
            network_mode="none",
            read_only=True,
            cap_drop=["ALL"],
            security_opt=["no-new-privileges:true"],
            tmpfs={"/tmp": "size=64m"},
        )
        container.append(time.monotonic() - start)
    overhead = statistics.median(container) - statistics.median(local)
    print(
        f"suite 'list', local subprocess: {statistics.median(local) * 1e3:7.0f} ms (median of {args.repeat})"
    )
    print(
        f"suite 'list', in a container:   {statistics.median(container) * 1e3:7.0f} ms (median of "
        f"{args.repeat})"
    )
    print(f"container overhead per cell:    {overhead * 1e3:7.0f} ms")

    a, b = (layer_sizes(client, client.images.get(r.reference).id) for r in rendered)
    shared = {digest for digest, _ in a} & {digest for digest, _ in b}
    shared_bytes = sum(size for digest, size in a if digest in shared)
    own = [sum(size for digest, size in layers if digest not in shared) for layers in (a, b)]
    total = shared_bytes + sum(own)
    print(f"image bytes shared by the cells: {shared_bytes / 1e6:8.1f} MB in {len(shared)} layers")
    print(f"bytes each cell has alone:       {own[0] / 1e6:8.1f} MB and {own[1] / 1e6:.1f} MB")
    print(f"layers: {len(a)} and {len(b)}; the base image's own layer: {a[0][1] / 1e6:.1f} MB")
    print(
        f"share of all stored bytes that is shared: {shared_bytes / total:.1%} (stored once: "
        f"{total / 1e6:.1f} MB "
        f"instead of {(2 * shared_bytes + sum(own)) / 1e6:.1f} MB)"
    )


if __name__ == "__main__":
    main()
