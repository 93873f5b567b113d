"""A results folder is untrusted input: what an attacker who writes one can and cannot make the harness do.

Each test here failed before its fix (issue 15): a glyph-led string from a result file reached an HTML
attribute; copies of one document counted as independent rounds.
"""

from __future__ import annotations

import shutil
from html.parser import HTMLParser
from pathlib import Path

from harness import jsonio
from tests.conftest import GPU_REPORT, run_cli

PAYLOAD = "▼ slower x'onmouseover='alert(1)"  # its last word once became a CSS class, unescaped


class _Attributes(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.names: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.names += [name for name, _ in attrs]


def _copy_results(tmp_path: Path) -> Path:
    folder = tmp_path / "results"
    folder.mkdir()
    for path in [*sorted((GPU_REPORT / "results").glob("*.json.gz")), GPU_REPORT / "results" / "plan.json"]:
        shutil.copy(path, folder / path.name)
    return folder


def test_no_string_from_a_result_file_reaches_an_html_attribute(tmp_path):
    folder = _copy_results(tmp_path)
    for path in folder.glob("*.json.gz"):
        doc = jsonio.read(path)
        doc["environment"]["gpu"]["name"] = PAYLOAD
        doc["warnings"].append(PAYLOAD)
        jsonio.write_atomic(path, doc)
    done = run_cli("report", "--results", str(folder), "--out", str(tmp_path / "report"))
    assert done.returncode in (0, 1), done.stderr
    page = (tmp_path / "report" / "report.html").read_text()
    assert "onmouseover" in page  # the text is shown ...
    parser = _Attributes()
    parser.feed(page)
    assert not [n for n in parser.names if n.startswith("on")]  # ... never as markup
