"""The workload catalog: stable ids, their parameters, dtypes, profiles, and which module builds them.

Kept free of torch so that ``python -m harness.suite list`` works on the orchestrator's host. Ids are
stable: a workload's id names the same computation in every suite version that has it (a change of
shape gets a new id). Variants are generated, not typed out: ``.cl`` is the channels_last layout of a
4-D workload, ``_bwd`` a backward pass, ``_s<N>`` an attention sequence length.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

ALL_DTYPES = ("fp32", "tf32", "bf16", "fp16")
PROFILES = ("smoke", "default", "full")


@dataclass(frozen=True)
class WorkloadSpec:
    id: str
    module: str  # harness.suite.workloads.<module>
    description: str
    dtypes: tuple[str, ...] = ALL_DTYPES
    profiles: tuple[str, ...] = ("default", "full")  # the profiles that run it when no list is given
    params: dict[str, Any] = field(default_factory=dict)
    gpus: str = "one"  # "all": runs its own process per GPU, so its cell gets every GPU and runs alone


# ResNet-50 convolutions: (in, out, kernel, stride, padding, input H=W)
R50 = {
    "r50_1x1": (256, 64, 1, 1, 0, 56),
    "r50_3x3": (64, 64, 3, 1, 1, 56),
    "r50_7x7s2": (3, 64, 7, 2, 3, 224),
}


def _convolutions() -> Iterator[WorkloadSpec]:
    for name, (cin, cout, k, stride, pad, hw) in R50.items():
        base = {"dims": 2, "cin": cin, "cout": cout, "k": k, "stride": stride, "pad": pad, "hw": hw}
        for passes, what in (
            ("fwd", "forward"),
            ("bwd_data", "backward-data"),
            ("bwd_weight", "backward-weight"),
        ):
            suffix = "" if passes == "fwd" else f"_{passes}"
            smoke = ("smoke", "default", "full") if passes == "fwd" else ("default", "full")
            for layout in ("nchw", "cl"):
                yield WorkloadSpec(
                    f"conv2d_{name}{suffix}" + (".cl" if layout == "cl" else ""),
                    "conv",
                    f"Conv2d {what} {cin}->{cout} {k}x{k} stride {stride}, ResNet-50 ({layout})",
                    profiles=smoke if layout == "nchw" else ("default", "full"),
                    params={**base, "pass": passes, "layout": layout},
                )
    shapes = {
        "conv2d_depthwise_mbv2": (
            "depthwise 3x3, 144 ch, MobileNetV2 stage 2",
            dict(cin=144, cout=144, k=3, stride=1, pad=1, hw=56, groups=144),
        ),
        "conv2d_depthwise_effnet_s2": (
            "depthwise 5x5 stride 2, 240 ch, EfficientNet",
            dict(cin=240, cout=240, k=5, stride=2, pad=2, hw=28, groups=240),
        ),
        "conv2d_grouped_resnext": (
            "grouped 3x3, 32 groups, 256 ch, ResNeXt-50",
            dict(cin=256, cout=256, k=3, stride=1, pad=1, hw=28, groups=32),
        ),
        "conv2d_dilated_deeplab": (
            "dilated 3x3, dilation 2, 256 ch, DeepLab ASPP",
            dict(cin=256, cout=256, k=3, stride=1, pad=2, hw=32, dilation=2),
        ),
        "conv_transpose2d_unet": (
            "transposed 2x2 stride 2, 128->64, U-Net decoder",
            dict(cin=128, cout=64, k=2, stride=2, pad=0, hw=64, transposed=True),
        ),
        "conv2d_bias_relu": (
            "Conv2d 3x3 + bias + ReLU, 64 ch (a fusion candidate)",
            dict(cin=64, cout=64, k=3, stride=1, pad=1, hw=56, bias_relu=True),
        ),
    }
    for wid, (text, shape) in shapes.items():
        yield WorkloadSpec(
            wid, "conv", f"Conv2d fwd {text}", params={"dims": 2, "pass": "fwd", "layout": "nchw", **shape}
        )
    yield WorkloadSpec(
        "conv1d_depthwise",
        "conv",
        "Conv1d depthwise k=31, 256 ch (Conformer-style)",
        params={
            "dims": 1,
            "pass": "fwd",
            "cin": 256,
            "cout": 256,
            "k": 31,
            "stride": 1,
            "pad": 15,
            "hw": 512,
            "groups": 256,
            "layout": "nchw",
        },
    )
    yield WorkloadSpec(
        "conv3d_video",
        "conv",
        "Conv3d 3x3x3, 64 ch, 8x56x56 clip (video)",
        params={
            "dims": 3,
            "pass": "fwd",
            "cin": 64,
            "cout": 64,
            "k": 3,
            "stride": 1,
            "pad": 1,
            "hw": 56,
            "depth": 8,
            "layout": "nchw",
        },
    )
    yield WorkloadSpec(
        "conv3d_unet",
        "conv",
        "Conv3d 3x3x3, 32 ch, 64^3 volume (3D U-Net)",
        params={
            "dims": 3,
            "pass": "fwd",
            "cin": 32,
            "cout": 32,
            "k": 3,
            "stride": 1,
            "pad": 1,
            "hw": 64,
            "depth": 64,
            "layout": "nchw",
        },
    )


def _normalization_pooling_activations() -> Iterator[WorkloadSpec]:
    for kind in ("batch", "layer", "group", "instance"):
        for passes in ("fwd", "bwd"):
            smoke = (
                ("smoke", "default", "full") if kind == "batch" and passes == "fwd" else ("default", "full")
            )
            wid = (
                "batchnorm2d"
                if (kind, passes) == ("batch", "fwd")
                else f"{kind}norm" + ("" if passes == "fwd" else "_bwd")
            )
            yield WorkloadSpec(
                wid,
                "norm",
                f"{kind} norm {'forward' if passes == 'fwd' else 'backward'}",
                profiles=smoke,
                params={"kind": kind, "pass": passes},
            )
    pools = {
        "maxpool2d": "MaxPool2d 3x3 stride 2, ResNet-50 stem",
        "avgpool2d": "AvgPool2d 2x2 stride 2",
        "adaptive_avgpool2d": "AdaptiveAvgPool2d to 1x1, ResNet-50 head",
    }
    for wid, text in pools.items():
        yield WorkloadSpec(
            wid,
            "elementwise",
            text,
            profiles=("smoke", "default", "full") if wid == "maxpool2d" else ("default", "full"),
            params={"op": wid},
        )
    for op in ("relu", "sigmoid", "tanh", "gelu", "silu"):
        yield WorkloadSpec(
            op,
            "elementwise",
            f"{op} on a ResNet-50 stage-1 activation",
            profiles=("smoke", "default", "full") if op in ("relu", "gelu") else ("default", "full"),
            params={"op": op},
        )


def _rnns() -> Iterator[WorkloadSpec]:
    for cell in ("lstm", "gru", "rnn"):
        for packed in (False, True):
            wid = cell + ("_packed" if packed else "")
            yield WorkloadSpec(
                wid,
                "rnn",
                f"2-layer {cell.upper()} forward" + (", packed variable-length batch" if packed else ""),
                dtypes=("fp32", "tf32", "bf16", "fp16"),
                profiles=("smoke", "default", "full") if wid == "lstm" else ("default", "full"),
                params={"cell": cell, "packed": packed},
            )


def _attention() -> Iterator[WorkloadSpec]:
    yield WorkloadSpec(
        "sdpa",
        "attention",
        "scaled_dot_product_attention fwd, PyTorch's own backend choice",
        profiles=("smoke", "default", "full"),
        params={"backend": "auto", "seq": 1024, "pass": "fwd"},
    )
    for backend in ("flash", "efficient", "cudnn", "math"):
        for seq in (512, 2048, 8192):
            for passes in ("fwd", "bwd"):
                profiles = ("full",) if seq == 8192 else ("default", "full")
                dtypes = ("bf16", "fp16") if backend in ("flash", "cudnn") else ("fp32", "bf16", "fp16")
                yield WorkloadSpec(
                    f"sdpa_{backend}_s{seq}" + ("_bwd" if passes == "bwd" else ""),
                    "attention",
                    f"SDPA {passes} forced to the {backend} backend, sequence {seq}, with peak memory",
                    dtypes=dtypes,
                    profiles=profiles,
                    params={"backend": backend, "seq": seq, "pass": passes},
                )


def _matmul_and_training() -> Iterator[WorkloadSpec]:
    yield WorkloadSpec(
        "gemm",
        "gemm",
        "square matrix product (the non-cuDNN reference)",
        profiles=("smoke", "default", "full"),
    )
    for model, text in (
        ("small_cnn", "a 4-layer CNN on 32x32 images"),
        ("resnet50", "torchvision ResNet-50 on 224x224"),
        ("transformer_block", "one pre-norm transformer block, d=1024, seq 1024"),
    ):
        yield WorkloadSpec(
            f"train_{model}",
            "training",
            f"training step (autocast + GradScaler in fp16): {text}",
            dtypes=("fp32", "tf32", "bf16", "fp16"),
            profiles=("smoke", "default", "full") if model == "small_cnn" else ("default", "full"),
            params={"model": model},
        )
    yield WorkloadSpec(
        "ddp_train_step",
        "ddp",
        "DistributedDataParallel training step, one process per GPU "
        "over NCCL (2 gloo processes on a CPU), at world size 1 and N: step time and scaling "
        "efficiency; named in a matrix's workloads, never by a profile",
        dtypes=("fp32", "bf16", "fp16"),
        profiles=(),
        params={"model": "convnet"},
        gpus="all",
    )


def _faults() -> Iterator[WorkloadSpec]:
    """Real faults for the harness's own failure-isolation tests; no profile runs them."""
    yield WorkloadSpec(
        "fault_cuda_error",
        "faults",
        "fault injection: a device-side assert (out-of-range index "
        "on the GPU), which leaves the CUDA context unusable",
        dtypes=("fp32",),
        profiles=(),
        params={"fault": "cuda_error"},
    )
    yield WorkloadSpec(
        "fault_host_oom",
        "faults",
        "fault injection: allocates and touches host memory in "
        "64 MiB steps up to 16 GiB, for a memory limit to stop",
        dtypes=("fp32",),
        profiles=(),
        params={"fault": "host_oom", "limit_gib": 16},
    )


CATALOG: dict[str, WorkloadSpec] = {
    spec.id: spec
    for spec in (
        *_convolutions(),
        *_normalization_pooling_activations(),
        *_rnns(),
        *_attention(),
        *_matmul_and_training(),
        *_faults(),
    )
}


def for_profile(profile: str) -> list[str]:
    """The workloads a profile runs when the matrix names none."""
    return [spec.id for spec in CATALOG.values() if profile in spec.profiles]
