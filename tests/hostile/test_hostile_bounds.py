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
from tests.conftest import REPO, run_cli, start_cli, untouched
from tests.evidence import GPU_DOCKER, GPU_LOCAL_ROUNDS

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


def _deep_chain(top: Path, depth: int, links_to: Path | None = None) -> None:
    """``depth`` nested folders ``a/`` under ``top``, made one at a time through folder descriptors (no path
    that long is ever named), a ``planted.py`` at the bottom, and there links into ``links_to`` if given."""
    fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(depth):
            os.mkdir("a", dir_fd=fd)
            below = os.open("a", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = below
        os.close(os.open("planted.py", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd))
        if links_to is not None:
            os.symlink(links_to, "folder-link", dir_fd=fd)
            os.symlink(links_to / "precious.txt", "file-link", dir_fd=fd)
    finally:
        os.close(fd)


@pytest.mark.slow
def test_a_deep_folder_chain_is_listed_and_removed_without_recursion(tmp_path, outside):
    top = tmp_path / "top"
    top.mkdir()
    _deep_chain(top, 1100, links_to=outside)
    try:
        bottom = top.joinpath(*["a"] * 1100)
        assert sorted(jsonio.files_under(top)) == [
            bottom / n for n in ("file-link", "folder-link", "planted.py")
        ]
        assert list(jsonio.files_under(top, max_depth=8)) == []
        from harness.suite import source_files

        assert source_files(top) == [bottom / "planted.py"]
        jsonio.remove_tree(top)
        assert not os.path.lexists(top)
        untouched(outside)
        deeper = tmp_path / "deeper"  # past PATH_MAX: no path names its bottom at once
        deeper.mkdir()
        _deep_chain(deeper, 2100, links_to=outside)
        jsonio.remove_tree(deeper)
        assert not os.path.lexists(deeper)
        untouched(outside)
    finally:
        jsonio.remove_tree(top)
        jsonio.remove_tree(tmp_path / "deeper")


@pytest.mark.slow
def test_a_deep_scratch_folder_planted_in_a_results_folder_is_swept_without_recursion(
    tmp_path, write_matrix, outside
):
    matrix = write_matrix(
        "schema_version: 1\nname: deep\nbackend: local\naxes: {torch: [installed], cudnn: [bundled]}\n"
        "suite: {workloads: [relu], dtypes: [fp32], time_budget_s: 0.02}\nbaseline: {cudnn: bundled}\n"
    )
    results = tmp_path / "results"
    (results / ".cell-x").mkdir(parents=True)
    _deep_chain(results / ".cell-x", 1100, links_to=outside)
    try:
        done = run_cli("run", "--matrix", str(matrix), "--out", str(results))
        assert done.returncode == 0 and "Traceback" not in done.stderr, done.stdout + done.stderr[-2000:]
        assert not os.path.lexists(results / ".cell-x")
        untouched(outside)
    finally:
        jsonio.remove_tree(results / ".cell-x")


@pytest.mark.slow
def test_a_deep_folder_chain_in_the_cached_suite_copy_is_replaced_without_recursion(tmp_path, monkeypatch):
    from harness import resources

    monkeypatch.setattr(resources, "_installed", lambda: True)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv("HARNESS_CACHE", raising=False)  # the tests' own cache (conftest) would come first
    resources.suite_root.cache_clear()
    try:
        root = resources.suite_root()
        suite = root / "harness" / "suite"
        original = sorted(p.relative_to(root) for p in jsonio.files_under(root))
        _deep_chain(suite, 1100)
        resources.suite_root.cache_clear()
        assert resources.suite_root() == root
        assert not (suite / "a").exists()
        assert sorted(p.relative_to(root) for p in jsonio.files_under(root)) == original
        assert [p.name for p in (tmp_path / "cudnn-harness").iterdir() if p.name.startswith(".")] == []
    finally:
        resources.suite_root.cache_clear()
        jsonio.remove_tree(tmp_path / "cudnn-harness")


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
@pytest.mark.parametrize("command", ["compare", "report"])  # report: was quiet already, now kept so
def test_a_reader_that_leaves_ends_the_command_quietly(tmp_path, command):
    if command == "compare":
        args = ["compare", str(LOCAL), str(GPU_DOCKER / "results"), "--only", "bundled"]
    else:
        args = ["report", "--results", str(LOCAL), "--out", str(tmp_path / "report")]
    proc = start_cli(*args, stderr=subprocess.PIPE, text=False)
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
    from harness.cli.console import inert

    shown = inert("a\x1b[2Jb\x07\r\x9b\u202eevil\u2066\udc80\tc\nd")
    assert shown == "a\\x1b[2Jb\\x07\\x0d\\x9b\\u202eevil\\u2066\\udc80\tc\nd"
    shown.encode("utf-8")  # whatever the terminal's encoding, it can be written
