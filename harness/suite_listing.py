"""What the suite offers, asked through its command line (the orchestrator never imports it)."""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
from typing import Any

from harness import resources


@functools.cache  # one run asks several times (workloads, multi-GPU ones, the version): one subprocess
def listing(python: str | None = None) -> dict[str, Any]:
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
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def workload_ids(python: str | None = None) -> list[str]:
    return [w["id"] for w in listing(python)["workloads"]]


def multi_gpu_workloads(python: str | None = None) -> set[str]:
    """Workloads that run one process per GPU themselves: their cell needs every GPU, alone."""
    return {w["id"] for w in listing(python)["workloads"] if w.get("gpus") == "all"}
