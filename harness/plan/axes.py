"""A cell's axes, declared once: each axis's name, default, how its values read and write in JSON, how
it selects, and how it shows in a cell's id, label and the report's columns.

The matrix loader expands the product of these axes; ``model.Cell`` holds one value of each and reads
and writes them, matches rules and makes its id and label through this table; the plan's table and the
report's long form take their columns from it; ``tests/test_axes.py`` holds the schemas' axis properties
to it. A new axis (an NCCL or CUDA-toolkit release, say) is its entry here, its field on ``Cell``, its
value in the matrix, plan and result schemas, and the backend that realizes it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

CudnnKind = Literal["bundled", "disabled", "wheel", "system"]
NEWEST = "newest"  # {wheel: newest}: the newest release the package source holds, chosen when planned


@dataclass(frozen=True)
class CudnnSource:
    kind: CudnnKind
    value: str | None = None  # version, 'auto' or a directory for system; version for wheel

    @classmethod
    def from_json(cls, raw: str | Mapping[str, str]) -> CudnnSource:
        if isinstance(raw, str):
            return cls(raw)  # type: ignore[arg-type]
        ((kind, value),) = raw.items()
        return cls(kind, value)  # type: ignore[arg-type]

    def to_json(self) -> str | dict[str, str]:
        return self.kind if self.value is None else {self.kind: self.value}

    @property
    def label(self) -> str:
        return self.kind if self.value is None else f"{self.kind}:{self.value}"

    @property
    def words(self) -> str:
        """The source as a reader names it: whose cuDNN, and which where the source says."""
        if self.kind == "bundled":
            return "PyTorch's cuDNN"
        if self.kind == "disabled":
            return "cuDNN disabled"
        if self.kind == "wheel":
            return "PyPI's newest cuDNN" if self.value == NEWEST else f"PyPI's cuDNN {self.value}"
        if self.value in (None, "auto", "image"):
            return "NVIDIA's system cuDNN" + (" in the image" if self.value == "image" else "")
        return f"NVIDIA's system cuDNN {self.value}"


@dataclass(frozen=True)
class SourceTerms:
    """Where a matrix's cuDNN source is a cell: ``device`` ('cuda' or 'cpu'): only where the suite runs on
    that device; ``optional``: only where this host can make it. A cell a term leaves out is named with why,
    in the plan and its report; it is never run and failed."""

    device: str | None = None
    optional: bool = False

    @property
    def conditional(self) -> bool:
        return self.device is not None or self.optional


TERMS = ("device", "optional")


def cudnn_entry(raw: str | Mapping[str, Any]) -> tuple[CudnnSource, SourceTerms]:
    """An entry of a matrix's ``axes.cudnn`` as its schema checked it: its source and its terms.
    ``{disabled: true, device: cpu}`` is the source ``disabled`` with a term."""
    if isinstance(raw, str):
        return CudnnSource.from_json(raw), SourceTerms()
    terms = SourceTerms(raw.get("device"), bool(raw.get("optional", False)))
    ((kind, value),) = [(k, v) for k, v in raw.items() if k not in TERMS]
    return CudnnSource.from_json(kind if value is True else {kind: value}), terms


@dataclass(frozen=True)
class CudnnExpectation:
    """The cuDNN the suite must find loaded in a cell, as a backend realized it: the source's kind, and
    where the backend knows them, the folder every cuDNN library must load from and the version torch must
    report. The suite checks it (``--expect-cudnn``) and records it as the probe's ``requested``."""

    source: CudnnKind
    lib_dir: str | None = None
    version: str | None = None

    @classmethod
    def from_json(cls, raw: Mapping[str, str]) -> CudnnExpectation:
        return cls(raw["source"], raw.get("lib_dir"), raw.get("version"))  # type: ignore[arg-type]

    def to_json(self) -> dict[str, str]:
        """As the suite reads it: ``source``, then what is known of ``lib_dir`` and ``version``."""
        known = {"lib_dir": self.lib_dir, "version": self.version}
        return {"source": self.source, **{k: v for k, v in known.items() if v is not None}}


def _same(value: Any) -> Any:
    return value


@dataclass(frozen=True)
class Axis:
    """One axis of a matrix's cells."""

    name: str  # the key under the matrix's ``axes:``, the cell's field and its JSON key
    title: str  # a table's header for it
    default: str | None = None  # where a matrix leaves the axis out; None: a matrix must give it
    read: Callable[[Any], Any] = _same  # a value as JSON holds it -> the cell's
    write: Callable[[Any], Any] = _same  # the cell's value -> JSON
    text: Callable[[Any], str] = str  # the value in a table or a label
    selects: Callable[[Any, Any], bool] | None = None  # (cell's value, rule's JSON): None: equal when read
    slug: Callable[[Any], str] | None = None  # its part of the cell id's readable prefix; None: none
    in_label: str | None = None  # its part of a cell's label, before its text ("" for none); None: left out
    column: str | None = None  # the report's long-form column for it; None: none

    def matches(self, value: Any, wanted: Any) -> bool:
        """Whether a rule's selector value (JSON) picks a cell holding ``value`` on this axis."""
        return self.selects(value, wanted) if self.selects else bool(value == self.read(wanted))


def _torch_slug(torch: str) -> str:
    return f"torch-{torch}" if torch in ("installed", "image") else "torch" + torch.replace("+", "-")


def _cudnn_slug(source: CudnnSource) -> str:
    slug: str = f"cudnn-{source.kind}"
    if source.value is not None:
        slug += "-" + ("path" if source.value.startswith("/") else source.value)
    return slug


def _cudnn_selects(source: CudnnSource, wanted: Any) -> bool:
    """A kind alone (``wheel``, ``system``) picks every source of that kind; anything else picks itself."""
    if wanted in ("wheel", "system"):
        return bool(source.kind == wanted)
    return source == CudnnSource.from_json(wanted)


AXES: tuple[Axis, ...] = (
    Axis("torch", "torch", slug=_torch_slug, in_label="", column="torch"),
    Axis(
        "cudnn",
        "cuDNN",
        read=CudnnSource.from_json,
        write=CudnnSource.to_json,
        text=lambda source: str(source.label),
        selects=_cudnn_selects,
        slug=_cudnn_slug,
        in_label="cuDNN ",
        column="cudnn_source",
    ),
    Axis("base_image", "base image", default="auto"),
    Axis("python", "python", default="installed"),
)
AXIS_NAMES = tuple(axis.name for axis in AXES)
AXIS_DEFAULTS = {axis.name: axis.default for axis in AXES if axis.default is not None}
BY_NAME = {axis.name: axis for axis in AXES}
