"""Files written for other programs (issue 31, class 1): text from a result (names, warnings, failure
reasons, paths, environment strings, plan text) never changes the structure of junit.xml, the Markdown
files, the CSVs or the HTML page, and text that cannot be encoded is written escaped.

Each test here failed before its fix: a NUL in a failure reason made junit.xml unreadable, a lone
surrogate in a warning stopped the report at summary.md, a GPU named "# x" became a heading, a warning
"=1+1" a spreadsheet formula, a "$" a matplotlib formula that failed the plots.
"""

from __future__ import annotations

import csv
import io
import math
import os
import random
import re
import shutil
import xml.dom.minidom
import xml.etree.ElementTree as ET
from collections import Counter
from html.parser import HTMLParser
from pathlib import Path

import pandas as pd
import pytest
from markdown_it import MarkdownIt

from harness import jsonio
from harness.report import digest
from harness.report.analysis import release_gate, stats
from harness.report.analysis.model import Analysis, View
from harness.report.writers import markdown, plots, terminal
from harness.report.writers.document import Document, Section, Value
from harness.results import documents
from tests.conftest import run_cli
from tests.evidence import GPU_LOCAL_ROUNDS

# CommonMark with GitHub's tables and strikethrough; raw HTML on, as GitHub has it
MD = MarkdownIt("commonmark").enable(["table", "strikethrough"])
PAYLOADS = [
    "# x",
    "###### x",
    "x #",
    "- x",
    "+ x",
    "* x",
    "1. x",
    "1) x",
    "12345. x",
    "[a](http://evil.example)",
    "![i](x)",
    "[a][1]",
    "[1]",
    "[x]: http://evil.example",
    "[^1]",
    "[ ] task",
    "[x] done",
    "<img src=x onerror=alert(1)>",
    "<http://evil.example>",
    "<a@evil.example>",
    "<!-- c -->",
    "<div>",
    "</p>",
    "*em*",
    "**strong**",
    "_em_",
    "__strong__",
    "a._b_",
    "`code`",
    "``co`de``",
    "~~s~~",
    "> quote",
    "---",
    "***",
    "___",
    "===",
    "- - -",
    "    indented",
    "\tx",
    "a\rb",
    "a\nb",
    "a\r\n# b",
    "a\n---",
    "a\n===",
    "a\n    b",
    "x|y",
    "|",
    "&lt;b&gt;",
    "&amp;",
    "&#124;",
    "\\",
    "a\\",
    "\\*",
    "```",
    "~~~",
    "$x$",
    "]]>",
    "=1+1",
    "-2+3",
    "@SUM(A1)",
    "x\x00y\x07z\x1b",
    "\ufffe\uffff",
]
BLOCKS = {"p", "h1", "h2", "h3", "h4", "h5", "h6", "ul", "ol", "li", "blockquote", "hr", "pre", "table"}


class _Tags(HTMLParser):
    """The elements and attributes of a page, and its text (a <br> as a line break)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: Counter[str] = Counter()
        self.attributes: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags[tag] += 1
        self.attributes += [name for name, _ in attrs]
        if tag == "br":
            self.text.append("\n")

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def _parsed(page: str) -> _Tags:
    parser = _Tags()
    parser.feed(page)
    parser.close()
    return parser


def _words(text: str) -> list[str]:
    return text.split()


def _shown(text: str) -> list[str]:
    """What a reader must see of ``text``: its words (control characters as U+FFFD)."""
    return _words(re.sub(r"[\x00-\x08\x0e-\x1f\x7f]", "\ufffd", text))


CONTEXTS = {  # where a value lands in a page, and the elements that page has of its own
    "paragraph": ("{}", {"p"}),
    "prose": ("words before {} and after", {"p"}),
    "list item": ("- {}", {"ul", "li"}),
    "table cell": ("| h |\n| --- |\n| {} |", {"table", "thead", "tbody", "tr", "th", "td"}),
    "heading": ("# {}", {"h1"}),
    "bold": ("words **{}** words", {"p", "strong"}),
}


def _check_inline(text: str) -> None:
    for where, (template, own) in CONTEXTS.items():
        page = _parsed(MD.render(template.format(markdown.inline(text, cell=where == "table cell"))))
        assert set(page.tags) - {"br"} <= own, (where, text, page.tags)
        if where == "bold":  # whether ** opens depends on the value's first character: the words vary
            continue
        shown = {
            "prose": ["words", "before", *_shown(text), "and", "after"],
            "table cell": ["h", *_shown(text)],
        }
        assert _words("".join(page.text)) == shown.get(where, _shown(text)), (where, text, page.text)


@pytest.mark.parametrize("text", PAYLOADS)
def test_result_text_in_markdown_renders_as_that_text_and_nothing_else(text):
    _check_inline(text)


@pytest.mark.slow
def test_any_mix_of_markdown_punctuation_renders_as_itself():
    alphabet = "#-+=*_`~<>[]()!|\\&;:/.@$^{}\"' \t\n\r1a"
    rng = random.Random(31)
    for _ in range(1500):
        _check_inline("".join(rng.choice(alphabet) for _ in range(rng.randint(1, 12))))


@pytest.mark.parametrize("text", ["plain", "a`b", "``", "`x`", " x ", "a\n# b", "x|y", "\\*", "*"])
def test_a_value_in_a_code_span_stays_one_code_span(text):
    for template in ("{}", "- {}", "see {} here"):
        page = _parsed(MD.render(template.format(markdown.code(text))))
        assert page.tags["code"] == 1 and set(page.tags) <= {"p", "ul", "li", "code"}, (text, page.tags)
    rendered = MD.render(markdown.code(text))
    inner = rendered.split("<code>", 1)[1].split("</code>", 1)[0]
    assert _parsed(inner).text and "".join(_parsed(inner).text) == text.replace("\n", " ")


def test_a_fenced_block_holds_whatever_its_lines_hold():
    lines = ["RUN FAILED: x", "```", "````", "# x", "~~~", "</pre>", "a\rb"]
    page = _parsed(MD.render("before\n\n" + markdown.fenced("\n".join(lines)) + "\n\nafter"))
    assert page.tags == Counter({"p": 2, "pre": 1, "code": 1}), page.tags


def _document(text: str) -> Document:
    words = " ".join(markdown.inline(f"{p} {text}") for p in PAYLOADS)
    rows = tuple((p, Value(p, 1.0, "number", href=f"{p}.json"), [Value(p)]) for p in PAYLOADS)
    sections = (
        Section("Intro", f"Some **bold** prose, `code`, then values: {words} (the end)."),
        Section("Table", "", ("a|b", "# c", "d"), rows),
        Section("Sub", "x", level=3),
    )
    return Document(text, markdown.inline(text), sections)


def test_a_whole_markdown_page_keeps_its_structure_whatever_its_values_hold():
    hostile, benign = (markdown.page(_document(t)) for t in ("# x\n- y [a](b) *c*", "plain\nwords here"))
    assert max(map(len, hostile.splitlines())) <= markdown.MAX_LINE
    structure = _parsed(MD.render(hostile)).tags
    assert structure == _parsed(MD.render(benign)).tags
    assert structure["h1"] == 1 and structure["h2"] == 2 and structure["h3"] == 1 and structure["img"] == 0
    assert structure["a"] == 2 + len(PAYLOADS)  # the contents links and each row's own link, nothing else


# End to end: a copy of a real results folder whose text fields hold hostile strings, against the same
# folder holding plain strings in the same places: every file must have the same structure.

HOSTILE = (
    "# h\n- l\r\n1. o\r[a](http://evil.example) ![i](x) <img src=x onerror=alert(1)> *em* **b** _em_ "
    "`code` ~~s~~\n> q\n---\n    ind\t|p| &lt;b&gt; ]]> \x00\x07\x1b\ufffe\uffff\udc80 "
    "www.evil.example $m$ [3]"
)
BENIGN = "plain words\nin two lines"
FORMULA = "=HYPERLINK(1)"
# what the command prints is read as UTF-8 with anything else escaped (the console is not a file these
# tests are about)
ESCAPED = "backslashreplace"


def _results(folder: Path, text: str) -> Path:
    shutil.copytree(GPU_LOCAL_ROUNDS, folder)
    plan = jsonio.read(folder / "plan.json")
    plan["source"] = text
    jsonio.write_atomic(folder / "plan.json", plan)
    for i, path in enumerate(sorted(folder.glob("*.json.gz"))):
        doc = jsonio.read(path)
        doc["environment"]["gpu"]["name"] = text[:200]
        doc["environment"]["gpu"]["driver_version"] = text[:30]
        doc["environment"]["host"]["cpu_model"] = text
        doc["warnings"] += [text, f"{FORMULA} {text}", "@SUM(A1)", "-2+3"]
        doc["cudnn"]["loaded_dirs"] = [text, f"+{text}"]
        doc["cudnn"]["verification"] = text
        failed = doc["measurements"][1]
        doc["measurements"][1] = {k: failed[k] for k in ("workload", "dtype", "knobs", "params")}
        doc["measurements"][1].update(status="error", error=f"{FORMULA}{text}")
        if i == len(list(folder.glob("*.json.gz"))) - 1:  # one failed run
            doc["status"] = "failed"
            doc["failure"] = {"stage": "run", "reason": text, "log_tail": text}
        jsonio.write_atomic(path, doc)
        assert documents.check(path)[1] == []  # valid: the harness reads it as a result
    return folder


@pytest.fixture(scope="module")
def rendered(tmp_path_factory) -> dict[str, Path]:
    out = {}
    for name, text in (("hostile", HOSTILE), ("benign", BENIGN)):
        root = tmp_path_factory.mktemp(name)
        _results(root / "results", text)
        # relative folders: the commands and links that name them (a path is never shortened) are as long
        # wherever the tests run
        done = run_cli("report", "--results", "results", "--out", "report", cwd=root, errors=ESCAPED)
        assert done.returncode in (0, 1) and "Traceback" not in done.stderr, done.stderr[-3000:]
        out[name] = root / "report"
    return out


def _read(path: Path) -> str:
    return path.read_bytes().decode("utf-8")  # every file is UTF-8, whatever the text held


@pytest.mark.slow
def test_junit_xml_is_well_formed_whatever_a_result_holds(rendered):
    data = (rendered["hostile"] / "junit.xml").read_bytes()
    root = ET.fromstring(data)
    xml.dom.minidom.parseString(data)
    messages = [e.get("message") or "" for e in root.iter() if e.tag in ("failure", "skipped", "error")]
    assert any("onerror=alert(1)" in m and "]]>" in m for m in messages)
    benign = ET.parse(rendered["benign"] / "junit.xml").getroot()
    assert [e.tag for e in root.iter()] == [e.tag for e in benign.iter()]


@pytest.mark.slow
def test_markdown_files_keep_their_structure_whatever_a_result_holds(rendered):
    for name in ("report.md", "summary.md"):
        hostile, benign = (_read(rendered[k] / name) for k in ("hostile", "benign"))
        tags = [_parsed(MD.render(text)).tags for text in (hostile, benign)]
        for found in tags:
            del found["br"]  # line breaks inside a value are <br>, in both
        assert tags[0] == tags[1], name
        assert "onerror=alert(1)" in hostile and "\\udc80" in hostile  # shown, escaped
        lines = hostile.splitlines()
        assert lines[0].startswith("# " if name == "report.md" else "### ") and lines[1] == ""
        assert len(lines[2]) <= markdown.MAX_LINE and "NVIDIA" not in lines[2]  # the environment line
        assert max(map(len, lines)) <= markdown.MAX_LINE, name


@pytest.mark.slow
def test_the_html_page_keeps_its_structure_whatever_a_result_holds(rendered):
    hostile, benign = (_parsed(_read(rendered[k] / "report.html")) for k in ("hostile", "benign"))
    del hostile.tags["br"], benign.tags["br"]
    assert hostile.tags == benign.tags
    assert not [a for a in hostile.attributes if a.startswith("on")]
    assert "onerror=alert(1)" in "".join(hostile.text) and "*em*" in "".join(hostile.text)


def _csv_cells(path: Path) -> list[list[str]]:
    return list(csv.reader(io.StringIO(_read(path), newline="")))


def _is_number(text: str) -> bool:
    try:
        return math.isfinite(float(text))
    except ValueError:
        return False


@pytest.mark.slow
def test_csv_files_hold_no_formula_whatever_a_result_holds(rendered):
    for name in ("results.csv", "verdicts.csv"):
        rows = _csv_cells(rendered["hostile"] / name)
        benign = _csv_cells(rendered["benign"] / name)
        assert rows[0] == benign[0] and len(rows) == len(benign)
        cells = [c for row in rows for c in row]
        assert not [c for c in cells if c[:1] in ("=", "+", "-", "@", "\t", "\r") and not _is_number(c)]
        if name == "results.csv":
            assert any(c.startswith(f"'{FORMULA}") for c in cells)
            column = rows[0].index("median_s")
            assert all(_is_number(r[column]) for r in rows[1:] if r[column])


def test_csv_cells_neutralise_formulas_and_keep_numbers():
    frame = pd.DataFrame(
        {
            "text": ["=1+1", "+1", "-x", "@SUM(A1)", "\tx", "\rx", "plain", None],
            "number": [-1.5, 2.0, -3.0, 0.0, 1e-9, -1e300, float("nan"), 4.0],
            "count": [-1, 2, 3, 4, 5, 6, 7, 8],
        }
    )
    from harness import csvsafe  # the one function every CSV writer goes through

    rows = list(csv.reader(io.StringIO(csvsafe.to_csv(frame), newline="")))
    assert [r[0] for r in rows[1:]] == ["'=1+1", "'+1", "'-x", "'@SUM(A1)", "'\tx", "'\nx", "plain", ""]
    assert [r[1] for r in rows[1:]][:3] == ["-1.5", "2.0", "-3.0"] and rows[1][2] == "-1"
    assert "\n-1.5," not in csvsafe.to_csv(frame) and ",-1.5," in csvsafe.to_csv(frame)  # unquoted


def test_compare_as_csv_holds_no_formula():
    timing = pd.DataFrame(
        [
            {
                "workload": "=cmd",
                "dtype": "fp32",
                "knobs": "@k",
                "verdict": "failed",
                "median_baseline_s": -1.5,
                "median_candidate_s": 2.0,
                "ratio": float("nan"),
                "ci_low": None,
                "ci_high": None,
                "p_value": None,
                "reason": "-2+3",
            }
        ]
    )
    rows = list(csv.reader(io.StringIO(terminal.comparison(timing, "csv"), newline="")))
    row = dict(zip(rows[0], rows[1], strict=True))
    assert (row["workload"], row["knobs"], row["reason"]) == ("'=cmd", "'@k", "'-2+3")
    assert row["median_baseline_s"] == "-1.5"


def _summary_analysis(groups: int, rows_per_group: int, text: str) -> tuple[View, Analysis]:
    ids = tuple(f"cell{i}" for i in range(groups))
    view = View("big", ids[0], ids, {g: f"{g} {text}" for g in ids}, 5.0, 0.002, 3, "")
    docs = {
        g: [
            (
                {
                    "status": "ok",
                    "environment": {
                        "gpu": {"name": f"{text} {i % 4}", "driver_version": text[:32], "uuid": f"u{i}"},
                        "torch": {"version": text[:64], "cuda": "13.0"},
                    },
                    "cudnn": {"compat_check_overridden": True},
                    "warnings": [f"cuDNN was disabled, yet {text}", text],
                    "suite_version": "0.5",
                    "profile": text,
                },
                f"{g}.json",
            )
        ]
        for i, g in enumerate(ids)
    }
    timing = pd.DataFrame(
        [
            {
                "group": g,
                "workload": f"w{n}{text}",
                "dtype": "fp32",
                "mode": "fp32 (TF32 off)",  # every timing row names its mode (frames.mode)
                "knobs": text,
                "verdict": "slower",
                "ratio": 1.5 + n / 1000,
                "ci_low": 1.4,
                "ci_high": 1.6,
                "what_ran": "changed",
                "ran_change": text,
                "reason": text,
            }
            for g in ids[1:]
            for n in range(rows_per_group)
        ]
    )
    frame = pd.DataFrame({"what_ran_error": [text]})
    beyond = pd.DataFrame({"group": [ids[1]]})
    counts = {v: len(timing) if v == "slower" else 0 for v in stats.VERDICTS}
    gate = release_gate.Gate("regression", 1, counts, 0, tuple(f"{g}: {text}" for g in ids), (text,))
    empty = pd.DataFrame()
    return view, Analysis(frame, timing, empty, beyond, empty, gate, docs, {})


@pytest.mark.parametrize("groups,rows", [(2, 3), (300, 1), (3, 2000)])
def test_summary_md_keeps_its_size_and_its_header_line_whatever_a_result_holds(groups, rows):
    text = "é" * 3000 + "\n# x"  # two bytes a character, and a line break that must not start a block
    view, analysis = _summary_analysis(groups, rows, text)
    summary = digest.summary(view, analysis)
    assert len(summary.encode()) < digest.SUMMARY_LIMIT
    lines = summary.splitlines()
    assert lines[0].startswith("### ") and lines[1] == "" and lines[3] == ""
    assert lines[2].startswith("é") and lines[2].endswith("…")  # the environment line, cut to fit
    assert max(map(len, lines)) <= markdown.MAX_LINE
    assert _parsed(MD.render(summary)).tags["h3"] == 1 and "h1" not in _parsed(MD.render(summary)).tags


def test_a_dollar_sign_in_a_plot_label_is_text_not_a_formula():
    timing = pd.DataFrame(
        [
            {"group": g, "workload": "w $\\undefinedmacro{$ x", "dtype": "$fp32$", "knobs": "k"}
            | {"ratio": r, "verdict": "slower"}
            for g, r in (("a", 1.0), ("b", 1.3))
        ]
    )
    view = View("p", "a", ("a", "b"), {"a": "a", "b": "b"}, 5.0, 0.002, 3, "")
    import matplotlib

    matplotlib.use("Agg")
    caption, png = plots._heatmap(view, timing, view.letters)
    assert caption and len(png) > 1000


@pytest.mark.slow
def test_a_result_file_whose_name_is_not_utf8_is_reported_escaped(tmp_path):
    folder = tmp_path / "results"
    shutil.copytree(GPU_LOCAL_ROUNDS, folder)
    first = sorted(folder.glob("*.json.gz"))[0]
    os.rename(bytes(first), bytes(first.parent) + b"/\xff" + first.name.encode())
    done = run_cli("report", "--results", str(folder), "--out", str(tmp_path / "report"), errors=ESCAPED)
    assert done.returncode in (0, 1) and "Traceback" not in done.stderr, done.stderr[-3000:]
    report = tmp_path / "report"
    for name in ("report.md", "report.html", "summary.md", "junit.xml", "results.csv", "verdicts.csv"):
        _read(report / name)  # UTF-8
    assert "\\udcff" in _read(report / "results.csv") and "%FF" in _read(report / "report.md")
    ET.parse(report / "junit.xml")


@pytest.mark.slow
def test_the_repro_readme_keeps_its_structure_whatever_a_result_holds(tmp_path):
    readmes = []
    for name, text in (("hostile", HOSTILE), ("benign", BENIGN)):
        results = _results(tmp_path / name, text)
        out = tmp_path / f"{name}-repro"
        done = run_cli(
            "repro", "--results", str(results), "--workload", "sdpa", "--dtype", "bf16",
            "--candidate", "system", "--out", str(out), errors=ESCAPED,
        )  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr[-3000:]
        readmes.append(_read(out / "README.md"))
    tags = [_parsed(MD.render(text)).tags for text in readmes]
    for found in tags:
        del found["br"]
    assert tags[0] == tags[1] and tags[0]["h1"] == 1 and tags[0]["table"] == 1
    assert "onerror=alert(1)" in readmes[0]
