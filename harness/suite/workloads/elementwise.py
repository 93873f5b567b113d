"""Pooling and activations around the convolutions: memory-bound, mostly outside cuDNN."""

from __future__ import annotations

import torch.nn.functional as F

from harness.suite.catalog import WorkloadSpec
from harness.suite.workloads import DTYPES, Built, element_size, pick, randn

ACTIVATIONS = {"relu": F.relu, "sigmoid": F.sigmoid, "tanh": F.tanh, "gelu": F.gelu, "silu": F.silu}


def build(spec: WorkloadSpec, profile: str, device: str, dtype: str) -> Built:
    op = spec.params["op"]
    t = DTYPES[dtype]
    size = element_size(dtype)
    batch = pick(profile, 2, 32, 64)
    hw = pick(profile, 28, 112 if op == "maxpool2d" else 56)
    x = randn(batch, 64, hw, hw, device=device, dtype=t, seed=3)
    n = x.numel()
    params = {"op": op, "shape": list(x.shape)}
    if op == "maxpool2d":
        params.update(kernel=3, stride=2, padding=1)
        return Built(lambda: F.max_pool2d(x, 3, stride=2, padding=1), params, None, size * (n + n // 4), [x])
    if op == "avgpool2d":
        params.update(kernel=2, stride=2)
        return Built(lambda: F.avg_pool2d(x, 2, stride=2), params, None, size * (n + n // 4), [x])
    if op == "adaptive_avgpool2d":
        params.update(output_size=1)
        return Built(lambda: F.adaptive_avg_pool2d(x, 1), params, None, size * n, [x])
    fn = ACTIVATIONS[op]
    return Built(lambda: fn(x), params, None, size * 2 * n, [x])
