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


def test_an_installed_harness_copies_its_suite_into_the_cache_harness_cache_names(tmp_path, monkeypatch):
    # walk 3: `harness plan` wrote ~/.cache/cudnn-harness/suite-* with HARNESS_CACHE pointing elsewhere
    monkeypatch.setattr(resources, "_installed", lambda: True)
    monkeypatch.setenv(resources.CACHE_ENV, str(tmp_path / "cache"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    resources.suite_root.cache_clear()
    try:
        root = resources.suite_root()
    finally:
        resources.suite_root.cache_clear()  # the checkout's answer again for the tests after this one
    assert root.parent == tmp_path / "cache" and root.name.startswith("suite-")
    assert (root / "harness" / "suite" / "__main__.py").is_file()
    assert not (tmp_path / "home").exists()
