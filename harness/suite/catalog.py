"""The workload catalog: ids, what they measure, and which module builds them.

Kept free of torch so that ``python -m harness.suite list`` works on the orchestrator's host.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class WorkloadSpec:
    id: str
    module: str  # harness.suite.workloads.<module>
    description: str
    dtypes: tuple[str, ...] = ("fp32", "bf16")


CATALOG: dict[str, WorkloadSpec] = {
    spec.id: spec
    for spec in (
        WorkloadSpec("conv2d_r50_1x1", "conv", "Conv2d fwd 256->64 1x1, ResNet-50 stage 1 bottleneck"),
        WorkloadSpec("conv2d_r50_3x3", "conv", "Conv2d fwd 64->64 3x3 pad 1, ResNet-50 stage 1"),
        WorkloadSpec("conv2d_r50_7x7s2", "conv", "Conv2d fwd 3->64 7x7 stride 2, ResNet-50 stem"),
        WorkloadSpec("batchnorm2d", "elementwise", "BatchNorm2d fwd (training statistics), 64 channels"),
        WorkloadSpec("maxpool2d", "elementwise", "MaxPool2d 3x3 stride 2 pad 1, ResNet-50 stem"),
        WorkloadSpec("relu", "elementwise", "ReLU on a ResNet-50 stage-1 activation"),
        WorkloadSpec("gelu", "elementwise", "GELU (erf) on a ResNet-50 stage-1 activation"),
        WorkloadSpec("sdpa", "attention", "scaled_dot_product_attention fwd, default backend choice"),
        WorkloadSpec("lstm", "rnn", "2-layer LSTM fwd over a sequence"),
        WorkloadSpec("gemm", "gemm", "square matrix product (the non-cuDNN reference)"),
    )
}
