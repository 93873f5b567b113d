"""The local backend: the suite in a subprocess of an existing Python that has torch.

The cuDNN source is realized through that subprocess's environment only: ``bundled`` as installed,
``system`` through a shadow of site-packages (see cudnn_dirs), ``disabled`` through the suite's
switch. The suite then checks, from inside the process, that the cuDNN it loaded is the one asked for.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

import harness
from harness import jsonio, resources, suite_listing
from harness.backends import cudnn_dirs
from harness.backends.base import needs_gpu, suite_arguments
from harness.backends.records import failed_result, finish_result, read_suite_result
from harness.errors import BackendUnavailable
from harness.plan.model import Cell, Plan
from harness.results import folder, resume
from harness.suite import lifeline
from harness.suite.document import Identity, ResultDocument, RunRecord

POLL_S = 0.2
_PROBE = Path(__file__).with_name("interpreter_probe.py")


class LocalBackend:
    name = "local"

    def __init__(
        self,
        python: str | None = None,
        timeout_s: float = 3600.0,
        progress: Callable[[str], None] | None = None,
    ) -> None:
        self.python = python or sys.executable
        self.timeout_s = timeout_s
        self.progress = progress or (lambda line: None)
        self._interpreter = self._probe_interpreter()
        self.suite_version: str = self._interpreter["suite_version"]
        self._stopping = threading.Event()

    def _probe_interpreter(self) -> dict[str, Any]:
        if shutil.which(self.python) is None and not Path(self.python).is_file():
            raise BackendUnavailable(f"--python {self.python}: no such interpreter")
        try:
            out = subprocess.run(
                [self.python, str(_PROBE)], capture_output=True, text=True, timeout=60, check=True
            ).stdout
        except (OSError, subprocess.SubprocessError) as exc:
            raise BackendUnavailable(f"--python {self.python} does not run: {exc}") from None
        info: dict[str, Any] = json.loads(out)
        if info["torch_dir"] is None:
            raise BackendUnavailable(
                f"{self.python} has no torch; install it there (pip install torch) "
                "or pass --python with an interpreter that has it"
            )
        try:
            listed = suite_listing.listing(self.python)
            info["suite_version"], info["suite_source"] = listed["suite_version"], listed["source_sha256"]
        except subprocess.CalledProcessError as exc:
            raise BackendUnavailable(
                f"{self.python} cannot run the suite: {exc.stderr.strip()[-500:]}"
            ) from None
        return info

    def identity(self, cell: Cell, plan: Plan) -> Identity:
        return {
            "suite_version": self.suite_version,
            "suite_source_sha256": self._interpreter["suite_source"],
            "suite_settings_sha256": resume.suite_settings_sha256(plan),
            "python": self.python,
            "torch": self._interpreter["torch_version"],
        }

    def sweep(self, results_dir: Path) -> list[str]:
        return []  # suite processes die with the orchestrator (suite.lifeline), so none is left running

    def stop(self) -> None:
        self._stopping.set()

    def run_cell(
        self,
        cell: Cell,
        plan: Plan,
        result_path: Path,
        log_path: Path,
        round_index: int = 1,
        gpus: tuple[str, ...] = (),
    ) -> ResultDocument:
        started = dt.datetime.now(dt.timezone.utc)
        t0 = time.monotonic()
        with folder.scratch_folder(result_path.parent) as scratch:
            raw_path = Path(scratch) / "result.json"
            try:
                env, expect = self._realize(cell, plan, Path(scratch))
                if gpus and needs_gpu(cell, plan):
                    env["CUDA_VISIBLE_DEVICES"] = ",".join(gpus)
            except (LookupError, ValueError) as exc:
                jsonio.write_text_atomic(log_path, f"the cell could not be set up: {exc}\n")
                doc = failed_result(cell, plan, self.suite_version, "realize", str(exc), "", started)
                command: list[str] = []
                env, exit_code = {}, None
            else:
                command = [
                    self.python,
                    "-m",
                    "harness.suite",
                    *suite_arguments(cell, plan, str(raw_path), expect, round_index),
                ]
                exit_code, timed_out = self._execute(
                    command, env, log_path, f"gpu {','.join(gpus)}: " if gpus else ""
                )
                written = read_suite_result(raw_path)
                if written is not None and not timed_out:
                    doc = written
                else:
                    reason = (
                        f"timed out after {self.timeout_s:.0f} s"
                        if timed_out
                        else f"the suite exited with code {exit_code} and wrote no result"
                    )
                    doc = failed_result(cell, plan, self.suite_version, "run", reason, "", started)
        run: RunRecord = {
            "backend": "local",
            "command": command,
            "env_overrides": env,
            "gpus": list(gpus),
            "exit_code": exit_code,
            "wall_s": time.monotonic() - t0,
            "log": log_path.name,
            "harness_version": harness.__version__,
            "matrix_sha256": plan.matrix_sha256,
            "round": round_index,
            "identity": self.identity(cell, plan),
        }
        return finish_result(doc, cell, run, result_path, log_path)

    def _realize(self, cell: Cell, plan: Plan, scratch: Path) -> tuple[dict[str, str], dict[str, Any]]:
        """Environment overrides and the suite's cuDNN expectation for this cell."""
        info = self._interpreter
        if cell.torch != "installed" and info["torch_version"] != cell.torch:
            raise ValueError(
                f"the cell asks for torch {cell.torch}, but {self.python} has torch {info['torch_version']}"
            )
        if cell.python != "installed" and not info["python"].startswith(cell.python + "."):
            raise ValueError(f"the cell asks for Python {cell.python}, but {self.python} is {info['python']}")
        paths = [str(resources.suite_root())]
        env: dict[str, str] = {}
        if any(k["deterministic"] for k in plan.knob_sets):
            env["CUBLAS_WORKSPACE_CONFIG"] = ":4096:8"  # must be set before CUDA initializes
        kind = cell.cudnn.kind
        expect: dict[str, Any] = {"source": kind}
        if kind == "system":
            install = cudnn_dirs.find_system(cell.cudnn.value or "auto")
            site_packages = Path(info["torch_dir"]).parent
            shadow = cudnn_dirs.build_shadow(site_packages, install.lib_dir, scratch / "site-packages")
            paths.insert(0, str(shadow))
            # torch refuses a runtime older than it was built against; the result records that it did.
            env["PYTORCH_SKIP_CUDNN_COMPATIBILITY_CHECK"] = "1"
            expect.update(lib_dir=str(install.lib_dir), version=install.version)
        elif kind == "wheel":
            raise ValueError("a cuDNN wheel source needs the docker backend")
        existing = os.environ.get("PYTHONPATH")
        env["PYTHONPATH"] = os.pathsep.join(paths + ([existing] if existing else []))
        return env, expect

    def _execute(
        self, command: list[str], env: dict[str, str], log_path: Path, prefix: str = ""
    ) -> tuple[int | None, bool]:
        """Run ``command`` with its output in ``log_path``, relaying new lines (after ``prefix``) as
        progress."""
        log_path.parent.mkdir(parents=True, exist_ok=True)
        deadline = time.monotonic() + self.timeout_s
        writing = folder.partial(log_path)
        with writing.open("w") as log, writing.open() as follow:
            proc = subprocess.Popen(
                command,
                env={**os.environ, **env, "PYTHONUNBUFFERED": "1", lifeline.PARENT_ENV: str(os.getpid())},
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its own process group: a kill takes its children too
            )
            try:
                while proc.poll() is None and time.monotonic() < deadline:
                    time.sleep(POLL_S)
                    self._relay(follow, prefix)
                    if self._stopping.is_set():
                        raise KeyboardInterrupt
                self._relay(follow, prefix)
            except BaseException:
                _kill(proc)
                raise
            if proc.poll() is None:
                _kill(proc)
                return None, True
        return proc.returncode, False

    def _relay(self, follow: TextIO, prefix: str) -> None:
        for line in follow.readlines():
            self.progress(prefix + line.rstrip())


def _kill(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
