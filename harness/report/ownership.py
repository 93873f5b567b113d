"""A report folder belongs to the results it was made from. ``made-from.json`` in the folder names them;
a report of other results is refused there instead of silently replacing it (``qualify --out X`` once
rewrote ``reports/<name>``, the report of another results folder), and no results folder is made inside
a report folder."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from harness import jsonio
from harness.errors import InputError, Problem

MADE_FROM = "made-from.json"
REPORT_FILES = ("report.md", "verdict.json")  # what says a folder without MADE_FROM holds a report
_LIMIT = 1024 * 1024


def sources(results: Sequence[Path]) -> list[str]:
    """``results`` as a report records them: each folder's or file's real path, sorted, once each."""
    return sorted({os.path.realpath(p) for p in results})


def check(out: Path, results: Sequence[Path], setting: str) -> None:
    """InputError naming ``setting`` where ``out`` holds the report of other results than ``results``,
    or a report that records none (made before reports recorded their results) unless ``results`` lie
    inside ``out`` (the lab's layout: a study's report beside its results/)."""
    held = _held(out)
    if held == sources(results):
        return
    if held is None:
        # a regular file each: a folder or a link planted at the name is the writers' to refuse
        found = [name for name in REPORT_FILES if _regular(out / name)]
        if not found or all(_inside(p, out) for p in results):
            return  # no report there yet, or one that holds its own results
        what = f"holds a report ({found[0]}) that does not record which results it was made from"
    else:
        what = f"holds the report of {', '.join(held) or 'nothing'} (its {MADE_FROM})"
    raise InputError(
        [
            Problem(
                str(out),
                setting,
                f"{what}; a report of {', '.join(sources(results))} would replace it: name another "
                f"report folder, or delete that report's files from {out} first to replace it",
                setting=setting,
            )
        ]
    )


def claim(out: Path, results: Sequence[Path]) -> None:
    """Record in ``out`` that its report is made from ``results`` (after ``check``)."""
    jsonio.write_atomic(out / MADE_FROM, {"schema_version": 1, "results": sources(results)})


def refuse_inside_report(path: Path, setting: str) -> None:
    """InputError naming ``setting`` where ``path`` (a results folder to be made) is a report folder or
    lies inside one, other than the results that report was made from."""
    real = Path(os.path.realpath(path))
    for folder in (real, *real.parents):
        if os.path.isfile(folder / MADE_FROM) and str(real) not in (_held(folder) or ()):
            where = "is" if folder == real else f"lies inside {folder},"
            raise InputError(
                [
                    Problem(
                        str(path),
                        setting,
                        f"{where} a report folder (it holds {MADE_FROM}); name a results folder outside "
                        "every report folder, e.g. results/<name>",
                        setting=setting,
                    )
                ]
            )


def _regular(path: Path) -> bool:
    return os.path.isfile(path) and not os.path.islink(path)


def _inside(path: Path, folder: Path) -> bool:
    return Path(os.path.realpath(path)).is_relative_to(os.path.realpath(folder))


def _held(out: Path) -> list[str] | None:
    """The results ``out``'s report records; None where it records none. A marker that cannot be read
    (planted, broken) records none that match: ``["(unreadable MADE_FROM)"]``."""
    marker = out / MADE_FROM
    if not os.path.lexists(marker):
        return None
    try:
        document = jsonio.parse(jsonio.read_bytes(marker, _LIMIT, decompress=False, follow=False))
    except (OSError, ValueError):
        return [f"(an unreadable {MADE_FROM})"]
    held = document.get("results") if isinstance(document, dict) else None
    if not isinstance(held, list) or not all(isinstance(p, str) for p in held):
        return [f"(an unreadable {MADE_FROM})"]
    return held
