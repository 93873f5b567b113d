"""Where the files beside the code are: ``schemas/`` and ``images/``, and the suite another Python runs.

In a checkout they sit at the repository's top level. A wheel carries them inside the package as
``harness/_schemas`` and ``harness/_images`` (pyproject.toml maps the top-level folders there), so an
installed harness finds them without the repository.
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
from pathlib import Path
from typing import Literal

import harness
from harness import jsonio

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


CACHE_ENV = "HARNESS_CACHE"


def cache_root() -> Path:
    """Where the harness keeps what it makes to reuse (environments, wheels, the installed suite's copy):
    ``$HARNESS_CACHE``, else ``$XDG_CACHE_HOME/cudnn-harness``, else ``~/.cache/cudnn-harness``."""
    named = os.environ.get(CACHE_ENV)
    if named:
        return Path(named)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "cudnn-harness"


@functools.cache
def suite_root() -> Path:
    """A folder to put on another Python's PYTHONPATH so that ``-m harness.suite`` runs, and nothing else.

    In a checkout that is the repository. Installed, the package sits in site-packages beside everything
    else this Python has, which must not reach the cell's Python (its own torch and numpy come first):
    the suite (it needs only torch and the standard library) is copied into a cache folder named by its
    content. A copy found there is checked against that content before it is used, and made again when
    it differs (damaged, edited, or holding files the suite does not have): never run as found."""
    if not _installed():
        return CHECKOUT
    from harness.suite import source_sha256

    expected = source_sha256()
    cache = cache_root()
    root = cache / f"suite-{expected[:16]}"
    if not _intact(root, expected):
        staging = cache / f".staging-{os.getpid()}"
        jsonio.remove_tree(staging, ignore_errors=True)
        (staging / "harness").mkdir(parents=True)
        shutil.copyfile(PACKAGE / "__init__.py", staging / "harness" / "__init__.py")
        shutil.copytree(
            PACKAGE / "suite", staging / "harness" / "suite", ignore=shutil.ignore_patterns("__pycache__")
        )
        if root.is_symlink() or root.exists():
            aside = cache / f".damaged-{os.getpid()}"
            with contextlib.suppress(OSError):
                os.rename(root, aside)
            jsonio.remove_tree(aside, ignore_errors=True)
        try:
            staging.rename(root)
        except OSError:  # another process staged the same content first
            jsonio.remove_tree(staging, ignore_errors=True)
        if not _intact(root, expected):
            raise FileNotFoundError(f"{root} does not hold the suite as copied; remove it and run again")
    return root


def _intact(root: Path, expected: str) -> bool:
    """Whether ``root`` holds exactly this suite: its sources' hash, the package's ``__init__.py``, and
    nothing else but the bytecode Python caches (which is removed: a stale .pyc could shadow a source)."""
    package = root / "harness"
    if root.is_symlink() or package.is_symlink() or not (package / "suite").is_dir():
        return False
    for cached in [p for p in jsonio.files_under(package) if "__pycache__" in p.parts]:
        cached.unlink(missing_ok=True)
    from harness.suite import source_files, source_sha256

    files = {p.relative_to(package).as_posix() for p in jsonio.files_under(package)}
    wanted = {"__init__.py"} | {
        f"suite/{p.relative_to(PACKAGE / 'suite').as_posix()}" for p in source_files(PACKAGE / "suite")
    }
    return (
        files == wanted
        and (package / "__init__.py").read_bytes() == (PACKAGE / "__init__.py").read_bytes()
        and source_sha256(package / "suite") == expected
    )


def _installed() -> bool:
    return CHECKOUT.name in ("site-packages", "dist-packages") or (PACKAGE / "_schemas").is_dir()
