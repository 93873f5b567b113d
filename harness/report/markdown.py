"""The report as GitHub Markdown: tables whose cells can never break them, no line over 300 characters,
and links as references (``[58.1 µs][3]`` with ``[3]: file`` at the end), so a table row holds its
numbers rather than their link targets."""

from __future__ import annotations

from typing import Any

from harness.report.model import Document, Section, Value, plain_text

MAX_LINE = 300  # GitHub renders longer lines, but nobody reads them: cells are shortened to fit
ELLIPSIS = "…"


class Links:
    """Link targets by number, in the order the page first uses them."""

    def __init__(self) -> None:
        self.numbers: dict[str, int] = {}

    def ref(self, href: str) -> int:
        return self.numbers.setdefault(href, len(self.numbers) + 1)

    def definitions(self) -> str:
        return "\n".join(f"[{n}]: {href}" for href, n in self.numbers.items())


def page(document: Document) -> str:
    links = Links()
    body = "\n\n".join(_section(s, links) for s in document.sections)
    contents = _wrap(
        "Contents: " + " · ".join(f"[{s.title}](#{s.anchor})" for s in document.sections if s.level == 2)
    )
    text = f"# {document.title}\n\n{document.header}\n\n{contents}\n\n{body}\n"
    return text + (f"\n{links.definitions()}\n" if links.numbers else "")


def _section(section: Section, links: Links) -> str:
    text = f"{'#' * section.level} {section.title}"
    if section.intro:
        text += f"\n\n{_wrap(section.intro)}"
    if section.headers:
        text += "\n\n" + table([list(r) for r in section.rows], list(section.headers), links)
    return text


def table(rows: list[list[Any]], headers: list[str], links: Links | None = None) -> str:
    """A GitHub table whose cells can never break it (pipes escaped, line breaks as <br>), with no line
    over MAX_LINE: the longest cells of a long row are shortened. Without ``links``, links stay inline."""
    lines = [_line([_escape(h) for h in headers]), _line(["---"] * len(headers))]
    for row in rows:
        lines.append(_line(_fit([_md_cell(v, links) for v in row])))
    return "\n".join(lines)


def _line(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def _fit(cells: list[str]) -> list[str]:
    """Shorten the longest plain-text cell until the row fits; a link is never cut."""
    while len(_line(cells)) > MAX_LINE:
        cuttable = [i for i, c in enumerate(cells) if "](" not in c and "][" not in c and len(c) > 24]
        if not cuttable:
            break
        longest = max(cuttable, key=lambda i: len(cells[i]))
        keep = max(20, len(cells[longest]) - (len(_line(cells)) - MAX_LINE) - 1)
        cells[longest] = _cut(cells[longest], keep)
    return cells


def _cut(text: str, keep: int) -> str:
    cut = text[:keep]
    if "<br" in cut[-4:] or cut.endswith("\\"):  # never leave half an escape or a half <br>
        cut = cut.rsplit("<br", 1)[0].rstrip("\\")
    return cut.rstrip() + ELLIPSIS


def _md_cell(value: Any, links: Links | None) -> str:
    if isinstance(value, Value):
        if value.href is None:
            return _escape(value.text)
        target = value.href.replace(" ", "%20").replace(")", "%29")
        if links is None:
            return f"[{_escape(value.text)}]({target})"
        return f"[{_escape(value.text)}][{links.ref(target)}]"
    if isinstance(value, list):
        return " ".join(_md_cell(v, links) for v in value)
    return _escape(plain_text(value))


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\r", "").replace("\n", "<br>")


def _wrap(prose: str) -> str:
    """Prose with its lines kept under MAX_LINE (Markdown joins them again); fenced blocks as they are."""
    out, fenced = [], False
    for line in prose.split("\n"):
        if line.startswith("```"):
            fenced = not fenced
        if fenced or line.startswith("```") or len(line) <= MAX_LINE:
            out.append(line)
            continue
        current = ""
        for word in line.split(" "):
            if current and len(current) + 1 + len(word) > MAX_LINE:
                out.append(current)
                current = word
            else:
                current = f"{current} {word}" if current else word
        out.append(current)
    return "\n".join(out)
