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
from tests.conftest import HOSTILE_MATRIX, REPO, cli_in_process, run_cli
from tests.evidence import GPU_DOCKER, GPU_LOCAL_CUDNN_SOURCES, GPU_LOCAL_ROUNDS

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
    for path in [
        *sorted((GPU_LOCAL_CUDNN_SOURCES / "results").glob("*.json.gz")),
        GPU_LOCAL_CUDNN_SOURCES / "results" / "plan.json",
    ]:
        shutil.copy(path, folder / path.name)
    return folder


@pytest.mark.slow
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


LOCAL = GPU_LOCAL_ROUNDS


def _rounds(report: Path) -> set[tuple[int, int]]:
    rows = json.loads((report / "verdict.json").read_text())["comparisons"]
    return {(r["rounds_baseline"], r["rounds_candidate"]) for r in rows}


@pytest.mark.slow
def test_copies_of_a_run_count_once_however_they_arrive(tmp_path):
    # the same folder once, and three times: the same 3 rounds a side, so the same verdicts (copies
    # counted as rounds would make 9+9 and a far smaller p)
    once = run_cli("report", "--results", str(LOCAL), "--out", str(tmp_path / "once"))
    thrice = run_cli("report", *(["--results", str(LOCAL)] * 3), "--out", str(tmp_path / "thrice"))
    assert thrice.returncode == once.returncode, thrice.stdout + thrice.stderr
    assert "a folder given more than once is read once" in thrice.stderr
    assert _rounds(tmp_path / "thrice") == _rounds(tmp_path / "once") == {(3, 3)}
    verdict_lines = [line for line in once.stdout.splitlines() if line.startswith("verdicts:")]
    assert verdict_lines and verdict_lines[0] in thrice.stdout
    # every result copied under another name inside the folder
    folder = tmp_path / "copies"
    shutil.copytree(LOCAL, folder)
    originals = sorted(folder.glob("*.json.gz"))
    for path in originals:
        shutil.copy(path, folder / f"copy-{path.name}")
    done = run_cli("report", "--results", str(folder), "--out", str(tmp_path / "report"))
    assert done.returncode == once.returncode and verdict_lines[0] in done.stdout, done.stdout
    assert _rounds(tmp_path / "report") == {(3, 3)}
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
    compared = run_cli("compare", str(a), str(b), "--format", "json")
    assert compared.returncode in (0, 1), compared.stdout + compared.stderr
    assert compared.stderr.count("counted once:") == 6  # each side: 3 rounds, each also as copy-*
    rows = json.loads(compared.stdout)
    assert rows and all("(3+3 rounds, Welch's t" in r["reason"] for r in rows), compared.stdout


def test_a_measurement_repeated_inside_a_document_makes_it_invalid(tmp_path):
    from harness.results import documents

    doc = jsonio.read(next(LOCAL.glob("*bundled*.r1.json.gz")))
    doc["measurements"].append(doc["measurements"][0])
    path = tmp_path / "repeated.json.gz"
    jsonio.write_atomic(path, doc)
    _, problems = documents.check(path)
    assert [p.field for p in problems] == [f"measurements[{len(doc['measurements']) - 1}]"]
    assert "repeats measurements[0]" in problems[0].message


MATRIX = HOSTILE_MATRIX


@pytest.mark.slow
@pytest.mark.parametrize("budget", [".nan", ".inf", "-.inf", "1.0e+999"])
def test_nan_and_infinity_are_refused_where_they_are_written(tmp_path, budget):
    path = tmp_path / "matrix.yaml"
    path.write_text(MATRIX.replace("BUDGET", budget))
    for args in (("plan",), ("run", "--out", str(tmp_path / "r"))):
        done = run_cli(*args, "--matrix", str(path))
        assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
        assert f"{path}:5:" in done.stderr and "is not a finite number" in done.stderr
    assert not (tmp_path / "r").exists()  # refused before anything was written


@pytest.mark.slow
def test_keys_that_are_not_text_are_refused_without_a_traceback(tmp_path):
    path = tmp_path / "matrix.yaml"
    for key in ("[a, b]", "1", "null", "true"):
        path.write_text(MATRIX.replace("BUDGET", "0.1") + f"{key}: x\n")
        done = run_cli("plan", "--matrix", str(path))
        assert done.returncode == 2 and "is not text" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.slow
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
    docker_result = next((GPU_DOCKER / "results").glob("*bundled*.r1.json.gz"))
    shutil.copy(docker_result, folder / docker_result.name)
    for args in (("report", "--results", str(folder)), ("rerun", str(folder / docker_result.name))):
        done = run_cli(*args, "--out", str(tmp_path / "x"), timeout=60)
        assert done.returncode == 2 and "not a plan written by" in done.stderr, done.stderr


def test_an_infinite_number_in_a_result_file_makes_it_invalid(tmp_path):
    from harness.results import documents

    source = next(LOCAL.glob("*bundled*.r1.json.gz"))
    text = json.dumps(jsonio.read(source)).replace('"duration_s": ', '"duration_s": 1e999, "x": ', 1)
    path = tmp_path / "inf.json"
    path.write_text(text)
    _, problems = documents.check(path)
    assert problems and "1e999 is not a finite number" in problems[0].message


def _local_matrix(tmp_path: Path, name: str = "hostile") -> Path:
    path = tmp_path / "matrix.yaml"
    path.write_text(MATRIX.replace("BUDGET", "0.1").replace("name: hostile", f"name: {name}"))
    return path


@pytest.mark.parametrize(
    ("args", "option"),
    [
        (("run", "--timeout-s", "nan"), "--timeout-s"),  # once: every run 'timed out after nan s', kept
        (("run", "--timeout-s", "-1"), "--timeout-s"),
        (("run", "--timeout-s", "inf"), "--timeout-s"),
        (("qualify", "--timeout-s", "0"), "--timeout-s"),
        (("run", "--slurm-gpus", "-2"), "--slurm-gpus"),
        (("run", "--memory", "lots"), "--memory"),  # once ignored by local, failed every docker cell
        (("compare", str(LOCAL), str(LOCAL), "--alpha", "5"), "--alpha"),  # once called p = 0.1 'slower'
        (("compare", str(LOCAL), str(LOCAL), "--alpha", "nan"), "--alpha"),
        (("compare", str(LOCAL), str(LOCAL), "--threshold-pct", "-5"), "--threshold-pct"),
    ],
)
def test_a_value_out_of_range_is_refused_before_anything_runs(tmp_path, args, option):
    extra = (
        ("--matrix", str(_local_matrix(tmp_path)), "--out", str(tmp_path / "r"))
        if args[0] != "compare"
        else ()
    )
    done = cli_in_process(*args, *extra)
    assert done.returncode == 2 and f"argument {option}:" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "r").exists()


@pytest.mark.slow
def test_an_output_folder_that_is_a_file_or_cannot_be_written_is_refused(tmp_path):
    matrix = str(_local_matrix(tmp_path))
    a_file = tmp_path / "a-file"
    a_file.write_text("mine\n")
    report_dir, compare_b = _copy_results(tmp_path), tmp_path / "b"
    shutil.copytree(LOCAL, compare_b)
    commands = {
        "run": ("run", "--matrix", matrix, "--out"),
        "slurm": ("run", "--backend", "slurm", "--matrix", matrix, "--out"),  # refused before sbatch is asked
        "qualify": ("qualify", "--matrix", matrix, "--report-out"),
        "report": ("report", "--results", str(report_dir), "--out"),
        "compare": (
            "compare",
            str(LOCAL / "torch2.11.0-cu130_cudnn-bundled_fd7979a52b.r1.json.gz"),
            str(compare_b / "torch2.11.0-cu130_cudnn-disabled_ef610b7191.r1.json.gz"),
            "--out",
        ),
    }
    # a file; a folder under a file; a file system no one writes (once a FileExistsError traceback, exit 1)
    for out in (a_file, a_file / "sub", Path("/proc/harness-out")):
        for name, args in commands.items():
            done = run_cli(*args, str(out))
            assert done.returncode == 2, (name, out, done.stderr)
            assert f"{out}: {args[-1]}:" in done.stderr and "Traceback" not in done.stderr, done.stderr
            assert "running" not in done.stdout  # refused before anything ran
    assert a_file.read_text() == "mine\n" and not (REPO / "results" / "hostile").exists()  # qualify's default


@pytest.mark.slow
def test_a_folder_with_no_valid_result_is_refused_not_a_traceback(tmp_path):
    folder = _copy_results(tmp_path)
    for path in folder.glob("*.json.gz"):
        path.write_text('{"not": "a result"}')
    done = run_cli("report", "--results", str(folder), "--out", str(tmp_path / "report"))
    assert done.returncode == 2 and "holds no valid result" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "report").exists() and len(list((folder / "quarantine").glob("*.json.gz"))) == 3


@pytest.mark.slow
def test_a_run_compared_with_itself_is_refused(tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(LOCAL, copy)
    for b in (LOCAL, copy):  # the same files, and copies of them: either way no change by construction
        done = run_cli("compare", str(LOCAL), str(b))
        assert done.returncode == 2 and "compared with itself" in done.stderr, done.stdout + done.stderr


@pytest.mark.slow
def test_results_of_cells_the_plan_lacks_are_said_and_not_compared(tmp_path):
    folder = tmp_path / "results"
    shutil.copytree(LOCAL, folder)
    plan = jsonio.read(folder / "plan.json")
    dropped = plan["cells"].pop(1)  # as if the matrix was edited after this cell ran
    jsonio.write_atomic(folder / "plan.json", plan)
    done = run_cli("report", "--results", str(folder), "--out", str(tmp_path / "report"))
    assert done.returncode in (0, 1), done.stderr
    assert done.stderr.count(f"holds cell {dropped['id']}, which plan.json does not list") == 3
    text = (tmp_path / "report" / "report.md").read_text()
    assert "Result files of cells not in the plan (not compared)" in text and dropped["id"] in text


def _shifted(doc: dict, seconds: int) -> dict:
    """The same document as a run ``seconds`` later: another run, not a copy."""
    import datetime as dt

    for key in ("started_at", "finished_at"):
        doc[key] = (dt.datetime.fromisoformat(doc[key]) + dt.timedelta(seconds=seconds)).isoformat()
    return doc


@pytest.mark.slow
def test_shards_of_one_cell_from_different_torch_builds_do_not_merge(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    shutil.copytree(LOCAL, a)
    shutil.copytree(LOCAL, b)
    for path in b.glob("*.json.gz"):
        doc = _shifted(jsonio.read(path), 86400)
        doc["environment"]["torch"]["version"] = "2.12.0+cu130"  # another host's 'installed' torch
        jsonio.write_atomic(path, doc)
    done = run_cli("report", "--results", str(a), "--results", str(b), "--out", str(tmp_path / "report"))
    assert done.returncode == 2 and "results differ in torch build within" in done.stderr, done.stderr
    assert "'2.12.0+cu130'" in done.stderr and not (tmp_path / "report").exists()


@pytest.mark.slow
def test_run_does_not_overwrite_the_plan_of_another_matrix(tmp_path):
    folder = _copy_results(tmp_path)
    before = (folder / "plan.json").read_bytes()
    done = run_cli("run", "--matrix", str(_local_matrix(tmp_path, "another")), "--out", str(folder))
    assert (
        done.returncode == 2
        and "holds the results of matrix" in done.stderr
        and "Traceback" not in done.stderr
    )
    assert (folder / "plan.json").read_bytes() == before and not (folder / "logs").exists()
    (folder / "plan.json").write_text("[]")  # not a plan at all: not replaced either
    done = run_cli("run", "--matrix", str(_local_matrix(tmp_path, "another")), "--out", str(folder))
    assert done.returncode == 2 and "run will not replace it" in done.stderr


def _damaged(**change: object):
    def damage(doc: dict) -> None:
        for key, value in change.items():
            target = doc
            *parents, last = key.split(".")
            for parent in parents:
                target = target[int(parent)] if parent.isdigit() else target[parent]
            target[last] = value(target[last]) if callable(value) else value

    return damage


@pytest.mark.parametrize(
    ("damage", "field"),
    [
        (_damaged(**{"measurements.0.stats.mean": lambda x: x * 0.5}), "measurements[0].stats.mean"),
        (_damaged(**{"measurements.0.stats.max": lambda x: x * 2}), "measurements[0].stats.max"),
        (_damaged(**{"measurements.0.stats.rel_iqr": 0.0}), "measurements[0].stats.rel_iqr"),
        (_damaged(finished_at="2020-01-01T00:00:00+00:00"), "finished_at"),
        (_damaged(started_at="yesterday"), "started_at"),
        (_damaged(finished_at="2026-11-23"), "finished_at"),  # a date is not a date-time
        (_damaged(duration_s=lambda x: x + 3600), "duration_s"),
        (_damaged(**{"environment.gpu": None}), "environment.gpu"),  # device cuda, no GPU
        (_damaged(device="cpu"), "environment.gpu"),  # device cpu, a GPU
    ],
)
def test_a_result_that_contradicts_itself_is_invalid(tmp_path, damage, field):
    from harness.results import documents

    doc = jsonio.read(next(LOCAL.glob("*bundled*.r1.json.gz")))
    damage(doc)
    path = tmp_path / "damaged.json.gz"
    jsonio.write_atomic(path, doc)
    _, problems = documents.check(path)
    assert field in [p.field for p in problems], problems


@pytest.mark.slow
def test_a_slurm_tasks_file_is_checked_before_a_task_runs_what_it_names(tmp_path):
    folder = _copy_results(tmp_path)
    cell = jsonio.read(folder / "plan.json")["cells"][0]["id"]
    tasks = tmp_path / "tasks.json"
    good = {
        "backend": "local",
        "python": "/usr/bin/python3",
        "timeout_s": 60,
        "tasks": [{"cell": cell, "round": 1}],
    }
    cases = {
        "not json": ("not a tasks file", 0),
        json.dumps({**good, "python": "/tmp/evil\nrm -rf /"}): ("python", 0),
        json.dumps({**good, "timeout_s": -1}): ("timeout_s", 0),
        json.dumps({**good, "backend": "k8s"}): ("backend", 0),
        json.dumps(good): ("index 5 is none of them", 5),
        json.dumps({**good, "tasks": [{"cell": "torch-x_cudnn-y_0123456789", "round": 1}]}): (
            "tasks[0].cell",
            0,
        ),
    }  # each once a traceback (KeyError, JSONDecodeError) or a run of whatever it named
    for text, (expected, index) in cases.items():
        tasks.write_text(text)
        done = run_cli("slurm-task", "--results", str(folder), "--tasks", str(tasks), "--index", str(index))
        assert done.returncode == 2 and expected in done.stderr and "Traceback" not in done.stderr, (
            done.stderr
        )
        assert not (folder / "logs").exists()  # nothing ran


def test_a_bad_gpu_list_writes_nothing(tmp_path):
    done = cli_in_process(
        "run", "--matrix", str(_local_matrix(tmp_path)), "--out", str(tmp_path / "r"), "--gpus", "0,0"
    )
    assert done.returncode == 2 and "names a GPU twice" in done.stderr and not (tmp_path / "r").exists()
