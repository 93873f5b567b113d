"""A cell's axes are declared once (harness/plan/axes.py): the schemas, the cell and a new axis follow it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from harness.plan.axes import AXES, AXIS_NAMES, CudnnSource
from harness.plan.model import Cell
from tests.conftest import REPO

SCHEMAS = REPO / "schemas"


def _schema(name: str, root: Path = SCHEMAS) -> dict:
    return json.loads((root / f"{name}.schema.json").read_text())


def test_the_schemas_declare_exactly_the_tables_axes():
    matrix = _schema("matrix")
    axes = matrix["properties"]["axes"]
    assert list(axes["properties"]) == list(AXIS_NAMES)
    assert axes["required"] == [a.name for a in AXES if a.default is None]
    for axis in AXES:
        assert axes["properties"][axis.name]["items"] == {"$ref": f"#/$defs/{axis.name}"}
    for rule in ("selector", "full_cell"):
        assert set(matrix["$defs"][rule]["properties"]) == set(AXIS_NAMES), rule
    plan_cell = _schema("plan")["properties"]["cells"]["items"]
    result_cell = _schema("result")["properties"]["cell"]
    for cell in (plan_cell, result_cell):
        assert set(cell["properties"]) == {"id", *AXIS_NAMES}
        assert cell["required"] == ["id", *AXIS_NAMES]


def test_a_cell_reads_writes_and_names_itself_through_the_table():
    wheel = Cell.from_json({"torch": "2.11.0+cu130", "cudnn": {"wheel": "9.12.0.46"}})
    assert wheel == Cell("2.11.0+cu130", CudnnSource("wheel", "9.12.0.46"), "auto", "installed")
    assert Cell.from_json(wheel.to_json()) == wheel
    assert wheel.label == "2.11.0+cu130 / cuDNN wheel:9.12.0.46"
    assert [wheel.text(a) for a in AXES] == ["2.11.0+cu130", "wheel:9.12.0.46", "auto", "installed"]
    assert wheel.matches({"cudnn": "wheel", "base_image": "auto"})
    assert not wheel.matches({"cudnn": {"wheel": "9.13.1.26"}})
    # ids are what committed results are named by: the table makes the same ones
    bundled = Cell.from_json({"torch": "installed", "cudnn": "bundled"})
    assert bundled.id == "torch-installed_cudnn-bundled_2ecb882014"
    assert Cell.from_json({"torch": "installed", "cudnn": "disabled"}).id.startswith(
        "torch-installed_cudnn-disabled_"
    )


def _add_nccl_axis(root: Path) -> list[Path]:
    """What a new axis takes, in a copy of the tree: the files it touched."""
    axes = root / "harness/plan/axes.py"
    text = axes.read_text()
    axes.write_text(
        text.replace(
            '    Axis("python", "python", default="installed"),\n',
            '    Axis("python", "python", default="installed"),\n'
            '    Axis("nccl", "NCCL", default="bundled"),\n',
        )
    )
    model = root / "harness/plan/model.py"
    model.write_text(
        model.read_text().replace(
            '    python: str = "installed"\n', '    python: str = "installed"\n    nccl: str = "bundled"\n'
        )
    )
    value = {"type": "string", "pattern": "^(bundled|[0-9]+\\.[0-9]+\\.[0-9]+)$"}
    matrix = _schema("matrix", root / "schemas")
    matrix["$defs"]["nccl"] = value
    matrix["properties"]["axes"]["properties"]["nccl"] = {
        "type": "array",
        "minItems": 1,
        "uniqueItems": True,
        "items": {"$ref": "#/$defs/nccl"},
    }
    for rule in ("selector", "full_cell"):
        matrix["$defs"][rule]["properties"]["nccl"] = {"$ref": "#/$defs/nccl"}
    plan = _schema("plan", root / "schemas")
    plan["properties"]["cells"]["items"]["properties"]["nccl"] = value
    result = _schema("result", root / "schemas")
    result["properties"]["cell"]["properties"]["nccl"] = value
    for name, schema in (("matrix", matrix), ("plan", plan), ("result", result)):
        (root / "schemas" / f"{name}.schema.json").write_text(json.dumps(schema, indent=2))
    return [axes, model, *(root / "schemas" / f"{n}.schema.json" for n in ("matrix", "plan", "result"))]


def test_a_new_axis_is_five_files_and_the_backend_that_realizes_it(tmp_path):
    root = tmp_path / "tree"
    for part in ("harness", "schemas", "images"):
        shutil.copytree(REPO / part, root / part, ignore=shutil.ignore_patterns("__pycache__"))
    touched = _add_nccl_axis(root)
    assert len(touched) == 5  # with the backend that builds or loads the release: 6
    (root / "m.yaml").write_text(
        "schema_version: 1\nname: nccl-axis\nbackend: local\n"
        "axes:\n  torch: [installed]\n  cudnn: [bundled]\n  nccl: [bundled, 2.21.5]\n"
        "rules:\n  include:\n    - {torch: installed, cudnn: disabled, nccl: 2.21.5}\n"
        "baseline: {nccl: bundled}\n"
    )
    env = {**os.environ, "PYTHONPATH": str(root)}
    shown = subprocess.run(
        [sys.executable, "-m", "harness", "plan", "--matrix", "m.yaml"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert shown.returncode == 0, shown.stdout + shown.stderr
    header = shown.stdout.splitlines()[0]
    assert "NCCL" in header and "base image" in header
    assert shown.stdout.count("2.21.5") == 2 and "3 cells" in shown.stdout
    as_json = subprocess.run(
        [sys.executable, "-m", "harness", "plan", "--matrix", "m.yaml", "--json"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    cells = json.loads(as_json.stdout)["cells"]
    assert sorted(c["nccl"] for c in cells) == ["2.21.5", "2.21.5", "bundled"]
    assert len({c["id"] for c in cells}) == 3  # the release is in each id's digest
