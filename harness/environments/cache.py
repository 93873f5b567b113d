"""The folder where environments and cuDNN releases are kept between runs, and its per-entry lock.

An entry is complete only once its manifest is written, last; an entry without one is what an interrupted
build left, and is removed before it is built again. A lock file beside each entry makes two processes
(or threads) that want the same entry build it once.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path

CACHE_ENV = "HARNESS_CACHE"
MANIFEST = "harness-manifest.json"
_THREAD_LOCKS: dict[Path, threading.Lock] = {}
_GUARD = threading.Lock()


def default_root() -> Path:
    """``$HARNESS_CACHE``, else ``$XDG_CACHE_HOME/cudnn-harness``, else ``~/.cache/cudnn-harness``."""
    named = os.environ.get(CACHE_ENV)
    if named:
        return Path(named)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "cudnn-harness"


@contextlib.contextmanager
def locked(entry: Path) -> Iterator[None]:
    """Hold ``entry``'s lock: other threads of this process and other processes wait."""
    entry.parent.mkdir(parents=True, exist_ok=True)
    with _GUARD:
        thread_lock = _THREAD_LOCKS.setdefault(entry, threading.Lock())
    with thread_lock:
        fd = os.open(entry.with_name(entry.name + ".lock"), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)


def clear(entry: Path) -> None:
    """Remove what an entry holds (a half-built or damaged one), a link included, never what it points to."""
    if entry.is_symlink() or entry.is_file():
        entry.unlink()
    elif entry.exists():
        shutil.rmtree(entry)
