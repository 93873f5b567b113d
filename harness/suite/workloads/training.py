"""End-to-end training steps with mixed precision: autocast, and GradScaler for fp16.

``fp32``/``tf32`` train without autocast; ``bf16``/``fp16`` autocast to that type. Each call is one
whole step (zero_grad, forward, loss, backward, optimizer step), so weights change between calls:
the numerics check does not apply here.

The optimizer is SGD with ``fused=True``. With a plain optimizer, ``GradScaler.step`` reads the
found-inf flag back to the host (``.item()``) inside every fp16 step; that host sync ends the GPU
sleep that hides the enqueue, so the rest of the step was timed host-bound and differed from process
to process (docs/method.md). A fused optimizer takes the scale and the flag as tensors, so the step
stays on the GPU.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.suite.contract import EVERY_PROFILE, LARGER_PROFILES, Built, Unsupported, WorkloadSpec, pick

if TYPE_CHECKING:
    import torch

MODELS = {
    "small_cnn": "a 4-layer CNN on 32x32 images",
    "resnet50": "torchvision ResNet-50 on 224x224",
    "transformer_block": "one pre-norm transformer block, d=1024, seq 1024",
}
# weights change at every call, so there is no output to check against fp64
SPECS = tuple(
    WorkloadSpec(
        f"train_{model}",
        "training",
        f"training step (autocast + GradScaler in fp16): {text}",
        # the model-level rows of every release sweep: the atlas trains the networks its layers come from
        profiles=EVERY_PROFILE if model == "small_cnn" else (*LARGER_PROFILES, "atlas"),
        params={"model": model},
        numerics=False,
        group="model",
    )
    for model, text in MODELS.items()
)


def _model(
    name: str, profile: str, device: str
) -> tuple[torch.nn.Module, torch.Tensor, torch.Tensor, dict[str, object]]:
    import torch

    from harness.suite.workloads.models import SmallCNN, TransformerBlock
    from harness.suite.workloads.tensors import randn

    if name == "small_cnn":
        batch = pick(profile, 8, 128, 256)
        x = randn(batch, 3, 32, 32, device=device, dtype=torch.float32, seed=11)
        target = torch.randint(0, 10, (batch,), generator=torch.Generator().manual_seed(12)).to(device)
        return SmallCNN(), x, target, {"batch": batch, "input": [3, 32, 32]}
    if name == "resnet50":
        try:
            import torchvision
        except ImportError:
            raise Unsupported("train_resnet50 needs torchvision, which is not installed here") from None
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
    import torch
    import torch.nn.functional as F

    from harness.suite.workloads.tensors import DTYPES

    if dtype == "fp64":
        raise Unsupported("a training step has no fp64 reference: its weights change at every call")
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
