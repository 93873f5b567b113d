"""The docker backend: one image per cell, one container per cell run, GPUs in one of three modes.

BuildsCalls go through the docker SDK (the classic builder: the build-only inputs stay in build stages,
so no BuildKit secret is needed). An image is tagged by the hash of its Dockerfile and build
context: an unchanged cell finds its tag and builds nothing. Containers run with least privilege:
a non-root user, a read-only root filesystem, no network, every capability dropped, no new
privileges; the only writable places are a small /tmp and the bind-mounted output folder. How the GPUs
get in (a device request, CDI names, or the device nodes and driver libraries) is ``gpu_access``'s job.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import io
import json
import re
import shutil
import signal
import tarfile
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import harness
from harness import images, jsonio, suite_listing
from harness.backends import gpu_access
from harness.backends.base import needs_gpu, suite_arguments
from harness.backends.records import failed_result, finish_result, log_tail, read_suite_result
from harness.errors import BackendUnavailable, InputError, Problem, RunStopped, bounded
from harness.plan.model import Cell, Plan
from harness.results import folder, resume
from harness.suite.document import GpuAccessMode, Identity, ResultDocument, RunRecord, SuiteResult

try:
    import docker
    import docker.errors
    import requests.exceptions
except ImportError:  # the local backend and the report need no docker SDK
    docker = None  # type: ignore[assignment]

CONTAINER_USER = "10001:10001"
RESULTS_LABEL = f"{images.LABEL_NS}.results"  # the results folder a container writes into


@dataclass
class Build:
    """What building one cell's image gave."""

    image: images.RenderedImage
    image_id: str | None = None
    cached: bool = False
    seconds: float = 0.0
    error: str | None = None
    log_tail: str = ""

    @property
    def cell_id(self) -> str:
        return self.image.cell.id

    @property
    def state(self) -> str:
        return "FAILED" if self.error else ("cached" if self.cached else "built")


def build_all(
    options: images.BuildOptions,
    plan: Plan,
    log_dir: Path,
    say: Callable[[str], None],
    progress: Callable[[str], None] | None = None,
) -> list[Build]:
    """``images``: build every cell's image (those whose tag exists are cached), each log in ``log_dir``."""
    backend = DockerBackend(options, progress=progress)
    jsonio.output_folder(log_dir, "--log-dir")
    built = []
    for index, cell in enumerate(plan.cells, 1):
        say(f"[{index}/{len(plan.cells)}] {cell.id}: building")
        build = backend.build(cell, plan, log_dir / f"{cell.id}.build.log")
        say(
            f"[{index}/{len(plan.cells)}] {cell.id}: {build.state} in {build.seconds:.1f} s"
            + (f": {build.error}" if build.error else "")
        )
        built.append(build)
    return built


_IMAGE_ID = re.compile(r"sha256:[0-9a-f]{64}")  # what an engine names a built image by


class DockerBackend:
    name = "docker"

    def __init__(
        self,
        options: images.BuildOptions,
        timeout_s: float = 3600.0,
        gpus: str = "all",
        memory: str | None = None,
        progress: Callable[[str], None] | None = None,
        gpu_access: str | None = None,
    ) -> None:
        if docker is None:
            raise BackendUnavailable("the docker backend needs the docker SDK: pip install docker")
        try:
            self.client = docker.from_env(timeout=600)
            self.client.ping()
        except docker.errors.DockerException as exc:
            raise BackendUnavailable(
                f"cannot reach the Docker engine ({exc}); start dockerd, or set DOCKER_HOST "
                "to the engine's socket"
            ) from None
        self.options = options
        self.timeout_s = timeout_s
        self.gpus = gpus
        self.memory = memory  # e.g. "16g": a cell past it is OOM-killed and recorded as such
        self.gpu_access = gpu_access  # overrides the plan's docker.gpu_access (--gpu-access)
        self._facts: dict[str, dict[str, Any]] = {}
        self.progress = progress or (lambda line: None)
        self.builds: dict[str, Build] = {}
        self._rendered: dict[str, images.RenderedImage] = {}
        # concurrent runs (one per GPU): two rounds of one cell must not build its image twice at once
        self._lock = threading.Lock()
        self._build_locks: dict[str, threading.Lock] = {}
        self._running: set[Any] = set()
        self._stopping = threading.Event()
        # what a result the suite could not write itself is stamped with; asked once, like the local backend
        self.suite_version: str = suite_listing.listing()["suite_version"]

    # -- images ------------------------------------------------------------------------------

    def build(self, cell: Cell, plan: Plan, log_path: Path) -> Build:
        """Build ``cell``'s image unless an image with its content tag exists already."""
        if cell.id in self.builds:
            return self.builds[cell.id]
        rendered = self._render(cell, plan)
        build = self.builds[cell.id] = Build(rendered)
        start = time.monotonic()
        try:
            build.image_id = _id(self.client.images.get(rendered.reference))
            build.cached = True
            return build
        except docker.errors.ImageNotFound:
            pass
        log_path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile() as context, jsonio.open_for_writing(log_path, "w") as log:
            _write_context(context, rendered)
            context.seek(0)
            try:
                for chunk in self.client.api.build(
                    fileobj=context,
                    custom_context=True,
                    tag=rendered.reference,
                    labels=images.labels(rendered, plan),
                    network_mode="host",
                    rm=True,
                    forcerm=True,
                    pull=False,
                    decode=True,
                ):
                    text = chunk.get("stream") or chunk.get("status") or ""
                    if text:
                        log.write(text)
                        for line in text.splitlines():
                            if line.startswith("Step ") or line.startswith("Successfully"):
                                self.progress(line)
                    if "error" in chunk:
                        build.error = str(chunk["error"]).strip()
                        log.write(build.error + "\n")
            except docker.errors.APIError as exc:
                build.error = str(exc)
                log.write(build.error + "\n")
        build.seconds = time.monotonic() - start
        if build.error is None:
            try:
                build.image_id = _id(self.client.images.get(rendered.reference))
            except docker.errors.ImageNotFound:
                build.error = "the build ended without an image"
        if build.error is not None:
            build.log_tail = log_tail(log_path)
        return build

    def image_facts(self, build: Build) -> dict[str, Any]:
        """Provenance of a built image: its id and digests, its base's, and the Python and torch in it."""
        image = self.client.images.get(build.image_id or build.image.reference)
        facts: dict[str, Any] = {
            "reference": build.image.reference,
            "id": image.id,
            "repo_digests": image.attrs.get("RepoDigests", []),
            "size_bytes": image.attrs.get("Size"),
            "cached": build.cached,
            "build_s": round(build.seconds, 3),
            "base": build.image.base_image,
            "base_id": None,
            "base_repo_digests": [],
        }
        try:
            base = self.client.images.get(build.image.base_image)
            facts.update(base_id=base.id, base_repo_digests=base.attrs.get("RepoDigests", []))
        except docker.errors.ImageNotFound:
            pass
        held = self.held(_id(image))
        facts.update(
            python=held.get("python"),
            python_version=held.get("python_version"),
            torch=held.get("torch"),
            system_cudnn=held.get("system_cudnn"),
        )
        return facts

    def held(self, image_id: str) -> dict[str, Any]:
        """What the image holds, as its build wrote it (images.FACTS_FILE): copied out of a container that
        is created, never started. Empty for an image built before images carried the file."""
        if image_id not in self._facts:
            container = self.client.containers.create(image_id, network_mode="none")
            try:
                stream, _ = container.get_archive(images.FACTS_FILE)
                with tarfile.open(fileobj=io.BytesIO(b"".join(stream))) as tar:
                    member = tar.extractfile(tar.getmembers()[0])
                    held = json.loads(member.read(1 << 20)) if member is not None else {}
            except (docker.errors.NotFound, tarfile.TarError, ValueError, IndexError):
                held = {}
            finally:
                container.remove(force=True)
            self._facts[image_id] = held if isinstance(held, dict) else {}
        return self._facts[image_id]

    # -- runs --------------------------------------------------------------------------------

    def identity(self, cell: Cell, plan: Plan) -> Identity:
        return image_identity(self.suite_version, plan, self._render(cell, plan).reference)

    def _render(self, cell: Cell, plan: Plan) -> images.RenderedImage:
        """The cell's image, rendered once: rendering hashes the whole build context (the wheelhouse too)."""
        if cell.id not in self._rendered:
            self._rendered[cell.id] = images.render(cell, self.options, plan.image_python)
        return self._rendered[cell.id]

    def sweep(self, results_dir: Path) -> list[str]:
        """Remove containers a killed orchestrator left running into ``results_dir`` (we hold its lock)."""
        label = f"{RESULTS_LABEL}={results_dir.resolve()}"
        removed = []
        with _engine_errors("looking for containers left by an interrupted run"):
            for container in self.client.containers.list(all=True, filters={"label": label}):
                with contextlib.suppress(docker.errors.NotFound):
                    container.remove(force=True)
                removed.append(f"removed container {container.short_id} left running by an interrupted run")
        return removed

    def stop(self) -> None:
        self._stopping.set()
        with self._lock:
            running = list(self._running)
        for container in running:  # its run sees _stopping when the wait returns, and writes nothing
            with contextlib.suppress(docker.errors.APIError, requests.exceptions.ConnectionError):
                container.kill()

    def run_cell(
        self,
        cell: Cell,
        plan: Plan,
        result_path: Path,
        log_path: Path,
        round_index: int = 1,
        gpus: tuple[str, ...] = (),
    ) -> ResultDocument:
        with _engine_errors("the cell was running"):  # building, inspecting or running it
            return self._run_cell(cell, plan, result_path, log_path, round_index, gpus)

    def _run_cell(
        self,
        cell: Cell,
        plan: Plan,
        result_path: Path,
        log_path: Path,
        round_index: int,
        gpus: tuple[str, ...],
    ) -> ResultDocument:
        started = dt.datetime.now(dt.timezone.utc)
        t0 = time.monotonic()
        with self._lock:
            build_lock = self._build_locks.setdefault(cell.id, threading.Lock())
        with build_lock:
            build = self.build(cell, plan, log_path.with_name(f"{cell.id}.build.log"))
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
                run["image"] = self.image_facts(build)
            except docker.errors.ImageNotFound:  # removed since it was built: build it again, once
                self.progress(f"image {build.image.reference} is gone from the engine; building it again")
                del self.builds[cell.id]
                build = self.build(cell, plan, log_path.with_name(f"{cell.id}.build.log"))
                if build.error is not None:
                    doc = failed_result(
                        cell, plan, self.suite_version, "build", build.error, build.log_tail, started
                    )
                    run["wall_s"] = time.monotonic() - t0
                    return finish_result(doc, cell, run, result_path, log_path)
                run["image"] = self.image_facts(build)
            command = suite_arguments(
                cell,
                plan,
                "/results/result.json",
                self._expect(cell, build.image, run["image"]),
                round_index,
            )
            doc = self._run_container(cell, plan, build.image_id or "", command, run, log_path, started, gpus)
        run["wall_s"] = time.monotonic() - t0
        return finish_result(doc, cell, run, result_path, log_path)

    @staticmethod
    def _expect(cell: Cell, rendered: images.RenderedImage, image: dict[str, Any]) -> dict[str, Any]:
        """The cuDNN the suite must find loaded: as rendered, or, for {system: image}, as the image holds
        it."""
        if cell.cudnn.kind == "disabled":
            return {"source": "disabled"}
        if cell.cudnn.value == "image":
            found = image.get("system_cudnn") or {}
            expect = {"source": "system", "lib_dir": found.get("lib_dir", "(no system cuDNN in the image)")}
            return {**expect, **({"version": found["version"]} if found.get("version") else {})}
        return dict(rendered.expect_cudnn)

    def rerun(
        self, previous: ResultDocument, result_path: Path, log_path: Path, plan: Plan
    ) -> ResultDocument:
        """Run the image a result came from again, with the suite arguments the harness gives that cell.

        A result file is untrusted: its command and image id are not run as they are. The cell must be
        one of the plan's, the image one this harness built for that cell (its label says so), and the
        command the one re-derived from the plan; anything else is refused (InputError).
        """
        cell, image_id, command = self.rerun_command(previous, plan, str(result_path.name))
        started = dt.datetime.now(dt.timezone.utc)
        t0 = time.monotonic()
        run: RunRecord = {
            **previous["run"],
            "exit_code": None,
            "log": log_path.name,
            "rerun_of": previous["started_at"],
        }
        with _engine_errors("the cell was running"):
            doc = self._run_container(cell, plan, image_id, command, run, log_path, started)
        run["wall_s"] = time.monotonic() - t0
        return finish_result(doc, cell, run, result_path, log_path)

    def rerun_command(self, previous: ResultDocument, plan: Plan, source: str) -> tuple[Cell, str, list[str]]:
        """The cell, image id and command a re-run of ``previous`` would run, each checked as ``rerun``
        says; InputError for a result that is not one of this plan's and this harness's images."""
        cell = Cell.from_json(previous["cell"])
        image_id = previous["run"].get("image", {}).get("id", "")
        if cell not in plan.cells:
            raise InputError(
                [Problem(source, "cell", f"{cell.id} is not a cell of the plan beside the result")]
            )
        if not _IMAGE_ID.fullmatch(image_id):
            raise InputError(
                [
                    Problem(
                        source,
                        "run.image.id",
                        f"{bounded(image_id, 80)!r} is not an image id (sha256:<64 hex>)",
                    )
                ]
            )
        try:
            with _engine_errors("the image was looked up"):
                image = self.client.images.get(image_id)
        except docker.errors.ImageNotFound:
            raise BackendUnavailable(
                f"image {image_id} is gone from this engine; rebuild it with "
                "'python -m harness images' (same matrix, same inputs)"
            ) from None
        if (image.labels or {}).get(f"{images.LABEL_NS}.cell") != cell.id:
            raise InputError(
                [
                    Problem(
                        source,
                        "run.image.id",
                        f"{image_id} is not an image this harness built "
                        f"for cell {cell.id}; refusing to run it",
                    )
                ]
            )
        expect = self._expect(cell, self._render(cell, plan), self.held(image_id))
        command = suite_arguments(cell, plan, "/results/result.json", expect, previous["run"].get("round", 1))
        if previous["run"]["command"] != command:
            raise InputError(
                [
                    Problem(
                        source,
                        "run.command",
                        "is not the command the harness runs for this cell "
                        "under the plan beside it; refusing to run it",
                    )
                ]
            )
        return cell, image_id, command

    def _run_container(
        self,
        cell: Cell,
        plan: Plan,
        image_id: str,
        command: list[str],
        run: RunRecord,
        log_path: Path,
        started: dt.datetime,
        gpus: tuple[str, ...] = (),
    ) -> SuiteResult:
        run["command"] = command
        jsonio.real_folder(log_path.parent)
        mode = gpu_access.checked_mode(self.gpu_access or plan.gpu_access)
        try:
            attachment = self._attachment(cell, plan, gpus, mode)
        except gpu_access.GpuAccessError as exc:
            run["gpu_access"] = {"mode": mode}
            folder.write_log(log_path, f"{exc}\n")
            return failed_result(cell, plan, self.suite_version, gpu_access.STAGE, str(exc), "", started)
        run["gpu_access"] = attachment.record
        # HOME: uid 10001 has no home; libraries that cache under ~ (torch's inductor) get the tmpfs
        environment = {"HOME": "/tmp", **attachment.environment}
        if any(k["deterministic"] for k in plan.knob_sets):
            environment["CUBLAS_WORKSPACE_CONFIG"] = ":4096:8"  # must be set before CUDA initializes
        if cell.cudnn.kind == "system":
            # torch refuses a runtime older than it was built against; the result records that it did
            # (as the local backend does for its system cells).
            environment["PYTORCH_SKIP_CUDNN_COMPATIBILITY_CHECK"] = "1"
        run["env_overrides"] = environment
        scratch = folder.scratch(log_path.parent.parent)
        scratch.chmod(0o777)  # the suite runs as uid 10001 and writes its result here
        container = None
        try:
            container = self.client.containers.create(
                image_id,
                command=command,
                user=CONTAINER_USER,
                network_mode="none",
                read_only=True,
                cap_drop=["ALL"],
                security_opt=["no-new-privileges:true"],
                privileged=False,
                tmpfs={"/tmp": "rw,nosuid,nodev,size=2g"},
                shm_size="1g",
                mem_limit=self.memory,
                memswap_limit=self.memory,
                volumes={str(scratch): {"bind": "/results", "mode": "rw"}, **attachment.volumes},
                environment=environment,
                device_requests=attachment.device_requests,
                devices=attachment.devices,
                labels={
                    f"{images.LABEL_NS}.cell": cell.id,
                    RESULTS_LABEL: str(log_path.parent.parent.resolve()),
                },
            )
            with self._lock:
                self._running.add(container)
            t_start = time.monotonic()
            container.start()
            run["container_start_s"] = round(time.monotonic() - t_start, 3)
            container.reload()
            run["container"] = _security_facts(container.attrs)
            exit_code, timed_out = self._wait(container, log_path)
            if self._stopping.is_set():
                raise KeyboardInterrupt
            run["exit_code"] = exit_code
            container.reload()
            doc = read_suite_result(scratch / "result.json")
            reason = None
            if timed_out:
                reason = f"timed out after {self.timeout_s:.0f} s; the container was killed"
            elif container.attrs["State"].get("OOMKilled"):
                reason = (
                    f"the container ran out of memory (limit {self.memory}) and was killed by the OOM killer"
                )
            elif doc is None:
                if not self._engine_alive():  # the engine stopped the container on its way down
                    raise _engine_lost("the cell was running")
                reason = f"the suite {_exit_words(exit_code)} and wrote no result"
            if reason is not None or doc is None:
                return failed_result(
                    cell, plan, self.suite_version, "run", reason or "no result", "", started
                )
            return doc
        except docker.errors.APIError as exc:
            message = str(exc)
            explained = gpu_access.explain_engine_error(mode, str(exc.explanation or message))
            folder.write_log(log_path, (explained or message) + "\n")
            stage = gpu_access.STAGE if explained else "start"
            return failed_result(cell, plan, self.suite_version, stage, explained or message, "", started)
        finally:
            if container is not None:  # if the engine is gone, the next run's sweep removes it
                with self._lock:
                    self._running.discard(container)
                with contextlib.suppress(docker.errors.APIError, requests.exceptions.ConnectionError):
                    container.remove(force=True)
            shutil.rmtree(scratch, ignore_errors=True)

    def _attachment(
        self, cell: Cell, plan: Plan, gpus: tuple[str, ...], mode: GpuAccessMode
    ) -> gpu_access.Attachment:
        """The GPUs this run gets: the scheduler's choice, else the backend's (every GPU by default)."""
        if not needs_gpu(cell, plan):
            return gpu_access.Attachment(record={"mode": mode, "attached": False})
        chosen = gpus or (() if self.gpus == "all" else tuple(self.gpus.split(",")))
        return gpu_access.attach(mode, chosen, plan.docker.get("driver_dir"))

    def _wait(self, container: Any, log_path: Path) -> tuple[int | None, bool]:
        """Wait for the container within the time limit, copying its output to the log as it comes."""

        def follow() -> None:
            with folder.open_log(log_path, binary=True) as log:
                for chunk in container.logs(stream=True, follow=True):
                    log.write(chunk)
                    log.flush()
                    for line in chunk.decode(errors="replace").splitlines():
                        self.progress(line)

        reader = threading.Thread(target=follow, daemon=True)
        reader.start()
        try:
            status = container.wait(timeout=self.timeout_s)
        except (requests.exceptions.ReadTimeout, requests.exceptions.ConnectionError):
            # our time limit, unless the engine itself is gone
            if not self._engine_alive():
                raise _engine_lost("the cell was running") from None
            container.kill()
            reader.join(timeout=10)
            return None, True
        reader.join(timeout=30)
        return int(status.get("StatusCode", -1)), False

    def _engine_alive(self) -> bool:
        try:
            return bool(self.client.ping())
        except (docker.errors.DockerException, requests.exceptions.RequestException):
            return False


def _id(image: Any) -> str:
    """The engine's id of an image (the SDK types it optional; the engine always gives one)."""
    image_id: str = image.attrs["Id"]
    return image_id


def image_identity(suite_version: str, plan: Plan, reference: str) -> Identity:
    """What a kept docker result must have been made with (the Slurm backend asks it without an engine)."""
    return {
        "suite_version": suite_version,
        "suite_settings_sha256": resume.suite_settings_sha256(plan),
        "image": reference,  # its tag is the hash of its inputs
    }


def _write_context(fileobj: Any, rendered: images.RenderedImage) -> None:
    with tarfile.open(fileobj=fileobj, mode="w") as tar:
        dockerfile = rendered.dockerfile.encode()
        info = tarfile.TarInfo("Dockerfile")
        info.size = len(dockerfile)
        tar.addfile(info, io.BytesIO(dockerfile))
        for name, path in sorted(rendered.context.items()):
            tar.add(path, arcname=name, recursive=False)


def _security_facts(attrs: dict[str, Any]) -> dict[str, Any]:
    """The container's settings as the engine reports them, not as we asked."""
    host = attrs.get("HostConfig", {})
    return {
        "id": attrs.get("Id", "")[:12],
        "user": attrs.get("Config", {}).get("User"),
        "read_only_rootfs": host.get("ReadonlyRootfs"),
        "network_mode": host.get("NetworkMode"),
        "cap_drop": host.get("CapDrop"),
        "security_opt": host.get("SecurityOpt"),
        "privileged": host.get("Privileged"),
        "gpus": bool(host.get("DeviceRequests") or host.get("Devices")),
        "memory_limit_bytes": host.get("Memory") or None,
    }


def _exit_words(exit_code: int | None) -> str:
    if exit_code is not None and exit_code > 128:  # the container's main process died of a signal
        try:
            name = signal.Signals(exit_code - 128).name
        except ValueError:
            name = f"signal {exit_code - 128}"
        return f"was killed by {name} (exit code {exit_code}; e.g. 'docker kill' or the kernel)"
    return f"exited with code {exit_code}"


def _engine_lost(during: str) -> RunStopped:
    return RunStopped(
        f"the Docker engine went away while {during}; nothing was written for that run. "
        "Start the engine and run the same command again: finished runs are kept and the rest resume"
    )


@contextlib.contextmanager
def _engine_errors(during: str) -> Any:
    """Turn a lost connection to the engine into RunStopped, so the run ends cleanly."""
    try:
        yield
    except requests.exceptions.ConnectionError:
        raise _engine_lost(during) from None
