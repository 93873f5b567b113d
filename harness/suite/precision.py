"""Precision modes: what a row's dtype asks of torch's math flags, the flags that were in effect, and the
name a reader sees.

A row's ``dtype`` is its precision mode, stored under that id in every result:

- ``fp32_default``: fp32 storage under the torch build's own flags, untouched. PyTorch's default lets
  cuDNN convolutions (and RNNs) use TF32 and keeps matrix products in full fp32, so on an Ampere or later
  GPU this is what a user who sets nothing runs.
- ``fp32``: fp32 with TF32 switched off everywhere (the suite's ``fp32`` since its first version).
- ``tf32``: fp32 storage with TF32 allowed everywhere, matrix products too.
- ``bf16``, ``fp16``: that type; training steps autocast to it (AMP), layers take it as their input. TF32 is
  off for what autocast keeps in fp32, as it was for every bf16 row the suite has measured.

The ``tf32`` knob turns either fp32 mode into TF32 everywhere. Each measurement records the flags that were
in effect (``flags``), so a reading can always say which math ran. Importing this module does not import
torch: reports name modes without it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from harness.suite.document import MathFlags

DEFAULT_FP32 = "fp32_default"
MODES = (DEFAULT_FP32, "fp32", "tf32", "bf16", "fp16")
LABELS = {
    DEFAULT_FP32: "fp32 (torch defaults)",
    "fp32": "fp32 (TF32 off)",
    "tf32": "fp32 (TF32 on)",
    "bf16": "bf16",
    "fp16": "fp16",
}
FP32_STORAGE = (DEFAULT_FP32, "fp32", "tf32")


def label(dtype: str, tf32_knob: bool = False) -> str:
    """What a reader sees for a row's mode: never a bare "fp32", whose math depends on flags."""
    if tf32_knob and dtype in FP32_STORAGE:
        return LABELS["tf32"]
    return LABELS.get(dtype, dtype)


def tf32_asked(dtype: str, tf32_knob: bool) -> bool | None:
    """TF32 on or off everywhere, as the mode and the knob ask; None: the build's defaults stand."""
    if tf32_knob or dtype == "tf32":
        return True
    if dtype == DEFAULT_FP32:
        return None
    return False


_defaults: tuple[bool, bool] | None = None


def _legacy_flags() -> tuple[bool, bool]:
    import warnings

    import torch

    with warnings.catch_warnings():  # newer torch prefers fp32_precision; the old flags still rule
        warnings.simplefilter("ignore")
        return bool(torch.backends.cudnn.allow_tf32), bool(torch.backends.cuda.matmul.allow_tf32)


def set_tf32(tf32: bool | None) -> None:
    """Allow TF32 in cuDNN and in matrix products, or forbid it (True, False), or put back the flags the
    build had when this process first called here (None). Only the legacy flags are set: torch refuses to
    read them once the newer ``fp32_precision`` settings were mixed in."""
    import warnings

    import torch

    global _defaults
    if _defaults is None:
        _defaults = _legacy_flags()
    cudnn, matmul = _defaults if tf32 is None else (tf32, tf32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.backends.cudnn.allow_tf32 = cudnn
        torch.backends.cuda.matmul.allow_tf32 = matmul


def flags() -> MathFlags:
    """The math flags in effect now: the legacy TF32 flags, float32 matmul precision, and where the build
    has them the ``fp32_precision`` settings (torch 2.9 and later)."""
    import torch

    cudnn, matmul = _legacy_flags()
    found: MathFlags = {
        "cudnn_allow_tf32": cudnn,
        "matmul_allow_tf32": matmul,
        "float32_matmul_precision": torch.get_float32_matmul_precision(),
    }
    backends = torch.backends
    places = {
        "cuda.matmul": getattr(backends.cuda.matmul, "fp32_precision", None),
        "cudnn.conv": getattr(getattr(backends.cudnn, "conv", None), "fp32_precision", None),
        "cudnn.rnn": getattr(getattr(backends.cudnn, "rnn", None), "fp32_precision", None),
    }
    if any(isinstance(value, str) for value in places.values()):
        found["fp32_precision"] = {k: v for k, v in places.items() if isinstance(v, str)}
    return found


def tf32_in_effect(recorded: Mapping[str, object] | None, dtype: str, tf32_knob: bool) -> bool:
    """Whether a measurement's fp32 math could use TF32: from the flags it recorded, else from its mode."""
    if dtype not in FP32_STORAGE:
        return False
    if recorded is not None:
        return bool(recorded.get("cudnn_allow_tf32") or recorded.get("matmul_allow_tf32"))
    asked = tf32_asked(dtype, tf32_knob)
    return True if asked is None else asked
