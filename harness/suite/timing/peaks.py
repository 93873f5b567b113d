"""Vendor peak throughput per GPU model, dense (no sparsity), for "% of peak" figures.

TFLOP/s per dtype and memory bandwidth in GB/s; from NVIDIA's datasheets (SXM parts, boost clock).
A GPU missing here gets no % of peak, never a guess.
"""

from __future__ import annotations

PEAKS: dict[str, dict[str, float]] = {
    # name fragment as torch reports it: {dtype: TFLOP/s, "gbps": GB/s}
    "H200": {"fp32": 67.0, "tf32": 494.7, "bf16": 989.4, "fp16": 989.4, "fp64": 66.9, "gbps": 4800.0},
    "H100 80GB HBM3": {
        "fp32": 67.0,
        "tf32": 494.7,
        "bf16": 989.4,
        "fp16": 989.4,
        "fp64": 66.9,
        "gbps": 3350.0,
    },
    "H100 PCIe": {"fp32": 51.2, "tf32": 378.0, "bf16": 756.0, "fp16": 756.0, "fp64": 51.2, "gbps": 2000.0},
    "A100-SXM4-80GB": {
        "fp32": 19.5,
        "tf32": 156.0,
        "bf16": 312.0,
        "fp16": 312.0,
        "fp64": 19.5,
        "gbps": 2039.0,
    },
    "A100-SXM4-40GB": {
        "fp32": 19.5,
        "tf32": 156.0,
        "bf16": 312.0,
        "fp16": 312.0,
        "fp64": 19.5,
        "gbps": 1555.0,
    },
    "L4": {"fp32": 30.3, "tf32": 60.0, "bf16": 121.0, "fp16": 121.0, "fp64": 0.5, "gbps": 300.0},
}


def for_gpu(name: str | None) -> dict[str, float] | None:
    if not name:
        return None
    return next((peaks for fragment, peaks in PEAKS.items() if fragment in name), None)
