"""Pooling and activations around the convolutions: memory-bound, mostly outside cuDNN."""

from __future__ import annotations

from harness.suite.contract import ATLAS_PROFILES, EVERY_PROFILE, LARGER_PROFILES, Built, WorkloadSpec, pick
from harness.suite.workloads.layers import DEFAULT, RESNET50, UNET

POOLS = {
    "maxpool2d": "MaxPool2d 3x3 stride 2, ResNet-50 stem",
    "avgpool2d": "AvgPool2d 2x2 stride 2",
    "adaptive_avgpool2d": "AdaptiveAvgPool2d to 1x1, ResNet-50 head",
}
ACTIVATIONS = ("relu", "sigmoid", "tanh", "gelu", "silu")  # torch.nn.functional's
SMOKE = ("maxpool2d", "relu", "gelu")  # the ones the smoke profile runs

GENERIC = tuple(
    WorkloadSpec(
        op,
        "elementwise",
        POOLS.get(op, f"{op} on a ResNet-50 stage-1 activation"),
        # maxpool2d is ResNet-50's stem pooling at its shape, so the atlas measures it too
        profiles=(EVERY_PROFILE if op in SMOKE else LARGER_PROFILES)
        + (("atlas",) if op == "maxpool2d" else ()),
        params={"op": op},
        group="pooling" if op in POOLS else "activation",
    )
    for op in (*POOLS, *ACTIVATIONS)
)
# the atlas: ResNet-50's head and U-Net's 2x2 poolings between its encoder levels
LAYERS = (
    WorkloadSpec(
        "adaptive_avgpool2d_r50_head",
        "elementwise",
        "AdaptiveAvgPool2d to 1x1, 2048 channels at 7x7, ResNet-50 head",
        profiles=("default", *ATLAS_PROFILES)
        if "adaptive_avgpool2d_r50_head" in DEFAULT.pools
        else ATLAS_PROFILES,
        default_dtypes=DEFAULT.dtypes if "adaptive_avgpool2d_r50_head" in DEFAULT.pools else (),
        params={"op": "adaptive_avgpool2d", "shape": [RESNET50.batch, 2048, 7, 7]},
        group="pooling",
    ),
    *(
        WorkloadSpec(
            f"maxpool2d_unet_{channels}x{hw}",
            "elementwise",
            f"MaxPool2d 2x2 stride 2, {channels} channels at {hw}x{hw}, U-Net encoder",
            profiles=(
                ("default", *ATLAS_PROFILES)
                if f"maxpool2d_unet_{channels}x{hw}" in DEFAULT.pools
                else ATLAS_PROFILES
            ),
            default_dtypes=DEFAULT.dtypes if f"maxpool2d_unet_{channels}x{hw}" in DEFAULT.pools else (),
            params={"op": "maxpool2d_2x2", "shape": [UNET.batch, channels, hw, hw]},
            group="pooling",
        )
        for channels, hw in ((64, 256), (128, 128), (256, 64), (512, 32))
    ),
)
SPECS = GENERIC + LAYERS


def build(spec: WorkloadSpec, profile: str, device: str, dtype: str) -> Built:
    import torch.nn.functional as F

    from harness.suite.workloads.tensors import DTYPES, element_size, randn

    op = spec.params["op"]
    t = DTYPES[dtype]
    size = element_size(dtype)
    if "shape" in spec.params:  # a network's layer: its shape, the smoke test's a quarter of each side
        batch, channels, hw, _ = spec.params["shape"]
        if profile == "smoke":
            batch, channels, hw = 2, max(channels // 4, 8), max(hw // 4, 8)
    else:
        batch, channels = pick(profile, 2, 32, 64), 64
        hw = pick(profile, 28, 112 if op == "maxpool2d" else 56)
    x = randn(batch, channels, hw, hw, device=device, dtype=t, seed=3)
    n = x.numel()
    params = {"op": op, "shape": list(x.shape)}
    if op == "maxpool2d_2x2":
        params.update(kernel=2, stride=2)
        return Built(lambda: F.max_pool2d(x, 2, stride=2), params, None, size * (n + n // 4), [x])
    if op == "maxpool2d":
        params.update(kernel=3, stride=2, padding=1)
        return Built(lambda: F.max_pool2d(x, 3, stride=2, padding=1), params, None, size * (n + n // 4), [x])
    if op == "avgpool2d":
        params.update(kernel=2, stride=2)
        return Built(lambda: F.avg_pool2d(x, 2, stride=2), params, None, size * (n + n // 4), [x])
    if op == "adaptive_avgpool2d":
        params.update(output_size=1)
        return Built(lambda: F.adaptive_avg_pool2d(x, 1), params, None, size * n, [x])
    fn = getattr(F, op)
    return Built(lambda: fn(x), params, None, size * 2 * n, [x])
