"""scaled_dot_product_attention, by backend (flash, memory-efficient, cuDNN, math) and sequence length."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from harness.suite.contract import (
    ATLAS_PROFILES,
    EVERY_PROFILE,
    LARGER_PROFILES,
    Built,
    Unsupported,
    WorkloadSpec,
    pick,
)
from harness.suite.workloads.layers import DEFAULT, TRANSFORMER

if TYPE_CHECKING:
    import torch

# torch's words when a forced backend cannot run these inputs here (a dtype, a GPU, the CPU)
NO_KERNEL = ("no available kernel", "no viable backend")


def _specs() -> Iterator[WorkloadSpec]:
    yield WorkloadSpec(
        "sdpa",
        "attention",
        "scaled_dot_product_attention fwd, PyTorch's own backend choice",
        profiles=(*EVERY_PROFILE, "atlas"),
        params={"backend": "auto", "seq": 1024, "pass": "fwd"},
        group="attention forward",
    )
    # the atlas: the transformer block's attention (batch 8, 16 heads of 64), PyTorch's backend choice
    for seq in TRANSFORMER.seq_lens:
        for passes, what in (("fwd", "forward"), ("bwd", "backward")):
            if (seq, passes) == (1024, "fwd"):
                continue  # "sdpa" above
            yield WorkloadSpec(
                f"sdpa_s{seq}" + ("_bwd" if passes == "bwd" else ""),
                "attention",
                f"scaled_dot_product_attention {what}, PyTorch's own backend choice, {TRANSFORMER.title}, "
                f"sequence {seq}",
                profiles=("default", *ATLAS_PROFILES),
                default_dtypes=DEFAULT.dtypes,
                params={"backend": "auto", "seq": seq, "pass": passes},
                group=f"attention {what}",
            )
    for backend in ("flash", "efficient", "cudnn", "math"):
        for seq in (512, 2048, 8192):
            for passes in ("fwd", "bwd"):
                yield WorkloadSpec(
                    f"sdpa_{backend}_s{seq}" + ("_bwd" if passes == "bwd" else ""),
                    "attention",
                    f"SDPA {passes} forced to the {backend} backend, sequence {seq}, with peak memory",
                    dtypes=("bf16", "fp16")
                    if backend in ("flash", "cudnn")
                    else ("fp32_default", "fp32", "bf16", "fp16"),
                    profiles=("full",) if seq == 8192 else LARGER_PROFILES,
                    params={"backend": backend, "seq": seq, "pass": passes},
                )


SPECS = tuple(_specs())


def _backend_context(name: str) -> Any:
    from torch.nn.attention import SDPBackend, sdpa_kernel

    backends = {
        "flash": SDPBackend.FLASH_ATTENTION,
        "efficient": SDPBackend.EFFICIENT_ATTENTION,
        "cudnn": SDPBackend.CUDNN_ATTENTION,
        "math": SDPBackend.MATH,
    }
    return sdpa_kernel([backends[name]])


def build(spec: WorkloadSpec, profile: str, device: str, dtype: str) -> Built:
    import torch
    import torch.nn.functional as F

    from harness.suite.workloads.tensors import DTYPES, element_size, randn

    backend, passes = spec.params["backend"], spec.params["pass"]
    if dtype == "fp64" and backend != "auto":
        backend = "math"  # the fp64 reference: only the math backend computes in fp64
    batch, heads, dim = pick(profile, (1, 2, 32), (8, 16, 64), (8, 16, 128))
    seq = pick(profile, 64, spec.params["seq"])
    t = DTYPES[dtype]
    q, k, v = (randn(batch, heads, seq, dim, device=device, dtype=t, seed=s) for s in (4, 5, 6))
    flops = 4.0 * batch * heads * seq * seq * dim * (2.5 if passes == "bwd" else 1.0)
    moved = element_size(dtype) * 4 * q.numel()
    params = {
        "backend": backend,
        "batch": batch,
        "heads": heads,
        "seq_len": seq,
        "head_dim": dim,
        "causal": False,
        "pass": passes,
    }

    def attend(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
        if backend == "auto":
            return F.scaled_dot_product_attention(a, b, c)
        with _backend_context(backend):
            try:
                return F.scaled_dot_product_attention(a, b, c)
            except RuntimeError as exc:  # the forced backend cannot run these inputs here
                if any(words in str(exc).lower() for words in NO_KERNEL):
                    raise Unsupported(
                        f"the {backend} backend cannot run this here: {_first_line(exc)}"
                    ) from exc
                raise

    if passes == "fwd":
        return Built(lambda: attend(q, k, v), params, flops, moved, [q, k, v])
    leaves = [x.detach().requires_grad_(True) for x in (q, k, v)]
    out = attend(*leaves)  # the backward kernel belongs to the backend that ran the forward
    grad_out = randn(batch, heads, seq, dim, device=device, dtype=t, seed=7)

    def backward() -> Any:
        return torch.autograd.grad(out, leaves, grad_out, retain_graph=True)

    return Built(backward, params, flops, 2 * moved, [*leaves, out, grad_out], grad=True)


def _first_line(exc: Exception) -> str:
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__
