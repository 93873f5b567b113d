"""Install Python distributions from a package index or a wheelhouse, with uv where it is found, else pip.

uv installs from a hard-linked cache, so a second environment with the same torch is linked from it, not
downloaded or unpacked again; pip is the fallback every Python has. Either way one function takes the
requirements, where to put them and where to find them, and raises ``InstallError`` naming the package and
the source when they cannot be had.
"""

from __future__ import annotations

import base64
import html.parser
import http.client
import json
import os
import platform
import re
import shutil
import stat
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from harness import jsonio
from harness.backends import pip_config
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
        """What of the source goes into an environment's identity: with an index, pip's configuration
        too (its wheel folders or mirror may hold another build of the same version)."""
        if self.wheelhouse is not None:
            return {"wheelhouse": str(jsonio.real_path(self.wheelhouse))}
        return {"index_url": self.index_url or "default", **pip_config.read().key()}


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


DEFAULT_INDEX = "https://pypi.org/simple"
INDEX_ENV = ("PIP_INDEX_URL", "UV_DEFAULT_INDEX", "UV_INDEX_URL")  # what the installers read, in this order
INDEX_TIMEOUT_S = 20.0
INDEX_BYTES = 16 * 1024 * 1024  # a project's page on PyPI's simple index is a few hundred KB
_FINAL = re.compile(r"[0-9]{1,2}(\.[0-9]{1,3}){1,3}")  # a release as a matrix names one (schemas/)
_SIMPLE_JSON = "application/vnd.pypi.simple.v1+json"


@dataclass(frozen=True)
class Releases:
    """The final releases of one distribution that a package source holds a wheel of for this machine."""

    distribution: str
    versions: tuple[str, ...]  # oldest first
    where: str  # the source, in words

    @property
    def newest(self) -> str:
        return self.versions[-1]


def releases(distribution: str, source: PackageSource) -> Releases:
    """What ``source`` holds of ``distribution``: the wheelhouse's files by their names (nothing is opened),
    else the index's simple page (PEP 691 JSON, else its HTML), yanked files left out. Raises LookupError
    saying why where the source cannot say or holds none that installs here."""
    if source.wheelhouse is not None:
        where = f"the wheelhouse {source.wheelhouse}"
        names = [path.name for path in wheels(source.wheelhouse)]
    else:
        url = index_url(source)
        where = f"the index {shown_url(url)}"
        names = _index_files(distribution, url)
    found = sorted(
        {v for v in (_fitting_version(name, distribution) for name in names) if v},
        key=lambda v: tuple(int(p) for p in v.split(".")),
    )
    if not found:
        raise LookupError(f"{where} holds no {distribution} release with a wheel for {_machine()} Linux")
    return Releases(distribution, tuple(found), where)


def index_url(source: PackageSource) -> str:
    """The index an install from ``source`` reads: its own, else the one the environment gives the
    installers, else pip's configured one, else PyPI."""
    given = source.index_url or next((os.environ[k] for k in INDEX_ENV if os.environ.get(k)), None)
    return given or pip_config.read().index_url or DEFAULT_INDEX


def shown_url(url: str) -> str:
    """``url`` without a user name or password, as a message may show it."""
    parts = urllib.parse.urlsplit(url)
    host = parts.netloc.rsplit("@", 1)[-1]
    return urllib.parse.urlunsplit(parts._replace(netloc=host))


def _index_files(distribution: str, url: str) -> list[str]:
    """The file names of ``distribution``'s simple page on the index at ``url``, yanked ones left out."""
    project = re.sub(r"[-_.]+", "-", distribution).lower()
    page = url.rstrip("/") + f"/{project}/"
    parts = urllib.parse.urlsplit(page)
    request = urllib.request.Request(
        urllib.parse.urlunsplit(parts._replace(netloc=parts.netloc.rsplit("@", 1)[-1])),
        headers={"Accept": f"{_SIMPLE_JSON}, text/html;q=0.1"},
    )
    if parts.username is not None:  # credentials in the URL, as pip and uv take them
        login = f"{urllib.parse.unquote(parts.username)}:{urllib.parse.unquote(parts.password or '')}"
        request.add_header("Authorization", "Basic " + base64.b64encode(login.encode()).decode())
    try:
        with urllib.request.urlopen(request, timeout=INDEX_TIMEOUT_S) as answer:
            body = answer.read(INDEX_BYTES + 1)
            kind = answer.headers.get_content_type()
    except urllib.error.HTTPError as exc:
        if exc.code == 404:
            raise LookupError(f"the index {shown_url(url)} has no {distribution}") from None
        raise LookupError(f"the index {shown_url(url)} answered HTTP {exc.code} for {distribution}") from None
    except (OSError, ValueError, http.client.HTTPException) as exc:
        reason = getattr(exc, "reason", None) or exc
        raise LookupError(
            f"the package index is not reachable: {shown_url(url)}: {one_line(str(reason), 200)}"
        ) from None
    if len(body) > INDEX_BYTES:
        raise LookupError(f"the index {shown_url(url)} answered more than {INDEX_BYTES} bytes for {project}")
    text = body.decode(errors="replace")
    if kind == _SIMPLE_JSON:
        try:
            files = json.loads(text).get("files", [])
            return [str(f["filename"]) for f in files if isinstance(f, dict) and not f.get("yanked")]
        except (ValueError, AttributeError, KeyError, TypeError):
            raise LookupError(f"the index {shown_url(url)} answered no simple page for {project}") from None
    links = _Links()
    links.feed(text)
    return links.names


class _Links(html.parser.HTMLParser):
    """The file names an HTML simple page links to (PEP 503), yanked ones (PEP 592) left out."""

    def __init__(self) -> None:
        super().__init__()
        self.names: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if tag == "a" and found.get("href") and "data-yanked" not in found:
            path = urllib.parse.urlsplit(str(found["href"])).path
            self.names.append(urllib.parse.unquote(path.rsplit("/", 1)[-1]))


def _fitting_version(name: str, distribution: str) -> str | None:
    """The version of the wheel file ``name`` where it is ``distribution``'s, a final release, and installs
    on this machine (a Linux wheel of its architecture, or one for any platform); else None."""
    parts = name[: -len(".whl")].split("-") if name.endswith(".whl") else []
    if len(parts) not in (5, 6) or parts[0].lower() != distribution.replace("-", "_").lower():
        return None
    version, platforms = parts[1], parts[-1].split(".")
    machine = _machine()
    fits = any(
        tag == "any" or (tag.startswith(("manylinux", "musllinux", "linux_")) and tag.endswith("_" + machine))
        for tag in platforms
    )
    return version if fits and _FINAL.fullmatch(version) else None


def _machine() -> str:
    machine = platform.machine().lower()
    return {"amd64": "x86_64", "arm64": "aarch64"}.get(machine, machine)


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
    command, env = install_command(requirements, source, python, target, no_deps)
    settings = pip_config.read() if binary and source.wheelhouse is None else pip_config.PipSettings()
    also = f", with {settings.describe()}" if settings else ""
    say = progress or (lambda line: None)
    say(
        f"installing {' '.join(requirements)} from {source.describe()}{also} with {'uv' if binary else 'pip'}"
    )
    what = f"installing {' '.join(requirements)}"
    code, tail = run_logged(command, log, INSTALL_TIMEOUT_S, what, cache_root, progress, env)
    if code != 0:
        missing = any(marker in line for line in tail for marker in _NOT_FOUND)
        what = "could not be installed from"
        if missing:
            needed = _missing_name(tail)
            asked = {re.split(r"[=<>!~\[; ]", r, maxsplit=1)[0].lower() for r in requirements}
            if needed is None:
                what = "or a package it needs cannot be found in"
            elif needed.lower() in asked:
                what = "cannot be found in"
            else:  # the wheel asked for is there; a dependency is not
                what = f"needs {needed}, which cannot be found in"
        raise InstallError(
            f"{' '.join(requirements)} {what} {source.describe()} ({'uv' if binary else 'pip'} exited "
            f"{code}; its log: {log}): " + " | ".join(line.strip() for line in tail[-4:]),
            missing=missing,
        )


# the package an installer could not find: uv's "Because filelock was not found in the provided package
# locations" or "Because there is no version of torch==0.0.1", pip's "No matching distribution found for
# filelock>=3"
_MISSING_NAME = re.compile(
    r"Because ([A-Za-z0-9._-]+)\S* was not found|No matching distribution found for ([A-Za-z0-9._-]+)"
    r"|there is no version of ([A-Za-z0-9._-]+)"
)


def _missing_name(tail: Sequence[str]) -> str | None:
    for line in tail:
        found = _MISSING_NAME.search(line)
        if found:
            return next(name for name in found.groups() if name)
    return None


def install_command(
    requirements: Sequence[str],
    source: PackageSource,
    python: str,
    target: Path | None = None,
    no_deps: bool = False,
) -> tuple[list[str], dict[str, str]]:
    """The installer's command line and the variables it adds to the environment: uv where it is found,
    given what pip's configuration says (uv reads none of it; pip reads its own), else pip. A wheelhouse
    is the only source (offline), whatever pip is configured with."""
    binary = uv()
    env: dict[str, str] = {}
    if binary:
        command = [binary, "pip", "install", "--python", python]
        if source.wheelhouse is None:
            settings = pip_config.read()
            where, env = settings.uv_arguments(source.index_url), settings.uv_environment()
        else:
            where = source.arguments()
    else:
        command = [python, "-m", "pip", "install", "--disable-pip-version-check", "--no-input"]
        where = source.arguments()
    if target is not None:
        command += ["--target", str(target)]
    if no_deps:
        command.append("--no-deps")
    return [*command, *where, *requirements], env


def run_logged(
    command: Sequence[str],
    log: Path,
    timeout_s: float,
    what: str,
    cache_root: Path | None = None,
    heartbeat: Progress | None = None,
    env: dict[str, str] | None = None,
) -> tuple[int, list[str]]:
    """Run an installer's ``command`` (with ``env`` added to this process's variables) with its output
    appended to ``log`` (after the command line); its exit code and the log's last lines. Every
    HEARTBEAT_S while it runs, ``heartbeat`` gets how long it has run and the log's last line. Raises
    InstallError, naming ``what``, where it cannot run or times out."""
    log.parent.mkdir(parents=True, exist_ok=True)
    env = {
        **os.environ,
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        "UV_NO_PROGRESS": "1",
        **_uv_cache(cache_root),
        **(env or {}),
    }
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
