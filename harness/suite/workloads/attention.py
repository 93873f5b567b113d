"""scaled_dot_product_attention with PyTorch's default backend choice (cuDNN is one of them)."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from harness.suite.workloads import DTYPES, Built, pick, randn


def build(workload_id: str, profile: str, device: str, dtype: str) -> Built:
    batch, heads, seq, dim = pick(profile, (1, 2, 64, 32), (8, 16, 1024, 64))
    t = DTYPES[dtype]
    q, k, v = (randn(batch, heads, seq, dim, device=device, dtype=t, seed=s) for s in (4, 5, 6))
    flops = 4.0 * batch * heads * seq * seq * dim
    moved = (torch.finfo(t).bits // 8) * 4 * q.numel()
    params = {"batch": batch, "heads": heads, "seq_len": seq, "head_dim": dim, "causal": False}
    return Built(lambda: F.scaled_dot_product_attention(q, k, v), params, flops, moved, [q, k, v])
