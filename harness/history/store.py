"""The documents of a history, each kept as it came (its bytes, gzip or not), named by the SHA-256 of its
JSON text: ``documents/<first two hex digits>/<sha256>.json[.gz]``. A document is written once, through
a temporary file renamed into place, and never altered."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from harness import jsonio
from harness.errors import InputError, Problem
from harness.history.layout import History
from harness.results.folder import MAX_BYTES

_NAME = re.compile(r"([0-9a-f]{64})\.json(\.gz)?")


@dataclass(frozen=True)
class Stored:
    path: Path
    sha256: str  # of the JSON text (decompressed)


def digest(text: bytes) -> str:
    return hashlib.sha256(text).hexdigest()


def relative(history: History, sha256: str, gzipped: bool) -> str:
    """Where a document is kept, relative to the history."""
    return f"documents/{sha256[:2]}/{sha256}.json{'.gz' if gzipped else ''}"


def put(history: History, raw: bytes, sha256: str) -> str:
    """Keep ``raw`` (a file's bytes as they came); its path relative to the history."""
    name = relative(history, sha256, raw[:2] == jsonio.GZIP_MAGIC)
    target = history.root / name
    jsonio.real_folder(history.documents)
    jsonio.real_folder(target.parent)
    jsonio.write_bytes_atomic(target, raw)
    return name


def stored(history: History) -> Iterator[Stored]:
    """Every document the history holds; InputError for anything else found among them (a link, a FIFO, a
    file of another name), which is never read."""
    if not history.documents.exists():
        return
    jsonio.real_folder(history.documents)
    for path in sorted(jsonio.files_under(history.documents, max_depth=1)):
        if path.name.startswith(".tmp-"):
            continue  # a writer's temporary file, swept under the lock
        match = _NAME.fullmatch(path.name)
        if not path.is_symlink() and path.is_file() and match and path.parent.name == match[1][:2]:
            yield Stored(path, match[1])
            continue
        raise InputError(
            [
                Problem(
                    str(path),
                    "",
                    "is not a document the history wrote (a link, a FIFO, or another name); remove it: "
                    "only 'harness history add' writes in documents/",
                )
            ]
        )


def read(item: Stored) -> bytes:
    """A stored document's JSON text, checked against its name; never through a link."""
    try:
        text = jsonio.read_bytes(item.path, MAX_BYTES, follow=False)
    except (OSError, ValueError) as exc:
        raise InputError(
            [Problem(str(item.path), "", f"cannot be read ({exc}); remove it or restore it")]
        ) from None
    if digest(text) != item.sha256:
        raise InputError(
            [
                Problem(
                    str(item.path),
                    "",
                    "does not hold the document its name is the digest of: it was altered after it was "
                    "added; restore it, or remove it and add its result again",
                )
            ]
        )
    return text
