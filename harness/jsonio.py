"""JSON documents on disk: atomic writes (a reader sees the old file or the new one, never half of
one), gzip for names ending in ``.gz`` (result files: raw samples compress about 9x, as pyperf's
``.json.gz``), and bounded reads of regular files that take either form.
"""

from __future__ import annotations

import contextlib
import errno
import gzip
import hashlib
import io
import json
import math
import os
import stat
import tempfile
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any, Literal

from harness.errors import InputError, Problem

GZIP_MAGIC = b"\x1f\x8b"


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


FILE_MODE = 0o666 & ~_umask()  # what open() would have given; mkstemp's 0600 hides results from others


def write_atomic(path: Path, document: Any, compact: bool = False) -> None:
    """Write ``document`` as JSON, gzip-compressed when ``path`` ends in ``.gz``; ``compact`` for big
    ones (result files with raw samples: 25% smaller before compression)."""
    if compact:
        text = json.dumps(document, separators=(",", ":"), sort_keys=True, allow_nan=False)
    else:
        text = json.dumps(document, indent=1, sort_keys=True, allow_nan=False)
    data = (text + "\n").encode()
    if path.name.endswith(".gz"):
        data = _gzip(data)
    write_bytes_atomic(path, data)


def write_bytes_atomic(path: Path, data: bytes, sync: bool = True) -> None:
    """Write ``data`` to ``path`` through a temporary file renamed over it: a link planted at ``path`` is
    replaced, never written through; a folder planted there is refused (InputError). ``sync``: on the disk
    before the rename (False for what can be made again, as a quarantined file's problems: a folder of
    20,000 invalid files is not 20,000 waits on the disk)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=path.suffix)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            if sync:
                os.fsync(f.fileno())
        os.chmod(tmp, FILE_MODE)
        os.replace(tmp, path)
    except BaseException as exc:
        Path(tmp).unlink(missing_ok=True)
        if isinstance(exc, IsADirectoryError):  # a folder planted at the name: never a traceback
            raise _planted(path, "a folder", "file") from None
        raise


def compress(plain: Path, target: Path, limit: int) -> None:
    """Replace the plain file ``plain`` by its gzip ``target`` (bytes as they are, valid or not)."""
    data = read_bytes(plain, limit)
    write_bytes_atomic(target, _gzip(data))
    plain.unlink()


def _gzip(data: bytes) -> bytes:
    return gzip.compress(data, compresslevel=6, mtime=0)  # mtime 0: the same document, the same bytes


class TooLarge(ValueError):
    """A file (or what it decompresses to) is over the reader's limit."""


def read_bytes(path: Path, limit: int, decompress: bool = True, follow: bool = True) -> bytes:
    """The bytes of a regular file, decompressed if it is gzip, at most ``limit`` of them; with ``follow``
    False, a link at ``path`` is refused (OSError ELOOP) rather than followed.

    Only regular files are opened (a FIFO would block, a device never end), and the read stops at
    ``limit`` whatever ``st_size`` says, so neither a link to /dev/zero nor a gzip bomb can exhaust memory.
    Raises OSError for what cannot be read, TooLarge past the limit, ValueError for broken gzip.
    """
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0) | (0 if follow else os.O_NOFOLLOW)
    fd = os.open(path, flags)
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"{path} is not a regular file")
        data = f.read(limit + 1)
    if decompress and data[:2] == GZIP_MAGIC:
        try:
            with gzip.GzipFile(fileobj=io.BytesIO(data)) as unzipped:
                data = unzipped.read(limit + 1)
        except (OSError, EOFError, zlib.error) as exc:
            raise ValueError(f"not a whole gzip file ({exc})") from None
    if len(data) > limit:
        raise TooLarge(f"holds more than {limit} bytes; the limit is {limit}")
    return data


def file_sha256(path: Path, limit: int = 16 * 1024**3) -> bytes:
    """The sha256 of a regular file's bytes (a link to one is followed), read in chunks: never a FIFO or a
    device (OSError), never more than ``limit`` bytes (TooLarge), never the whole file in memory."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    digest, read = hashlib.sha256(), 0
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"{path} is not a regular file")
        while chunk := f.read(1 << 20):
            read += len(chunk)
            if read > limit:
                raise TooLarge(f"holds more than {limit} bytes; the limit is {limit}")
            digest.update(chunk)
    return digest.digest()


def real_path(path: Path) -> Path:
    """``path`` with its links followed as far as they go: never an error, where Python 3.11's
    ``Path.resolve`` raises RuntimeError on a link loop."""
    return Path(os.path.realpath(path))


# Each byte as its class for ``_may_overflow``: digits and the decimal point d, an exponent's letter e,
# its sign +, anything else x.
_CLASSES = bytes(
    ord("d")
    if chr(b) in "0123456789."
    else ord("e")
    if chr(b) in "eE"
    else ord("+")
    if b == ord("+")
    else ord("x")
    for b in range(256)
)
_BEFORE_NUMBER = frozenset(b" \t\r\n:,[-")  # what a JSON number token may follow


def _may_overflow(data: bytes) -> bool:
    """Whether ``data`` may hold a number JSON can write but a float cannot hold (1e999, or 400 digits):
    only then is each float checked one by one. A superset, found with ``bytes.find`` over the bytes'
    classes (a regular expression took seconds over a result of 60 MB): a run of 300 digits, or an
    exponent of three digits or more whose mantissa begins a token, so that a sha256 in a string
    ("...9e123...") is no number."""
    classes = data.translate(_CLASSES)
    if classes.find(b"d" * 300) >= 0:
        return True
    for needle in (b"deddd", b"de+ddd"):
        at = classes.find(needle)
        while at >= 0:
            start = at
            while start > 0 and classes[start - 1] == ord("d"):
                start -= 1
            if start == 0 or data[start - 1] in _BEFORE_NUMBER:
                return True
            at = classes.find(needle, at + 1)
    return False


def read(path: Path, limit: int = 256 * 1024 * 1024) -> Any:
    """The JSON document in ``path`` (plain or gzip), refusing NaN and infinity. A float is checked one by
    one only where the text holds an exponent of three digits or a run of 300 digits, the only ways to
    write a number past a float's range: a result's millions of samples parse at C speed."""
    return parse(read_bytes(path, limit))


def parse(data: bytes) -> Any:
    """``data`` (JSON text) as a document, as ``read`` parses a file."""
    finite = _finite if _may_overflow(data) else float
    return json.loads(data, parse_constant=_refuse_constant, parse_float=finite)


def _refuse_constant(name: str) -> float:
    raise ValueError(f"{name} is not a number JSON allows")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):  # 1e999 parses as infinity
        raise ValueError(f"{text} is not a finite number")
    return value


def is_document(name: str) -> bool:
    """Whether a file name is a JSON document's, plain or compressed."""
    return name.endswith((".json", ".json.gz"))


def write_text_atomic(path: Path, text: str, sync: bool = True) -> None:
    """Write ``text`` as UTF-8 whatever it holds: what UTF-8 cannot encode (a lone surrogate from a
    file name that was not UTF-8) is written as its backslash escape, never a traceback."""
    write_bytes_atomic(path, text.encode("utf-8", errors="backslashreplace"), sync)


def _planted(path: Path, found: str, kept: str) -> InputError:
    return InputError(
        [
            Problem(
                str(path),
                "",
                f"is {found} where the harness keeps a {kept} of its own; remove it: nothing is written "
                "through what was planted in an output folder",
            )
        ]
    )


def real_folder(path: Path) -> Path:
    """``path`` as a folder inside an output folder, made here if missing: never a link, checked with
    lstat where it is about to be used (a planted ``logs -> /etc`` would send writes, and sweeps, out)."""
    with contextlib.suppress(FileExistsError):
        path.mkdir()
    mode = os.lstat(path).st_mode
    if not stat.S_ISDIR(mode):
        raise _planted(path, "a link" if stat.S_ISLNK(mode) else "a file", "folder")
    return path


def open_for_writing(path: Path, mode: Literal["w", "wb", "a", "ab", "a+"]) -> IO[Any]:
    """``path`` opened to write (truncated, or appended to), refusing to follow a link planted there:
    O_NOFOLLOW, so the check is the open itself. Permissions follow the umask."""
    flags = os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK  # a planted FIFO must not block
    flags |= os.O_RDWR if "+" in mode else os.O_WRONLY
    flags |= os.O_APPEND if mode.startswith("a") else os.O_TRUNC
    try:
        fd = os.open(path, flags, 0o666)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise _planted(path, "a link", "file") from None
        if exc.errno == errno.ENXIO:
            raise _planted(path, "something other than a file", "file") from None
        if exc.errno == errno.EISDIR:
            raise _planted(path, "a folder", "file") from None
        raise
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise _planted(path, "something other than a file", "file")
    os.set_blocking(fd, True)
    if "b" in mode:
        return os.fdopen(fd, mode)
    return os.fdopen(fd, mode, encoding="utf-8", errors="backslashreplace")


def read_text_nofollow(path: Path, limit: int) -> str:
    """The text of a harness-written file (a log), never through a link planted in its place."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"{path} is not a regular file")
        size = os.fstat(fd).st_size
        f.seek(max(0, size - limit))
        return f.read(limit).decode(errors="replace")


def files_under(root: Path, max_depth: int | None = None) -> Iterator[Path]:
    """Every file (and link, and anything else that is not a folder) under ``root``, at most ``max_depth``
    folders down where given, never following a link to a folder; a folder that cannot be read is skipped.

    An explicit stack, not ``os.walk``: on Python 3.10 and 3.11 that recurses once per level, so a planted
    chain of a thousand folders would be a RecursionError."""
    stack = [(root, 0)]
    while stack:
        folder, depth = stack.pop()
        try:
            with os.scandir(folder) as listing:
                entries = list(listing)
        except OSError:
            continue
        below = []
        for entry in entries:
            if _is_real_folder(entry):
                below.append(folder / entry.name)
            else:
                yield folder / entry.name
        if max_depth is None or depth < max_depth:  # deeper is nothing the harness writes: not entered
            stack.extend((path, depth + 1) for path in reversed(below))


def _is_real_folder(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir(follow_symlinks=False)
    except OSError:
        return False


_FOLDER_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def remove_tree(path: Path, ignore_errors: bool = False) -> None:
    """Remove ``path`` and everything in it; a link (at ``path`` or anywhere below) is removed as the link,
    never followed. Missing already: nothing to do. Raises OSError for what cannot be removed, unless
    ``ignore_errors`` (then it stops quietly at the first thing it cannot remove).

    ``shutil.rmtree`` recurses once per level on Python 3.10 and 3.11 (a planted chain of a thousand
    folders is a RecursionError) and keeps a folder open per level. Here each folder is opened relative to
    the one above it, without following links, one folder open at a time (a chain deeper than the
    open-file limit is no EMFILE); going back up, ``..`` is checked to be the folder that was left, so one
    moved meanwhile stops the removal instead of sending it elsewhere."""
    try:
        _remove_tree(path)
    except OSError:
        if not ignore_errors:
            raise


def _remove_tree(path: Path) -> None:
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    if not stat.S_ISDIR(mode):
        os.unlink(path)
        return
    fd = os.open(path, _FOLDER_FLAGS)
    # the folders above the open one, below ``path``: name, identity, and subfolders not yet removed
    above: list[tuple[str, tuple[int, int], list[str]]] = []
    try:
        pending = _clear_files(fd)
        while True:
            if pending:
                name = pending.pop()
                try:
                    child = os.open(name, _FOLDER_FLAGS, dir_fd=fd)
                except OSError as exc:
                    if exc.errno in (errno.ENOENT, errno.ENOTDIR, errno.ELOOP):
                        continue  # gone, or replaced by a file or a link: the next listing has it
                    raise
                above.append((name, _identity(fd), pending))
                os.close(fd)
                fd = child
                pending = _clear_files(fd)
                continue
            pending = _clear_files(fd)  # what appeared meanwhile; empty once the folder is
            if pending:
                continue
            if not above:
                break
            name, identity, pending = above.pop()
            parent = os.open("..", _FOLDER_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = parent
            if _identity(fd) != identity:
                raise OSError(errno.EBUSY, "a folder was moved while it was being removed", str(path))
            os.rmdir(name, dir_fd=fd)
    finally:
        os.close(fd)
    os.rmdir(path)


def _identity(fd: int) -> tuple[int, int]:
    st = os.fstat(fd)
    return st.st_dev, st.st_ino


def _clear_files(fd: int) -> list[str]:
    """Unlink everything in the open folder ``fd`` that is not a folder (links as links); its subfolders'
    names."""
    with os.scandir(fd) as listing:
        entries = list(listing)
    folders = []
    for entry in entries:
        if _is_real_folder(entry):
            folders.append(entry.name)
        else:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(entry.name, dir_fd=fd)
    return folders


def name_prefix(name: str, limit: int) -> str:
    """``name``'s longest run of whole characters from its start that the file system writes in at most
    ``limit`` bytes (a name that was not UTF-8 counts its escaped bytes one each, as they were)."""
    name = name[:limit]  # every character is at least one byte
    while len(name.encode(errors="surrogateescape")) > limit:
        name = name[:-1]
    return name


def output_folder(path: Path, setting: str) -> Path:
    """``path`` as a folder this command may write into, created if missing; InputError naming the
    ``setting`` that gave it ("out") when it is a file, lies under a file, or cannot be created or
    written."""
    if path.exists() and not path.is_dir():
        raise InputError(
            [
                Problem(
                    str(path),
                    setting,
                    "is a file, not a folder; name a folder (it is created)",
                    setting=setting,
                )
            ]
        )
    try:
        path.mkdir(parents=True, exist_ok=True)
        # a new name of its own (O_EXCL, never through a link): a fixed one would follow a link planted
        # there, and two commands probing one folder at once would remove each other's probe
        fd, probe = tempfile.mkstemp(dir=path, prefix=".harness-write-test-")
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise InputError(
            [
                Problem(
                    str(path),
                    setting,
                    f"cannot be written here ({exc.strerror or exc}); name a writable folder",
                    setting=setting,
                )
            ]
        ) from None
    return path


def future_output_folder(path: Path, setting: str) -> Path:
    """``path`` checked as ``output_folder`` checks it, but not left made: a folder written only at the
    end (a report after its runs) is not left behind, empty, by runs that stop first. A missing one is
    made to be tried, and the folders made for it are removed again."""
    if os.path.lexists(path):
        return output_folder(path, setting)
    made = [Path(os.path.abspath(path))]
    while not os.path.lexists(made[-1].parent):
        made.append(made[-1].parent)
    output_folder(path, setting)
    for folder in made:  # the deepest first; each empty, as it was just made
        folder.rmdir()
    return path
