"""Every report names a row's precision mode, never a bare "fp32" (issue 58): its tables, CSVs, verdict.json,
summary, JUnit and compare's output, from committed results of suite 0.20 (which record the math flags) and
from a comparison whose two sides ran one mode with different flags, which the report must say."""

from __future__ import annotations

import csv
import gzip
import io
import json
import re
import shutil
from pathlib import Path
from xml.etree import ElementTree

import pytest

from harness import jsonio, schemas
from tests.conftest import run_cli
from tests.evidence import PRECISION_MODES

pytestmark = pytest.mark.slow  # each renders committed GPU results through the command line

STEP_A = PRECISION_MODES / "step-a"  # one H200, torch 2.11.0+cu130, suite 0.20
BARE = re.compile(r"(?<![`_\w])fp32(?![`_\w]| \()")  # "fp32" that names no mode
NAMES = {"fp32_default": "fp32 (torch defaults)", "fp32": "fp32 (TF32 off)", "bf16": "bf16"}
BUNDLED, NEXT = "torch-installed_cudnn-bundled_2ecb882014", "torch-installed_cudnn-wheel-9.20.0.48_d89fa2f0e8"


def section(text: str, title: str, level: str = "##") -> str:
    return text.split(f"{level} {title}\n")[1].split("\n## ")[0].split("\n### ")[0]


def table(text: str) -> list[dict[str, str]]:
    lines = [ln for ln in text.splitlines() if ln.startswith("| ")]
    head = [c.strip() for c in lines[0].strip("|").split(" | ")]
    return [dict(zip(head, (c.strip() for c in ln.strip("|").split(" | ")), strict=True)) for ln in lines[2:]]


@pytest.fixture(scope="module")
def step_a(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("step-a")
    done = run_cli("report", "--results", str(STEP_A), "--out", str(out))
    assert done.returncode == 1, done.stdout + done.stderr  # slower rows at 9.21.0.82
    return out


def test_every_table_and_file_names_the_mode_and_keeps_its_id_for_programs(step_a):
    for name in ("results", "verdicts", "families", "series", "changes"):
        rows = list(csv.DictReader(io.StringIO((step_a / f"{name}.csv").read_text())))
        head = list(rows[0])
        assert head[head.index("dtype") + 1] == "mode", name  # beside its id
        assert {(r["dtype"], r["mode"]) for r in rows} == set(NAMES.items()), name
    page = (step_a / "report.md").read_text()
    verdicts = table(section(page, "Verdicts against the baseline"))
    assert {r["mode"] for r in verdicts} == set(NAMES.values())
    rows = [
        ln for ln in page.split("## Scorecard")[1].split("\n## ", 1)[1].splitlines() if ln.startswith("| ")
    ]
    assert rows and not [ln for ln in rows if BARE.search(ln)]  # every table after the first screen's
    summary = (step_a / "summary.md").read_text()
    assert "| workload | mode | vs |" in summary and "| fp32 |" not in summary
    cases = [c.get("name", "") for c in ElementTree.parse(step_a / "junit.xml").iter("testcase")]
    assert any(c.startswith("train_resnet50 fp32 (TF32 off) [") for c in cases)
    assert not any(" fp32 [" in c for c in cases)
    verdict = json.loads((step_a / "verdict.json").read_text())
    assert schemas.problems("verdict", verdict, "verdict.json") == []
    for part in (verdict["comparisons"], verdict["families"], verdict["series"]["rows"]):
        assert {(c["dtype"], c["mode"]) for c in part} == set(NAMES.items())
    assert "  SLOWER: " in page and " fp32 (TF32 off) [benchmark=0" in page  # the gate's summary too


def test_the_method_says_what_each_mode_is_and_the_flags_each_cell_ran(step_a):
    page = (step_a / "report.md").read_text()
    part = section(page, "Precision modes and math flags", "###")
    assert "- **fp32 (torch defaults)** (`fp32_default`): fp32 under the torch build's own flags" in part
    assert "- **fp32 (TF32 off)** (`fp32`): TF32 off everywhere" in part
    assert "- **bf16** (`bf16`)" in part and "fp32 (TF32 on)" not in part  # the modes that ran, once each
    assert "the math differs" not in part  # every cell ran each mode with the same flags
    flags = {(r["mode"], r["groups"], r["TF32 in cuDNN"], r["TF32 in matrix products"]) for r in table(part)}
    # torch 2.11's defaults: TF32 in cuDNN, not in matrix products; the suite's fp32 and bf16: off
    assert flags == {
        ("fp32 (torch defaults)", "A, B, C", "on", "off"),
        ("fp32 (TF32 off)", "A, B, C", "off", "off"),
        ("bf16", "A, B, C", "off", "off"),
    }
    assert {r["recorded"] for r in table(part)} == {"yes"}
    html = (step_a / "report.html").read_text()
    heading = html.index(">Precision modes and math flags</h3>")
    assert html.rfind("<details>", 0, heading) > html.rfind(
        "</details>", 0, heading
    )  # folded: nothing to see


def _side(tmp_path: Path, name: str, cell: str) -> Path:
    side = tmp_path / name
    side.mkdir()
    for path in sorted(STEP_A.glob(f"{cell}.r*.json.gz")):
        shutil.copy(path, side / path.name)
    return side


def test_a_comparison_across_math_says_so_where_it_is_read(tmp_path):
    a, b = _side(tmp_path, "a", BUNDLED), _side(tmp_path, "b", NEXT)
    for path in b.iterdir():  # B as a build whose defaults keep TF32 out of cuDNN
        doc = jsonio.read(path)
        for m in doc["measurements"]:
            if m["dtype"] == "fp32_default":
                m["math_flags"]["cudnn_allow_tf32"] = False
        path.write_bytes(gzip.compress(json.dumps(doc).encode()))
    out = tmp_path / "cmp"
    done = run_cli("compare", str(a), str(b), "--out", str(out), "--format", "csv")
    assert done.returncode in (0, 1), done.stdout + done.stderr
    said = (
        "note: A and B ran with different math flags (fp32 (torch defaults): TF32 in cuDNN on in A, off in "
        "B): those rows compare the math as well as cuDNN, not cuDNN alone"
    )
    assert said in done.stderr
    rows = list(csv.DictReader(io.StringIO(done.stdout)))
    assert {(r["dtype"], r["mode"]) for r in rows} == set(NAMES.items())
    page = (out / "report.md").read_text()
    part = section(page, "Precision modes and math flags", "###")
    assert "**Note: the math differs between the cells compared.**" in part
    assert "- fp32 (torch defaults): TF32 in cuDNN on in A, off in B" in part  # only the flag that differs
    assert ("fp32 (torch defaults)", "B", "off") in {
        (r["mode"], r["groups"], r["TF32 in cuDNN"]) for r in table(part)
    }
    html = (out / "report.html").read_text()
    heading = html.index(">Precision modes and math flags</h3>")
    assert html.rfind("<details>", 0, heading) < html.rfind("</details>", 0, heading)  # unfolded
    table_out = run_cli("compare", str(a), str(b), "--format", "table")
    assert " mode " in table_out.stdout.splitlines()[0] and "fp32 (TF32 off)" in table_out.stdout
