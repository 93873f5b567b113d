"""The history folder: ``HISTORY.json`` (what it is, and the version of its layout), ``documents/`` (the
result documents, by content), ``index.sqlite`` (derived from them) and ``.lock``.

The folder is untrusted input: nothing in it is followed through a link; a link, a FIFO or a folder where
the harness keeps a file of its own is refused, named, with what to do.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from harness import jsonio
from harness.errors import InputError, Problem

HISTORY_VERSION = 1  # the layout this harness writes and reads; a newer one is refused, never guessed at
FORMAT = "harness-history"
MARKER = "HISTORY.json"
DOCUMENTS = "documents"
INDEX = "index.sqlite"
LOCK = ".lock"
MARKER_BYTES = 4096


@dataclass(frozen=True)
class History:
    root: Path

    @property
    def documents(self) -> Path:
        return self.root / DOCUMENTS

    @property
    def index(self) -> Path:
        return self.root / INDEX

    @property
    def marker(self) -> Path:
        return self.root / MARKER


def default_for(matrix: Path) -> Path:
    """Where a history is kept unless one is named: ``history/`` beside the matrix."""
    return matrix.parent / "history"


def open_history(root: Path, create: bool = False) -> History:
    """The history at ``root``, made there (a new folder, or an empty one) when ``create``; InputError
    naming the folder where it is not one, or was written by a newer harness."""
    history = History(root)
    if root.exists() and not root.is_dir():
        raise InputError([Problem(str(root), "history", "is a file, not a history folder; name a folder")])
    if not root.exists() or not os.path.lexists(history.marker):
        if not create:
            raise InputError(
                [
                    Problem(
                        str(root),
                        "history",
                        f"is not a history (it has no {MARKER}); 'harness history add RESULTS_DIR --history "
                        f"{root}' makes one",
                    )
                ]
            )
        _create(history)
    _check_marker(history)
    return history


def check_usable(root: Path) -> None:
    """InputError where ``open_history(root, create=True)`` would refuse ``root``, found without writing
    anything: a command that adds to a history once its work is done asks this before it starts."""
    if root.exists() and not root.is_dir():
        raise InputError([Problem(str(root), "history", "is a file, not a history folder; name a folder")])
    if os.path.lexists(History(root).marker):
        _check_marker(History(root))
    elif _foreign(root):
        raise _not_empty(root)


def _create(history: History) -> None:
    """Make ``history`` a history: its marker written under its lock, so two adds that find the same new
    folder at once make it once. Another add's lock and temporary files are not a stranger's files: the
    second add waits on the lock, then finds the marker the first one wrote. A folder of other files is
    refused before anything is written into it."""
    root = history.root
    if _foreign(root) and not os.path.lexists(history.marker):  # marker re-read: made while we looked
        raise _not_empty(root)
    root.mkdir(parents=True, exist_ok=True)
    with locked(history):
        if os.path.lexists(history.marker):  # another add made it while this one waited
            return
        if _foreign(root):
            raise _not_empty(root)
        jsonio.write_atomic(history.marker, {"format": FORMAT, "version": HISTORY_VERSION})


def _foreign(root: Path) -> bool:
    """Whether ``root`` holds anything but what a history's writer makes before its marker: its lock and
    its temporary files (``.tmp-*``, swept under the lock)."""
    if not root.exists():
        return False
    return any(p.name != LOCK and not p.name.startswith(".tmp-") for p in root.iterdir())


def _not_empty(root: Path) -> InputError:
    return InputError(
        [
            Problem(
                str(root),
                "history",
                f"holds files but no {MARKER}: it is not a history; name an empty or new folder",
            )
        ]
    )


def _check_marker(history: History) -> None:
    source = str(history.marker)
    try:
        marker = json.loads(jsonio.read_bytes(history.marker, MARKER_BYTES, follow=False))
    except OSError as exc:
        raise InputError([Problem(source, "", f"cannot be read ({_why(exc)}); {_restore()}")]) from None
    except (ValueError, RecursionError) as exc:
        raise InputError([Problem(source, "", f"is not a history's marker ({exc}); {_restore()}")]) from None
    if not isinstance(marker, dict) or marker.get("format") != FORMAT:
        raise InputError([Problem(source, "format", f"is not {FORMAT!r}; {_restore()}")])
    version = marker.get("version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise InputError([Problem(source, "version", f"{version!r} is not a version; {_restore()}")])
    if version > HISTORY_VERSION:
        raise InputError(
            [
                Problem(
                    source,
                    "version",
                    f"this history was written by a newer harness (history version {version}); this "
                    f"harness reads version {HISTORY_VERSION}: upgrade the harness to one that reads "
                    f"history version {version}",
                )
            ]
        )


def _restore() -> str:
    return f'write {{"format": "{FORMAT}", "version": {HISTORY_VERSION}}} there, or name another folder'


def _why(exc: OSError) -> str:
    if exc.errno == errno.ELOOP:
        return "it is a link, and a link in a history is never followed"
    return str(exc.strerror or exc)


def regular_or_absent(path: Path) -> bool:
    """Whether ``path`` is a regular file (True) or absent (False); InputError for a link, folder, FIFO or
    anything else planted where the harness keeps a file."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return False
    if stat.S_ISREG(mode):
        return True
    found = "a link" if stat.S_ISLNK(mode) else "a folder" if stat.S_ISDIR(mode) else "not a regular file"
    raise InputError(
        [
            Problem(
                str(path),
                "",
                f"is {found} where the history keeps a file of its own; remove it: nothing planted in a "
                "history is followed",
            )
        ]
    )


@contextlib.contextmanager
def locked(history: History) -> Iterator[None]:
    """Hold the history's lock: one writer at a time; a second waits for the first to finish."""
    with jsonio.open_for_writing(history.root / LOCK, "a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            lock.seek(0)
            lock.truncate()
            lock.write(f"pid {os.getpid()}\n")
            lock.flush()
            _sweep(history.root)
            yield
        finally:
            lock.truncate(0)
            fcntl.flock(lock, fcntl.LOCK_UN)


def _sweep(root: Path) -> None:
    """What a writer that was killed left: its temporary files (never through a link: unlinked as names)."""
    below = jsonio.files_under(root / DOCUMENTS, max_depth=1) if (root / DOCUMENTS).is_dir() else iter(())
    for path in [*root.glob(".tmp-*"), *below]:  # files_under never enters a linked folder
        if path.name.startswith(".tmp-"):
            with contextlib.suppress(OSError):
                path.unlink()
