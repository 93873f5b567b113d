"""The Docker engine the docker backend talks to: reaching it, and a run ending cleanly when it goes away."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING

from harness.errors import BackendUnavailable, RunStopped

try:
    import docker
    import docker.errors
    import requests.exceptions
except ImportError:  # the local backend and the report need no docker SDK
    docker = None  # type: ignore[assignment]

if TYPE_CHECKING:
    from docker import DockerClient


def connect() -> DockerClient:
    """A client of the engine, which answered a ping."""
    if docker is None:
        raise BackendUnavailable("the docker backend needs the docker SDK: pip install docker")
    try:
        client = docker.from_env(timeout=600)
        client.ping()
    except docker.errors.DockerException as exc:
        raise BackendUnavailable(
            f"cannot reach the Docker engine ({exc}); start dockerd, or set DOCKER_HOST "
            "to the engine's socket"
        ) from None
    return client


def alive(client: DockerClient) -> bool:
    try:
        return bool(client.ping())
    except (docker.errors.DockerException, requests.exceptions.RequestException):
        return False


def lost(during: str) -> RunStopped:
    return RunStopped(
        f"the Docker engine went away while {during}; nothing was written for that run. "
        "Start the engine and run the same command again: finished runs are kept and the rest resume"
    )


@contextlib.contextmanager
def errors(during: str) -> Iterator[None]:
    """Turn a lost connection to the engine into RunStopped, so the run ends cleanly."""
    try:
        yield
    except requests.exceptions.ConnectionError:
        raise lost(during) from None
