"""Every file of the site under 1 MB, whatever the history holds: a page or a JSON file that would be
larger is written as parts (``runs/x.html``, ``runs/x.p2.html``, ...), each under ``BUDGET`` and the
first naming the others. A part's name never collides with another file's: no base name of the site ends
in ``.p<n>`` (a row's slug ends in its knobs, a run's in hex digits)."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import TypeVar

LIMIT = 1_000_000  # bytes: the most any file of the site holds
BUDGET = 800_000  # what a part's own content takes; its links to the other parts fit in the rest

T = TypeVar("T")


def name(base: str, part: int) -> str:
    """The name of part ``part`` (1: ``base`` itself) of the file ``base``."""
    if part == 1:
        return base
    stem, dot, ext = base.rpartition(".")
    return f"{stem}.p{part}.{ext}" if dot else f"{base}.p{part}"


def split(items: Sequence[T], size: Callable[[Sequence[T]], int], budget: int = BUDGET) -> list[Sequence[T]]:
    """``items`` in consecutive parts, each of a ``size`` (its rendering's bytes) within ``budget``, halved
    until it is (one item is a part whatever its size: the caller bounds an item)."""
    if len(items) <= 1 or size(items) <= budget:
        return [items]
    half = len(items) // 2
    return [*split(items[:half], size, budget), *split(items[half:], size, budget)]


def compact(value: object) -> str:
    return json.dumps(value, separators=(",", ":"), allow_nan=False)


def json_parts(
    head: Mapping[str, object], fields: Mapping[str, Sequence[object]], budget: int = BUDGET
) -> list[dict[str, object]]:
    """A JSON document of ``head`` and the lists ``fields`` as parts: the first holds ``head`` and the lists'
    first items, each later part the next items under the same keys; every part's text within
    ``budget``. Items keep their order, each list's after the one before."""
    parts: list[dict[str, object]] = [{key: [] for key in fields}]
    used = len(compact(head)) + sum(len(key) + 6 for key in fields)
    for key, items in fields.items():
        for item in items:
            cost = len(compact(item)) + 1
            if used + cost > budget and any(parts[-1][k] for k in fields):
                parts.append({k: [] for k in fields})
                used = 32 + sum(len(k) + 6 for k in fields)
            _list(parts[-1], key).append(item)
            used += cost
    return [{**head, **parts[0]}, *parts[1:]]


def _list(part: dict[str, object], key: str) -> list[object]:
    found = part[key]
    assert isinstance(found, list)
    return found


def nav(base: str, part: int, count: int, up: str) -> str:
    """Links to every part of a page of ``count`` parts (none where it has one); ``base`` relative to the
    site's top, ``up`` the way there."""
    if count == 1:
        return ""
    links = " ".join(
        f"<b>{k}</b>" if k == part else f"<a href='{up}{name(base, k)}'>{k}</a>" for k in range(1, count + 1)
    )
    return f"<p class='parts'>Part {part} of {count}: {links}</p>"


def table_pages(
    rows: Sequence[list[str]], render: Callable[[Sequence[list[str]], int, int], str]
) -> list[str]:
    """A page whose table rows ``rows`` are split across parts: ``render(rows, part, count)`` renders part
    ``part`` of ``count`` with its rows (the first part its other content too)."""

    def size(html: str) -> int:
        return len(html.encode("utf-8", "backslashreplace"))

    # a part's size is its frame's and its rows' (as ``markup.table`` writes them): counted, not rendered
    frame = size(render([], 2, 2)) + 64
    sizes = [size("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>") for row in rows]
    spans = split(range(len(rows)), lambda span: frame + sum(sizes[i] for i in span))
    chunks = [[rows[i] for i in span] for span in spans]
    return [render(chunk, k, len(chunks)) for k, chunk in enumerate(chunks, 1)]
