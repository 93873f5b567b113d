"""A square matrix product: the cuBLAS reference that no cuDNN change should move."""

from __future__ import annotations

from harness.suite.contract import EVERY_PROFILE, Built, WorkloadSpec, pick

SPECS = (
    WorkloadSpec("gemm", "gemm", "square matrix product (the non-cuDNN reference)", profiles=EVERY_PROFILE),
)


def build(spec: WorkloadSpec, profile: str, device: str, dtype: str) -> Built:
    from harness.suite.workloads.tensors import DTYPES, element_size, randn

    n = pick(profile, 256, 4096, 8192)
    t = DTYPES[dtype]
    a = randn(n, n, device=device, dtype=t, seed=9)
    b = randn(n, n, device=device, dtype=t, seed=10)
    return Built(lambda: a @ b, {"m": n, "n": n, "k": n}, 2.0 * n**3, element_size(dtype) * 3 * n * n, [a, b])
