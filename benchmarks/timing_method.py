"""Side by side, in one process: three ways to time one GPU call with CUDA events.

- ``v0``: the harness's first timer: two new events per sample, no block before the start event,
  the garbage collector on. The launch gap of the host is inside the event pair.
- ``reused``: one pair of events reused, still no block, GC off.
- ``blocked``: what the suite uses: reused events, GC off, a GPU sleep queued before the start
  event so the host enqueues the call while the GPU is busy (nvbench's cold measurement).

Every sample has the L2 flushed first. For each workload the script prints the median and the
mean of each tenth of the samples: drift or spread in a row is host time leaking into the sample.
Needs a CUDA GPU; from the repository root: ``python -m benchmarks.timing_method [--samples N]``.
"""

from __future__ import annotations

import argparse
import gc
import statistics
from collections.abc import Callable
from typing import Any

import torch

from harness.suite.measure import Timer
from harness.suite.workloads import conv, elementwise

CASES = [("conv2d_r50_1x1", "bf16", conv), ("conv2d_r50_3x3", "bf16", conv), ("gelu", "fp32", elementwise)]


def v0_sample(timer: Timer, fn: Callable[[], Any]) -> float:
    timer._flush.zero_()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    fn()
    end.record()
    end.synchronize()
    return float(start.elapsed_time(end)) / 1e3


def tenths(samples: list[float]) -> str:
    k = len(samples) // 10
    return " ".join(f"{statistics.fmean(samples[i * k : (i + 1) * k]) * 1e6:.1f}" for i in range(10))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--samples", type=int, default=2000)
    args = parser.parse_args()
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}, {args.samples} samples per row")
    for workload, dtype, module in CASES:
        built = module.build(workload, "default", "cuda", dtype)
        with torch.inference_mode():
            for _ in range(20):
                built.fn()
            rows = {}
            v0 = Timer("cuda", hide_launch_latency=False)
            rows["v0"] = [v0_sample(v0, built.fn) for _ in range(args.samples)]
            for label, hide in (("reused", False), ("blocked", True)):
                timer = Timer("cuda", hide_launch_latency=hide)
                gc.disable()
                rows[label] = [timer.time_call(built.fn) for _ in range(args.samples)]
                gc.enable()
        for label, samples in rows.items():
            q1, median, q3 = statistics.quantiles(samples, n=4)
            print(
                f"{workload:16} {dtype} {label:8} median {median * 1e6:7.1f} µs  IQR/median "
                f"{(q3 - q1) / median:6.3f}  tenths (µs): {tenths(samples)}"
            )
        ratio = statistics.median(rows["v0"]) / statistics.median(rows["blocked"])
        print(f"{workload:16} {dtype} median v0 / blocked = {ratio:.3f}")


if __name__ == "__main__":
    main()
