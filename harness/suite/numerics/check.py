"""Numerics of one measurement: error against an fp64 reference, NaNs, digests, bitwise repeatability.

The reference is the same workload built in fp64 from the same inputs (they are made in fp32 from
fixed seeds, so the fp64 copy holds the very same values). The error is the relative RMSE of every
output against the reference; the tolerance per dtype is a sanity bound (TorchDynamo's), not
the cross-cell gate, which compares cells with each other.
"""

from __future__ import annotations

import ctypes
import hashlib
from collections.abc import Callable
from typing import Any

import torch

from harness.suite.document import Numerics

REL_RMSE_TOLERANCE = {"fp32": 1e-5, "tf32": 5e-3, "bf16": 1.6e-2, "fp16": 1e-3}


def precision(dtype: str, tf32: bool) -> str:
    """The arithmetic a measurement ran in: fp32 storage with TF32 in effect (the tf32 knob, or torch's
    defaults for convolutions) multiplies in TF32, so TF32's tolerance is the one it can be held to."""
    if dtype in ("fp32", "fp32_default"):
        return "tf32" if tf32 else "fp32"
    return dtype


def tensors(result: Any) -> list[torch.Tensor]:
    """Every tensor in a workload's result (a tensor, or nested tuples and lists of them)."""
    if isinstance(result, torch.Tensor):
        return [result]
    if isinstance(result, (tuple, list)):
        return [t for item in result for t in tensors(item)]
    return []


# pinned host memory a GPU output is copied into to be hashed, grown to the largest output and given back
# after the numerics pass (``release``): a copy to pageable memory ran at 1.8 GB/s on an H200, and the default
# profile's round 1 hashes 6.4 GB of outputs
_staging: torch.Tensor | None = None


def digest(outputs: list[torch.Tensor]) -> str:
    """The SHA-256 of the outputs' dtypes, shapes and bytes in order: equal exactly where they are."""
    h = hashlib.sha256()
    for t in outputs:
        h.update(str(t.dtype).encode() + str(tuple(t.shape)).encode())
        if t.numel():
            _hash_bytes(h, t)
    return h.hexdigest()


def _hash_bytes(h: Any, t: torch.Tensor) -> None:
    """``t``'s bytes in row-major order into ``h``, read in host memory where they lie (through ctypes: the
    cell's Python need not have numpy), while the tensor that holds them is alive."""
    global _staging
    # reshape(-1) gives stride 1 even where a channels_last tensor counts as contiguous with size-1 dims
    flat = t.detach().contiguous().reshape(-1).view(torch.uint8)
    if flat.device.type != "cpu":
        if _staging is None or _staging.numel() < flat.numel():
            _staging = None  # the smaller buffer goes before the larger one is pinned
            # a normal tensor, never an inference one, though a row's check may run in inference mode: the
            # next row's may not, and an inference tensor cannot be written outside it
            with torch.inference_mode(False):
                _staging = torch.empty(flat.numel(), dtype=torch.uint8, pin_memory=True)
        host = _staging[: flat.numel()]
        host.copy_(flat)  # to pinned memory at the bus's speed; a blocking copy, done when it returns
        flat = host
    h.update(memoryview((ctypes.c_char * flat.numel()).from_address(flat.data_ptr())).cast("B"))


def release() -> None:
    """Give back the pinned buffer ``digest`` grew."""
    global _staging
    _staging = None


def outputs(reference: Callable[[], Any]) -> list[torch.Tensor]:
    """What one call of ``reference`` returns, detached: a reference computed once for several checks."""
    return [t.detach() for t in tensors(reference())]


def check(
    fn: Callable[[], Any],
    reference: Callable[[], Any] | list[torch.Tensor] | None,
    dtype: str,
    tf32: bool = False,
) -> Numerics:
    """Run ``fn`` twice and compare with ``reference`` (a call run once here, or its ``outputs``) against
    the tolerance of the precision it ran in."""
    first = [t.detach().clone() for t in tensors(fn())]
    second = tensors(fn())
    found: Numerics = {
        "digest": digest(first),
        "bitwise_repeatable": len(first) == len(second)
        and all(torch.equal(a, b) for a, b in zip(first, second, strict=True)),
        "nan_count": int(sum(torch.isnan(t).sum() for t in first if t.is_floating_point())),
        "inf_count": int(sum(torch.isinf(t).sum() for t in first if t.is_floating_point())),
        "tolerance_rel_rmse": REL_RMSE_TOLERANCE.get(precision(dtype, tf32)),
    }
    if reference is None:
        return found
    expected = reference if isinstance(reference, list) else outputs(reference)
    if len(expected) != len(first) or any(a.shape != b.shape for a, b in zip(first, expected, strict=True)):
        found["reference_error"] = "the fp64 reference has other outputs"
        return found
    squared_error = squared_ref = 0.0
    max_abs = 0.0
    for out, ref in zip(first, expected, strict=True):
        diff = out.to(torch.float64) - ref.to(torch.float64)
        squared_error += float((diff * diff).sum())
        squared_ref += float((ref.to(torch.float64) ** 2).sum())
        max_abs = max(max_abs, float(diff.abs().max())) if diff.numel() else max_abs
    rel_rmse = (squared_error / squared_ref) ** 0.5 if squared_ref > 0 else float(squared_error > 0)
    found["rel_rmse"], found["max_abs_error"] = rel_rmse, max_abs
    tolerance = found.get("tolerance_rel_rmse")
    if tolerance is not None:
        found["within_tolerance"] = rel_rmse <= tolerance and found["nan_count"] == found["inf_count"] == 0
    return found
