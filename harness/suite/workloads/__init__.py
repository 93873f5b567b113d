"""Workload builders. Each module has ``build(workload_id, profile, device, dtype) -> Built``."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16}


@dataclass
class Built:
    """A ready-to-time call plus what it computes, for throughput figures."""

    fn: Callable[[], Any]
    params: dict[str, Any]
    flops: float | None = None  # floating-point operations per call
    bytes: float | None = None  # minimum bytes moved per call (inputs read + outputs written)
    keep: list[Any] = field(default_factory=list)  # tensors the call closes over


def randn(*shape: int, device: str, dtype: torch.dtype, seed: int = 0) -> torch.Tensor:
    """Inputs made on the CPU from a fixed seed, so every cell sees bit-identical data."""
    generator = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=generator, dtype=torch.float32).to(device=device, dtype=dtype)


def pick(profile: str, smoke: Any, default: Any) -> Any:
    return smoke if profile == "smoke" else default
