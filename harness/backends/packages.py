"""Install Python distributions from a package index or a wheelhouse, with uv where it is found, else pip.

uv installs from a hard-linked cache, so a second environment with the same torch is linked from it, not
downloaded or unpacked again; pip is the fallback every Python has. Either way one function takes the
requirements, where to put them and where to find them, and raises ``InstallError`` naming the package and
the source when they cannot be had.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from harness import jsonio
from harness.errors import InputError, Problem, one_line

Progress = Callable[[str], None]


class Milestone(str):
    """A progress line worth a line at the default verbosity, not only with -v: a long step beginning or
    ending (an environment built, a release installed, an installer still running)."""


INSTALL_TIMEOUT_S = 3600.0
LOG_TAIL_BYTES = 64 * 1024  # what is read back of an installer's log: its last lines
HEARTBEAT_S = 30.0  # a line this often while an installer runs: torch with its CUDA wheels takes minutes
# what pip and uv print when the package or the version is not in the source
_NOT_FOUND = (
    "No matching distribution",
    "Could not find a version",
    "not found in the package registry",
    "was not found in the provided package locations",
    "No solution found",
    "no version of",
    "Because ",
)


class InstallError(LookupError):
    """The requirements could not be installed; the message names them and the source. ``missing``: the
    source holds no build of them that fits (not a failure of the install itself)."""

    def __init__(self, message: str, missing: bool = False) -> None:
        super().__init__(message)
        self.missing = missing


@dataclass(frozen=True)
class PackageSource:
    """Where distributions come from: an index URL, or a wheelhouse folder alone (offline)."""

    index_url: str | None = None
    wheelhouse: Path | None = None

    def arguments(self) -> list[str]:
        if self.wheelhouse is not None:
            return ["--no-index", "--find-links", str(jsonio.real_path(self.wheelhouse))]
        return ["--index-url", self.index_url] if self.index_url else []

    def describe(self) -> str:
        if self.wheelhouse is not None:
            return f"the wheelhouse {self.wheelhouse}"
        return f"the index {self.index_url}" if self.index_url else "the default package index"

    def key(self) -> dict[str, str]:
        """What of the source goes into an environment's identity."""
        if self.wheelhouse is not None:
            return {"wheelhouse": str(jsonio.real_path(self.wheelhouse))}
        return {"index_url": self.index_url or "default"}


def wheels(wheelhouse: Path, pattern: str = "*.whl") -> list[Path]:
    """The wheels of a wheelhouse that match ``pattern``, each checked to be a regular file (a link to one
    is one): a folder, a FIFO, a device, a dangling link or a link loop named like a wheel is refused
    (InputError naming it, setting ``wheelhouse``), before anything hashes it, copies it or hands it to an
    installer that would block on it."""
    problems = []
    if not wheelhouse.is_dir():
        problems.append(
            Problem(
                str(wheelhouse),
                "wheelhouse",
                "is not a folder; name the folder of .whl files",
                setting="wheelhouse",
            )
        )
        raise InputError(problems)
    found = []
    for path in sorted(wheelhouse.glob(pattern)):
        try:
            mode = os.stat(path).st_mode
            what = "" if stat.S_ISREG(mode) else ("a folder" if stat.S_ISDIR(mode) else "not a regular file")
        except OSError as exc:  # a dangling link, a link loop
            what = f"a link that cannot be followed ({exc.strerror or exc})"
        if what:
            problems.append(
                Problem(
                    str(path),
                    "wheelhouse",
                    f"is {what}, named like a wheel; remove it or put the wheel itself there",
                    setting="wheelhouse",
                )
            )
        else:
            found.append(path)
    if problems:
        raise InputError(problems)
    return found


def _uv_cache(cache_root: Path | None) -> dict[str, str]:
    if cache_root is None or os.environ.get("UV_CACHE_DIR"):
        return {}
    return {"UV_CACHE_DIR": str(cache_root / "uv")}


def uv() -> str | None:
    """The uv binary: on PATH, else the one the ``uv`` distribution installed beside this Python."""
    found = shutil.which("uv")
    if found:
        return found
    beside = Path(sys.executable).parent / "uv"
    return str(beside) if beside.is_file() and os.access(beside, os.X_OK) else None


def tool() -> str:
    """Which installer ``install`` uses here: 'uv' or 'pip'."""
    return "uv" if uv() else "pip"


def install(
    requirements: Sequence[str],
    source: PackageSource,
    log: Path,
    *,
    python: str,
    target: Path | None = None,
    no_deps: bool = False,
    progress: Progress | None = None,
    cache_root: Path | None = None,
) -> None:
    """Install ``requirements`` into ``python``'s environment, or into the folder ``target``.

    The installer's output goes to ``log``; its last lines come with the error. With ``cache_root``, uv keeps
    its own cache in it (``uv/``) unless ``UV_CACHE_DIR`` says otherwise: all the harness downloads stays
    under one folder."""
    binary = uv()
    if binary:
        command = [binary, "pip", "install", "--python", python]
    else:
        command = [python, "-m", "pip", "install", "--disable-pip-version-check", "--no-input"]
    if target is not None:
        command += ["--target", str(target)]
    if no_deps:
        command.append("--no-deps")
    command += [*source.arguments(), *requirements]
    say = progress or (lambda line: None)
    say(f"installing {' '.join(requirements)} from {source.describe()} with {'uv' if binary else 'pip'}")
    what = f"installing {' '.join(requirements)}"
    code, tail = run_logged(command, log, INSTALL_TIMEOUT_S, what, cache_root, heartbeat=progress)
    if code != 0:
        missing = any(marker in line for line in tail for marker in _NOT_FOUND)
        what = "cannot be found in" if missing else "could not be installed from"
        raise InstallError(
            f"{' '.join(requirements)} {what} {source.describe()} ({'uv' if binary else 'pip'} exited "
            f"{code}; its log: {log}): " + " | ".join(line.strip() for line in tail[-4:]),
            missing=missing,
        )


def run_logged(
    command: Sequence[str],
    log: Path,
    timeout_s: float,
    what: str,
    cache_root: Path | None = None,
    heartbeat: Progress | None = None,
) -> tuple[int, list[str]]:
    """Run an installer's ``command`` with its output appended to ``log`` (after the command line); its exit
    code and the log's last lines. Every HEARTBEAT_S while it runs, ``heartbeat`` gets how long it has run
    and the log's last line. Raises InstallError, naming ``what``, where it cannot run or times out."""
    log.parent.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1", "UV_NO_PROGRESS": "1", **_uv_cache(cache_root)}
    with jsonio.open_for_writing(log, "a") as out:  # never appended through a link planted at its name
        out.write("$ " + " ".join(command) + "\n")
        out.flush()
        start = time.monotonic()
        try:
            process = subprocess.Popen(
                command, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env
            )
        except OSError as exc:
            raise InstallError(f"{what} failed: {exc}") from None
        with process:
            try:
                code = _wait(process, start, timeout_s, what, log, heartbeat)
            except BaseException:  # Ctrl-C, a timeout, a console gone: the installer never outlives us
                process.kill()
                raise
    return code, _tail(log).splitlines()[-12:]


def _wait(
    process: subprocess.Popen[bytes],
    start: float,
    timeout_s: float,
    what: str,
    log: Path,
    heartbeat: Progress | None,
) -> int:
    """The installer's exit code; a heartbeat line every HEARTBEAT_S until then."""
    while True:
        elapsed = time.monotonic() - start
        try:
            return process.wait(timeout=max(0.0, min(HEARTBEAT_S, timeout_s - elapsed)))
        except subprocess.TimeoutExpired:
            if time.monotonic() - start >= timeout_s:
                raise InstallError(f"{what} failed: timed out after {timeout_s:g} s") from None
            if heartbeat is not None:
                heartbeat(
                    Milestone(f"{what}: still running after {time.monotonic() - start:.0f} s; {_last(log)}")
                )


def _tail(log: Path) -> str:
    """The log's last LOG_TAIL_BYTES, read from the regular file the harness wrote and never through a link
    planted at its name: empty where it cannot be read."""
    try:
        return jsonio.read_text_nofollow(log, LOG_TAIL_BYTES)
    except OSError:
        return ""


def _last(log: Path) -> str:
    """The installer's last line so far, as one printable line (its output is not ours to trust)."""
    lines = _tail(log).splitlines()
    last = next((line for line in reversed(lines) if line.strip()), "")
    printable = one_line(last, 120)
    return f"last: {printable}" if printable else "nothing printed yet"
