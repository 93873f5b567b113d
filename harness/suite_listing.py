"""What the suite offers, asked through its command line (the orchestrator never imports it)."""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
from typing import TypedDict

from harness import resources


class ListedWorkload(TypedDict):
    id: str
    description: str
    dtypes: list[str]
    gpus: str  # "one"; "all": a process per GPU of its own (its cell needs every GPU, alone)


class Listing(TypedDict):
    """``python -m harness.suite list --json``: the suite's version, its code's hash, its workloads."""

    suite_version: str
    source_sha256: str
    workloads: list[ListedWorkload]


@functools.cache  # one run asks several times (workloads, multi-GPU ones, the version): one subprocess
def listing(python: str | None = None) -> Listing:
    """``python -m harness.suite list --json`` of ``python`` (default: this interpreter)."""
    existing = os.environ.get("PYTHONPATH")
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(resources.suite_root()), *([existing] if existing else [])]),
    }
    done = subprocess.run(
        [python or sys.executable, "-m", "harness.suite", "list", "--json"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        check=True,
    )
    result: Listing = json.loads(done.stdout)
    return result


def workload_ids(python: str | None = None) -> list[str]:
    return [w["id"] for w in listing(python)["workloads"]]


def multi_gpu_workloads(python: str | None = None) -> set[str]:
    """Workloads that run one process per GPU themselves: their cell needs every GPU, alone."""
    return {w["id"] for w in listing(python)["workloads"] if w.get("gpus") == "all"}
