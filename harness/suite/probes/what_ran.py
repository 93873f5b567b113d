"""What ran in one call of a workload: the operators torch dispatched to and, on a GPU, the kernels.

After a measurement's samples are taken, one more call runs under the profiler; it is never a
sample. Timings say how fast; this says what was timed, so a report can tell a library that got
slower at the same kernel from a change of dispatch (another attention backend, another convolution
algorithm) and can see cuDNN used in a cell that disabled it.

- ``operators``: the ATen operators the call reached, by name and count. Torch's dispatch shows in
  them: ``aten::cudnn_convolution`` against ``aten::mkldnn_convolution``,
  ``aten::_scaled_dot_product_cudnn_attention`` against ``..._flash_attention``, ``aten::_cudnn_rnn``.
- ``kernels`` (GPU): the kernels that ran, by name, with calls and share of the call's GPU time,
  largest first; the names carry the algorithm (``implicit_gemm``, ``winograd``, ``fft``, ...).
- ``attention_backend``, ``cudnn_used``: read from the operators' names (and, on a GPU, kernels named for
  cuDNN). A convolution's backward is one operator whichever library runs it, so there only the kernel
  names tell.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from harness.suite.document import Kernel, Operator, WhatRan

MAX_KERNELS = 20  # the largest by GPU time; their shares and ``other_share`` add up to 1
MAX_OPERATORS = 60
NAME_CHARS = 1000  # C++ template names run long; what tells two kernels apart comes early

# the ATen operator each SDPA backend dispatches to, in torch 2.x (CPU and CUDA alike)
ATTENTION_OPERATORS = {
    "aten::_scaled_dot_product_cudnn_attention": "cudnn",
    "aten::_scaled_dot_product_flash_attention": "flash",
    "aten::_scaled_dot_product_flash_attention_for_cpu": "flash",
    "aten::_scaled_dot_product_efficient_attention": "efficient",
    "aten::_scaled_dot_product_attention_math": "math",
    "aten::_scaled_dot_product_fused_attention_overrideable": "overrideable",
}


def record(fn: Callable[[], Any], device: str) -> WhatRan:
    """Profile one call of ``fn`` and say what ran in it."""
    import torch
    from torch.autograd.profiler import profile
    from torch.profiler import DeviceType

    cuda = device.startswith("cuda")
    start = time.perf_counter()
    # the autograd profiler that torch.profiler wraps: the wrapper's first start imports torch._inductor
    # (hasattr(torch, "_inductor")): seconds of each process
    with profile(use_device="cuda" if cuda else None, use_kineto=True) as profiler:
        fn()
        if cuda:
            torch.cuda.synchronize()
    operators: dict[str, int] = {}
    kernels: dict[str, list[float]] = {}  # name -> [calls, GPU microseconds]
    for event in profiler.function_events:
        if event.device_type == DeviceType.CUDA:
            found = kernels.setdefault(event.name[:NAME_CHARS], [0, 0.0])
            found[0] += 1
            found[1] += event.device_time
        elif event.name.startswith("aten::"):
            operators[event.name] = operators.get(event.name, 0) + 1
    ran: WhatRan = {
        "operators": [Operator(name=n, calls=c) for n, c in sorted(operators.items())][:MAX_OPERATORS],
        "attention_backend": attention_backend(operators),
        "cudnn_used": any(_is_cudnn(name) for name in operators),
        "profile_s": 0.0,
    }
    if cuda and not kernels:  # every GPU workload launches kernels: the profiler was not let see them
        raise RuntimeError("the profiler saw no GPU kernel (is CUPTI permitted here?)")
    if cuda:
        ran["cudnn_used"] = ran["cudnn_used"] or any("cudnn" in name.lower() for name in kernels)
        total = sum(t for _, t in kernels.values())
        largest = sorted(kernels.items(), key=lambda item: (-item[1][1], item[0]))[:MAX_KERNELS]
        ran["kernels"] = [
            Kernel(name=name, calls=int(calls), share=round(t / total, 4) if total else 0.0)
            for name, (calls, t) in largest
        ]
        ran["kernel_time_s"] = total / 1e6
    ran["profile_s"] = time.perf_counter() - start
    return ran


def _is_cudnn(operator: str) -> bool:
    """An operator that runs cuDNN (``aten::cudnn_convolution``, ``aten::_cudnn_rnn``, ...), not one that only
    asks whether it could (``aten::cudnn_is_acceptable``)."""
    name = operator.removeprefix("aten::").lstrip("_")
    return (name.startswith("cudnn_") or "_cudnn_" in name) and name != "cudnn_is_acceptable"


def attention_backend(operators: dict[str, int] | list[str]) -> str | None:
    """The SDPA backend torch chose, from the operators a call reached (None: no attention ran)."""
    forward = (name.removesuffix("_backward") for name in operators)  # a backward pass names its forward's
    chosen = {ATTENTION_OPERATORS[name] for name in forward if name in ATTENTION_OPERATORS}
    return ",".join(sorted(chosen)) or None
