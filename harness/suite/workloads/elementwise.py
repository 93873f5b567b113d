"""Memory-bound layers around the convolutions: batch norm, max pool, activations."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from harness.suite.workloads import DTYPES, Built, pick, randn


def build(workload_id: str, profile: str, device: str, dtype: str) -> Built:
    t = DTYPES[dtype]
    size = torch.finfo(t).bits // 8
    batch = pick(profile, 2, 32)
    channels = 64
    hw = pick(profile, 28, 112 if workload_id == "maxpool2d" else 56)
    x = randn(batch, channels, hw, hw, device=device, dtype=t, seed=3)
    params = {"batch": batch, "channels": channels, "input_hw": hw, "layout": "NCHW"}
    n = x.numel()
    if workload_id == "batchnorm2d":
        weight = torch.ones(channels, device=device, dtype=t)
        bias = torch.zeros(channels, device=device, dtype=t)

        def fn() -> torch.Tensor:
            return F.batch_norm(x, None, None, weight, bias, training=True, momentum=0.1, eps=1e-5)

        return Built(fn, params, None, size * 2 * n, [x, weight, bias])
    if workload_id == "maxpool2d":
        out = n // 4
        params.update(kernel=3, stride=2, padding=1)
        return Built(lambda: F.max_pool2d(x, 3, stride=2, padding=1), params, None, size * (n + out), [x])
    op = {"relu": F.relu, "gelu": F.gelu}[workload_id]
    return Built(lambda: op(x), params, None, size * 2 * n, [x])
