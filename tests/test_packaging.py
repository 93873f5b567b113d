"""What the wheel carries: every package, the schemas and the Dockerfile templates (nox -s wheel runs it)."""

from __future__ import annotations

import tomllib

from harness import resources
from tests.conftest import REPO


def test_the_wheel_lists_every_package_and_maps_schemas_and_images_into_it():
    setuptools = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
    folders = {".".join(p.parent.relative_to(REPO).parts) for p in (REPO / "harness").rglob("__init__.py")}
    assert set(setuptools["packages"]) == folders | {"harness._schemas", "harness._images"}
    assert setuptools["package-dir"] == {"harness._schemas": "schemas", "harness._images": "images"}
    data = setuptools["package-data"]
    for package, folder in setuptools["package-dir"].items():
        shipped = {p.name for pattern in data[package] for p in (REPO / folder).glob(pattern)}
        assert shipped == {p.name for p in (REPO / folder).iterdir() if p.is_file()}, package


def test_a_checkout_reads_the_top_level_folders_and_runs_the_suite_from_the_repository():
    assert resources.data_dir("schemas") == REPO / "schemas"
    assert resources.data_dir("images") == REPO / "images"
    assert resources.suite_root() == REPO
