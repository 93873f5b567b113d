"""The local backend: the suite in a subprocess of a Python that has torch.

``torch: installed`` runs in the given interpreter; a concrete ``torch: X`` (with its ``python``) runs in
a cached virtual environment of its own (``venvs``). The cuDNN source is realized through the
subprocess's environment only: ``bundled`` as installed, ``system`` and ``wheel`` through a shadow of
site-packages (see ``cudnn_dirs``; a wheel's release is installed once into a folder of its own,
``cudnn_releases``), ``disabled`` through the suite's switch. The suite then checks, from inside the
process, that the cuDNN it loaded is the one asked for.
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
from typing import TextIO, TypedDict, cast

import harness
from harness import jsonio, resources, suite_listing
from harness.backends import packages
from harness.backends.base import FinishedRun, needs_gpu, suite_arguments
from harness.backends.local import cache, cudnn_dirs, cudnn_releases, venvs
from harness.backends.records import failed_result, read_suite_result
from harness.errors import BackendUnavailable, InputError, Remembered, bounded
from harness.plan.axes import CudnnExpectation
from harness.plan.model import Cell, Plan
from harness.results import folder
from harness.suite import lifeline
from harness.suite.document import Identity, RunRecord

POLL_S = 0.2
_PROBE = Path(__file__).with_name("interpreter_probe.py")


class ProbeAnswer(TypedDict):
    """What an interpreter says of itself (``interpreter_probe``), each value checked."""

    python: str  # its version
    torch_version: str | None
    torch_cuda: str | None  # the CUDA torch was built for; None: a CPU build
    torch_dir: str | None
    cudnn_wheel: str | None  # the version of the cuDNN wheel beside torch


class Interpreter(ProbeAnswer):
    """An interpreter a cell may run in: its probe's answer and the suite it runs."""

    suite_version: str
    suite_source: str  # the suite's code, hashed


class LocalBackend:
    name = "local"

    def __init__(
        self,
        python: str | None = None,
        timeout_s: float = 3600.0,
        progress: Callable[[str], None] | None = None,
        source: packages.PackageSource | None = None,
        cache_root: Path | None = None,
    ) -> None:
        self.python = python or sys.executable
        self.timeout_s = timeout_s
        self.progress = progress or (lambda line: None)
        self.source = source or packages.PackageSource()
        self.cache_root = cache_root or cache.default_root()
        self._interpreters: dict[str, Interpreter] = {}
        self._environments: Remembered[str, venvs.Environment] = Remembered()  # by spec folder, or why not
        self._interpreter = self._probe_interpreter(self.python)
        self.suite_version: str = self._interpreter["suite_version"]
        self._stopping = threading.Event()

    def _probe_interpreter(self, python: str) -> Interpreter:
        if python in self._interpreters:
            return self._interpreters[python]
        answer = probe(python)  # no torch is fine where every cell names a torch build
        try:
            listed = suite_listing.listing(python)
            version, source = listed["suite_version"], listed["source_sha256"]
            if not isinstance(version, str) or not isinstance(source, str):
                raise TypeError("no suite version")
            if len(version) > 64 or len(source) > 128:
                raise ValueError("a suite version or source hash longer than any the suite has")
        except subprocess.CalledProcessError as exc:
            raise BackendUnavailable(f"{python} cannot run the suite: {exc.stderr.strip()[-500:]}") from None
        except (ValueError, KeyError, TypeError) as exc:
            raise InputError.one(python, "", f"{_NOT_PYTHON} (its suite listing: {exc})") from None
        info: Interpreter = {**answer, "suite_version": version, "suite_source": source}
        self._interpreters[python] = info
        return info

    def _environment(self, cell: Cell) -> venvs.Environment | None:
        """The cell's own environment (None: ``torch: installed`` runs in the given interpreter). Raises
        LookupError where it cannot be made; remembered, so a matrix asks once per environment."""
        if cell.torch == "installed":
            if self._interpreter["torch_dir"] is None:
                raise LookupError(
                    f"{self.python} has no torch, and the cell asks for torch: installed; install torch "
                    "there, run with an interpreter that has it, or name a torch build (an environment "
                    "of its own)"
                )
            return None
        given = ".".join(self._interpreter["python"].split(".")[:2])
        version = given if cell.python == "installed" else cell.python
        base = self.python if version == given else ""
        spec = venvs.EnvironmentSpec(cell.torch, version, self.source, base)
        return self._environments.get(
            spec.folder_name(), lambda: venvs.ensure(self.cache_root, spec, self.progress)
        )

    def identity(self, cell: Cell, plan: Plan) -> Identity:
        identity: Identity = {
            "suite_version": self.suite_version,
            "suite_source_sha256": self._interpreter["suite_source"],
            "suite_settings_sha256": plan.suite_settings_sha256,
            "python": self.python,
            "torch": self._interpreter["torch_version"] or "none",  # a result's identity holds text alone
        }
        try:
            environment = self._environment(cell)
        except LookupError as exc:  # the run fails with the reason; its identity says it had none
            identity["environment"] = f"none: {str(exc)[:200]}"
            return identity
        if environment is not None:
            identity["python"], identity["torch"] = environment.python, cell.torch
            identity["environment"] = environment.lock_sha256
        if cell.cudnn.kind == "wheel":
            identity["cudnn_wheel"] = str(cell.cudnn.value)
        return identity

    def sweep(self, results_dir: Path) -> list[str]:
        return []  # suite processes die with the orchestrator (suite.lifeline), so none is left running

    def prepare(self, cells: tuple[Cell, ...], plan: Plan, results_dir: Path) -> None:
        """Each cell's environment (made already where its identity was asked) and each cuDNN release a
        ``{wheel: X}`` cell loads, installed into the cache now rather than just before its first round."""
        for cell in cells:
            if cell.cudnn.kind != "wheel":
                continue
            try:
                environment = self._environment(cell)
                info = self._probe_interpreter(environment.python if environment else self.python)
                self._cudnn_release(info, str(cell.cudnn.value))
            except (LookupError, ValueError, BackendUnavailable, OSError):
                continue  # the run says why, in its result

    def stop(self) -> None:
        self._stopping.set()

    def run_cell(
        self,
        cell: Cell,
        plan: Plan,
        results_dir: Path,
        round_index: int = 1,
        gpus: tuple[str, ...] = (),
    ) -> FinishedRun:
        started = dt.datetime.now(dt.timezone.utc)
        t0 = time.monotonic()
        log_path = folder.log_path(results_dir, cell.id, round_index)
        with folder.scratch_folder(results_dir) as scratch:
            raw_path = Path(scratch) / "result.json"
            python, environment = self.python, None
            try:
                environment = self._environment(cell)
                python = environment.python if environment else self.python
                env, expect = self._realize(cell, plan, Path(scratch), python)
                if gpus and needs_gpu(cell, plan):
                    env["CUDA_VISIBLE_DEVICES"] = ",".join(gpus)
            except (LookupError, ValueError, BackendUnavailable, OSError) as exc:
                # the cell's own failure, with its reason (a torch folder gone, a name too long): never
                # blamed on the results folder, and the other cells run
                folder.write_log(log_path, f"the cell could not be set up: {exc}\n")
                doc = failed_result(cell, plan, self.suite_version, "realize", str(exc), "", started)
                command: list[str] = []
                env, exit_code = {}, None
            else:
                command = [
                    python,
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
        if environment is not None:
            run["environment"] = environment.record()
        return FinishedRun(doc, run)

    def _realize(
        self, cell: Cell, plan: Plan, scratch: Path, python: str
    ) -> tuple[dict[str, str], CudnnExpectation]:
        """Environment overrides and the suite's cuDNN expectation for this cell, run by ``python``."""
        info = self._probe_interpreter(python)
        if cell.torch != "installed" and not _same_build(cell.torch, info["torch_version"]):
            raise ValueError(
                f"the cell asks for torch {cell.torch}, but {python} has torch {info['torch_version']}"
            )
        if cell.python != "installed" and not info["python"].startswith(cell.python + "."):
            raise ValueError(f"the cell asks for Python {cell.python}, but {python} is {info['python']}")
        paths = [str(resources.suite_root())]
        env: dict[str, str] = {}
        if any(k["deterministic"] for k in plan.knob_sets):
            env["CUBLAS_WORKSPACE_CONFIG"] = ":4096:8"  # must be set before CUDA initializes
        kind = cell.cudnn.kind
        expect = CudnnExpectation(kind)
        if kind in ("system", "wheel"):
            if kind == "system":
                install = cudnn_dirs.find_system(cell.cudnn.value or "auto")
                lib_dir, version = install.lib_dir, install.version
            else:
                release = self._cudnn_release(info, str(cell.cudnn.value))
                lib_dir, version = release.lib_dir, release.version
            if not info["torch_dir"] or not Path(info["torch_dir"]).is_dir():
                raise ValueError(
                    f"{python} says its torch is in {info['torch_dir']}, which is no folder; name an "
                    "interpreter whose torch is installed"
                )
            site_packages = Path(info["torch_dir"]).parent
            shadow = cudnn_dirs.build_shadow(site_packages, lib_dir, scratch / "site-packages", version)
            paths.insert(0, str(shadow))
            if kind == "system" or _older(version, info.get("cudnn_wheel")):
                # torch refuses a runtime older than it was built against; the result records that it did
                env["PYTORCH_SKIP_CUDNN_COMPATIBILITY_CHECK"] = "1"
            expect = CudnnExpectation(kind, str(jsonio.real_path(lib_dir)), version)
        existing = os.environ.get("PYTHONPATH")
        env["PYTHONPATH"] = os.pathsep.join(paths + ([existing] if existing else []))
        return env, expect

    def _cudnn_release(self, info: Interpreter, version: str) -> cudnn_releases.CudnnRelease:
        cuda = info.get("torch_cuda")
        if not cuda:
            raise ValueError(f"torch {info['torch_version']} is a CPU build: it loads no cuDNN to replace")
        return cudnn_releases.ensure(self.cache_root, cuda.split(".")[0], version, self.source, self.progress)

    def _execute(
        self, command: list[str], env: dict[str, str], log_path: Path, prefix: str = ""
    ) -> tuple[int | None, bool]:
        """Run ``command`` with its output in ``log_path``, relaying new lines (after ``prefix``) as
        progress."""
        deadline = time.monotonic() + self.timeout_s
        with folder.open_log(log_path) as log, folder.partial(log_path).open(errors="replace") as follow:
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


def probe(python: str) -> ProbeAnswer:
    """What ``python`` says of itself (``interpreter_probe``, which imports nothing of torch): its Python,
    torch build and the cuDNN wheel beside it. Raises BackendUnavailable where it does not run, InputError
    where it answers as no Python would."""
    if shutil.which(python) is None and not Path(python).is_file():
        raise BackendUnavailable(f"{python}: no such interpreter")
    try:
        out = subprocess.run(
            [python, str(_PROBE)],
            capture_output=True,
            text=True,
            errors="replace",
            timeout=60,
            check=True,
        ).stdout
    except (OSError, subprocess.SubprocessError) as exc:
        raise BackendUnavailable(f"{python} does not run: {exc}") from None
    return _probe_answer(python, out)


_NOT_PYTHON = "does not answer as a Python interpreter does; name a python executable"
_PROBE_FIELDS = ("python", "torch_version", "torch_cuda", "torch_dir", "cudnn_wheel")
# the longest answer each field may be: a result records them (its identity's values are at most 1000
# characters), so an interpreter that answers more would make results that their own validate refuses
_PROBE_LIMITS = {"python": 32, "torch_version": 100, "torch_cuda": 32, "torch_dir": 1000, "cudnn_wheel": 64}


def _probe_answer(python: str, out: str) -> ProbeAnswer:
    """What the probe printed, as the one JSON object it prints; InputError naming ``python`` for
    anything else (a wrapper that prints garbage, a probe cut short)."""
    lines = out.strip().splitlines()
    try:
        info = json.loads(lines[-1]) if lines else None
    except ValueError:
        info = None
    if (
        not isinstance(info, dict)
        or set(info) != set(_PROBE_FIELDS)
        or not isinstance(info["python"], str)
        or not all(isinstance(info[k], (str, type(None))) for k in _PROBE_FIELDS)
    ):
        raise InputError.one(python, "", f"{_NOT_PYTHON} (it printed {bounded(out.strip(), 120)!r})")
    for field, limit in _PROBE_LIMITS.items():
        value = info[field]
        if value is not None and (len(value) > limit or not value.isprintable()):
            raise InputError.one(
                python,
                "",
                f"answers a {field} of {len(value)} characters ({bounded(repr(value), 60)}): no Python or "
                f"torch has one over {limit} or with control characters; name a python executable",
            )
    return cast(ProbeAnswer, info)


def _same_build(wanted: str, have: str | None) -> bool:
    """'2.13.0+cpu' is that build only; a bare '2.13.0' (PyPI's) is any local variant of 2.13.0."""
    return have == wanted or ("+" not in wanted and (have or "").split("+")[0] == wanted)


def _older(version: str, than: str | None) -> bool:
    """Whether the cuDNN release ``version`` is older, by major.minor, than the wheel torch pins
    (torch's rule: a runtime of the same major and at least the compile-time minor). Unknown: assume so."""
    if not than:
        return True
    mine, pinned = (tuple(int(p) for p in v.split(".")[:2]) for v in (version, than))
    return mine < pinned


def _kill(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
