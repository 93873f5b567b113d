"""``harness site``: a history published as a static site (no server; nothing loaded from the network).

data.py (what the index holds, as the site reads it), steps.py (each row's steps between neighbouring
releases, judged as a report judges, and where a change began), names.py (every page's file name),
markup.py (escaping, the page shell, the vendored CSS and script), chart.py (inline SVG), index_page.py,
row_page.py, release_page.py, run_page.py, machine.py (index.json, a shard per row), feed.py
(regressions.xml, Atom), build.py (what to write: only the pages new runs touch).
"""
