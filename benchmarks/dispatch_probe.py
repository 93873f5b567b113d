"""Per-process GPU dispatch cost: eager calls against CUDA-graph replays of launch-bound work.

    for i in 1 2 3 4 5 6 7 8; do python3 -m benchmarks.dispatch_probe; done   (on a GPU)

Each line is one process: the median device time (CUDA events, a GPU sleep queued first so the
host is never the bottleneck) of a 2-layer RNN/LSTM forward and of 200 tiny kernels, called eagerly
and replayed from a CUDA graph. Why suite 0.5 times graph replays: reports/gpu-aa-0.5/.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from typing import Any

import torch

from harness.suite.measure import capture

SLEEP_CYCLES = 8_000_000  # ~4 ms at 1.98 GHz: longer than the host needs to enqueue one call


def median_us(fn: Callable[[], Any], samples: int = 150) -> float:
    times = []
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for _ in range(samples):
        torch.cuda._sleep(SLEEP_CYCLES)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e3)
    return statistics.median(times)


def graphed(fn: Callable[[], Any]) -> Callable[[], Any]:
    """The suite's own recording (``measure.capture``), so the probe times what the suite times."""
    replay, error = capture(fn)
    if replay is None:
        raise RuntimeError(f"could not record a CUDA graph: {error}")
    return replay


def main() -> None:
    torch.backends.cudnn.benchmark = False
    out: dict[str, tuple[float, float]] = {}
    with torch.no_grad():
        for name, module_type in (("rnn", torch.nn.RNN), ("lstm", torch.nn.LSTM)):
            for dtype in (torch.float32, torch.float16):
                module = module_type(512, 512, num_layers=2).to("cuda", dtype)
                module.flatten_parameters()
                x = torch.randn(64, 32, 512, device="cuda", dtype=dtype)

                def forward(module: torch.nn.Module = module, x: torch.Tensor = x) -> Any:
                    return module(x)

                for _ in range(10):
                    forward()
                out[f"{name}-{str(dtype)[6:]}"] = (median_us(forward), median_us(graphed(forward)))
    y = torch.zeros(1024, device="cuda")

    def tiny() -> None:
        for _ in range(200):
            y.add_(1.0)

    out["200 tiny kernels"] = (median_us(tiny), median_us(graphed(tiny)))
    print(" | ".join(f"{k}: eager {a:.1f} graph {b:.1f}" for k, (a, b) in out.items()))


if __name__ == "__main__":
    main()
