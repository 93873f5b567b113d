"""The in-cell side: the fixed workload suite, its timing and the environment capture.

Runs inside the cell (a container, or a subprocess of a Python with torch). It imports only torch
and the standard library, and never the orchestrator side of ``harness``: the orchestrator talks to
it through ``python -m harness.suite`` and the JSON document that writes.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

SUITE_VERSION = "0.20"  # what reports compare: results of two versions are never merged into one table
RESULT_SCHEMA_VERSION = 1


def source_sha256(root: Path | None = None) -> str:
    """The hash of this suite's source (every ``.py`` under ``harness/suite/``, by relative path), or of
    a copy of it in ``root``.

    What resume keys on: a suite whose code changed in any way (a workload added to a profile, a builder
    edited) gives another hash, so its earlier results are never kept as if it had made them, whether
    or not ``SUITE_VERSION`` was bumped.
    """
    root = root or Path(__file__).resolve().parent
    digest = hashlib.sha256()
    for path in source_files(root):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def source_files(root: Path | None = None) -> list[Path]:
    """Every ``.py`` under ``root`` (this suite's folder by default), sorted as ``sorted(root.rglob("*.py"))``
    sorts them, never through a link to a folder; a folder that cannot be read is skipped.

    An explicit stack, not ``rglob``: on Python 3.10 and 3.11 that recurses once per level, and a cached copy
    of the suite is checked as found (a planted chain of a thousand folders must be no RecursionError)."""
    root = root or Path(__file__).resolve().parent
    found, stack = [], [root]
    while stack:
        folder = stack.pop()
        try:
            with os.scandir(folder) as listing:
                entries = list(listing)
        except OSError:
            continue
        for entry in entries:
            try:
                is_folder = entry.is_dir(follow_symlinks=False)
            except OSError:
                is_folder = False
            if is_folder:
                stack.append(folder / entry.name)
            elif entry.name.endswith(".py"):
                found.append(folder / entry.name)
    return sorted(found)
