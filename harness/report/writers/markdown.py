"""The report as GitHub Markdown: tables whose cells can never break them, no line over 300 characters,
and links as references (``[58.1 µs][3]`` with ``[3]: file`` at the end), so a table row holds its
numbers rather than their link targets.

Text from results, plans and paths is untrusted: it enters Markdown only through ``inline`` (or ``code``
and ``fenced``, where the harness shows it in a code span or a block), here and in every module that
writes Markdown, so it renders as exactly that text, never as a heading, list, link, image, raw HTML or
emphasis, in a table cell or outside one, and a line break in it never starts a new block.
"""

from __future__ import annotations

import re
from typing import Any

from harness.report.writers.document import Document, Section, Value, plain_text

MAX_LINE = 300  # GitHub renders longer lines, but nobody reads them: cells are shortened to fit (a path never
# is: a command or link that names one longer than a line runs longer)
ELLIPSIS = "…"
WORD_CUT = 30  # a cut moves back to the end of a word at most this many characters

_BREAK = re.compile(r"\r\n|\r|\n")  # CommonMark's line endings
_BLANK = re.compile(r"[ \t\x0b\x0c]+")  # runs render as one space; at a line's start they could indent code
_CONTROL = re.compile(r"[\x00-\x08\x0e-\x1f\x7f]")  # invisible; CommonMark itself makes NUL U+FFFD
_SURROGATE = re.compile("[\ud800-\udfff]")  # no UTF-8 for it: shown as its escape, as the file writer would
_SPECIAL = re.compile(r"[\\`*_|~$&@<>\[\]#+=\-.):]")  # the ASCII punctuation that can mean something
# A bracketed list of numbers (an interval "[0.990, 1.011]", a shape) is never a link, task or footnote:
# left as it is. Any other bracket is escaped.
_NUMBERS = re.compile(r"\[-?\d[\d.e+-]*(?:, -?\d[\d.e+-]*)+\](?![(\[:])")
_ORDERED = re.compile(r"(?<![^ \n])[0-9]{1,9}[.)](?![^ \n])")  # "1." or "1)" as a word of its own
_ALWAYS = set("\\`*|~$&@")  # emphasis, code, tables, strikethrough, math, entities, autolinked addresses
_OWN_LINE = set("+-=")  # a list item, a thematic break or a setext underline where they stand alone


def inline(text: str, limit: int | None = None, cell: bool = False) -> str:
    """``text`` (from a result, a plan or a path) as Markdown that GitHub renders as that very text, in
    prose (wherever a line is wrapped), a heading or a list item, or with ``cell`` in a table cell (where
    GitHub reads nothing that starts a block); ``limit``: at most that many characters, the text cut
    (never an escape) and ``…`` after it.

    Markdown's ASCII punctuation is backslash-escaped wherever it could start or end something: always
    for the characters that act anywhere (``\\ ` * | ~ $ & @ [ ] <``), ``_`` unless a letter or digit
    comes before it (then it opens nothing), and outside a cell, at the start of a word, those that act
    at a line's start (``# > + - =``, ``1.``, ``1)``). Line breaks become ``<br>`` (one line, as a table
    row needs), runs of blanks one space, control characters U+FFFD, a lone surrogate its escape
    (``\\udc80``, as the file writer would write it, so ``limit`` holds). What is left unescaped
    (``a_b``, ``2.11.0``, ``->``, ``p < 0.01``, ``[0.990, 1.011]``) is inert.
    """
    if limit is None:
        return _escaped(text, cell)
    if len(text) <= limit and len(shown := _escaped(text, cell)) <= limit:
        return shown
    keep = min(len(text), limit - 1)
    while True:  # cut the text, then escape it: a cut never leaves half an escape or half a <br>
        shown = _escaped(text[:keep].rstrip(), cell) + ELLIPSIS
        if len(shown) <= limit or keep == 0:
            break
        keep = max(0, keep - max(1, len(shown) - limit))
    # between words where one ends shortly before the cut: "beyond the 5%…", not "beyond the 5% threshol…"
    space = text.rfind(" ", max(0, keep - WORD_CUT), keep)
    if space > 0 and not text[keep : keep + 1].isspace():
        return _escaped(text[:space].rstrip(), cell) + ELLIPSIS
    return shown


def _shown(text: str) -> str:
    """What of ``text`` can be shown: control characters as U+FFFD, a lone surrogate as its escape."""
    text = _CONTROL.sub("\ufffd", text)
    return _SURROGATE.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)


def _escaped(text: str, cell: bool) -> str:
    text = _shown(_BLANK.sub(" ", _BREAK.sub("\n", text)))
    inert = {i for m in _NUMBERS.finditer(text) for i in (m.start(), m.end() - 1)}
    markers = set() if cell else {m.end() - 1 for m in _ORDERED.finditer(text)}
    escaped = _SPECIAL.sub(
        lambda m: f"\\{m.group()}" if _escape(text, m.start(), inert, markers, cell) else m.group(), text
    )
    return escaped.replace("\n", "<br>")


def _escape(text: str, i: int, inert: set[int], markers: set[int], cell: bool) -> bool:
    """Whether the punctuation at ``text[i]`` could mean something to GitHub's Markdown."""
    c = text[i]
    before = text[i - 1] if i else " "
    after = text[i + 1] if i + 1 < len(text) else " "
    if c in _ALWAYS:
        return True
    if c == "_":  # after a letter or digit it cannot open emphasis, and a closer alone is text
        return not before.isalnum()
    if c in "[]":
        return i not in inert
    if c == "<":  # raw HTML, an autolink or a comment begins with "<" and a letter, "/", "!" or "?"
        return not (after in " \n=-" or after.isdigit())
    if c == ":":  # an autolinked URL
        return text.startswith("//", i + 1)
    if c == "." and text[max(0, i - 3) : i].lower() == "www":  # an autolinked www. address
        return True
    if i in markers:  # "." or ")" after a number that begins a word: an ordered list at a line's start
        return True
    if cell or before not in " \n":  # block syntax acts only at a line's start: a wrap can put any word there
        return False
    if c in "#>":  # a heading, a block quote
        return True
    if c not in _OWN_LINE:
        return False
    # a list item ("- "), or a word of that character alone (a thematic break, a setext underline):
    # "--fresh" is neither, and left as written
    word = re.match(r"\S*", text[i:])
    return after in " \n" or (word is not None and set(word.group()) == {c})


def code(text: str) -> str:
    """``text`` as one code span in prose (not a table cell): shown as it is, whatever backticks it holds,
    its line breaks as spaces (a code span is one line: a break could start a block)."""
    body = _shown(_BREAK.sub(" ", text)) or " "
    fence = "`" * (max(map(len, re.findall("`+", body)), default=0) + 1)
    edge = body[0] == "`" or body[-1] == "`" or (body[0] == body[-1] == " " and body.strip(" ") != "")
    pad = " " if edge else ""  # CommonMark strips one space from each end of a padded span
    return f"{fence}{pad}{body}{pad}{fence}"


def fenced(text: str) -> str:
    """``text`` as a fenced code block, its lines as they are: no line of it can close the fence."""
    body = _shown(_BREAK.sub("\n", text))
    fence = "`" * max(3, max(map(len, re.findall("`+", body)), default=0) + 1)
    return f"{fence}\n{body}\n{fence}"


def target(href: str) -> str:
    """A link target that is one word of a link: what could end it, break its line or unbalance its
    parentheses (any of which leaves the link as text) percent-encoded; a file name's undecodable bytes
    as the bytes they were."""
    return "".join(c if _url_safe(c) else _percent(c) for c in href)


def _url_safe(c: str) -> bool:
    return ("!" <= c <= "~" and c not in '%()<>\\"`') or (c > "\x7f" and c.isprintable())


def _percent(c: str) -> str:
    try:
        data = c.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # a lone surrogate that was never a byte
        data = c.encode("utf-8", "surrogatepass")
    return "".join(f"%{b:02X}" for b in data)


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
    sections = [s for s in document.sections if not s.figure]  # a plot's section: the HTML page's alone
    body = "\n\n".join(_section(s, links) for s in sections)
    contents = wrap(
        "Contents: " + " · ".join(f"[{inline(s.title)}](#{s.anchor})" for s in sections if s.level == 2)
    )
    text = f"# {inline(document.title)}\n\n{document.header}\n\n{contents}\n\n{body}\n"
    return text + (f"\n{links.definitions()}\n" if links.numbers else "")


def _section(section: Section, links: Links) -> str:
    text = f"{'#' * section.level} {inline(section.title)}"
    if section.intro:
        text += f"\n\n{wrap(section.intro)}"
    if section.headers:
        text += "\n\n" + table([list(r) for r in section.rows], list(section.headers), links)
    return text


def table(rows: list[list[Any]], headers: list[str], links: Links | None = None) -> str:
    """A GitHub table whose cells can never break it (every text through ``inline``), with no line over
    MAX_LINE: the longest cells of a long row are shortened. Without ``links``, links stay inline."""
    lines = [_line([inline(h, cell=True) for h in headers]), _line(["---"] * len(headers))]
    lines += [_line(_fit(row, links)) for row in rows]
    return "\n".join(lines)


def _line(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def _fit(row: list[Any], links: Links | None) -> list[str]:
    """The row's cells, the longest plain-text cell shortened until the row fits; a link is never cut."""
    texts = [_plain(value) for value in row]  # what a cut may shorten: None for a cell with a link
    cells = [
        _md_cell(value, links) if text is None else inline(text, MAX_LINE, cell=True)
        for value, text in zip(row, texts, strict=True)
    ]
    while len(_line(cells)) > MAX_LINE:
        cuttable = [i for i, c in enumerate(cells) if texts[i] is not None and len(c) > 24]
        if not cuttable:
            break
        longest = max(cuttable, key=lambda i: len(cells[i]))
        keep = max(20, len(cells[longest]) - (len(_line(cells)) - MAX_LINE) - 1)
        cells[longest] = inline(texts[longest] or "", keep + 1, cell=True)
    return cells


def _plain(value: Any) -> str | None:
    """A cell's text where it holds no link."""
    if isinstance(value, Value):
        return value.text if value.href is None else None
    if isinstance(value, list):
        return None if any(v.href is not None for v in value) else " ".join(v.text for v in value)
    return plain_text(value)


def _md_cell(value: Any, links: Links | None) -> str:
    if isinstance(value, Value):
        if value.href is None:
            return inline(value.text, cell=True)
        href = target(value.href)
        if links is None:
            return f"[{inline(value.text, cell=True)}]({href})"
        return f"[{inline(value.text, cell=True)}][{links.ref(href)}]"
    if isinstance(value, list):
        return " ".join(_md_cell(v, links) for v in value)
    return inline(plain_text(value), cell=True)


_FENCE = re.compile(r"`{3,}")


def wrap(prose: str) -> str:
    """Prose with its lines kept under MAX_LINE (Markdown joins them again), broken only between words
    and never inside a code span; fenced blocks as they are."""
    out, fence = [], ""
    for line in prose.split("\n"):
        opening = None if fence else _FENCE.match(line)
        if fence or opening:
            if opening:
                fence = opening.group()
            elif line.strip().startswith(fence) and not line.strip().strip("`"):
                fence = ""  # the closing fence
            out.append(line)
            continue
        if len(line) <= MAX_LINE:
            out.append(line)
            continue
        current = ""
        for word in _words(line):
            if current and len(current) + 1 + len(word) > MAX_LINE:
                out.append(current)
                current = word
            else:
                current = f"{current} {word}" if current else word
        out.append(current)
    return "\n".join(out)


def _words(line: str) -> list[str]:
    """``line`` split at its spaces, a code span kept whole: a break inside one would end it early."""
    words, start, i = [], 0, 0
    while i < len(line):
        if line[i] == "\\":
            i += 2
        elif line[i] == "`":
            run = len(line) - i - len(line[i:].lstrip("`"))
            close = re.compile(f"(?<!`)`{{{run}}}(?!`)").search(line, i + run)
            i = close.end() if close else i + run
        elif line[i] == " ":
            words.append(line[start:i])
            start = i = i + 1
        else:
            i += 1
    return [*words, line[start:]]
