"""What a report is made of, before any format: sections of tables whose cells carry their raw number and
kind beside their text (``Value``), the whole ``Document``, and the files ``render`` wrote of it.

The Markdown and HTML writers read only this; neither parses text the other formats.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

Kind = Literal["text", "number", "duration", "verdict"]
VERDICT_ORDER = {"slower": 0, "failed": 1, "inconclusive": 2, "missing": 3, "faster": 4, "same": 5}
MARK = {
    "slower": "▼ slower",
    "faster": "▲ faster",
    "same": "= same",
    "inconclusive": "? inconclusive",
    "failed": "✗ failed",
    "missing": "– missing",
}


@dataclass(frozen=True)
class Value:
    """A table cell: the text shown, the number it stands for (sorting goes by it), what kind of value it is,
    and, for a number taken from a result file, the file it links to (relative to the report)."""

    text: str
    number: float | None = None
    kind: Kind = "text"
    href: str | None = None
    verdict: str | None = None  # kind 'verdict': one of VERDICT_ORDER's keys


TableCell = Value | str | int | float | None | list[Value]


def plain_text(value: object) -> str:
    """A plain cell's text: empty for None and NaN (a missing number in a pandas frame), as every
    format shows it."""
    return "" if value is None or (isinstance(value, float) and math.isnan(value)) else str(value)


def verdict(word: str) -> Value:
    return Value(MARK[word], kind="verdict", verdict=word)


@dataclass(frozen=True)
class Section:
    title: str
    intro: str = ""
    headers: tuple[str, ...] = ()
    rows: tuple[tuple[TableCell, ...], ...] = ()
    level: int = 2
    plots_after: bool = False  # the HTML page puts its plots after this section
    collapsed: bool = False  # the HTML page folds it away (<details>): reference, not the answer
    filterable: bool = False  # the HTML page hides its 'same' rows until asked, and can search its rows
    figure: str = ""  # a plot's kind (plots.Plot): the HTML page shows those plots here; Markdown has none

    @property
    def anchor(self) -> str:
        """The id GitHub gives its heading: lower case, spaces to dashes, other punctuation dropped."""
        kept = "".join(c for c in self.title.lower() if c.isalnum() or c in " -_")
        return kept.replace(" ", "-")


@dataclass(frozen=True)
class Document:
    title: str
    header: str  # prose with the few Markdown marks both writers know: **bold**, `code`, a fenced block
    sections: tuple[Section, ...]
    # link target (relative to the report) -> (result file, measurement index): one measurement's own
    # file, which render writes, so a number links to its measurement and not to a multi-MB result
    extracts: dict[str, tuple[str, int]] = field(default_factory=dict)


@dataclass(frozen=True)
class Rendered:
    markdown: Path
    html: Path
    csv: Path
    verdict_json: Path
