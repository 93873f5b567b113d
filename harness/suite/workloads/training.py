"""End-to-end training steps with mixed precision: autocast, and GradScaler for fp16.

``fp32``/``tf32`` train without autocast; ``bf16``/``fp16`` autocast to that type. Each call is one
whole step (zero_grad, forward, loss, backward, optimizer step), so weights change between calls:
the numerics check does not apply here.

The optimizer is SGD with ``fused=True``. With a plain optimizer, ``GradScaler.step`` reads the
found-inf flag back to the host (``.item()``) inside every fp16 step; that host sync ends the GPU
sleep that hides the enqueue, so the rest of the step was timed host-bound and differed from process
to process (suite 0.3 on an H100: train_small_cnn fp16 +15% between two processes of one cell, bf16
within 0.5%). A fused optimizer takes the scale and the flag as tensors, so the step stays on the GPU.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F

from harness.suite.catalog import WorkloadSpec
from harness.suite.workloads import DTYPES, Built, pick, randn


class SmallCNN(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.features = torch.nn.Sequential(
            torch.nn.Conv2d(3, 32, 3, padding=1),
            torch.nn.BatchNorm2d(32),
            torch.nn.ReLU(),
            torch.nn.Conv2d(32, 64, 3, padding=1, stride=2),
            torch.nn.BatchNorm2d(64),
            torch.nn.ReLU(),
            torch.nn.Conv2d(64, 128, 3, padding=1, stride=2),
            torch.nn.BatchNorm2d(128),
            torch.nn.ReLU(),
            torch.nn.Conv2d(128, 128, 3, padding=1),
            torch.nn.BatchNorm2d(128),
            torch.nn.ReLU(),
        )
        self.head = torch.nn.Linear(128, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        logits: torch.Tensor = self.head(F.adaptive_avg_pool2d(self.features(x), 1).flatten(1))
        return logits


class TransformerBlock(torch.nn.Module):
    def __init__(self, d: int, heads: int) -> None:
        super().__init__()
        self.norm1, self.norm2 = torch.nn.LayerNorm(d), torch.nn.LayerNorm(d)
        self.qkv, self.proj = torch.nn.Linear(d, 3 * d), torch.nn.Linear(d, d)
        self.mlp = torch.nn.Sequential(torch.nn.Linear(d, 4 * d), torch.nn.GELU(), torch.nn.Linear(4 * d, d))
        self.heads = heads

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, d = x.shape
        q, k, v = self.qkv(self.norm1(x)).view(b, s, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        x = x + self.proj(F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(b, s, d))
        out: torch.Tensor = x + self.mlp(self.norm2(x))
        return out


def _model(
    name: str, profile: str, device: str
) -> tuple[torch.nn.Module, torch.Tensor, torch.Tensor, dict[str, Any]]:
    if name == "small_cnn":
        batch = pick(profile, 8, 128, 256)
        x = randn(batch, 3, 32, 32, device=device, dtype=torch.float32, seed=11)
        target = torch.randint(0, 10, (batch,), generator=torch.Generator().manual_seed(12)).to(device)
        return SmallCNN(), x, target, {"batch": batch, "input": [3, 32, 32]}
    if name == "resnet50":
        try:
            import torchvision
        except ImportError:
            raise NotImplementedError(
                "train_resnet50 needs torchvision, which is not installed here"
            ) from None
        batch, hw = pick(profile, (2, 64), (32, 224), (64, 224))
        x = randn(batch, 3, hw, hw, device=device, dtype=torch.float32, seed=11)
        target = torch.randint(0, 1000, (batch,), generator=torch.Generator().manual_seed(12)).to(device)
        return torchvision.models.resnet50(), x, target, {"batch": batch, "input": [3, hw, hw]}
    d, heads = 1024, 16
    batch, seq = pick(profile, (2, 64), (8, 1024), (16, 2048))
    x = randn(batch, seq, d, device=device, dtype=torch.float32, seed=11)
    target = randn(batch, seq, d, device=device, dtype=torch.float32, seed=12)
    return (
        TransformerBlock(d, heads),
        x,
        target,
        {"batch": batch, "seq_len": seq, "d_model": d, "heads": heads},
    )


def build(spec: WorkloadSpec, profile: str, device: str, dtype: str) -> Built:
    if dtype == "fp64":
        raise NotImplementedError("a training step has no fp64 reference: its weights change at every call")
    name = spec.params["model"]
    torch.manual_seed(13)
    model, x, target, params = _model(name, profile, device)
    model = model.to(device)
    # fused: GradScaler hands the optimizer its scale and inf flag on the GPU instead of syncing
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9, fused=True)
    amp = DTYPES[dtype] if dtype in ("bf16", "fp16") else None
    scaler = torch.amp.GradScaler(device, enabled=dtype == "fp16")
    loss_fn = F.cross_entropy if name != "transformer_block" else F.mse_loss
    params.update(
        model=name, autocast=dtype if amp else None, grad_scaler=dtype == "fp16", optimizer="SGD (fused)"
    )

    def step() -> torch.Tensor:
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast(device_type=device, dtype=amp or torch.float32, enabled=amp is not None):
            loss = loss_fn(model(x), target)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        return loss.detach()

    return Built(step, params, None, None, [model, x, target], grad=True)
