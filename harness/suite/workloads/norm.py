"""Batch, layer, group and instance normalization, forward and backward."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from harness.suite.contract import ATLAS_PROFILES, EVERY_PROFILE, LARGER_PROFILES, Built, WorkloadSpec, pick
from harness.suite.workloads.layers import DEFAULT, NETWORKS, TRANSFORMER

if TYPE_CHECKING:
    import torch

PASSES = {"fwd": "forward", "bwd": "backward"}

GENERIC = tuple(
    WorkloadSpec(
        "batchnorm2d"
        if (kind, passes) == ("batch", "fwd")
        else f"{kind}norm" + ("" if passes == "fwd" else "_bwd"),
        "norm",
        f"{kind} norm {'forward' if passes == 'fwd' else 'backward'}",
        profiles=EVERY_PROFILE if (kind, passes) == ("batch", "fwd") else LARGER_PROFILES,
        params={"kind": kind, "pass": passes},
    )
    for kind in ("batch", "layer", "group", "instance")
    for passes in PASSES
)
# the atlas: each network's batch norms, the transformer block's layer norms, at the shapes they run at
LAYERS = tuple(
    WorkloadSpec(
        f"batchnorm2d_{network.key}_{channels}x{hw}" + ("" if passes == "fwd" else "_bwd"),
        "norm",
        f"batch norm {what}, {channels} channels at {hw}x{hw}, {network.title}",
        profiles=(
            ("default", *ATLAS_PROFILES)
            if (network.key, channels, hw) in DEFAULT.batchnorms
            else ATLAS_PROFILES
        ),
        default_dtypes=DEFAULT.dtypes if (network.key, channels, hw) in DEFAULT.batchnorms else (),
        params={"kind": "batch", "pass": passes, "shape": [network.batch, channels, hw, hw]},
        group=f"batch norm {what}",
    )
    for network in NETWORKS
    for channels, hw in network.batchnorms
    for passes, what in PASSES.items()
) + tuple(
    WorkloadSpec(
        f"layernorm_tb_s{seq}" + ("" if passes == "fwd" else "_bwd"),
        "norm",
        f"layer norm {what}, {TRANSFORMER.title}, sequence {seq}",
        profiles=("default", *ATLAS_PROFILES),
        default_dtypes=DEFAULT.dtypes,
        params={"kind": "layer", "pass": passes, "shape": [TRANSFORMER.batch, seq, TRANSFORMER.d_model]},
        group=f"layer norm {what}",
    )
    for seq in TRANSFORMER.seq_lens
    for passes, what in PASSES.items()
)
SPECS = GENERIC + LAYERS


def build(spec: WorkloadSpec, profile: str, device: str, dtype: str) -> Built:
    import torch
    import torch.nn.functional as F

    from harness.suite.workloads.tensors import DTYPES, element_size, randn

    kind, passes = spec.params["kind"], spec.params["pass"]
    t = DTYPES[dtype]
    shape: tuple[int, ...]
    if "shape" in spec.params:  # a network's layer: its shape, the smoke test's a quarter of each side
        shape = tuple(spec.params["shape"])
        if profile == "smoke":
            shape = (2, *(max(n // 4, 8) for n in shape[1:]))
    elif kind == "layer":  # a transformer activation: (batch * seq, hidden)
        shape = pick(profile, (2, 64, 256), (16, 1024, 1024), (32, 2048, 1024))
    else:  # a CNN activation: (batch, channels, H, W)
        shape = pick(profile, (2, 64, 28, 28), (32, 64, 56, 56), (64, 64, 56, 56))
    channels = shape[-1] if kind == "layer" else shape[1]
    x = randn(*shape, device=device, dtype=t, seed=5)
    weight = torch.ones(channels, device=device, dtype=t)
    bias = torch.zeros(channels, device=device, dtype=t)

    def forward(inp: torch.Tensor) -> torch.Tensor:
        if kind == "batch":
            return F.batch_norm(inp, None, None, weight, bias, training=True, momentum=0.1, eps=1e-5)
        if kind == "layer":
            return F.layer_norm(inp, (channels,), weight, bias, eps=1e-5)
        if kind == "group":
            return F.group_norm(inp, 32, weight, bias, eps=1e-5)
        return F.instance_norm(inp, weight=weight, bias=bias, eps=1e-5)

    params: dict[str, object] = {"kind": kind, "pass": passes, "shape": list(shape)}
    moved = element_size(dtype) * 2 * x.numel()
    if passes == "fwd":
        return Built(lambda: forward(x), params, None, moved, [x, weight, bias])
    leaf = x.detach().requires_grad_(True)
    out = forward(leaf)
    grad_out = randn(*shape, device=device, dtype=t, seed=6)

    def backward() -> Any:
        return torch.autograd.grad(out, leaf, grad_out, retain_graph=True)[0]

    return Built(backward, params, None, 1.5 * moved, [leaf, out, grad_out], grad=True)
