"""A square matrix product: the cuBLAS reference that no cuDNN change should move."""

from __future__ import annotations

from harness.suite.contract import ATLAS_PROFILES, EVERY_PROFILE, Built, WorkloadSpec, pick
from harness.suite.workloads.layers import DEFAULT, TRANSFORMER

SPECS = (
    WorkloadSpec(
        "gemm",
        "gemm",
        "square matrix product (the non-cuDNN reference)",
        profiles=(*EVERY_PROFILE, "atlas"),
        group="gemm, square",
    ),
    # the atlas: the transformer block's linear layers on batch * seq tokens (cuBLAS, not cuDNN)
    *(
        WorkloadSpec(
            f"gemm_tb_s{seq}_{name}",
            "gemm",
            f"matrix product of the {TRANSFORMER.title}'s {name} layer, {TRANSFORMER.batch} x {seq} tokens, "
            f"{cin} -> {cout}",
            profiles=("default", *ATLAS_PROFILES),
            default_dtypes=DEFAULT.dtypes,
            params={"m": TRANSFORMER.batch * seq, "k": cin, "n": cout},
            group="gemm, transformer block",
        )
        for seq in TRANSFORMER.seq_lens
        for name, cin, cout in TRANSFORMER.linears
    ),
)


def build(spec: WorkloadSpec, profile: str, device: str, dtype: str) -> Built:
    from harness.suite.workloads.tensors import DTYPES, element_size, randn

    if "m" in spec.params:  # a layer's shape; the smoke test's an eighth of each side
        m, k, n = (spec.params[d] // pick(profile, 8, 1) for d in ("m", "k", "n"))
    else:
        m = k = n = pick(profile, 256, 4096, 8192)
    t = DTYPES[dtype]
    a = randn(m, k, device=device, dtype=t, seed=9)
    b = randn(k, n, device=device, dtype=t, seed=10)
    moved = element_size(dtype) * (m * k + k * n + m * n)
    return Built(lambda: a @ b, {"m": m, "n": n, "k": k}, 2.0 * m * n * k, moved, [a, b])
