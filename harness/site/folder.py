"""The site's folder: checked before anything is written into it. A site is written only into a folder
outside its history that is new, empty, or a site this harness wrote (its marker, ``.harness-site.json``,
as a history has ``HISTORY.json``): a user's files, another program's ``index.html`` or the history's own
folders are never overwritten."""

from __future__ import annotations

import json
import os
from pathlib import Path

from harness import jsonio
from harness.errors import InputError, Problem
from harness.history.layout import History

MARKER = ".harness-site.json"
FORMAT = "harness-site"
LEGACY_MANIFEST = ".site-manifest.json"  # what a site had before its marker: still ours
MARKER_BYTES = 4096


def prepare(out: Path, history: History) -> Path:
    """``out`` made ready for a site of ``history``: created if new, marked as a site; InputError naming
    the setting "out" where it lies inside the history or holds files that are not a site's."""
    inside = _resolved(out)
    root = _resolved(history.root)
    if inside == root or root in inside.parents:
        raise InputError(
            [
                Problem(
                    str(out),
                    "out",
                    f"lies inside the history {history.root}: a site there would change the history's own "
                    "folders; name a folder outside it",
                    setting="out",
                )
            ]
        )
    if out.is_dir() and not _ours(out) and any(_not_scratch(p) for p in out.iterdir()):
        raise InputError(
            [
                Problem(
                    str(out),
                    "out",
                    f"holds files but is not a site this harness wrote (it has no {MARKER}); name a new or "
                    "empty folder, or the folder of an earlier site: nothing in it is overwritten",
                    setting="out",
                )
            ]
        )
    out = jsonio.output_folder(out, "out")
    if not _ours(out):
        jsonio.write_atomic(out / MARKER, {"format": FORMAT, "version": 1})
    return out


def _resolved(path: Path) -> Path:
    return Path(os.path.realpath(path))


def _not_scratch(path: Path) -> bool:
    """What a writer of ours leaves while it works (temporary files, a probe) is not a user's file."""
    return not path.name.startswith((".tmp-", ".harness-write-test-"))


def _ours(out: Path) -> bool:
    """Whether ``out`` holds a site's marker (or the manifest a site wrote before markers), read without
    following a link."""
    for name, key, value in ((MARKER, "format", FORMAT), (LEGACY_MANIFEST, "generator", None)):
        try:
            found = json.loads(jsonio.read_bytes(out / name, MARKER_BYTES * 1024, follow=False))
        except (OSError, ValueError, RecursionError):
            continue
        if not isinstance(found, dict):
            continue
        if found.get(key) == value if value else isinstance(found.get(key), str):
            return True
    return False
