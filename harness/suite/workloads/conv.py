"""Convolutions: 1-D/2-D/3-D, forward, backward-data and backward-weight, grouped, dilated, transposed."""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any, TypedDict

from harness.suite.contract import ATLAS_PROFILES, EVERY_PROFILE, LARGER_PROFILES, Built, WorkloadSpec, pick
from harness.suite.workloads.layers import DEFAULT, NETWORKS, RESNET50

if TYPE_CHECKING:
    import torch

PASSES = {"fwd": "forward", "bwd_data": "backward-data", "bwd_weight": "backward-weight"}
LAYOUTS = {"nchw": "NCHW", "cl": "NHWC"}
# the ResNet-50 layers every profile but the smoke test measured before the atlas: all passes and layouts
EARLIER = ("1x1", "3x3", "7x7s2")


class Shape(TypedDict, total=False):
    """A convolution's geometry as a workload's params spell it (``Conv`` reads it)."""

    dims: int
    cin: int
    cout: int
    k: int
    stride: int
    pad: int
    hw: int
    depth: int  # 3-D only: the volume's depth at full size
    groups: int
    dilation: int
    transposed: bool
    bias_relu: bool


# One forward each: id -> (description, shape); 2-D unless the shape says otherwise.
SHAPES: dict[str, tuple[str, Shape]] = {
    "conv2d_depthwise_mbv2": (
        "Conv2d fwd depthwise 3x3, 144 ch, MobileNetV2 stage 2",
        {"cin": 144, "cout": 144, "k": 3, "stride": 1, "pad": 1, "hw": 56, "groups": 144},
    ),
    "conv2d_depthwise_effnet_s2": (
        "Conv2d fwd depthwise 5x5 stride 2, 240 ch, EfficientNet",
        {"cin": 240, "cout": 240, "k": 5, "stride": 2, "pad": 2, "hw": 28, "groups": 240},
    ),
    "conv2d_grouped_resnext": (
        "Conv2d fwd grouped 3x3, 32 groups, 256 ch, ResNeXt-50",
        {"cin": 256, "cout": 256, "k": 3, "stride": 1, "pad": 1, "hw": 28, "groups": 32},
    ),
    "conv2d_dilated_deeplab": (
        "Conv2d fwd dilated 3x3, dilation 2, 256 ch, DeepLab ASPP",
        {"cin": 256, "cout": 256, "k": 3, "stride": 1, "pad": 2, "hw": 32, "dilation": 2},
    ),
    "conv_transpose2d_unet": (
        "Conv2d fwd transposed 2x2 stride 2, 128->64, U-Net decoder",
        {"cin": 128, "cout": 64, "k": 2, "stride": 2, "pad": 0, "hw": 64, "transposed": True},
    ),
    "conv2d_bias_relu": (
        "Conv2d fwd Conv2d 3x3 + bias + ReLU, 64 ch (a fusion candidate)",
        {"cin": 64, "cout": 64, "k": 3, "stride": 1, "pad": 1, "hw": 56, "bias_relu": True},
    ),
    "conv1d_depthwise": (
        "Conv1d depthwise k=31, 256 ch (Conformer-style)",
        {"dims": 1, "cin": 256, "cout": 256, "k": 31, "stride": 1, "pad": 15, "hw": 512, "groups": 256},
    ),
    "conv3d_video": (
        "Conv3d 3x3x3, 64 ch, 8x56x56 clip (video)",
        {"dims": 3, "cin": 64, "cout": 64, "k": 3, "stride": 1, "pad": 1, "hw": 56, "depth": 8},
    ),
    "conv3d_unet": (
        "Conv3d 3x3x3, 32 ch, 64^3 volume (3D U-Net)",
        {"dims": 3, "cin": 32, "cout": 32, "k": 3, "stride": 1, "pad": 1, "hw": 64, "depth": 64},
    ),
}


@dataclass(frozen=True)
class Conv:
    """One workload's convolution: its geometry, pass and layout, read from ``WorkloadSpec.params``."""

    dims: int
    cin: int
    cout: int
    k: int
    stride: int
    pad: int
    hw: int
    layout: str  # a key of LAYOUTS
    passes: str  # a key of PASSES (``pass`` in params)
    depth: int = 8
    groups: int = 1
    dilation: int = 1
    transposed: bool = False
    bias_relu: bool = False
    batch: int | None = None  # the network's training batch (None: the suite's default for ``dims``)

    @classmethod
    def of(cls, params: Mapping[str, Any]) -> Conv:
        names = {f.name for f in fields(cls)} - {"passes"}
        return cls(passes=params["pass"], **{k: v for k, v in params.items() if k in names})


def _specs() -> Iterator[WorkloadSpec]:
    for network in NETWORKS:
        for layer in network.convs:
            base = {
                "dims": 2,
                "cin": layer.cin,
                "cout": layer.cout,
                "k": layer.k,
                "stride": layer.stride,
                "pad": layer.k // 2,
                "hw": layer.hw,
                "batch": network.batch,
                "network": network.title,
                "layer": layer.name,
            }
            earlier = network is RESNET50 and layer.name in EARLIER
            default = (network.key, layer.name) in DEFAULT.convs
            for passes, what in PASSES.items():
                suffix = "" if passes == "fwd" else f"_{passes}"
                for layout, shown in LAYOUTS.items():
                    profiles: tuple[str, ...] = ATLAS_PROFILES
                    narrowed: tuple[str, ...] = ()
                    if earlier:
                        smoke = passes == "fwd" and layout == "nchw"
                        profiles = (*(EVERY_PROFILE if smoke else LARGER_PROFILES), "atlas")
                    elif default:
                        profiles = ("default", *ATLAS_PROFILES)
                        narrowed = tuple(d for d, paired in DEFAULT.conv_pairs if paired == layout)
                    yield WorkloadSpec(
                        f"conv2d_{network.key}_{layer.name}{suffix}" + (".cl" if layout == "cl" else ""),
                        "conv",
                        f"Conv2d {what} {layer.cin}->{layer.cout} {layer.k}x{layer.k} stride "
                        f"{layer.stride} at {layer.hw}x{layer.hw}, {network.title} {layer.name} ({shown})",
                        profiles=profiles,
                        default_dtypes=narrowed,
                        params={**base, "pass": passes, "layout": layout},
                        group=f"conv {what} {shown}",
                    )
    for wid, (text, shape) in SHAPES.items():
        params = {"dims": 2, "pass": "fwd", "layout": "nchw", **shape}
        yield WorkloadSpec(wid, "conv", text, params=params, group="conv forward, other shapes")


SPECS = tuple(_specs())


def build(spec: WorkloadSpec, profile: str, device: str, dtype: str) -> Built:
    import torch
    import torch.nn.functional as F

    from harness.suite.workloads.tensors import DTYPES, element_size, randn

    c = Conv.of(spec.params)
    dims, cin, cout, k = c.dims, c.cin, c.cout, c.k
    stride, pad, groups, dilation, transposed = c.stride, c.pad, c.groups, c.dilation, c.transposed
    t = DTYPES[dtype]
    batch = pick(profile, 2, c.batch or (32 if dims < 3 else 4), 64 if dims < 3 else 8)
    hw = pick(profile, max(c.hw // 4, 8), c.hw)
    spatial = {1: (hw,), 2: (hw, hw), 3: (pick(profile, 4, c.depth), hw, hw)}[dims]
    x = randn(batch, cin, *spatial, device=device, dtype=t, seed=1)
    w_shape = (cin, cout // groups, *(k,) * dims) if transposed else (cout, cin // groups, *(k,) * dims)
    w = randn(*w_shape, device=device, dtype=t, seed=2, scale=1.0 / (cin // groups * k**dims) ** 0.5)
    bias = randn(cout, device=device, dtype=t, seed=3) if c.bias_relu else None
    if c.layout == "cl":
        x = x.contiguous(memory_format=torch.channels_last)
        w = w.contiguous(memory_format=torch.channels_last)
    out_spatial = [
        ((s - 1) * stride - 2 * pad + dilation * (k - 1) + 1)
        if transposed
        else (s + 2 * pad - dilation * (k - 1) - 1) // stride + 1
        for s in spatial
    ]
    flops, out_elems = _work(c, batch, spatial, out_spatial)
    moved = element_size(dtype) * (x.numel() + w.numel() + out_elems)
    params = _params(c, batch, list(x.shape))
    conv = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}[dims]
    tconv = {1: F.conv_transpose1d, 2: F.conv_transpose2d, 3: F.conv_transpose3d}[dims]

    if c.passes == "fwd":

        def forward() -> torch.Tensor:
            if transposed:
                return tconv(x, w, stride=stride, padding=pad, groups=groups)
            y = conv(x, w, bias, stride=stride, padding=pad, dilation=dilation, groups=groups)
            return F.relu(y) if bias is not None else y

        return Built(forward, params, flops, moved, [x, w, bias])

    # Backward passes call the convolution backward op directly, so only that kernel is timed.
    grad_out = randn(batch, cout, *out_spatial, device=device, dtype=t, seed=4)
    if c.layout == "cl":
        grad_out = grad_out.contiguous(memory_format=torch.channels_last)
    mask = [True, False, False] if c.passes == "bwd_data" else [False, True, False]

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


def _work(c: Conv, batch: int, spatial: tuple[int, ...], out_spatial: list[int]) -> tuple[float, int]:
    """(floating-point operations, output elements) of one call of the convolution ``c``."""
    out_elems = batch * c.cout * math.prod(out_spatial)
    in_spatial = math.prod(spatial)
    flops = (
        2.0
        * (batch * c.cin * in_spatial if c.transposed else out_elems)
        * (c.cout if c.transposed else c.cin)
        // c.groups
        * c.k**c.dims
    )
    return flops, out_elems


def _params(c: Conv, batch: int, input_shape: list[int]) -> dict[str, object]:
    """The parameters a result records for the convolution ``c``."""
    return {
        "batch": batch,
        "in_channels": c.cin,
        "out_channels": c.cout,
        "kernel": c.k,
        "stride": c.stride,
        "padding": c.pad,
        "dilation": c.dilation,
        "groups": c.groups,
        "transposed": c.transposed,
        "input_shape": input_shape,
        "layout": "channels_last" if c.layout == "cl" else "contiguous",
        "pass": c.passes,
        "bias_relu": c.bias_relu,
    }
