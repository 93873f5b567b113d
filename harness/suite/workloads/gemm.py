"""A square matrix product: the cuBLAS reference that no cuDNN change should move."""

from __future__ import annotations

import torch

from harness.suite.workloads import DTYPES, Built, pick, randn


def build(workload_id: str, profile: str, device: str, dtype: str) -> Built:
    n = pick(profile, 256, 4096)
    t = DTYPES[dtype]
    a = randn(n, n, device=device, dtype=t, seed=9)
    b = randn(n, n, device=device, dtype=t, seed=10)
    moved = (torch.finfo(t).bits // 8) * 3 * n * n
    return Built(lambda: a @ b, {"m": n, "n": n, "k": n}, 2.0 * n**3, moved, [a, b])
