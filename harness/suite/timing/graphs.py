"""CUDA graphs of a call: its capture, how many fit, and taking several in turn.

Samples taken in turn from ``GRAPHS`` captures of the call, each with its own outputs and workspaces,
average out where those lie (docs/method.md: where a call's memory lies moves its median between
processes).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from typing import Any

import torch

GRAPHS = 4  # suite 0.13 took 8: no quieter, and its captures filled an H100 (docs/method.md)
GRAPHS_BYTES = 16 * 1024**3  # at most this much memory for the captures' own (GPU memory free: half)


def capture(fn: Callable[[], Any], calls: int = 1) -> tuple[Callable[[], Any] | None, str | None]:
    """``calls`` back-to-back calls of ``fn`` recorded as one CUDA graph: its replay, or None and why it
    could not be recorded.

    The caller has warmed ``fn`` up (autotuning, lazy loading and allocations are done), as capture
    requires; one more call on the capture stream warms that stream, as PyTorch's docs ask.
    """
    graph = torch.cuda.CUDAGraph()
    stream = _capture_stream()
    stream.wait_stream(torch.cuda.current_stream())
    try:
        with torch.cuda.stream(stream):
            fn()
        torch.cuda.current_stream().wait_stream(stream)
        with torch.cuda.graph(graph, stream=stream, capture_error_mode="thread_local"):
            for _ in range(calls):
                fn()
        torch.cuda.synchronize()
    except Exception as exc:  # any refusal means: time the call eagerly
        # ending a broken capture raises "operation failed due to a previous error during capture";
        # the error the call itself raised is the one that says why
        cause = exc.__context__ if exc.__context__ is not None else exc
        text = str(cause).strip().splitlines()
        return None, f"{type(cause).__name__}: {text[0] if text else ''}"[:300]
    return graph.replay, None


def _capture_stream() -> Any:
    """One side stream for every capture of the process: what a library caches for each stream it sees
    (cuBLAS's workspaces) is then cached once."""
    global _stream
    if _stream is None:
        _stream = torch.cuda.Stream()
    return _stream


_stream: Any = None


def release() -> int:
    """Give the memory a row left back to the driver: cuBLAS's cached workspaces (one made during a
    capture lies in that graph's pool and keeps the pool from being freed), then the caching
    allocator's free blocks. Returns the bytes the allocator still holds with no tensor in them:
    memory stranded in pools a live block pins, which later rows cannot have."""
    clear = getattr(torch._C, "_cuda_clearCublasWorkspaces", None)
    if clear is not None:
        clear()
    torch.cuda.empty_cache()
    return max(0, torch.cuda.memory_reserved() - torch.cuda.memory_allocated())


def graphs_that_fit(wanted: int, call_bytes: int, free_bytes: int | None = None) -> int:
    """How many of ``wanted`` graphs to capture of a call that allocates ``call_bytes`` beyond its inputs:
    their memory stays under ``GRAPHS_BYTES`` and half the GPU's free memory, one graph at least."""
    if free_bytes is None:
        free_bytes = free_memory()
    return max(1, min(wanted, _room(free_bytes) // max(call_bytes, 1)))


def another_fits(captured: int, free_before: int, free_now: int) -> bool:
    """Whether one more graph fits after ``captured`` took the GPU from ``free_before`` bytes free to
    ``free_now``: what the captures took from the driver (their pools reserve more than the call
    allocates), one more of the same, under ``GRAPHS_BYTES`` and half of ``free_before``."""
    taken = max(0, free_before - free_now)
    return taken + taken // max(captured, 1) <= _room(free_before)


def free_memory() -> int:
    return torch.cuda.mem_get_info()[0] if torch.cuda.is_available() else GRAPHS_BYTES * 2


def _room(free_bytes: int) -> int:
    """The most the captures' memory may take: ``GRAPHS_BYTES``, and half of what was free."""
    return min(GRAPHS_BYTES, free_bytes // 2)


def relocate(tensors: Sequence[Any], held: list[Any]) -> None:
    """Move each GPU tensor of ``tensors`` to a copy at other addresses, in place (the calls that close over
    it use the copy from now on); the storage it leaves is held in ``held`` for the graphs recorded on it."""
    with torch.inference_mode(False):  # a copy made under inference mode could not become a tensor's data
        for tensor in tensors:
            if isinstance(tensor, torch.Tensor) and tensor.is_cuda:
                held.append(tensor.data)
                tensor.data = tensor.data.clone()


def rotation(replays: list[Callable[[], Any]], held: list[Any]) -> Callable[[], Any]:
    """One replay a call, taking the graphs in turn; ``held`` lives as long as they do."""
    if len(replays) == 1:
        return replays[0]
    turn = itertools.cycle(replays)

    def replay() -> Any:
        _ = held
        return next(turn)()

    return replay
