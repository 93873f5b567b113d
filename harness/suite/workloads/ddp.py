"""DistributedDataParallel training steps, one process per GPU over NCCL (gloo and 2 processes on a CPU).

The only workload that needs every GPU of its cell: the orchestrator learns that from the catalog
(``gpus="all"``) and runs such a cell alone, with all GPUs visible. It is measured at world size 1 and at
world size N (every visible GPU), the same per-process batch in both (weak scaling), so the result
carries the step time with all GPUs and the scaling efficiency ``t(1) / t(N)``: 1.0 means N GPUs
process N times the samples per second of one.

Each sample is one whole step (zero_grad, forward, loss, backward with the gradient all-reduce,
optimizer step) on rank 0, timed with CUDA events and synchronized on every rank, so the host's launch
gaps and the all-reduce wait are in it: that is the step time a trainer sees. Ranks get different data
(seeded by rank) and the same weights (DDP broadcasts rank 0's at construction).
"""

from __future__ import annotations

import json
import os
import socket
import statistics
import tempfile
import time
from typing import NamedTuple, TypedDict, cast

from harness.suite.contract import WorkloadSpec, pick
from harness.suite.document import Knobs, StopReason

WARMUP_STEPS = 5
MIN_STEPS, MAX_STEPS = 10, 500
CPU_WORLD_SIZE = 2  # on a CPU there are no GPUs to count; two gloo processes exercise the same path


SPECS = (
    WorkloadSpec(
        "ddp_train_step",
        "ddp",
        "DistributedDataParallel training step, one process per GPU over NCCL (2 gloo processes on a CPU), "
        "at world size 1 and N: step time and scaling efficiency; named in a matrix's workloads, never by a "
        "profile",
        dtypes=("fp32_default", "fp32", "bf16", "fp16"),
        profiles=(),
        params={"model": "convnet"},
        gpus="all",
    ),
)


def world_size(device: str) -> int:
    import torch

    return torch.cuda.device_count() if device == "cuda" else CPU_WORLD_SIZE


def shape(profile: str, device: str) -> tuple[int, int]:
    """Per-process batch and image size."""
    if device == "cpu":
        return pick(profile, (4, 32), (8, 32))
    return pick(profile, (16, 32), (64, 64), (128, 64))


def measure(
    spec: WorkloadSpec, profile: str, device: str, dtype: str, knobs: Knobs, time_budget_s: float
) -> dict[str, object]:
    """Step times at world size 1 and N, as a measurement entry (the stats are world size N's)."""
    import torch

    sizes = sorted({1, world_size(device)})
    # spawned ranks start with torch's defaults: a cell's cuDNN setting must be handed to them
    cudnn = bool(torch.backends.cudnn.enabled)
    runs = [_spawn(size, profile, device, dtype, knobs, cudnn, time_budget_s) for size in sizes]
    headline = runs[-1]
    medians = [statistics.median(run["samples_s"]) for run in runs]
    batch, hw = shape(profile, device)
    params = {
        "model": "ConvNet (4 stages x 2 conv-BN-ReLU, 64-512 ch)",
        "batch_per_process": batch,
        "input": [3, hw, hw],
        "world_size": sizes[-1],
        "backend": "nccl" if device == "cuda" else "gloo",
        "autocast": dtype if dtype in ("bf16", "fp16") else None,
        "grad_scaler": dtype == "fp16",
        "cudnn_enabled": all(run["cudnn_enabled"] for run in runs),  # rank 0 says; every rank set it alike
    }
    return {
        "params": params,
        "timer": "cuda_event" if device == "cuda" else "perf_counter",
        "graph_capture_error": None,
        "l2_flushed": False,
        "launch_latency_hidden": False,
        "unit": "s",
        "first_call_s": headline["first_call_s"],
        "warmup_calls": WARMUP_STEPS,
        "samples_s": headline["samples_s"],
        "sm_clock_mhz": None,
        "throttled_discarded": 0,
        "stop_reason": headline["stop_reason"],
        "sampling_wall_s": headline["sampling_wall_s"],
        "scaling": {
            "world_sizes": sizes,
            "median_step_s": medians,
            "samples_per_s": [size * batch / median for size, median in zip(sizes, medians, strict=True)],
            "efficiency": medians[0] / medians[-1] if len(sizes) > 1 else None,
        },
    }


class RankResult(TypedDict):
    """What rank 0 writes of one world size's steps (``_rank``), read back as JSON."""

    first_call_s: float
    samples_s: list[float]
    stop_reason: StopReason
    sampling_wall_s: float
    cudnn_enabled: bool


def _spawn(
    size: int, profile: str, device: str, dtype: str, knobs: Knobs, cudnn: bool, budget_s: float
) -> RankResult:
    from torch.multiprocessing.spawn import spawn

    with tempfile.TemporaryDirectory(prefix="ddp-") as scratch:
        out = os.path.join(scratch, "rank0.json")
        job = _Job(size, _free_port(), profile, device, dtype, knobs, cudnn, budget_s, out)
        spawn(_rank, args=(job,), nprocs=size)
        with open(out) as f:
            result = cast(RankResult, json.load(f))
    return result


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class _Job(NamedTuple):
    """What every rank of one world size is handed (picklable: ``spawn`` sends it to each)."""

    size: int
    port: int
    profile: str
    device: str
    dtype: str
    knobs: Knobs
    cudnn: bool
    budget_s: float
    out: str  # where rank 0 writes its result


def _rank(rank: int, job: _Job) -> None:
    import torch
    import torch.distributed as dist

    from harness.suite.precision import tf32_asked
    from harness.suite.workloads.tensors import apply_knobs

    size, device, dtype, knobs = job.size, job.device, job.dtype, job.knobs
    torch.backends.cudnn.enabled = job.cudnn

    cuda = device == "cuda"
    if cuda:
        torch.cuda.set_device(rank)
    else:
        torch.set_num_threads(1)  # the ranks share the host's cores
    apply_knobs(knobs, tf32=tf32_asked(dtype, knobs.get("tf32", False)))
    init_method = f"tcp://127.0.0.1:{job.port}"
    if cuda:
        dist.init_process_group(
            "nccl", init_method=init_method, rank=rank, world_size=size, device_id=torch.device("cuda", rank)
        )
    else:
        dist.init_process_group("gloo", init_method=init_method, rank=rank, world_size=size)
    try:
        _train(rank, size, job.profile, device, dtype, job.budget_s, job.out)
    finally:
        dist.destroy_process_group()


def _train(rank: int, size: int, profile: str, device: str, dtype: str, budget_s: float, out: str) -> None:
    import torch
    import torch.distributed as dist
    import torch.nn.functional as F

    from harness.suite.workloads.models import ConvNet
    from harness.suite.workloads.tensors import DTYPES, randn

    cuda = device == "cuda"
    where = f"cuda:{rank}" if cuda else "cpu"
    batch, hw = shape(profile, device)
    torch.manual_seed(13)
    model = torch.nn.parallel.DistributedDataParallel(
        ConvNet().to(where), device_ids=[rank] if cuda else None
    )
    x = randn(batch, 3, hw, hw, device=where, dtype=torch.float32, seed=21 + rank)
    target = torch.randint(0, 100, (batch,), generator=torch.Generator().manual_seed(22 + rank)).to(where)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9, fused=cuda)
    amp = DTYPES[dtype] if dtype in ("bf16", "fp16") else None
    scaler = torch.amp.GradScaler(device, enabled=dtype == "fp16")

    def step() -> None:
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast(device_type=device, dtype=amp or torch.float32, enabled=amp is not None):
            loss = F.cross_entropy(model(x), target)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()

    def timed() -> float:
        if not cuda:
            start = time.perf_counter()
            step()
            return time.perf_counter() - start
        begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        begin.record()
        step()
        end.record()
        torch.cuda.synchronize()
        return float(begin.elapsed_time(end)) / 1e3

    first_call_s = timed()
    for _ in range(WARMUP_STEPS):
        timed()
    # rank 0 decides how many steps fit the budget; every rank must run the same number
    # (every rank runs the calibrating step: DDP's all-reduce needs all of them)
    calibration_s = timed()
    steps = torch.tensor(
        [max(MIN_STEPS, min(MAX_STEPS, int(budget_s / max(calibration_s, 1e-6))))], device=where
    )
    dist.broadcast(steps, src=0)
    dist.barrier()
    start = time.perf_counter()
    samples = [round(timed(), 9) for _ in range(int(steps.item()))]
    sampling_wall_s = time.perf_counter() - start
    if rank == 0:
        stop = "max_samples" if len(samples) == MAX_STEPS else "time_budget"
        with open(out, "w") as f:
            json.dump(
                {
                    "first_call_s": first_call_s,
                    "samples_s": samples,
                    "stop_reason": stop,
                    "sampling_wall_s": sampling_wall_s,
                    "cudnn_enabled": bool(torch.backends.cudnn.enabled),
                },
                f,
            )
