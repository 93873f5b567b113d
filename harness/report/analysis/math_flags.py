"""The math each precision mode ran with, group by group: the flags its measurements recorded (suite 0.20,
``math_flags``), or for results made before, what the mode asked of the suite (it set TF32 off for fp32,
bf16 and fp16, on for the tf32 knob).

Two cells that ran one mode with different flags (torch builds whose defaults differ, say) compare math as
well as cuDNN: the report says so where it names each mode's flags (``differing``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from harness.suite import precision
from harness.suite.document import ResultDocument

# what decides fp32 math, as the suite records it; the fp32_precision settings (torch 2.9 on) mirror these
# flags when only they are set (the suite sets only them), so they are shown, never compared: a build
# without them ran the same math
LEGACY = ("cudnn_allow_tf32", "matmul_allow_tf32", "float32_matmul_precision")
ORDER = {name: i for i, name in enumerate(precision.LABELS.values())}
FLAG_NAMES = ("TF32 in cuDNN", "TF32 in matrix products", "float32 matmul precision")


def text(recorded: Mapping[str, Any] | None) -> str | None:
    """One measurement's flags as one line of ``name=value`` words (results.csv's ``math_flags``): the TF32
    flags as 0 or 1, the float32 matmul precision, then the fp32_precision settings by place; None where
    the measurement recorded none."""
    if not recorded:
        return None
    words = [f"{k}={_value(recorded[k])}" for k in LEGACY if k in recorded]
    places = recorded.get("fp32_precision")
    if isinstance(places, Mapping):
        words += [f"{place}={_value(value)}" for place, value in sorted(places.items())]
    return " ".join(words)


def _value(value: Any) -> str:
    return str(int(value)) if isinstance(value, bool) else str(value)


@dataclass(frozen=True)
class Math:
    """A mode's fp32 math in a group: TF32 in cuDNN and in matrix products, and torch's float32 matmul
    precision (None: not recorded); ``recorded`` False where the results predate ``math_flags`` and the
    flags are what the mode asked; ``newer``: the fp32_precision settings recorded, as words."""

    cudnn_tf32: bool
    matmul_tf32: bool
    matmul_precision: str | None
    recorded: bool
    newer: str = ""

    def words(self) -> str:
        """``TF32 in cuDNN on, in matrix products off, float32 matmul precision highest``."""
        said = f"TF32 in cuDNN {_on(self.cudnn_tf32)}, in matrix products {_on(self.matmul_tf32)}"
        if self.matmul_precision:
            said += f", float32 matmul precision {self.matmul_precision}"
        return said


def _on(flag: bool) -> str:
    return "on" if flag else "off"


def math_of(dtype: str, tf32_knob: bool, line: object) -> Math | None:
    """The math of a measurement: from the flags line it recorded (``text``), else what its mode asked;
    None where neither says (``fp32_default`` without flags: the build's own)."""
    if isinstance(line, str) and line:
        words = dict(word.split("=", 1) for word in line.split() if "=" in word)
        newer = " ".join(f"{k}={v}" for k, v in words.items() if k not in LEGACY)
        return Math(
            words.get("cudnn_allow_tf32") == "1",
            words.get("matmul_allow_tf32") == "1",
            words.get("float32_matmul_precision"),
            True,
            newer,
        )
    asked = precision.tf32_asked(dtype, tf32_knob)
    return None if asked is None else Math(asked, asked, None, False)


@dataclass(frozen=True)
class ModeMath:
    """One mode run with one math, and the groups (cells, or a compare's sides) that ran it so."""

    mode: str  # precision.label
    math: Math
    groups: tuple[str, ...]


def by_mode(measured: Iterable[tuple[str, str, bool, object]], groups: Sequence[str]) -> list[ModeMath]:
    """(group, dtype, tf32 knob, flags line) of every measurement, summed up: each mode's math with the
    groups that ran it, the modes in ``precision.LABELS``' order, the groups in ``groups``' order."""
    found: dict[tuple[str, Math], set[str]] = {}
    for group, dtype, knob, line in measured:
        math = math_of(dtype, knob, line)
        if math is not None:
            found.setdefault((precision.label(dtype, knob), math), set()).add(group)
    place = {g: i for i, g in enumerate(groups)}
    lines = [
        ModeMath(mode, math, tuple(sorted(mine, key=lambda g: (place.get(g, len(place)), g))))
        for (mode, math), mine in found.items()
    ]
    return sorted(lines, key=lambda m: (ORDER.get(m.mode, len(ORDER)), place.get(m.groups[0], len(place))))


def from_frame(frame: pd.DataFrame, groups: Sequence[str]) -> list[ModeMath]:
    """``by_mode`` of a report's long-form frame (``frames.long_form``)."""
    if frame.empty or "workload" not in frame:
        return []
    measured = frame[frame["workload"].notna()]
    flags = measured["math_flags"] if "math_flags" in measured else [None] * len(measured)
    rows = zip(measured["group"], measured["dtype"], measured["tf32"], flags, strict=True)
    return by_mode(((str(g), str(d), bool(k), f) for g, d, k, f in rows), groups)


def from_documents(documents: Iterable[tuple[str, ResultDocument]], groups: Sequence[str]) -> list[ModeMath]:
    """``by_mode`` of (group, result document) pairs: a compare's sides before any analysis."""
    measured = (
        (group, m["dtype"], bool(m["knobs"]["tf32"]), text(_recorded(m)))
        for group, doc in documents
        for m in doc["measurements"]
    )
    return by_mode(measured, groups)


def _recorded(measurement: Mapping[str, Any]) -> Mapping[str, Any] | None:
    found = measurement.get("math_flags")
    return found if isinstance(found, Mapping) else None


def differing(found: Sequence[ModeMath], names: Mapping[str, str]) -> list[str]:
    """A sentence for each mode that ran with different math in different groups (``names``: how each
    group is told), naming only the flags that differ: ``fp32 (torch defaults): TF32 in cuDNN on in A, B,
    off in C``. The float32 matmul precision counts where every group of the mode recorded it."""
    said = []
    for mode in dict.fromkeys(m.mode for m in found):
        mine = [m for m in found if m.mode == mode]
        precise = all(m.math.matmul_precision for m in mine)
        kinds: dict[tuple[str, str, str], list[str]] = {}
        for m in mine:
            key = (_on(m.math.cudnn_tf32), _on(m.math.matmul_tf32), str(m.math.matmul_precision))
            kinds.setdefault(key if precise else (*key[:2], ""), []).extend(names.get(g, g) for g in m.groups)
        if len(kinds) < 2:
            continue
        parts = [
            f"{flag} "
            + ", ".join(f"{key[i]} in {', '.join(dict.fromkeys(told))}" for key, told in kinds.items())
            for i, flag in enumerate(FLAG_NAMES)
            if len({key[i] for key in kinds}) > 1
        ]
        said.append(f"{mode}: " + "; ".join(parts))
    return said
