"""ResNet-50 convolution shapes (forward)."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from harness.suite.workloads import DTYPES, Built, pick, randn

# id: (in_channels, out_channels, kernel, stride, padding, input H=W)
SHAPES = {
    "conv2d_r50_1x1": (256, 64, 1, 1, 0, 56),
    "conv2d_r50_3x3": (64, 64, 3, 1, 1, 56),
    "conv2d_r50_7x7s2": (3, 64, 7, 2, 3, 224),
}


def build(workload_id: str, profile: str, device: str, dtype: str) -> Built:
    cin, cout, k, stride, pad, hw = SHAPES[workload_id]
    batch = pick(profile, 2, 32)
    hw = pick(profile, max(hw // 4, 14), hw)
    t = DTYPES[dtype]
    x = randn(batch, cin, hw, hw, device=device, dtype=t, seed=1)
    w = randn(cout, cin, k, k, device=device, dtype=t, seed=2) * (1.0 / (cin * k * k) ** 0.5)
    out_hw = (hw + 2 * pad - k) // stride + 1
    flops = 2.0 * batch * cout * out_hw * out_hw * cin * k * k
    size = torch.finfo(t).bits // 8
    moved = size * (x.numel() + w.numel() + batch * cout * out_hw * out_hw)
    params = {
        "batch": batch,
        "in_channels": cin,
        "out_channels": cout,
        "kernel": k,
        "stride": stride,
        "padding": pad,
        "input_hw": hw,
        "layout": "NCHW",
    }
    return Built(lambda: F.conv2d(x, w, stride=stride, padding=pad), params, flops, moved, [x, w])
