"""Our median against triton.testing.do_bench and torch.utils.benchmark, same process, same calls.

Target: within 3 % of do_bench for every workload. Needs a CUDA GPU (and triton for do_bench):
    python -m benchmarks.agreement
"""

from __future__ import annotations

import importlib

import torch

from harness.suite.catalog import CATALOG
from harness.suite.measure import Timer, measure

CASES = [("conv2d_r50_3x3", "bf16"), ("conv2d_r50_1x1", "fp32"), ("conv2d_r50_7x7s2", "bf16"),
         ("batchnorm2d", "fp32"), ("gemm", "bf16"), ("sdpa", "bf16"), ("lstm", "fp32"), ("maxpool2d", "fp32")]  # fmt: skip


def main() -> None:
    import torch.utils.benchmark as tub
    import triton.testing

    torch.backends.cudnn.benchmark = False
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}, triton {triton.__version__}")
    print(
        f"{'workload':18} {'dtype':5} {'ours µs':>9} {'do_bench':>9} {'ratio':>7} {'tub µs':>9} {'ratio':>7}"
    )
    worst = 0.0
    for workload, dtype in CASES:
        spec = CATALOG[workload]
        built = importlib.import_module(f"harness.suite.workloads.{spec.module}").build(
            spec, "default", "cuda", dtype
        )
        with torch.inference_mode():
            ours = measure(built.fn, Timer("cuda"), time_budget_s=2.0, min_time_s=0.5)["stats"]["median"]
            theirs = triton.testing.do_bench(built.fn, warmup=100, rep=1000, return_mode="median") / 1e3
            tub_median = (
                tub.Timer(stmt="fn()", globals={"fn": built.fn}).blocked_autorange(min_run_time=1.0).median
            )
        ratio = ours / theirs
        worst = max(worst, abs(ratio - 1))
        print(
            f"{workload:18} {dtype:5} {ours * 1e6:9.1f} {theirs * 1e6:9.1f} {ratio:7.3f} {tub_median * 1e6:9.1f} "
            f"{ours / tub_median:7.3f}"
        )
    print(
        f"largest |ours / do_bench - 1| = {worst:.2%} (target <= 3%: {'met' if worst <= 0.03 else 'NOT met'})"
    )
    print(
        "torch.utils.benchmark times back-to-back calls with a warm L2 cache, so it reads lower on small kernels"
    )


if __name__ == "__main__":
    main()
