"""Bounded cost and trust boundaries (issue 31): refusals of bounded size, no recursion on deep folders,
terminal output that never drives the terminal, interpreters and readers that misbehave, and what round
two still let through (an empty suite, runs that contradict each other, an infinite baseline number).

Each test here failed before its fix.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from harness import jsonio
from harness.results import folder
from tests.conftest import GPU_LOCAL_ROUNDS, REPO, run_cli, start_cli

LOCAL = GPU_LOCAL_ROUNDS


def _copy(tmp_path: Path) -> Path:
    results = tmp_path / "results"
    shutil.copytree(LOCAL, results)
    return results


def _baseline_files(results: Path) -> list[Path]:
    return sorted(results.glob("*bundled*.json.gz"))


@pytest.mark.slow
def test_a_refused_document_never_echoes_a_megabyte(tmp_path):
    doc = jsonio.read(_baseline_files(_copy(tmp_path))[0])
    doc["device"] = ["x" * 64] * 16384  # a megabyte where one word belongs
    doc["measurements"][0]["workload"] = "w" * 1_000_000
    for m in doc["measurements"]:
        m["dtype"] = list(range(2000))
    doc.update({f"unknown{i}": i for i in range(5000)})  # thousands of faults
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc))
    done = run_cli("validate", str(bad))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert len(done.stderr) < 20_000, len(done.stderr)
    assert "more problems, not listed" in done.stderr
    # and in the problems file a report's quarantine writes beside it
    results = tmp_path / "results"
    shutil.copy(bad, results / f"{_baseline_files(results)[1].name.split('.r')[0]}.r9.json")
    run_cli("report", "--results", str(results), "--out", str(tmp_path / "report"))
    (problems,) = (results / folder.QUARANTINE).glob("*.problems.txt")
    assert problems.stat().st_size < 20_000


@pytest.mark.slow
def test_a_deep_folder_chain_is_walked_without_recursion(tmp_path):
    results = _copy(tmp_path)
    os.chdir(results)
    try:
        for _ in range(1100):  # deeper than Python's recursion limit
            os.mkdir("a")
            os.chdir("a")
    finally:
        os.chdir(REPO)
    try:
        for args in (("compare", str(results), str(LOCAL)), ("report", "--results", str(results))):
            done = run_cli(*args, "--out", str(tmp_path / args[0]))
            assert "RecursionError" not in done.stderr and "Traceback" not in done.stderr, done.stderr[-2000:]
        # a compare of a folder with itself is refused (exit 2), after walking it
        assert "compared with itself" in run_cli("compare", str(results), str(results)).stderr
    finally:  # taken down bottom up: pytest's own clean-up would recurse
        chain = [results / "a"]
        while (chain[-1] / "a").is_dir():
            chain.append(chain[-1] / "a")
        for depth in reversed(chain):
            _rmdir_deep(results, depth)


def _rmdir_deep(root: Path, path: Path) -> None:
    """rmdir a folder deeper than PATH_MAX allows to name at once: from the root, one step at a time."""
    fd = os.open(root, os.O_RDONLY)
    try:
        parts = path.relative_to(root).parts
        for part in parts[:-1]:
            next_fd = os.open(part, os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = next_fd
        os.rmdir(parts[-1], dir_fd=fd)
    finally:
        os.close(fd)


@pytest.mark.slow
def test_terminal_output_never_carries_a_control_character_from_results(tmp_path):
    results = _copy(tmp_path)
    planted = results / "\x1b]0;owned\x07\x1b[2J.json.gz"  # a file name is result text too
    shutil.copy(_baseline_files(results)[0], planted)
    doc = jsonio.read(planted)
    doc["cell"]["id"] = "not-in-the-plan"
    jsonio.write_atomic(planted, doc)
    done = run_cli("report", "--results", str(results), "--out", str(tmp_path / "report"))
    assert "Traceback" not in done.stderr
    assert "\\x1b]0;owned\\x07" in done.stdout + done.stderr  # shown, escaped ...
    for stream in (done.stdout, done.stderr):
        assert not [c for c in stream if ord(c) < 32 and c not in "\n\t"]  # ... never acted on


@pytest.mark.slow
def test_a_python_that_prints_garbage_is_named_and_refused(tmp_path, write_matrix):
    matrix = write_matrix(
        "schema_version: 1\nname: g\nbackend: local\naxes: {torch: [installed], cudnn: [bundled]}\n"
        "suite: {workloads: [relu], dtypes: [fp32], time_budget_s: 0.02}\nbaseline: {cudnn: bundled}\n"
    )
    for name, prints in (("garbage", "Welcome!\\033[31m"), ("partial", '{"python": "3.11"')):
        python = tmp_path / name
        python.write_text(f"#!/bin/sh\nprintf '%s\\n' '{prints}'\n")
        python.chmod(0o755)
        done = run_cli("run", "--matrix", str(matrix), "--out", str(tmp_path / "r"), "--python", str(python))
        assert done.returncode == 2, done.stdout + done.stderr
        assert f"{python}: does not answer as a Python interpreter does" in done.stderr
        assert "Traceback" not in done.stderr


@pytest.mark.slow
def test_a_reader_that_leaves_ends_the_command_quietly():
    proc = start_cli(
        "compare",
        str(LOCAL),
        str(LOCAL.parent / "results"),
        "--only",
        "bundled",
        stderr=subprocess.PIPE,
        text=False,
    )
    assert proc.stdout is not None
    proc.stdout.close()  # `| head` that has read all it wanted
    _, err = proc.communicate(timeout=600)
    assert proc.returncode == 141, err.decode()
    assert b"Traceback" not in err and b"BrokenPipe" not in err and b"Exception ignored" not in err


@pytest.mark.slow
def test_a_plan_with_an_empty_suite_is_refused_not_a_traceback(tmp_path):
    results = _copy(tmp_path)
    plan = jsonio.read(results / "plan.json")
    plan["suite"] = {}
    jsonio.write_atomic(results / "plan.json", plan)
    done = run_cli("report", "--results", str(results), "--out", str(tmp_path / "report"))
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert "suite: 'profile' is a required property" in done.stderr


@pytest.mark.slow
def test_two_files_that_claim_one_run_but_differ_are_refused_naming_both(tmp_path):
    results = _copy(tmp_path)
    original = _baseline_files(results)[0]
    doc = jsonio.read(original)
    doc["environment"]["torch"]["version"] = "2.99.0+cu999"  # another build, the same run's times
    forged = results / f"copy-{original.name}"
    jsonio.write_atomic(forged, doc)
    done = run_cli("report", "--results", str(results), "--out", str(tmp_path / "report"))
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert (
        "claims the same run as" in done.stderr
        and str(original) in done.stderr
        and str(forged) in done.stderr
    )
    assert "environment" in done.stderr


@pytest.mark.slow
def test_an_infinite_number_in_the_baseline_is_a_refusal_not_an_infrastructure_failure(tmp_path):
    results = _copy(tmp_path)
    for path in _baseline_files(results):
        doc = jsonio.read(path)
        doc["measurements"][0]["numerics"]["rel_rmse"] = "INFINITY"
        path.write_bytes(gzip.compress(json.dumps(doc).replace('"INFINITY"', "1e999").encode()))
    done = run_cli("report", "--results", str(results), "--out", str(tmp_path / "report"))
    assert done.returncode == 2, done.stdout + done.stderr
    assert "1e999 is not a finite number" in done.stderr and "a cell has no valid result left" in done.stderr
    assert not (tmp_path / "report" / "report.md").exists()


def test_inert_shows_every_character_a_terminal_would_act_on_as_its_escape():
    from harness.console import inert

    shown = inert("a\x1b[2Jb\x07\r\x9b\u202eevil\u2066\udc80\tc\nd")
    assert shown == "a\\x1b[2Jb\\x07\\x0d\\x9b\\u202eevil\\u2066\\udc80\tc\nd"
    shown.encode("utf-8")  # whatever the terminal's encoding, it can be written
