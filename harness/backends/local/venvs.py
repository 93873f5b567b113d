"""One virtual environment per (Python, torch build, package source), created once and reused, as nox and
asv make one per session or commit.

An environment's identity is what was installed: a lock of its distributions (name, version and the
sha256 of each one's RECORD, which lists every file's hash). The lock is written last, when the install
has finished; each use computes it again, so an environment that was changed or damaged since, or never
finished, is removed and created again rather than used.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from harness import jsonio
from harness.backends import packages
from harness.backends.local import cache

Progress = Callable[[str], None]
ENV_FORMAT = 2  # bump when what an environment holds changes, so older ones are not reused
# What the suite uses beside torch where it can: torchvision builds the ResNet-50 training step, nvidia-ml-py
# (NVML) reads SM clocks, power and throttling. Installed after torch, with torch's version held, and left out
# (the environment still made) where the package source has no build that fits: the result then says what
# could not run.
COMPANIONS = ("torchvision", "nvidia-ml-py")
# run by the environment's own Python: its distributions, each with the sha256 of its RECORD (the hashes of
# its files), and how many files their RECORDs list that are gone (a damaged environment)
_LOCK = """
import hashlib, importlib.metadata as m, json, os
rows, missing = [], 0
for d in m.distributions():
    # lines of files outside site-packages (scripts in bin/) name the environment's own path: left out
    lines = (d.read_text("RECORD") or "").splitlines(True)
    record = "".join(line for line in lines if not line.startswith(".."))
    rows.append([d.metadata["Name"], d.version, hashlib.sha256(record.encode()).hexdigest()])
    missing += sum(not os.path.exists(d.locate_file(f)) for f in d.files or ())
print(json.dumps({"lock": sorted(rows), "missing": missing}))
"""


@dataclass(frozen=True)
class EnvironmentSpec:
    """What an environment is asked to hold."""

    torch: str  # a concrete build, e.g. 2.13.0 or 2.11.0+cu130
    python: str  # major.minor, e.g. 3.12
    source: packages.PackageSource
    base: str = ""  # the interpreter to create it from (default: python<major.minor> on PATH)

    def requirements(self) -> list[str]:
        return [f"torch=={self.torch}"]

    def key(self) -> dict[str, object]:
        return {
            "format": ENV_FORMAT,
            "python": self.python,
            "requirements": self.requirements(),
            "companions": list(COMPANIONS),
            **self.source.key(),
        }

    def folder_name(self) -> str:
        digest = hashlib.sha256(json.dumps(self.key(), sort_keys=True).encode()).hexdigest()[:12]
        torch = self.torch.replace("+", "-")
        return f"torch{torch}-py{self.python}-{digest}"


@dataclass(frozen=True)
class Environment:
    path: Path
    python: str  # its interpreter
    lock: tuple[tuple[str, str, str], ...]  # (name, version, RECORD sha256), sorted
    lock_sha256: str
    created: bool  # made by this call (False: reused)

    def record(self) -> dict[str, object]:
        """What a result records of the environment it ran in."""
        return {
            "path": str(self.path),
            "lock_sha256": self.lock_sha256,
            "distributions": [f"{name}=={version}" for name, version, _ in self.lock],
        }


def ensure(root: Path, spec: EnvironmentSpec, progress: Progress) -> Environment:
    """The environment of ``spec`` under ``root/envs``: reused when its lock still holds, else created.

    Raises ``packages.InstallError`` (a LookupError) where Python or the packages cannot be had, and
    ``cache.CacheError`` (a LookupError too) naming the file where the cache itself cannot be used."""
    with cache.guarded(root):
        entry = cache.folder(root, "envs") / spec.folder_name()
        with cache.locked(entry):
            kept = _read(entry, spec)
            if kept is not None:
                return kept
            if cache.present(entry):  # a link, a file or a FIFO planted in its place is removed too
                progress(
                    f"environment {entry} is damaged or half-built (its lock does not hold): "
                    "creating it again"
                )
                cache.clear(entry)
            progress(
                packages.Milestone(
                    f"creating the environment for torch {spec.torch} (Python {spec.python}) in {entry} "
                    f"(its log: {entry.name}.log beside it)"
                )
            )
            log = entry.with_name(entry.name + ".log")
            cache.fresh_log(log)
            _create_venv(entry, spec.python, spec.base, log, root)
            python = str(entry / "bin" / "python")
            packages.install(
                spec.requirements(), spec.source, log, python=python, progress=progress, cache_root=root
            )
            _add_companions(spec, python, log, progress, root)
            lock = _lock(python)
            digest = _digest(lock)
            manifest = {"spec": spec.key(), "lock": lock, "lock_sha256": digest}
            jsonio.write_atomic(entry / cache.MANIFEST, manifest)
            progress(packages.Milestone(f"environment ready: {len(lock)} distributions, lock {digest[:12]}"))
            found = _read(entry, spec)
    if found is None:
        raise packages.InstallError(f"the environment {entry} was created but its lock does not hold")
    return Environment(found.path, found.python, found.lock, found.lock_sha256, created=True)


def _add_companions(spec: EnvironmentSpec, python: str, log: Path, progress: Progress, root: Path) -> None:
    """Each companion that the source holds a build of for this torch; the others are said and left out."""
    for companion in COMPANIONS:
        try:  # torch named again, so that no companion's pin can move it
            packages.install(
                [*spec.requirements(), companion],
                spec.source,
                log,
                python=python,
                progress=progress,
                cache_root=root,
            )
        except packages.InstallError as exc:
            if not exc.missing:  # a broken install (a timeout, a full disk) is not a missing build
                raise
            progress(f"the environment for torch {spec.torch} goes on without {companion}: {exc}")


def _create_venv(entry: Path, python: str, spec_base: str, log: Path, root: Path) -> None:
    base = spec_base or _interpreter(python)
    binary = packages.uv()
    if binary:
        command = [binary, "venv", "--quiet", "--python", base, str(entry)]
    else:
        command = [base, "-m", "venv", str(entry)]
    code, tail = packages.run_logged(
        command, log, 600, f"creating a virtual environment with Python {python}", root
    )
    if code != 0 or not (entry / "bin" / "python").exists():
        raise packages.InstallError(
            f"could not create a virtual environment with Python {python}: " + " | ".join(tail[-3:])
        )


def _interpreter(version: str) -> str:
    found = shutil.which(f"python{version}")
    if found is None:
        raise packages.InstallError(
            f"no python{version} on PATH to create the environment with; install it, or leave python out "
            "of the matrix to use the given interpreter's"
        )
    return found


def _lock(python: str) -> list[list[str]]:
    try:
        # -I: isolated, so the lock is the environment's alone, not also the current directory's (python -c
        # puts it on sys.path: a checkout's *.egg-info counted as installed) nor $PYTHONPATH's
        out = subprocess.run(
            [python, "-I", "-c", _LOCK], capture_output=True, text=True, timeout=120, check=True
        ).stdout
        found = json.loads(out)
        rows: list[list[str]] = found["lock"]
        if not isinstance(rows, list) or not all(
            isinstance(row, list) and len(row) == 3 and all(isinstance(x, str) for x in row) for row in rows
        ):
            return []
    except (OSError, subprocess.SubprocessError, ValueError, KeyError, TypeError, RecursionError):
        return []
    return rows if found.get("missing") == 0 else []


def _digest(lock: list[list[str]]) -> str:
    return hashlib.sha256(json.dumps(lock).encode()).hexdigest()


def _read(entry: Path, spec: EnvironmentSpec) -> Environment | None:
    """The environment in ``entry`` if it is a real folder, its manifest is for ``spec`` and its lock,
    computed now, is the one written when it was created."""
    python = entry / "bin" / "python"
    manifest = cache.read_manifest(entry)
    if not isinstance(manifest, dict) or manifest.get("spec") != spec.key() or not python.is_file():
        return None
    lock = _lock(str(python))
    if not lock or _digest(lock) != manifest.get("lock_sha256"):
        return None
    rows = tuple((str(n), str(v), str(h)) for n, v, h in lock)
    return Environment(entry, str(python), rows, _digest(lock), created=False)
