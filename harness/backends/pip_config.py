"""The user's pip configuration, as pip itself reads it, for uv, which reads none of it.

pip reads its config files (``PIP_CONFIG_FILE``, the global, user and site ``pip.conf``) and ``PIP_*``
variables; uv reads neither, so an environment built with uv went past the user's mirror, wheel folder,
certificate and proxy (issue 60: ``torch==2.13.0`` was the configured folder's ``+cpu`` build under pip,
and PyPI's 502 MiB CUDA build under the harness). ``pip config list`` is pip's own account of what it
read; what it says, for ``pip install`` (a variable over the ``[install]`` section over ``[global]``),
becomes uv's options and the variables uv and its TLS stack read.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import subprocess
import sys
from dataclasses import asdict, dataclass

TIMEOUT_S = 60.0
_SECTIONS = (":env:", "install", "global")  # what pip install takes first
_TRUE = ("1", "true", "yes", "on")


@dataclass(frozen=True)
class PipSettings:
    """What pip install would use of its configuration."""

    index_url: str | None = None
    extra_index_urls: tuple[str, ...] = ()
    find_links: tuple[str, ...] = ()
    trusted_hosts: tuple[str, ...] = ()
    no_index: bool = False
    cert: str | None = None
    client_cert: str | None = None
    proxy: str | None = None

    def __bool__(self) -> bool:
        return self != PipSettings()

    def uv_arguments(self, index_url: str | None) -> list[str]:
        """uv's options for these settings; ``index_url`` (the command line's) replaces pip's own, as
        pip's ``--index-url`` does, while its extra indexes and wheel folders still count."""
        args: list[str] = []
        index = index_url or self.index_url
        if index:
            args += ["--index-url", index]
        elif self.no_index:
            args.append("--no-index")
        for url in self.extra_index_urls:
            args += ["--extra-index-url", url]
        if self.extra_index_urls:  # pip takes the best version across every index; uv, the first's
            args += ["--index-strategy", "unsafe-best-match"]
        for place in self.find_links:
            args += ["--find-links", place]
        for host in self.trusted_hosts:
            args += ["--allow-insecure-host", host]
        return args

    def uv_environment(self) -> dict[str, str]:
        """The variables uv reads for pip's certificate, client certificate and proxy (a variable the
        user set stays theirs)."""
        wanted = {
            "SSL_CERT_FILE": self.cert,
            "SSL_CLIENT_CERT": self.client_cert,
            "HTTPS_PROXY": self.proxy,
            "HTTP_PROXY": self.proxy,
        }
        return {name: value for name, value in wanted.items() if value and not os.environ.get(name)}

    def describe(self) -> str:
        """What of pip's configuration an install takes, in words ('' where none)."""
        parts = [f"index {self.index_url}"] if self.index_url else []
        parts += [f"{len(self.extra_index_urls)} extra index(es)"] if self.extra_index_urls else []
        parts += [f"wheel folders {' '.join(self.find_links)}"] if self.find_links else []
        parts += ["trusted hosts"] * bool(self.trusted_hosts) + ["a certificate"] * bool(self.cert)
        parts += ["a client certificate"] * bool(self.client_cert) + ["a proxy"] * bool(self.proxy)
        return f"pip's configuration ({', '.join(parts)})" if parts else ""

    def key(self) -> dict[str, str]:
        """What of them goes into an environment's identity (nothing where pip is not configured)."""
        if not self:
            return {}
        text = json.dumps(asdict(self), sort_keys=True)
        return {"pip_config": hashlib.sha256(text.encode()).hexdigest()[:16]}


_READ: dict[tuple[str, ...], PipSettings] = {}


def read(python: str | None = None) -> PipSettings:
    """What ``python -m pip config list`` says pip install uses (this interpreter's pip by default), once
    per process and pip environment; empty settings where pip is not there to ask."""
    python = python or sys.executable
    asked = (python, *sorted(f"{k}={v}" for k, v in os.environ.items() if k.startswith("PIP_")))
    if asked not in _READ:
        _READ[asked] = parse(_listed(python))
    return _READ[asked]


def _listed(python: str) -> str:
    try:
        done = subprocess.run(
            [python, "-m", "pip", "config", "list"],
            capture_output=True,
            text=True,
            errors="replace",
            timeout=TIMEOUT_S,
            env={**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"},
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.SubprocessError):
        return ""
    return done.stdout if done.returncode == 0 else ""


def parse(listing: str) -> PipSettings:
    """``pip config list``'s lines (``section.name='value'``) as the settings pip install takes."""
    found: dict[str, dict[str, str]] = {}
    for line in listing.splitlines():
        key, sep, shown = line.partition("=")
        section, dot, name = key.rpartition(".")
        if not (sep and dot):
            continue
        try:
            value = ast.literal_eval(shown)
        except (ValueError, SyntaxError):
            continue
        if isinstance(value, str):
            found.setdefault(name.replace("_", "-"), {})[section] = value

    def one(name: str) -> str | None:
        given = found.get(name, {})
        return next((given[s] for s in _SECTIONS if s in given), None)

    def many(name: str) -> tuple[str, ...]:
        return tuple((one(name) or "").split())

    return PipSettings(
        index_url=one("index-url"),
        extra_index_urls=many("extra-index-url"),
        find_links=many("find-links"),
        trusted_hosts=many("trusted-host"),
        no_index=(one("no-index") or "").lower() in _TRUE,
        cert=one("cert"),
        client_cert=one("client-cert"),
        proxy=one("proxy"),
    )
