"""The report as GitHub Markdown: tables whose cells can never break them."""

from __future__ import annotations

import math
from typing import Any

from tabulate import tabulate

from harness.report.model import Document, Section, Value


def page(document: Document) -> str:
    return (
        f"# {document.title}\n\n{document.header}\n\n"
        + "\n\n".join(_section(s) for s in document.sections)
        + "\n"
    )


def _section(section: Section) -> str:
    text = f"{'#' * section.level} {section.title}"
    if section.intro:
        text += f"\n\n{section.intro}"
    if section.headers:
        text += "\n\n" + table([list(r) for r in section.rows], list(section.headers))
    return text


def _md_cell(value: Any) -> str:
    if isinstance(value, Value):
        if value.href is None:
            return _escape(value.text)
        return f"[{_escape(value.text)}]({value.href.replace(' ', '%20').replace(')', '%29')})"
    if isinstance(value, list):
        return " ".join(_md_cell(v) for v in value)
    text = "" if value is None or (isinstance(value, float) and math.isnan(value)) else str(value)
    return _escape(text)


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\r", "").replace("\n", "<br>")


def table(rows: list[list[Any]], headers: list[str]) -> str:
    """A GitHub table whose cells can never break it: pipes escaped, line breaks as <br>."""
    return tabulate(
        [[_md_cell(v) for v in row] for row in rows],
        headers=[_escape(h) for h in headers],
        tablefmt="github",
        disable_numparse=True,
    )
