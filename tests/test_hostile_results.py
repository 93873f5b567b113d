"""A results folder is untrusted input: what an attacker who writes one can and cannot make the harness do.

Each test here failed before its fix (issue 15): a glyph-led string from a result file reached an HTML
attribute; copies of one document counted as independent rounds.
"""

from __future__ import annotations

import json
import shutil
from html.parser import HTMLParser
from pathlib import Path

import pytest

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


LOCAL = GPU_REPORT.parent / "gpu-docker" / "local"  # 3 rounds a cell: its large changes read inconclusive


def test_copies_of_a_run_count_once_however_they_arrive(tmp_path):
    # the same folder three times: once p = 4.1e-05 'SLOWER', now the 3 rounds it holds
    thrice = run_cli("report", *(["--results", str(LOCAL)] * 3), "--out", str(tmp_path / "thrice"))
    assert thrice.returncode == 0, thrice.stdout + thrice.stderr
    assert "SLOWER" not in thrice.stdout and "a folder given more than once is read once" in thrice.stderr
    # every result copied under another name inside the folder
    folder = tmp_path / "copies"
    shutil.copytree(LOCAL, folder)
    originals = sorted(folder.glob("*.json.gz"))
    for path in originals:
        shutil.copy(path, folder / f"copy-{path.name}")
    done = run_cli("report", "--results", str(folder), "--out", str(tmp_path / "report"))
    assert done.returncode == 0 and "SLOWER" not in done.stdout, done.stdout
    assert done.stderr.count("counted once:") == len(originals)
    text = (tmp_path / "report" / "report.md").read_text()
    assert (
        f"{len(originals)} duplicates counted once" in text
        and "Duplicate result files (counted once)" in text
    )
    # the same through compare: bundled against disabled, every round also under a second name
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    for path in folder.glob("*bundled*"):
        shutil.copy(path, a / path.name)
    for path in folder.glob("*disabled*"):
        shutil.copy(path, b / path.name)
    compared = run_cli("compare", str(a), str(b))
    assert compared.returncode == 0 and "SLOWER" not in compared.stdout, compared.stdout + compared.stderr
    assert compared.stderr.count("counted once:") == 6  # each side: 3 rounds, each also as copy-*


def test_a_measurement_repeated_inside_a_document_makes_it_invalid(tmp_path):
    from harness import results

    doc = jsonio.read(next(LOCAL.glob("*bundled*.r1.json.gz")))
    doc["measurements"].append(doc["measurements"][0])
    path = tmp_path / "repeated.json.gz"
    jsonio.write_atomic(path, doc)
    _, problems = results.check(path)
    assert [p.field for p in problems] == [f"measurements[{len(doc['measurements']) - 1}]"]
    assert "repeats measurements[0]" in problems[0].message


MATRIX = """\
schema_version: 1
name: hostile
backend: local
axes: {torch: [installed], cudnn: [bundled, disabled]}
suite: {workloads: [relu], dtypes: [fp32], time_budget_s: BUDGET}
baseline: {cudnn: bundled}
"""


@pytest.mark.parametrize("budget", [".nan", ".inf", "-.inf", "1.0e+999"])
def test_nan_and_infinity_are_refused_where_they_are_written(tmp_path, budget):
    path = tmp_path / "matrix.yaml"
    path.write_text(MATRIX.replace("BUDGET", budget))
    for args in (("plan",), ("run", "--out", str(tmp_path / "r"))):
        done = run_cli(*args, "--matrix", str(path))
        assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
        assert f"{path}:5:" in done.stderr and "is not a finite number" in done.stderr
    assert not (tmp_path / "r").exists()  # refused before anything was written


def test_keys_that_are_not_text_are_refused_without_a_traceback(tmp_path):
    path = tmp_path / "matrix.yaml"
    for key in ("[a, b]", "1", "null", "true"):
        path.write_text(MATRIX.replace("BUDGET", "0.1") + f"{key}: x\n")
        done = run_cli("plan", "--matrix", str(path))
        assert done.returncode == 2 and "is not text" in done.stderr and "Traceback" not in done.stderr


def test_a_fifo_or_a_device_is_refused_at_once_as_a_matrix_plan_or_result(tmp_path):
    import os

    fifo = tmp_path / "matrix.yaml"
    os.mkfifo(fifo)
    done = run_cli("plan", "--matrix", str(fifo), timeout=60)  # once, this waited for a writer forever
    assert done.returncode == 2 and "not a regular file" in done.stderr
    zero = tmp_path / "zero.yaml"
    zero.symlink_to("/dev/zero")
    done = run_cli("plan", "--matrix", str(zero), timeout=60)
    assert done.returncode == 2 and "not a regular file" in done.stderr
    folder = _copy_results(tmp_path)
    (folder / "plan.json").unlink()
    os.mkfifo(folder / "plan.json")
    done = run_cli("report", "--results", str(folder), "--out", str(tmp_path / "rep"), timeout=60)
    assert done.returncode == 2 and "plan.json" in done.stderr and "Traceback" not in done.stderr
    (folder / "plan.json").unlink()
    (folder / "plan.json").write_text('{"name": ')  # malformed: once a traceback in report and rerun
    docker_result = next((GPU_REPORT.parent / "gpu-docker" / "results").glob("*bundled*.r1.json.gz"))
    shutil.copy(docker_result, folder / docker_result.name)
    for args in (("report", "--results", str(folder)), ("rerun", str(folder / docker_result.name))):
        done = run_cli(*args, "--out", str(tmp_path / "x"), timeout=60)
        assert done.returncode == 2 and "not a plan written by" in done.stderr, done.stderr


def test_an_infinite_number_in_a_result_file_makes_it_invalid(tmp_path):
    from harness import results

    source = next(LOCAL.glob("*bundled*.r1.json.gz"))
    text = json.dumps(jsonio.read(source)).replace('"duration_s": ', '"duration_s": 1e999, "x": ', 1)
    path = tmp_path / "inf.json"
    path.write_text(text)
    _, problems = results.check(path)
    assert problems and "1e999 is not a finite number" in problems[0].message
