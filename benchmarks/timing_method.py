"""Side by side, in one process: CUDA-event timing with and without the launch-latency block.

Prints, per workload, the median and the mean of each tenth of the samples for both timers, so a
drift (host launch gaps leaking into the event pair) shows as rising tenths in the naive column.
Needs a CUDA GPU; run from the repository root:

    python -m benchmarks.timing_method [--samples 1000]
"""

from __future__ import annotations

import argparse
import statistics

import torch

from harness.suite.catalog import CATALOG
from harness.suite.measure import Timer
from harness.suite.workloads import conv, elementwise

CASES = [("conv2d_r50_1x1", "bf16", conv), ("conv2d_r50_3x3", "bf16", conv), ("gelu", "fp32", elementwise)]


def tenths(samples: list[float]) -> list[float]:
    k = len(samples) // 10
    return [statistics.fmean(samples[i * k : (i + 1) * k]) * 1e6 for i in range(10)]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--samples", type=int, default=1000)
    args = parser.parse_args()
    torch.backends.cudnn.benchmark = False
    for workload, dtype, module in CASES:
        assert workload in CATALOG
        built = module.build(workload, "default", "cuda", dtype)
        with torch.inference_mode():
            for _ in range(20):
                built.fn()
            for label, timer in (
                ("naive", Timer("cuda", hide_launch_latency=False)),
                ("blocked", Timer("cuda", hide_launch_latency=True)),
            ):
                samples = [timer.time_call(built.fn) for _ in range(args.samples)]
                print(
                    f"{workload:16} {dtype} {label:8} median {statistics.median(samples) * 1e6:8.1f} µs  "
                    f"tenths (µs): {' '.join(f'{t:.1f}' for t in tenths(samples))}"
                )
        print(f"{'':16} ratio naive/blocked medians reported above; a flat 'blocked' row is the target")


if __name__ == "__main__":
    main()
