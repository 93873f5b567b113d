"""The docker backend: one image per cell, one container per cell run, GPUs in one of three modes.

The images are ``images``' job, the containers ``containers``', and what a re-run of a result may run
``rerun``'s (modules beside this one); this module runs a cell through them and records the run.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import threading
import time
from collections.abc import Callable
from pathlib import Path

import harness
from harness import jsonio, suite_listing
from harness.backends.base import FinishedRun, suite_arguments
from harness.backends.docker import dockerfile
from harness.backends.docker import engine as docker_engine
from harness.backends.docker import rerun as docker_rerun
from harness.backends.docker.containers import ContainerRun, Containers
from harness.backends.docker.images import Build, CellImages, expected_cudnn
from harness.backends.records import failed_result
from harness.plan.model import Cell, Plan
from harness.results import folder
from harness.suite.document import Identity, ResultDocument, RunRecord

with contextlib.suppress(ImportError):  # no docker SDK: docker_engine.connect refuses first
    import docker.errors


def build_all(
    options: dockerfile.BuildOptions,
    plan: Plan,
    log_dir: Path,
    say: Callable[[str], None],
    progress: Callable[[str], None] | None = None,
) -> list[Build]:
    """``images``: build every cell's image (those whose tag exists are cached), each log in ``log_dir``."""
    backend = DockerBackend(options, progress=progress)
    jsonio.output_folder(log_dir, "log_dir")
    built = []
    for index, cell in enumerate(plan.cells, 1):
        say(f"[{index}/{len(plan.cells)}] {cell.id}: building")
        build = backend.build(cell, plan, build_log(log_dir, cell))
        say(
            f"[{index}/{len(plan.cells)}] {cell.id}: {build.state} in {build.seconds:.1f} s"
            + (f": {build.error}" if build.error else "")
        )
        built.append(build)
    return built


def build_log(logs: Path, cell: Cell) -> Path:
    """Where ``cell``'s image build writes its log, in the folder ``logs``."""
    return logs / f"{cell.id}.build.log"


class DockerBackend:
    name = "docker"

    def __init__(
        self,
        options: dockerfile.BuildOptions,
        timeout_s: float = 3600.0,
        gpus: str = "all",
        memory: str | None = None,
        progress: Callable[[str], None] | None = None,
        gpu_access: str | None = None,
    ) -> None:
        self.client = docker_engine.connect()
        self.progress = progress or (lambda line: None)
        # what a result the suite could not write itself is stamped with; asked once, like the local backend
        self.suite_version: str = suite_listing.listing()["suite_version"]
        self.images = CellImages(self.client, options, self.progress)
        self.containers = Containers(
            self.client, self.suite_version, timeout_s, gpus, memory, gpu_access, self.progress
        )
        # concurrent runs (one per GPU): two rounds of one cell must not build its image twice at once
        self._lock = threading.Lock()
        self._build_locks: dict[str, threading.Lock] = {}

    def build(self, cell: Cell, plan: Plan, log_path: Path) -> Build:
        return self.images.build(cell, plan, log_path)

    def _build(self, cell: Cell, plan: Plan, logs: Path) -> Build:
        """The cell's image, built once however many of its rounds ask at once (one a GPU)."""
        with self._lock:
            build_lock = self._build_locks.setdefault(cell.id, threading.Lock())
        with build_lock:
            return self.build(cell, plan, build_log(logs, cell))

    def identity(self, cell: Cell, plan: Plan) -> Identity:
        return image_identity(self.suite_version, plan, self.images.render(cell, plan).reference)

    def sweep(self, results_dir: Path) -> list[str]:
        return self.containers.sweep(results_dir)

    def prepare(self, cells: tuple[Cell, ...], plan: Plan, results_dir: Path) -> None:
        """Every cell's image, built (or found) now rather than in its first round; a build that fails is
        kept with its error, and that cell's runs report it."""
        for cell in cells:
            with docker_engine.errors("the cell images were being built"):
                self._build(cell, plan, results_dir / folder.LOGS)

    def stop(self) -> None:
        self.containers.stop()

    def run_cell(
        self,
        cell: Cell,
        plan: Plan,
        results_dir: Path,
        round_index: int = 1,
        gpus: tuple[str, ...] = (),
    ) -> FinishedRun:
        with docker_engine.errors("the cell was running"):  # building, inspecting or running it
            return self._run_cell(
                cell, plan, folder.log_path(results_dir, cell.id, round_index), round_index, gpus
            )

    def _run_cell(
        self, cell: Cell, plan: Plan, log_path: Path, round_index: int, gpus: tuple[str, ...]
    ) -> FinishedRun:
        started = dt.datetime.now(dt.timezone.utc)
        t0 = time.monotonic()
        build = self._build(cell, plan, log_path.parent)
        run: RunRecord = {
            "backend": "docker",
            "command": [],
            "gpus": list(gpus),
            "exit_code": None,
            "wall_s": 0.0,  # until it ends
            "log": log_path.name,
            "harness_version": harness.__version__,
            "matrix_sha256": plan.matrix_sha256,
            "round": round_index,
            "identity": self.identity(cell, plan),
        }
        if build.error is not None:
            folder.write_log(log_path, f"the image did not build: {build.error}\n")
            doc = failed_result(cell, plan, self.suite_version, "build", build.error, build.log_tail, started)
        else:
            try:
                facts = self.images.image_facts(build)
            except docker.errors.ImageNotFound:  # removed since it was built: build it again, once
                self.progress(f"image {build.image.reference} is gone from the engine; building it again")
                del self.images.builds[cell.id]
                build = self.build(cell, plan, build_log(log_path.parent, cell))
                if build.error is not None:
                    doc = failed_result(
                        cell, plan, self.suite_version, "build", build.error, build.log_tail, started
                    )
                    run["wall_s"] = time.monotonic() - t0
                    return FinishedRun(doc, run)
                facts = self.images.image_facts(build)
            run["image"] = dict(facts)
            command = suite_arguments(
                cell, plan, "/results/result.json", expected_cudnn(cell, build.image, facts), round_index
            )
            job = ContainerRun(cell, plan, build.image_id or "", command, log_path, started, gpus)
            doc = self.containers.run(job, run)
        run["wall_s"] = time.monotonic() - t0
        return FinishedRun(doc, run)

    def rerun(self, previous: ResultDocument, source: str, log_path: Path, plan: Plan) -> FinishedRun:
        """Run the image a result came from again, with the suite arguments the harness gives that cell.

        A result file is untrusted: its command and image id are not run as they are. The cell must be
        one of the plan's, the image one this harness built for that cell (its label says so), and the
        command the one re-derived from the plan; anything else is refused (InputError).
        """
        cell, image_id, command = self.rerun_command(previous, plan, source)
        started = dt.datetime.now(dt.timezone.utc)
        t0 = time.monotonic()
        run: RunRecord = {
            **previous["run"],
            "exit_code": None,
            "log": log_path.name,
            "rerun_of": previous["started_at"],
        }
        with docker_engine.errors("the cell was running"):
            doc = self.containers.run(ContainerRun(cell, plan, image_id, command, log_path, started), run)
        run["wall_s"] = time.monotonic() - t0
        return FinishedRun(doc, run)

    def rerun_command(self, previous: ResultDocument, plan: Plan, source: str) -> tuple[Cell, str, list[str]]:
        """The cell, image id and command a re-run of ``previous`` would run, each checked as ``rerun``
        says; InputError for a result that is not one of this plan's and this harness's images."""
        return docker_rerun.checked_command(self.images, previous, plan, source)


def image_identity(suite_version: str, plan: Plan, reference: str) -> Identity:
    """What a kept docker result must have been made with (the Slurm backend asks it without an engine)."""
    return {
        "suite_version": suite_version,
        "suite_settings_sha256": plan.suite_settings_sha256,
        "image": reference,  # its tag is the hash of its inputs
    }
