"""The release axis of a matrix: cells that differ along one axis whose values are ordered releases.

Two axes qualify: cuDNN releases (``{wheel: X}`` cells, and ``bundled`` once its version is known from a
run) under one torch build, and torch builds (concrete versions) under one cuDNN source. The cells of
the axis are put in release order; cells off it (cuDNN disabled, a system cuDNN) are named apart.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from harness.plan.model import Cell

_NUMBERS = re.compile(r"^(\d+(?:\.\d+)*)")


@dataclass(frozen=True)
class Release:
    cell_id: str
    version: str  # as the axis names it: 9.18.1.3, 9.19.0 (a bundled cuDNN, as torch reported it), 2.13.0
    label: str  # for tables: the version, with "(bundled)" where it is torch's own cuDNN

    @property
    def key(self) -> tuple[int, ...]:
        return version_key(self.version)


@dataclass(frozen=True)
class ReleaseAxis:
    axis: str  # "cudnn" or "torch"
    releases: tuple[Release, ...]  # in release order
    off_axis: tuple[str, ...]  # the other cells' ids

    def find(self, name: str) -> Release | None:
        """The release named by its version (or a prefix of it, e.g. 9.15.1), its label or its cell id."""
        exact = [r for r in self.releases if name in (r.version, r.label, r.cell_id)]
        if exact:
            return exact[0]
        prefix = [r for r in self.releases if r.version.startswith(name + ".")]
        return prefix[0] if len(prefix) == 1 else None


def version_key(version: str) -> tuple[int, ...]:
    """Numeric order of a release: 9.18.1.3 < 9.19.0 < 9.19.0.56; 2.13.0+cpu as 2.13.0."""
    match = _NUMBERS.match(version)
    return tuple(int(p) for p in match.group(1).split(".")) if match else ()


def release_axis(
    cells: Sequence[Cell], bundled_versions: Mapping[str, str] | None = None
) -> ReleaseAxis | None:
    """The longest release axis among ``cells`` (at least two releases), or None.

    ``bundled_versions``: the cuDNN version a run reported, per cell id, for ``bundled`` cells (a matrix
    does not say which cuDNN torch pins)."""
    known = bundled_versions or {}
    candidates: list[tuple[str, list[Release]]] = []
    by_rest: dict[tuple[str, ...], list[Release]] = defaultdict(list)
    for cell in cells:  # cuDNN releases under one torch build, base image and Python
        rest = (cell.torch, cell.base_image, cell.python)
        if cell.cudnn.kind == "wheel" and cell.cudnn.value and version_key(cell.cudnn.value):
            by_rest[rest].append(Release(cell.id, cell.cudnn.value, cell.cudnn.value))
        elif cell.cudnn.kind == "bundled" and cell.id in known and version_key(known[cell.id]):
            by_rest[rest].append(Release(cell.id, known[cell.id], f"{known[cell.id]} (bundled)"))
    candidates += [("cudnn", group) for group in by_rest.values()]
    by_source: dict[tuple[object, ...], list[Release]] = defaultdict(list)
    for cell in cells:  # torch builds under one cuDNN source, base image and Python
        if cell.torch not in ("installed", "image") and version_key(cell.torch):
            by_source[(cell.cudnn, cell.base_image, cell.python)].append(
                Release(cell.id, cell.torch, cell.torch)
            )
    candidates += [("torch", group) for group in by_source.values()]
    candidates = [(axis, group) for axis, group in candidates if len({r.version for r in group}) >= 2]
    if not candidates:
        return None
    axis, group = max(candidates, key=lambda c: len(c[1]))
    ordered = tuple(sorted(group, key=lambda r: (r.key, r.label)))
    on = {r.cell_id for r in ordered}
    return ReleaseAxis(axis, ordered, tuple(c.id for c in cells if c.id not in on))
