"""The folder where environments and cuDNN releases are kept between runs, and its per-entry lock.

An entry is complete only once its manifest is written, last; an entry without one is what an interrupted
build left, and is removed before it is built again. A lock file beside each entry makes two processes
(or threads) that want the same entry build it once.

What the cache holds is trusted no further than it is checked: an entry is used only where it is a real
folder (a link, a file or a FIFO planted in its place is removed, as the link, and the entry built again),
the harness writes nothing through a link planted in it (the lock, a log, the ``envs`` and ``cudnn``
folders), reads only regular files and never more than a bound, and what goes wrong with a file of the
cache is a ``CacheError`` naming that file and the fix, never a traceback.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import stat
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from harness import jsonio, resources

CACHE_ENV = resources.CACHE_ENV
MANIFEST = "harness-manifest.json"
MANIFEST_BYTES = 64 * 1024 * 1024  # a manifest lists a few hundred files: far under this
_THREAD_LOCKS: dict[Path, threading.Lock] = {}
_GUARD = threading.Lock()


class CacheError(LookupError):
    """A file of the cache could not be used; the message names it and the fix. A LookupError, as
    ``packages.InstallError`` is: what needs the entry fails with it (a cell, its own failed result)."""


def default_root() -> Path:
    """``resources.cache_root``: ``$HARNESS_CACHE``, else ``$XDG_CACHE_HOME/cudnn-harness``, else
    ``~/.cache/cudnn-harness``."""
    return resources.cache_root()


def _fix(root: Path) -> str:
    return (
        f"remove it (the harness makes what it needs there again), or point {CACHE_ENV} at another folder "
        f"than {root}"
    )


@contextlib.contextmanager
def guarded(root: Path) -> Iterator[None]:
    """Turn what the file system raises about the cache under ``root`` into a CacheError that names the
    file and the fix."""
    try:
        yield
    except OSError as exc:
        where = exc.filename if exc.filename is not None else root
        raise CacheError(f"{where}: {exc.strerror or exc}; {_fix(root)}") from None


def _planted(path: Path, found: str, kept: str, root: Path) -> CacheError:
    return CacheError(f"{path} is {found} where the harness keeps a {kept} of its cache; {_fix(root)}")


def _kind(mode: int) -> str:
    if stat.S_ISLNK(mode):
        return "a link"
    if stat.S_ISDIR(mode):
        return "a folder"
    return "a file" if stat.S_ISREG(mode) else "something other than a file"


def folder(root: Path, name: str) -> Path:
    """``root/name`` (``envs``, ``cudnn``), made if missing: a real folder, never a link followed (``root``
    itself may be one: the user named it)."""
    with guarded(root):
        if present(root) and not root.is_dir():  # root may be a link the user made, to a folder
            raise _planted(root, "a file" if root.exists() else "a link that leads nowhere", "folder", root)
        root.mkdir(parents=True, exist_ok=True)
        path = root / name
        with contextlib.suppress(FileExistsError):
            path.mkdir()
        mode = os.lstat(path).st_mode
        if not stat.S_ISDIR(mode):
            raise _planted(path, _kind(mode), "folder", root)
    return path


@contextlib.contextmanager
def locked(entry: Path) -> Iterator[None]:
    """Hold ``entry``'s lock: other threads of this process and other processes wait. A link, a folder or a
    FIFO planted at the lock's name is refused (CacheError): it is no lock of the harness's."""
    lock = entry.with_name(entry.name + ".lock")
    with _GUARD:
        thread_lock = _THREAD_LOCKS.setdefault(entry, threading.Lock())
    with thread_lock:
        try:
            fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, 0o644)
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.EISDIR, errno.ENXIO):
                raise _planted(
                    lock, _kind(os.lstat(lock).st_mode), "lock file", entry.parent.parent
                ) from None
            raise
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise _planted(lock, "something other than a file", "lock file", entry.parent.parent)
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)


def is_entry(entry: Path) -> bool:
    """Whether ``entry`` is a real folder (not a link to one, a file or a FIFO planted in its place)."""
    try:
        return stat.S_ISDIR(os.lstat(entry).st_mode)
    except OSError:
        return False


def present(entry: Path) -> bool:
    """Whether anything is at ``entry``'s name, a dangling link or a link loop included."""
    return os.path.lexists(entry)


def read_manifest(entry: Path) -> Any:
    """The manifest of a real entry folder, read bounded and from a regular file only; None where there is
    none that can be read (the entry is then half-built, or damaged, and is built again)."""
    if not is_entry(entry):
        return None
    try:
        return jsonio.read(entry / MANIFEST, MANIFEST_BYTES)
    except (OSError, ValueError, RecursionError):
        return None


def inside(entry: Path, relative: str) -> Path | None:
    """``entry/relative`` where it is a regular file or folder that lies inside ``entry`` with every link
    followed; None for a path a forged manifest could point outside the cache with (absolute, ``..``, or
    through a link)."""
    parts = Path(relative).parts
    if not parts or Path(relative).is_absolute() or ".." in parts:
        return None
    path = entry / relative
    if jsonio.real_path(path) != jsonio.real_path(entry).joinpath(*parts):
        return None  # a link on the way
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        return None
    return path if stat.S_ISREG(mode) or stat.S_ISDIR(mode) else None


def clear(entry: Path) -> None:
    """Remove what an entry holds (a half-built or damaged one): a link, a FIFO or a file at its name as
    itself, a folder with everything in it, links removed as links and never followed."""
    jsonio.remove_tree(entry)


def fresh_log(log: Path) -> None:
    """Remove whatever is at an install log's name (a link or a folder planted there too) before the
    installer's output is appended to it anew."""
    jsonio.remove_tree(log)
