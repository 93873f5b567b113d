"""Fault injection for the harness's own tests: real faults through the real suite, not mocks.

``cuda_error`` indexes out of range on the GPU: the kernel's device-side assert is sticky, so every
later CUDA call in the process fails too (what a driver fault or an illegal address does to a real
run). ``host_oom`` allocates and touches host memory until a memory limit stops it; with no limit it
stops at ``limit_gib`` and raises MemoryError so it never takes a host down.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.suite.contract import Built, Unsupported, WorkloadSpec

if TYPE_CHECKING:
    import torch

_STEP_BYTES = 64 << 20

# no profile runs them; a matrix of the harness's own tests names them
SPECS = (
    WorkloadSpec(
        "fault_cuda_error",
        "faults",
        "fault injection: a device-side assert (out-of-range index on the GPU), which leaves the CUDA "
        "context unusable",
        dtypes=("fp32",),
        profiles=(),
        params={"fault": "cuda_error"},
    ),
    WorkloadSpec(
        "fault_host_oom",
        "faults",
        "fault injection: allocates and touches host memory in 64 MiB steps up to 16 GiB, for a memory "
        "limit to stop",
        dtypes=("fp32",),
        profiles=(),
        params={"fault": "host_oom", "limit_gib": 16},
    ),
)


def build(spec: WorkloadSpec, profile: str, device: str, dtype: str) -> Built:
    import torch

    fault = spec.params["fault"]
    if fault == "cuda_error":
        if not device.startswith("cuda"):
            raise Unsupported("fault_cuda_error needs a CUDA device")
        values = torch.zeros(4, device=device)
        index = torch.tensor([1 << 20], device=device)

        def cuda_error() -> torch.Tensor:
            out = values[index]
            torch.cuda.synchronize(device)  # the assert surfaces here, inside this workload
            return out

        return Built(cuda_error, dict(spec.params), keep=[values, index])
    limit = int(spec.params["limit_gib"]) << 30
    held: list[torch.Tensor] = []

    def host_oom() -> None:
        while len(held) * _STEP_BYTES < limit:
            held.append(torch.ones(_STEP_BYTES, dtype=torch.uint8))  # ones, not empty: pages are touched
        held.clear()
        raise MemoryError(f"allocated {limit >> 30} GiB and was not stopped by a memory limit")

    return Built(host_oom, dict(spec.params), keep=[held])
