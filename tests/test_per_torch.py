"""Per torch build: each cuDNN source judged against its own torch build's cell with the baseline's cuDNN
source, from real atlas rounds cloned into a 2 torch builds x 3 cuDNN sources matrix with planted changes."""

from __future__ import annotations

import copy
import csv
import io
import json
import statistics
from collections import Counter
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from markdown_it import MarkdownIt

from harness import jsonio, schemas
from harness.backends import registry
from harness.plan import matrix
from harness.plan.model import Cell, Plan
from harness.report.analysis import families, per_torch
from harness.report.analysis.model import Analysis, View
from harness.report.sections import per_torch_sections
from harness.report.sections.context import SectionContext
from harness.report.writers import markdown
from harness.report.writers.document import Document
from harness.results import documents, folder
from harness.results.documents import LoadedResults
from harness.suite.timing.summary import summarize
from tests.conftest import run_cli
from tests.evidence import RELEASE_ATLAS

ATLAS = RELEASE_ATLAS / "results"
ROWS = (
    ("train_resnet50", "fp32"),
    ("train_resnet50", "bf16"),
    ("train_transformer_block", "fp32"),
    ("conv2d_r50_c3_3x3", "fp32"),
    ("conv2d_r50_3x3", "fp32"),
    ("batchnorm2d_r50_64x56", "fp32"),
)
MATRIX = """\
schema_version: 1
name: per-torch
backend: local
axes:
  torch: [installed, "2.13.0"]
  cudnn: [bundled, {system: auto}, {wheel: "9.28.1.4"}]
suite:
  profile: atlas
  device: cuda
  dtypes: [fp32, bf16]
  rows: [ROWS]
baseline: {torch: installed, cudnn: bundled}
rounds: 3
"""
# The real rounds' medians are scaled to their common median times these (a fixed 0.4 % spread): the
# verdicts follow the planted changes, never this machine's load.
SPREAD = (1.0, 1.004, 0.996)
TORCH_CHANGE = 1.5  # every 2.13.0 cell against every installed one: what a single baseline mixes in
PLANTED = {  # (torch, cuDNN kind) -> {row: time factor against the same build's bundled cell}
    ("2.13.0", "system"): {("train_resnet50", "fp32"): 1.2},  # 20 % slower, under 2.13.0 only
    ("installed", "wheel"): {("conv2d_r50_c3_3x3", "fp32"): 0.8},  # faster, under installed only
}


def factor(cell: Cell, row: tuple[str, str]) -> float:
    build = TORCH_CHANGE if cell.torch == "2.13.0" else 1.0
    return build * PLANTED.get((cell.torch, cell.cudnn.kind), {}).get(row, 1.0)


@pytest.fixture(scope="module")
def real_rounds() -> list[dict[str, Any]]:
    """Three real H200 rounds of the atlas's bundled cell, cut to ROWS."""
    files = sorted(ATLAS.glob("torch-installed_cudnn-bundled_*.r[123].json.gz"))
    docs = [jsonio.read(path) for path in files]
    assert len(docs) == 3
    for doc in docs:
        doc["measurements"] = [m for m in doc["measurements"] if (m["workload"], m["dtype"]) in ROWS]
        assert len(doc["measurements"]) == len(ROWS) and all(m["status"] == "ok" for m in doc["measurements"])
    return docs


def clones(real: list[dict[str, Any]], cell: Cell) -> list[dict[str, Any]]:
    """The real rounds as ``cell``'s (valid documents): each row's samples scaled to the rounds' common
    median times its SPREAD, then times ``factor``."""
    out = []
    for doc, spread in zip(real, SPREAD, strict=True):
        doc = copy.deepcopy(doc)
        doc["cell"] = {"id": cell.id, **cell.to_json()}
        doc["host"] = {**doc["host"], "busy": False, "why": "", "load_start": None, "load_end": None}
        if cell.cudnn.kind == "wheel":  # a result loads the cuDNN its cell names (validate checks it)
            doc["cudnn"]["runtime_version"] = ".".join(str(cell.cudnn.value).split(".")[:3])
        for m in doc["measurements"]:
            row = (m["workload"], m["dtype"])
            common = statistics.median(
                n["stats"]["median"]
                for d in real
                for n in d["measurements"]
                if (n["workload"], n["dtype"]) == row
            )
            scale = common * spread * factor(cell, row) / m["stats"]["median"]
            m["samples_s"] = [s * scale for s in m["samples_s"]]
            m["stats"] = dict(summarize(m["samples_s"]))
            m.pop("window_medians_s", None)  # the real run's windows, not the scaled ones
            m.pop("stalled", None)
        out.append(doc)
    return out


def write_results(root: Path, real: list[dict[str, Any]], text: str) -> Path:
    """A results folder of the matrix ``text``: its plan.json, and each cell's three cloned rounds."""
    (root / "matrix.yaml").write_text(text.replace("ROWS", ", ".join(f"{w}:{d}" for w, d in ROWS)))
    plan = matrix.load(root / "matrix.yaml", [w for w, _ in ROWS], registry.cell_problems)
    results = root / "results"
    for cell in plan.cells:
        for doc in clones(real, cell):
            path = folder.result_path(results, cell.id, doc["run"]["round"])
            jsonio.write_atomic(path, doc, compact=True)
            assert documents.check(path)[1] == [], path
    folder.write_plan(results, plan)
    return results


def render(root: Path, real: list[dict[str, Any]], text: str) -> tuple[Path, Plan]:
    results = write_results(root, real, text)
    done = run_cli("report", "--results", str(results), "--out", str(root / "report"))
    assert done.returncode in (0, 1) and "Traceback" not in done.stderr, (
        done.stdout[-2000:] + done.stderr[-2000:]
    )
    return root / "report", folder.stored_plan(results)


@pytest.fixture(scope="module")
def report(real_rounds, tmp_path_factory) -> tuple[Path, Plan]:
    return render(tmp_path_factory.mktemp("per-torch"), real_rounds, MATRIX)


def section(page: str, title: str, level: str = "##") -> str:
    return page.split(f"\n{level} {title}\n", 1)[1].split("\n## ", 1)[0].split("\n### ", 1)[0]


def table(text: str) -> list[dict[str, str]]:
    """A Markdown table's rows by header, its cells' escapes undone."""
    lines = [line for line in text.splitlines() if line.startswith("| ")]
    head, body = lines[0], lines[2:]

    def cells(line: str) -> list[str]:
        return [c.strip().replace("\\", "") for c in line.strip("|").split(" | ")]

    return [dict(zip(cells(head), cells(line), strict=True)) for line in body]


def cell_of(plan: Plan, torch: str, kind: str) -> Cell:
    return next(c for c in plan.cells if c.torch == torch and c.cudnn.kind == kind)


@pytest.mark.slow  # renders a report through the command line
def test_the_section_comes_right_after_by_family_in_markdown_and_html(report):
    out, _ = report
    page = (out / "report.md").read_text()
    headings = [line[3:] for line in page.splitlines() if line.startswith("## ")]
    assert headings[headings.index("By family") + 1] == "Per torch build", headings
    html = (out / "report.html").read_text()
    assert (
        html.index("id='by-family'") < html.index("id='per-torch-build'") < html.index("id='read-this-first'")
    )


@pytest.mark.slow  # renders a report through the command line
def test_each_build_is_judged_against_its_own_bundled_cell(report):
    out, plan = report
    lines = table(section((out / "report.md").read_text(), "Per torch build"))
    assert [(line["torch"], line["cuDNN"]) for line in lines] == [
        ("installed", "system:auto"),
        ("installed", "wheel:9.28.1.4"),
        ("2.13.0", "system:auto"),
        ("2.13.0", "wheel:9.28.1.4"),
    ]
    letters = {c.id: chr(65 + i) for i, c in enumerate(plan.cells)}
    for line in lines:
        local = cell_of(plan, line["torch"], "bundled")
        assert line["judged against"] == f"{letters[local.id]}: {local.label}", line
    by = {(line["torch"], line["cuDNN"].split(":")[0]): line for line in lines}
    # the planted 20 % is 2.13.0's alone: slower there, same under installed; 2.13.0's torch change
    # (1.5x every row) is in no verdict of its own build
    assert "train_resnet50 fp32 (TF32 off): slower 1.2" in by["2.13.0", "system"]["model rows"]
    assert "train_resnet50 fp32 (TF32 off): same 1.0" in by["installed", "system"]["model rows"]
    assert by["2.13.0", "system"]["model rows"].startswith("train_resnet50 fp32")  # model rows first
    assert (by["2.13.0", "system"]["slower"], by["2.13.0", "system"]["same"]) == ("1", "5")
    assert (by["2.13.0", "wheel"]["slower"], by["2.13.0", "wheel"]["same"]) == ("0", "6")
    assert (by["installed", "wheel"]["faster"], by["installed", "wheel"]["same"]) == ("1", "5")
    families = {
        (line["torch"], line["cuDNN"].split(":")[0]): line["families with a row faster, slower or failed"]
        for line in table(
            section((out / "report.md").read_text(), "Families that changed, per torch build", "###")
        )
    }
    assert families["installed", "wheel"] == "conv forward NCHW fp32 (TF32 off): 1 faster, 0 slower of 2"
    assert (by["installed", "system"]["same"], families["installed", "system"]) == ("6", "none")
    # against the one baseline, every 2.13.0 row is slower: the torch change the section keeps out
    scorecard = table(section((out / "report.md").read_text(), "Scorecard"))
    assert [row["slower"] for row in scorecard] == ["0", "0", "6", "6", "6"]


@pytest.mark.slow  # renders a report through the command line
def test_per_torch_csv_and_verdict_json_agree_with_the_section(report):
    out, plan = report
    rows = list(csv.DictReader(io.StringIO((out / "per_torch.csv").read_text())))
    assert list(rows[0]) == [
        "torch",
        "cudnn",
        "cell",
        "baseline",
        "workload",
        "dtype",
        "mode",
        "knobs",
        "verdict",
        "ratio",
        "family",
        "what_ran",
    ]
    assert len(rows) == 4 * len(ROWS)
    for row in rows:
        assert row["baseline"] == cell_of(plan, row["torch"], "bundled").id
        assert row["family"] == families.family_of(row["workload"])
        assert row["mode"] == {"fp32": "fp32 (TF32 off)", "bf16": "bf16"}[row["dtype"]]  # its id, named
    slower = [(r["torch"], r["cudnn"], r["workload"], r["dtype"]) for r in rows if r["verdict"] != "same"]
    assert sorted(slower) == [
        ("2.13.0", "system:auto", "train_resnet50", "fp32"),
        ("installed", "wheel:9.28.1.4", "conv2d_r50_c3_3x3", "fp32"),
    ]
    verdict = json.loads((out / "verdict.json").read_text())
    assert schemas.problems("verdict", verdict, "verdict.json") == []
    assert verdict["exit_code"] == 1  # 2.13.0's rows are slower against the one baseline
    recounted = Counter((r["torch"], r["cudnn"], r["verdict"]) for r in rows)
    section_lines = {
        (line["torch"], line["cuDNN"]): line
        for line in table(section((out / "report.md").read_text(), "Per torch build"))
    }
    assert len(verdict["per_torch"]) == 4
    for entry in verdict["per_torch"]:
        key = (entry["torch"], entry["cudnn"])
        assert entry["baseline"] == cell_of(plan, entry["torch"], "bundled").id
        assert entry["counts"] == {word: recounted[(*key, word)] for word in families.VERDICTS}
        assert entry["rows"] == sum(entry["counts"].values()) == len(ROWS)
        for word in ("faster", "slower", "same"):
            assert section_lines[key][word] == str(entry["counts"][word])
        models = {(m["workload"], m["dtype"]): m for m in entry["models"]}
        assert set(models) == {r for r in ROWS if r[0].startswith("train_")}
    (planted,) = [e for e in verdict["per_torch"] if (e["torch"], e["cudnn"]) == ("2.13.0", "system:auto")]
    model = next(m for m in planted["models"] if (m["workload"], m["dtype"]) == ("train_resnet50", "fp32"))
    assert model["verdict"] == "slower" and model["ratio"] == pytest.approx(1.2, rel=0.01)
    assert model["mode"] == "fp32 (TF32 off)"


@pytest.mark.slow  # renders a report through the command line
def test_a_build_without_the_baselines_source_is_said_not_judged(real_rounds, tmp_path):
    text = MATRIX + 'rules: {exclude: [{torch: "2.13.0", cudnn: bundled}]}\n'
    out, _ = render(tmp_path, real_rounds, text)
    lines = table(section((out / "report.md").read_text(), "Per torch build"))
    unjudged = [line for line in lines if line["torch"] == "2.13.0"]
    assert len(unjudged) == 2 and all(line["judged against"].startswith("nothing") for line in unjudged)
    assert (
        "**Not judged:** torch 2.13.0 has no cell with cuDNN bundled that measured anything"
        in (out / "report.md").read_text()
    )
    verdict = json.loads((out / "verdict.json").read_text())
    assert schemas.problems("verdict", verdict, "verdict.json") == []
    assert [e["baseline"] for e in verdict["per_torch"] if e["torch"] == "2.13.0"] == [None, None]
    assert {r["torch"] for r in csv.DictReader(io.StringIO((out / "per_torch.csv").read_text()))} == {
        "installed"
    }


@pytest.mark.slow  # renders a report through the command line
def test_a_matrix_of_one_torch_build_has_no_such_section(real_rounds, tmp_path):
    out, _ = render(tmp_path, real_rounds, MATRIX.replace('[installed, "2.13.0"]', "[installed]"))
    assert "Per torch build" not in (out / "report.md").read_text()
    assert "Per torch build" not in (out / "report.html").read_text()
    assert not (out / "per_torch.csv").exists()
    assert "per_torch" not in json.loads((out / "verdict.json").read_text())


HOSTILE = "=HYPERLINK(1) | # h\n- [a](http://evil.example) <img src=x onerror=alert(1)> *em* `c`"


def test_the_section_and_its_csv_stay_inert_whatever_the_names_hold():
    # a plan's names are pattern-checked before they get here: this holds the writers to it regardless
    row = per_torch.Row(HOSTILE, "fp32", "+k", "slower", 1.2, "same")
    lines = (
        per_torch.SourceLine(HOSTILE, "@" + HOSTILE, "a", "b", (row,)),
        per_torch.SourceLine("-" + HOSTILE, HOSTILE, "c", None),
    )
    found = per_torch.PerTorch(HOSTILE, lines)
    view = View("n", "b", ("b", "a", "c"), {"b": HOSTILE}, 5.0, 0.002, 3, "")
    empty = pd.DataFrame()
    analysis = Analysis(empty, empty, empty, empty, empty, None, {}, {}, per_torch=found)
    loaded = LoadedResults((), (), ())
    ctx = SectionContext(view, analysis, loaded, Path("."), ())
    sections = tuple(per_torch_sections.per_torch(ctx))
    assert [s.title for s in sections] == ["Per torch build", "Families that changed, per torch build"]
    tokens = MarkdownIt("commonmark").enable(["table"]).parse(markdown.page(Document("t", "h", sections)))
    kinds = Counter(t.type for t in tokens if t.nesting == 1)
    assert kinds == Counter(
        {
            "heading_open": 3,
            "paragraph_open": 3,
            "table_open": 2,
            "thead_open": 2,
            "tr_open": 5,  # a header and two lines, then a header and the judged line's families
            "th_open": 13,
            "tbody_open": 2,
            "td_open": 23,
        }
    ), kinds
    inline = [c for t in tokens if t.type == "inline" for c in t.children or []]
    links = [c.attrs.get("href") for c in inline if c.type == "link_open"]
    assert links == ["#per-torch-build"]  # the contents' link alone (a level-3 heading gets none)
    assert {c.content for c in inline if c.type == "html_inline"} <= {"<br>"}  # a name's line break
    assert not [c for c in inline if c.type in ("image", "em_open", "code_inline")]
    assert sum(c.type == "strong_open" for c in inline) == 2  # the intro's own: local baseline, not judged
    shown = "".join(c.content for c in inline if c.type == "text")
    assert "[a](http://evil.example) <img src=x onerror=alert(1)> *em* `c`" in shown  # as text
    cells = list(csv.reader(io.StringIO(found.to_csv())))
    assert len(cells) == 2 and all(not c.startswith(("=", "+", "-", "@")) for c in cells[1])
    assert cells[1][:2] == [f"'{HOSTILE}", f"'@{HOSTILE}"]


@pytest.mark.slow  # renders a report through the command line
def test_a_local_baseline_that_measured_nothing_judges_nothing(real_rounds, tmp_path):
    # 2.13.0's bundled cell failed its checks (nccl-check, say) in every round: its sources are not judged,
    # never counted failed or missing for it
    results = write_results(tmp_path, real_rounds, MATRIX)
    plan = folder.stored_plan(results)
    for path in results.glob(cell_of(plan, "2.13.0", "bundled").id + ".r*.json.gz"):
        doc = jsonio.read(path)
        doc["status"], doc["measurements"] = "failed", []
        doc["failure"] = {"stage": "nccl-check", "reason": "planted", "log_tail": ""}
        jsonio.write_atomic(path, doc, compact=True)
    done = run_cli("report", "--results", str(results), "--out", str(tmp_path / "report"))
    assert "Traceback" not in done.stderr, done.stderr[-2000:]
    page = (tmp_path / "report" / "report.md").read_text()
    lines = [line for line in table(section(page, "Per torch build")) if line["torch"] == "2.13.0"]
    assert len(lines) == 2 and all(line["judged against"].startswith("nothing") for line in lines), lines
    assert "**Not judged:** torch 2.13.0 has no cell with cuDNN bundled that measured anything" in page
    verdict = json.loads((tmp_path / "report" / "verdict.json").read_text())
    assert [e["baseline"] for e in verdict["per_torch"] if e["torch"] == "2.13.0"] == [None, None]
