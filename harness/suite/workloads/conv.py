"""Convolutions: 1-D/2-D/3-D, forward, backward-data and backward-weight, grouped, dilated, transposed."""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F

from harness.suite.catalog import WorkloadSpec
from harness.suite.workloads import DTYPES, Built, element_size, pick, randn


def build(spec: WorkloadSpec, profile: str, device: str, dtype: str) -> Built:
    p: dict[str, Any] = dict(spec.params)
    dims, cin, cout, k = p["dims"], p["cin"], p["cout"], p["k"]
    stride, pad, groups = p["stride"], p["pad"], p.get("groups", 1)
    dilation, transposed = p.get("dilation", 1), p.get("transposed", False)
    t = DTYPES[dtype]
    batch = pick(profile, 2, 32 if dims < 3 else 4, 64 if dims < 3 else 8)
    hw = pick(profile, max(p["hw"] // 4, 8), p["hw"])
    spatial = {1: (hw,), 2: (hw, hw), 3: (pick(profile, 4, p.get("depth", 8)), hw, hw)}[dims]
    x = randn(batch, cin, *spatial, device=device, dtype=t, seed=1)
    w_shape = (cin, cout // groups, *(k,) * dims) if transposed else (cout, cin // groups, *(k,) * dims)
    w = randn(*w_shape, device=device, dtype=t, seed=2, scale=1.0 / (cin // groups * k**dims) ** 0.5)
    bias = randn(cout, device=device, dtype=t, seed=3) if p.get("bias_relu") else None
    if p["layout"] == "cl":
        x = x.contiguous(memory_format=torch.channels_last)
        w = w.contiguous(memory_format=torch.channels_last)
    out_spatial = [
        ((s - 1) * stride - 2 * pad + dilation * (k - 1) + 1)
        if transposed
        else (s + 2 * pad - dilation * (k - 1) - 1) // stride + 1
        for s in spatial
    ]
    out_elems = batch * cout * _prod(out_spatial)
    in_spatial = _prod(spatial)
    flops = (
        2.0
        * (batch * cin * in_spatial if transposed else out_elems)
        * (cout if transposed else cin)
        // groups
        * k**dims
    )
    moved = element_size(dtype) * (x.numel() + w.numel() + out_elems)
    params = {
        "batch": batch,
        "in_channels": cin,
        "out_channels": cout,
        "kernel": k,
        "stride": stride,
        "padding": pad,
        "dilation": dilation,
        "groups": groups,
        "transposed": transposed,
        "input_shape": list(x.shape),
        "layout": "channels_last" if p["layout"] == "cl" else "contiguous",
        "pass": p["pass"],
        "bias_relu": bool(p.get("bias_relu")),
    }
    conv = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}[dims]
    tconv = {1: F.conv_transpose1d, 2: F.conv_transpose2d, 3: F.conv_transpose3d}[dims]

    if p["pass"] == "fwd":

        def forward() -> torch.Tensor:
            if transposed:
                return tconv(x, w, stride=stride, padding=pad, groups=groups)
            y = conv(x, w, bias, stride=stride, padding=pad, dilation=dilation, groups=groups)
            return F.relu(y) if bias is not None else y

        return Built(forward, params, flops, moved, [x, w, bias])

    # Backward passes call the convolution backward op directly, so only that kernel is timed.
    grad_out = randn(batch, cout, *out_spatial, device=device, dtype=t, seed=4)
    if p["layout"] == "cl":
        grad_out = grad_out.contiguous(memory_format=torch.channels_last)
    mask = [True, False, False] if p["pass"] == "bwd_data" else [False, True, False]

    def backward() -> Any:
        return torch.ops.aten.convolution_backward(
            grad_out,
            x,
            w,
            None,
            [stride] * dims,
            [pad] * dims,
            [dilation] * dims,
            transposed,
            [0] * dims,
            groups,
            mask,
        )[0 if mask[0] else 1]

    return Built(backward, params, flops, moved, [x, w, grad_out])


def _prod(values: list[int] | tuple[int, ...]) -> int:
    result = 1
    for v in values:
        result *= v
    return result
