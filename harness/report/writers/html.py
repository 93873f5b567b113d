"""One self-contained HTML page: the report's sections as sortable tables, plots embedded as PNG.

No network, no external script or stylesheet: the page opens from a mail attachment or an artifact
store as it is. A click on a column header sorts by it (numbers by the value a cell carries, via
``data-sort``). No text from a result file reaches markup unescaped, nor any attribute. Nothing is wider
than the window: a table scrolls in its own box (its header row stays in sight), an image shrinks to fit.
"""

from __future__ import annotations

import html
import math
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from harness.report.writers.document import VERDICT_ORDER, Document, Section, Value, plain_text

if TYPE_CHECKING:  # plots imports numpy and pandas; the page only reads a plot's fields
    from harness.report.writers.plots import Plot

STYLE = """
body{font:14px/1.45 system-ui,sans-serif;margin:2em;max-width:1600px;color:#1b1b1b;overflow-wrap:break-word}
.scroll{overflow:auto;max-width:100%;max-height:85vh;margin:.6em 0 1.6em}
table{border-collapse:collapse;font-size:12.5px}
th,td{border:1px solid #ccd;padding:3px 7px;vertical-align:top;text-align:left}
th{background:#eef;cursor:pointer;user-select:none;position:sticky;top:0}
th.sorted-asc::after{content:" ▲"} th.sorted-desc::after{content:" ▼"}
tr:nth-child(even) td{background:#fafaff} pre{background:#f4f4f8;padding:.8em;overflow:auto}
.v-slower{color:#b00020;font-weight:600}.v-faster{color:#006b2e;font-weight:600}.v-inconclusive{color:#9a6700}
.v-failed,.v-missing{color:#b00020} img{max-width:100%;height:auto;border:1px solid #dde}
summary{cursor:pointer} summary h2,summary h3{display:inline}
nav{margin:.4em 0 1em;font-size:13px} .filter{margin:.4em 0} .filter input[type=search]{width:22em}
figure{display:inline-block;margin:.4em;vertical-align:top;max-width:calc(100% - .8em)}
figure.whole{display:block} figcaption{font-size:12px;color:#555}
@media (max-width:600px){body{margin:1em}}
"""

# {checked}: a table whose every row is 'same' shows them from the start, or it would open empty
FILTER = (
    "<div class='filter'><label><input type='checkbox' class='show-same'{checked}> "
    "show rows whose verdict is same</label> "
    "<input type='search' class='search' placeholder='search rows (workload, mode, group...)'></div>"
)

SCRIPT = """
document.querySelectorAll('table.filterable').forEach(function (table) {
  var controls = table.parentElement.previousElementSibling, box = controls.querySelector('.show-same');
  var search = controls.querySelector('.search');
  function apply() {
    var words = search.value.toLowerCase().split(/\\s+/).filter(Boolean);
    Array.from(table.tBodies[0].rows).forEach(function (row) {
      var text = row.textContent.toLowerCase();
      var hidden = (row.classList.contains('same') && !box.checked && !words.length) ||
        !words.every(function (w) { return text.indexOf(w) >= 0; });
      row.style.display = hidden ? 'none' : '';
    });
  }
  box.addEventListener('change', apply);
  search.addEventListener('input', apply);
  apply();
});
document.querySelectorAll('table.sortable').forEach(function (table) {
  table.querySelectorAll('th').forEach(function (th, column) {
    th.addEventListener('click', function () {
      var body = table.tBodies[0], rows = Array.from(body.rows);
      var ascending = !th.classList.contains('sorted-asc');
      table.querySelectorAll('th').forEach(function (h) { h.classList.remove('sorted-asc', 'sorted-desc'); });
      th.classList.add(ascending ? 'sorted-asc' : 'sorted-desc');
      function key(row) {
        var cell = row.cells[column], raw = cell.getAttribute('data-sort');
        if (raw !== null && raw !== '' && !isNaN(Number(raw))) return [0, Number(raw)];
        return [1, cell.textContent.trim().toLowerCase()];
      }
      rows.sort(function (a, b) {
        var x = key(a), y = key(b), order = x[0] - y[0];
        if (!order) order = x[1] < y[1] ? -1 : (x[1] > y[1] ? 1 : 0);
        return ascending ? order : -order;
      });
      rows.forEach(function (row) { body.appendChild(row); });
    });
  });
});
"""


def page(document: Document, plots: Sequence[Plot]) -> str:
    """The page. A plot shows under the section whose ``figure`` names its kind (a section whose kind has no
    plot is left out, from the contents too); the others after the section that asks for them."""
    title = document.title
    kinds = {p.kind for p in plots}
    shown = [s for s in document.sections if not s.figure or s.figure in kinds]
    placed = {s.figure for s in shown}
    rest = [p for p in plots if p.kind not in placed]
    parts = [
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width, initial-scale=1'>"  # a phone: its own width
        f"<title>{_e(title)}</title>",
        f"<style>{STYLE}</style></head><body><h1>{_e(title)}</h1>",
        _prose(document.header),
        "<nav><b>Contents:</b> "
        + " · ".join(f"<a href='#{_e(s.anchor)}'>{_e(s.title)}</a>" for s in shown if s.level == 2)
        + "</nav>",
    ]
    for section in shown:
        heading = f"<h{section.level} id='{_e(section.anchor)}'>{_e(section.title)}</h{section.level}>"
        parts.append(f"<details><summary>{heading}</summary>" if section.collapsed else heading)
        if section.intro:
            parts.append(_prose(section.intro))
        if section.headers:
            if section.filterable:
                every_row_same = all(any(_verdict_class(v) == "same" for v in row) for row in section.rows)
                parts.append(FILTER.format(checked=" checked" if every_row_same else ""))
            parts.append(_table(section))
        if section.figure:
            parts.append(_figures([p for p in plots if p.kind == section.figure], " class='whole'"))
        if section.plots_after and rest:
            parts.append("<h3>Plots</h3>" + _figures(rest))
        if section.collapsed:
            parts.append("</details>")
    parts.append(f"<script>{SCRIPT}</script></body></html>")
    return "\n".join(parts)


def _table(section: Section) -> str:
    head = "".join(f"<th>{_e(h)}</th>" for h in section.headers)
    body = []
    for row in section.rows:
        cells = []
        for value in row:
            sort = _sort_key(value)
            attribute = f" data-sort='{sort}'" if sort is not None else ""
            verdict = _verdict_class(value)
            css = f" class='v-{verdict}'" if verdict else ""
            cells.append(f"<td{attribute}{css}>{_cell(value)}</td>")
        same = any(_verdict_class(v) == "same" for v in row)
        body.append(("<tr class='same'>" if same else "<tr>") + "".join(cells) + "</tr>")
    css = "sortable filterable" if section.filterable else "sortable"
    return (
        f"<div class='scroll'><table class='{css}'><thead><tr>{head}</tr></thead>"
        f"<tbody>{''.join(body)}</tbody></table></div>"
    )


def _verdict_class(value: Any) -> str | None:
    """The CSS class of a verdict cell; None for anything else."""
    if isinstance(value, Value) and value.kind == "verdict" and value.verdict in VERDICT_ORDER:
        return value.verdict
    return None


def _href(target: str) -> str:
    """A link target that can only be a relative path: a scheme-like first segment gets './' before it."""
    return _e(f"./{target}" if ":" in target.split("/", 1)[0] else target)


def _cell(value: Any) -> str:
    if isinstance(value, Value):
        text = _e(value.text).replace("\n", "<br>")
        return f"<a href='{_href(value.href)}'>{text}</a>" if value.href is not None else text
    if isinstance(value, list):
        return " ".join(_cell(v) for v in value)
    return _e(plain_text(value)).replace("\n", "<br>")


def _sort_key(value: Any) -> float | None:
    """The number a cell stands for: a value's own, or a plain number; never one read back from text."""
    if isinstance(value, Value):
        return value.number if value.number is not None and math.isfinite(value.number) else None
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    return None


# What the report's prose holds (``markdown.inline``, ``code`` and ``fenced`` write it): a fenced block at a
# line's start, a backslash escape, a code span, **, <br>, a blank line; anything else is text.
_PROSE = re.compile(r"(?m:^(`{3,})\n)|\\([!-/:-@\[-`{-~])|(`+)|\*\*|<br>|\n\n")


_FENCE_OPEN = re.compile(r"(`{3,})")


def _fence_end(fence: str) -> re.Pattern[str]:
    """A line that closes the fenced block ``fence`` opened: a fence at least as long, spaces after it."""
    return re.compile(f"(?m)^{fence}`*[ \t]*$")


_BULLET = "- "


def _prose(text: str) -> str:
    """The report's prose as HTML blocks: paragraphs (split at blank lines), a run of lines that start with
    "- " as a list (a line that follows an item without a mark of its own continues it, as Markdown reads
    it), and fenced blocks whole; the text of each through ``_markdownish``."""
    blocks: list[str] = []
    lines = text.split("\n")
    paragraph: list[str] = []
    items: list[list[str]] = []

    def flush() -> None:
        if paragraph:
            blocks.append(f"<p>{_markdownish(chr(10).join(paragraph))}</p>")
            paragraph.clear()
        if items:
            blocks.append(
                "<ul>" + "".join(f"<li>{_markdownish(chr(10).join(i))}</li>" for i in items) + "</ul>"
            )
            items.clear()

    i = 0
    while i < len(lines):
        line = lines[i]
        fence = _FENCE_OPEN.fullmatch(line)
        if fence and i + 1 < len(lines):  # up to a closing fence at least as long, or the end
            end = next(
                (j for j in range(i + 1, len(lines)) if _fence_end(fence.group(1)).fullmatch(lines[j])),
                len(lines) - 1,
            )
            flush()
            blocks.append(_markdownish("\n".join(lines[i : end + 1])))
            i = end + 1
            continue
        if not line.strip():
            flush()
        elif line.startswith(_BULLET):
            if paragraph:
                flush()
            items.append([line[len(_BULLET) :]])
        elif items:
            items[-1].append(line)
        else:
            paragraph.append(line)
        i += 1
    flush()
    return "".join(blocks)


def _markdownish(text: str) -> str:
    """The Markdown of the report's prose as HTML: **bold**, code spans, fenced blocks, line breaks and
    backslash escapes, as GitHub reads them (so a value's ``\\*`` is a star, not bold), and nothing else."""
    out, bold, i = [], False, 0
    for m in _PROSE.finditer(text):
        if m.start() < i:  # inside a code span or block already written
            continue
        out.append(_e(text[i : m.start()]))
        i = m.end()
        fence, escaped, run = m.group(1), m.group(2), m.group(3)
        if fence:  # a fenced block: its lines as they are, up to a fence at least as long
            end = _fence_end(fence).search(text, i)
            block = text[i : end.start() if end else len(text)].removesuffix("\n")
            out.append(f"<pre>{_e(block)}</pre>")
            i = end.end() if end else len(text)
        elif escaped:
            out.append(_e(escaped))
        elif run:
            end = re.compile(f"(?<!`){run}(?!`)").search(text, i)
            if end:  # a code span: its text as it is, one space stripped from each end of a padded one
                body = text[i : end.start()]
                if body[:1] == body[-1:] == " " and body.strip(" "):
                    body = body[1:-1]
                out.append(f"<code>{_e(body)}</code>")
                i = end.end()
            else:
                out.append(_e(run))
        elif m.group() == "**":
            out.append("</b>" if bold else "<b>")
            bold = not bold
        else:
            out.append("<br>" if m.group() == "<br>" else "<br><br>")
    out.append(_e(text[i:]) + ("</b>" if bold else ""))
    return "".join(out)


def _e(text: str) -> str:
    return html.escape(text, quote=True)


def _figures(plots: Sequence[Plot], attributes: str = "") -> str:
    return "".join(
        f"<figure{attributes}><img alt='{_e(p.caption)}' "
        f"src='data:image/png;base64,{p.png}'><figcaption>{_e(p.caption)}</figcaption></figure>"
        for p in plots
    )
