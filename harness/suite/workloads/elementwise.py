"""Pooling and activations around the convolutions: memory-bound, mostly outside cuDNN."""

from __future__ import annotations

from harness.suite.contract import EVERY_PROFILE, LARGER_PROFILES, Built, WorkloadSpec, pick

POOLS = {
    "maxpool2d": "MaxPool2d 3x3 stride 2, ResNet-50 stem",
    "avgpool2d": "AvgPool2d 2x2 stride 2",
    "adaptive_avgpool2d": "AdaptiveAvgPool2d to 1x1, ResNet-50 head",
}
ACTIVATIONS = ("relu", "sigmoid", "tanh", "gelu", "silu")  # torch.nn.functional's
SMOKE = ("maxpool2d", "relu", "gelu")  # the ones the smoke profile runs

SPECS = tuple(
    WorkloadSpec(
        op,
        "elementwise",
        POOLS.get(op, f"{op} on a ResNet-50 stage-1 activation"),
        profiles=EVERY_PROFILE if op in SMOKE else LARGER_PROFILES,
        params={"op": op},
    )
    for op in (*POOLS, *ACTIVATIONS)
)


def build(spec: WorkloadSpec, profile: str, device: str, dtype: str) -> Built:
    import torch.nn.functional as F

    from harness.suite.workloads.tensors import DTYPES, element_size, randn

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
    fn = getattr(F, op)
    return Built(lambda: fn(x), params, None, size * 2 * n, [x])
