"""Where the files beside the code are: ``schemas/`` and ``images/``, and the suite another Python runs.

In a checkout they sit at the repository's top level. A wheel carries them inside the package as
``harness/_schemas`` and ``harness/_images`` (pyproject.toml maps the top-level folders there), so an
installed harness finds them without the repository.
"""

from __future__ import annotations

import functools
import os
import shutil
from pathlib import Path
from typing import Literal

import harness

PACKAGE = Path(harness.__file__).resolve().parent
CHECKOUT = PACKAGE.parent  # in a checkout: the repository; installed: site-packages


def data_dir(name: Literal["schemas", "images"]) -> Path:
    """The folder of schemas or Dockerfile templates, installed copy first."""
    installed = PACKAGE / f"_{name}"
    if installed.is_dir():
        return installed
    checkout = CHECKOUT / name
    if checkout.is_dir():
        return checkout
    raise FileNotFoundError(f"neither {installed} nor {checkout} exists: reinstall cudnn-matrix-harness")


@functools.cache
def suite_root() -> Path:
    """A folder to put on another Python's PYTHONPATH so that ``-m harness.suite`` runs, and nothing else.

    In a checkout that is the repository. Installed, the package sits in site-packages beside everything
    else this Python has, which must not reach the cell's Python (its own torch and numpy come first):
    the suite (it needs only torch and the standard library) is copied into a cache folder named by its
    content."""
    if not _installed():
        return CHECKOUT
    from harness.suite import source_sha256

    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "cudnn-harness"
    root = cache / f"suite-{source_sha256()[:16]}"
    if not (root / "harness" / "suite" / "__main__.py").is_file():
        staging = cache / f".staging-{os.getpid()}"
        shutil.rmtree(staging, ignore_errors=True)
        (staging / "harness").mkdir(parents=True)
        shutil.copyfile(PACKAGE / "__init__.py", staging / "harness" / "__init__.py")
        shutil.copytree(
            PACKAGE / "suite", staging / "harness" / "suite", ignore=shutil.ignore_patterns("__pycache__")
        )
        try:
            staging.rename(root)
        except OSError:  # another process staged the same content first
            shutil.rmtree(staging, ignore_errors=True)
    return root


def _installed() -> bool:
    return CHECKOUT.name in ("site-packages", "dist-packages") or (PACKAGE / "_schemas").is_dir()
