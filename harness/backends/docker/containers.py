"""The docker backend's containers: one per run, with least privilege, followed to its end and removed.

A container runs as a non-root user, with a read-only root filesystem, no network, every capability
dropped and no new privileges; the only writable places are a small /tmp and the bind-mounted output
folder. How the GPUs get in (a device request, CDI names, or the device nodes and driver libraries) is
``gpu_access``'s job.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

from harness import jsonio
from harness.backends.base import needs_gpu
from harness.backends.docker import dockerfile, gpu_access
from harness.backends.docker import engine as docker_engine
from harness.backends.records import failed_result, read_suite_result
from harness.plan.model import Cell, Plan
from harness.results import folder
from harness.suite.document import GpuAccessMode, RunRecord, SuiteResult

with contextlib.suppress(ImportError):  # no docker SDK: docker_engine.connect refuses first
    import docker.errors
    import requests.exceptions

if TYPE_CHECKING:
    from docker import DockerClient

CONTAINER_USER = "10001:10001"
RESULTS_LABEL = f"{dockerfile.LABEL_NS}.results"  # the results folder a container writes into


@dataclass(frozen=True)
class ContainerRun:
    """What one run of a cell's container needs: the cell and its plan, the image and the suite's command
    line in it, where the run's log goes, when the run began, and the GPUs a scheduler chose (none: the
    backend's)."""

    cell: Cell
    plan: Plan
    image_id: str
    command: list[str]
    log_path: Path
    started: dt.datetime
    gpus: tuple[str, ...] = ()


class Containers:
    """The runs in flight on one engine; several threads start them at once (one run per GPU)."""

    def __init__(
        self,
        client: DockerClient,
        suite_version: str,
        timeout_s: float,
        gpus: str,
        memory: str | None,
        gpu_access: str | None,
        progress: Callable[[str], None],
    ) -> None:
        self.client = client
        self.suite_version = suite_version
        self.timeout_s = timeout_s
        self.gpus = gpus
        self.memory = memory  # e.g. "16g": a cell past it is OOM-killed and recorded as such
        self.gpu_access = gpu_access  # overrides the plan's docker.gpu_access (--gpu-access)
        self.progress = progress
        self._lock = threading.Lock()
        self._running: set[Any] = set()
        self._stopping = threading.Event()

    def sweep(self, results_dir: Path) -> list[str]:
        """Remove containers a killed orchestrator left running into ``results_dir`` (we hold its lock)."""
        label = f"{RESULTS_LABEL}={results_dir.resolve()}"
        removed = []
        with docker_engine.errors("looking for containers left by an interrupted run"):
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

    def run(self, job: ContainerRun, run: RunRecord) -> SuiteResult:
        """Run ``job``'s container to its end and read its result; how it ran goes into ``run``."""
        cell, plan, log_path, started = job.cell, job.plan, job.log_path, job.started
        run["command"] = job.command
        jsonio.real_folder(log_path.parent)
        mode = gpu_access.checked_mode(self.gpu_access or plan.gpu_access)
        try:
            attachment = self.attachment(cell, plan, job.gpus, mode)
        except gpu_access.GpuAccessError as exc:
            run["gpu_access"] = {"mode": mode}
            folder.write_log(log_path, f"{exc}\n")
            return failed_result(cell, plan, self.suite_version, gpu_access.STAGE, str(exc), "", started)
        run["gpu_access"] = attachment.record
        environment = _environment(cell, plan, attachment)
        run["env_overrides"] = environment
        scratch = folder.scratch(log_path.parent.parent)
        scratch.chmod(0o777)  # the suite runs as uid 10001 and writes its result here
        container = None
        try:
            container = self._create(job, environment, attachment, scratch)
            with self._lock:
                self._running.add(container)
            t_start = time.monotonic()
            container.start()
            run["container_start_s"] = round(time.monotonic() - t_start, 3)
            container.reload()
            run["container"] = dict(_security_facts(container.attrs))
            exit_code, timed_out = self._wait(container, log_path)
            if self._stopping.is_set():
                raise KeyboardInterrupt
            run["exit_code"] = exit_code
            container.reload()
            doc = read_suite_result(scratch / "result.json")
            reason = self._why_failed(container, doc, exit_code, timed_out)
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
            jsonio.remove_tree(scratch, ignore_errors=True)  # written by the container

    def _create(
        self, job: ContainerRun, environment: dict[str, str], attachment: gpu_access.Attachment, scratch: Path
    ) -> Any:
        """The run's container, created with least privilege (not started): ``scratch`` is its only
        writable folder besides a small /tmp."""
        return self.client.containers.create(
            job.image_id,
            command=job.command,
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
                f"{dockerfile.LABEL_NS}.cell": job.cell.id,
                RESULTS_LABEL: str(job.log_path.parent.parent.resolve()),
            },
        )

    def _why_failed(
        self, container: Any, doc: SuiteResult | None, exit_code: int | None, timed_out: bool
    ) -> str | None:
        """Why a finished run has no result to keep (None: it has one)."""
        if timed_out:
            return f"timed out after {self.timeout_s:.0f} s; the container was killed"
        if container.attrs["State"].get("OOMKilled"):
            return f"the container ran out of memory (limit {self.memory}) and was killed by the OOM killer"
        if doc is None:
            if not docker_engine.alive(self.client):  # the engine stopped the container on its way down
                raise docker_engine.lost("the cell was running")
            return f"the suite {_exit_words(exit_code)} and wrote no result"
        return None

    def attachment(
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
        started = time.monotonic()
        try:
            status = container.wait(timeout=self.timeout_s)
        except (requests.exceptions.ReadTimeout, requests.exceptions.ConnectionError):
            # Our time limit, unless the engine went away: a connection that broke before the limit did (an
            # engine restarted quickly answers again by now), or an engine that no longer answers.
            early = time.monotonic() - started < self.timeout_s
            if early or not docker_engine.alive(self.client):
                raise docker_engine.lost("the cell was running") from None
            container.kill()
            reader.join(timeout=10)
            return None, True
        reader.join(timeout=30)
        return int(status.get("StatusCode", -1)), False


def _environment(cell: Cell, plan: Plan, attachment: gpu_access.Attachment) -> dict[str, str]:
    """The run's environment variables: its GPU attachment's, and what the cell and the plan ask of CUDA."""
    # HOME: uid 10001 has no home; libraries that cache under ~ (torch's inductor) get the tmpfs
    environment = {"HOME": "/tmp", **attachment.environment}
    if any(k["deterministic"] for k in plan.knob_sets):
        environment["CUBLAS_WORKSPACE_CONFIG"] = ":4096:8"  # must be set before CUDA initializes
    if cell.cudnn.kind == "system":
        # torch refuses a runtime older than it was built against; the result records that it did
        # (as the local backend does for its system cells).
        environment["PYTORCH_SKIP_CUDNN_COMPATIBILITY_CHECK"] = "1"
    return environment


class SecurityFacts(TypedDict):
    """A container's settings as the engine reports them (a result's ``run.container``)."""

    id: str
    user: str | None
    read_only_rootfs: bool | None
    network_mode: str | None
    cap_drop: list[str] | None
    security_opt: list[str] | None
    privileged: bool | None
    gpus: bool
    memory_limit_bytes: int | None


def _security_facts(attrs: Any) -> SecurityFacts:
    """The container's settings as the engine reports them (``attrs``: its inspect document), not as we
    asked."""
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
