"""Tensors and torch settings every builder shares: dtypes, seeded inputs, the knob flags.

Inputs are made on the CPU from fixed seeds and then moved, so every cell sees bit-identical data,
and the same builder called with ``dtype="fp64"`` gives the reference the numerics are checked against.
"""

from __future__ import annotations

import os
from collections import OrderedDict
from collections.abc import Mapping

import torch

from harness.suite.document import Knobs

# the fp32 modes differ only in the math flags the suite sets around them (``harness.suite.precision``)
DTYPES = {
    "fp32_default": torch.float32,
    "fp32": torch.float32,
    "tf32": torch.float32,
    "bf16": torch.bfloat16,
    "fp16": torch.float16,
    "fp64": torch.float64,
}


# The same inputs are built for every dtype of a workload, again for its fp64 reference and again in
# each window; drawing them on the CPU each time took most of a default-profile cell's wall time, so the
# fp32 draws are kept (least recently used first out) up to a quarter of the host's memory, at most
# 8 GiB: windows are passes over every row, so a cache smaller than a pass's draws (4.2 GiB in the
# default profile on a GPU) drops each large input before that row's next window and draws it again
# (lab/evidence/aa-h100/README.md).
_DRAW_CACHE_MIN_BYTES = 1 << 30
_DRAW_CACHE_MAX_BYTES = 8 << 30


def draw_cache_bytes(physical_bytes: int | None) -> int:
    """How many bytes of draws to keep on a host with ``physical_bytes`` of memory (None: not known)."""
    if physical_bytes is None:
        return _DRAW_CACHE_MIN_BYTES
    return max(_DRAW_CACHE_MIN_BYTES, min(_DRAW_CACHE_MAX_BYTES, physical_bytes // 4))


def _physical_bytes() -> int | None:
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, OSError, ValueError):
        return None


_DRAW_CACHE_BYTES = draw_cache_bytes(_physical_bytes())
_draws: OrderedDict[tuple[tuple[int, ...], int, float], torch.Tensor] = OrderedDict()


def randn(*shape: int, device: str, dtype: torch.dtype, seed: int = 0, scale: float = 1.0) -> torch.Tensor:
    """Inputs made on the CPU from a fixed seed, so every cell sees bit-identical data."""
    key = (shape, seed, scale)
    values = _draws.get(key)
    if values is None:
        generator = torch.Generator().manual_seed(seed)
        values = torch.randn(*shape, generator=generator, dtype=torch.float32) * scale
        _draws[key] = values
        while sum(t.nbytes for t in _draws.values()) > _DRAW_CACHE_BYTES and len(_draws) > 1:
            _draws.popitem(last=False)
    else:
        _draws.move_to_end(key)
    # .to() copies even when device and dtype match, so a caller may change what it gets in place
    return values.to(device=device, dtype=dtype, copy=True)


def element_size(dtype: str) -> int:
    return torch.empty((), dtype=DTYPES[dtype]).element_size()


def apply_knobs(knobs: Knobs | Mapping[str, bool], tf32: bool | None) -> None:
    """Set a knob set's torch flags in this process (the DDP workload's ranks set them in theirs); TF32 on
    or off everywhere, or (None) as the torch build has it by default."""
    from harness.suite.precision import set_tf32

    torch.backends.cudnn.benchmark = knobs["cudnn_benchmark"]
    torch.backends.cudnn.deterministic = knobs["deterministic"]
    deterministic = knobs["deterministic"]
    if torch.are_deterministic_algorithms_enabled() != deterministic or (
        deterministic and not torch.is_deterministic_algorithms_warn_only_enabled()
    ):  # only where it changes: its first call imports torch._dynamo, 3 to 4 s a process (issue 19)
        torch.use_deterministic_algorithms(deterministic, warn_only=True)
    set_tf32(tf32)
