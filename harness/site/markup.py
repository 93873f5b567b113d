"""Escaping, the page shell and the site's own CSS and script (vendored: written here, loaded from the
site's assets/ folder, never from a network).

Text from results goes through ``text``: HTML-escaped (as the report escapes), and with what XML cannot
hold (control characters, lone surrogates, U+FFFE/U+FFFF) replaced, so every page and the feed stay
well-formed whatever a result holds.
"""

from __future__ import annotations

import html
import re

_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ud800-\udfff\ufffe\uffff]")


def clean(value: object) -> str:
    return _NOT_XML.sub("\ufffd", str(value))


def text(value: object) -> str:
    """``value`` as text in an element or a quoted attribute."""
    return html.escape(clean(value), quote=True)


def seconds(value: float | None, digits: int = 3) -> str:
    """A time as people read it: 12.3 µs, 4.56 ms, 1.23 s."""
    if value is None:
        return "n/a"
    for scale, unit in ((1e-6, "µs"), (1e-3, "ms")):
        if value < scale * 1000:
            return f"{value / scale:.{digits}g} {unit}"
    return f"{value:.{digits}g} s"


def ratio(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def link(href: str, label: object, up: str) -> str:
    """A link to a page of the site (``href`` relative to its top; ``up`` the way there from this page)."""
    return f'<a href="{text(up + href)}">{text(label)}</a>'


def page(title: str, body: str, up: str) -> str:
    """A whole page; ``up`` is "" at the top, "../" one folder down."""
    return (
        "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'/>"
        "<meta name='viewport' content='width=device-width, initial-scale=1'/>"
        f"<title>{text(title)}</title>"
        f"<link rel='stylesheet' href='{up}assets/site.css'/>"
        f"<link rel='alternate' type='application/atom+xml' title='Regressions' href='{up}regressions.xml'/>"
        f"</head><body><nav><a href='{up}index.html'>History</a> · <a href='{up}regressions.xml'>"
        f"Regressions feed</a> · <a href='{up}index.json'>index.json</a></nav><main>"
        f"<h1>{text(title)}</h1>{body}</main>"
        f"<div id='tip' hidden='hidden'></div><script src='{up}assets/site.js'></script></body></html>\n"
    )


def table(headers: list[str], rows: list[list[str]], attributes: str = "", named: bool = False) -> str:
    """A table of cells already escaped; ``named``: each row's first cell is its header (never broken)."""
    head = "".join(f"<th>{text(h)}</th>" for h in headers)
    body = "".join(
        "<tr>"
        + "".join(
            f"<th scope='row'>{c}</th>" if named and i == 0 else f"<td>{c}</td>" for i, c in enumerate(row)
        )
        + "</tr>"
        for row in rows
    )
    return (
        f"<div class='scroll'><table{attributes}><thead><tr>{head}</tr></thead><tbody>{body}</tbody>"
        "</table></div>"
    )


CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:0;color:#1b1b1b;background:#fff}
nav{padding:.5em 1em;background:#f1f3f5;border-bottom:1px solid #dde}
main{padding:0 1em 2em;max-width:1600px}
h1{font-size:1.4em}h2{font-size:1.15em;margin-top:1.6em}h3{font-size:1em}
.scroll{overflow-x:auto;max-width:100%}
table{border-collapse:collapse;margin:.5em 0}
th,td{border:1px solid #dde;padding:.2em .5em;text-align:left;vertical-align:top;max-width:30em;
overflow-wrap:anywhere}
th{background:#f7f7f9;white-space:nowrap;overflow-wrap:normal;max-width:none}
th[scope=row]{font-weight:normal}
td.num{text-align:right;font-variant-numeric:tabular-nums}
.slower{color:#b00020}.faster{color:#1b7a2e}.failed{color:#8a4b00}
.muted{color:#666}
.plot{display:flex;background:#fcfcfd;border:1px solid #e5e5ea}
.plot svg{flex:none;overflow:visible}
svg.chart{flex:1 1 auto;width:100%;min-width:0}
svg .pt{stroke:#fff;stroke-width:.6;cursor:pointer}
svg .pt:hover{stroke:#000;stroke-width:1.5}
svg .axis{stroke:#999;stroke-width:1}
svg .grid{stroke:#eceef2;stroke-width:1}
svg text{font:11px system-ui,sans-serif;fill:#333}
#tip{position:absolute;background:#222;color:#fff;padding:.3em .5em;border-radius:3px;font-size:12px;
pointer-events:none;max-width:420px}
input.filter{padding:.3em;width:22em;margin:.3em 0}
.legend span{display:inline-block;margin-right:1em}
.legend i{display:inline-block;width:.8em;height:.8em;margin-right:.3em;border-radius:50%}
.legend i.hollow{border:1.5px solid #555;width:.6em;height:.6em;background:#fff}
.legend i.dashed{border-radius:0;height:0;width:1.6em;border-top:2px dashed #555;vertical-align:middle}
.spoiled{color:#8a4b00}
"""

SCRIPT = """
(function(){
  'use strict';
  // Filter: an input.filter narrows the rows of the table named by its data-table to those holding its text.
  document.querySelectorAll('input.filter').forEach(function(input){
    var table = document.getElementById(input.getAttribute('data-table'));
    if(!table){return;}
    input.hidden = false;
    input.addEventListener('input', function(){
      var words = input.value.toLowerCase().split(/\\s+/).filter(Boolean);
      table.querySelectorAll('tbody tr').forEach(function(tr){
        var t = tr.textContent.toLowerCase();
        tr.hidden = !words.every(function(w){ return t.indexOf(w) >= 0; });
      });
    });
  });
  // Points: hover shows the value and the run (each point's <title> says it too, without script).
  var tip = document.getElementById('tip');
  document.querySelectorAll('svg.chart .pt').forEach(function(pt){
    var title = pt.querySelector('title');
    var words = title ? title.textContent : '';
    pt.addEventListener('mouseenter', function(ev){
      tip.textContent = words; tip.hidden = false;
      tip.style.left = (ev.pageX + 12) + 'px'; tip.style.top = (ev.pageY + 12) + 'px';
    });
    pt.addEventListener('mouseleave', function(){ tip.hidden = true; });
    pt.addEventListener('click', function(){ window.location.href = pt.getAttribute('data-href'); });
  });
})();
"""
