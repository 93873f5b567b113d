"""Multi-layer LSTM, GRU and vanilla RNN forward passes (cuDNN's RNN path on the GPU), packed or not.

In bf16 the time includes cuDNN re-packing the weights at every call: torch's
``flatten_parameters`` does nothing for bf16 (``torch.backends.cudnn.CUDNN_TENSOR_DTYPES`` lacks it),
so every bf16 RNN module on cuDNN pays this, and torch warns about it in the cell's log.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.suite.contract import EVERY_PROFILE, LARGER_PROFILES, Built, WorkloadSpec, pick

if TYPE_CHECKING:
    import torch

GATES = {"lstm": 4, "gru": 3, "rnn": 1}

SPECS = tuple(
    WorkloadSpec(
        cell + ("_packed" if packed else ""),
        "rnn",
        f"2-layer {cell.upper()} forward" + (", packed variable-length batch" if packed else ""),
        # the atlas keeps the two cuDNN RNNs at the suite's shape: its networks have none
        profiles=(EVERY_PROFILE if (cell, packed) == ("lstm", False) else LARGER_PROFILES)
        + (("atlas",) if cell in ("lstm", "gru") and not packed else ()),
        params={"cell": cell, "packed": packed},
        group="rnn",
    )
    for cell in GATES
    for packed in (False, True)
)


def build(spec: WorkloadSpec, profile: str, device: str, dtype: str) -> Built:
    import torch
    from torch.nn.utils.rnn import pack_padded_sequence

    from harness.suite.workloads.tensors import DTYPES, randn

    cell, packed = spec.params["cell"], spec.params["packed"]
    seq, batch, hidden = pick(profile, (16, 4, 64), (64, 32, 512), (128, 64, 1024))
    layers = 2
    t = DTYPES[dtype]
    torch.manual_seed(7)  # the module's own initialisation
    modules = {"lstm": torch.nn.LSTM, "gru": torch.nn.GRU, "rnn": torch.nn.RNN}
    module = modules[cell](hidden, hidden, num_layers=layers).to(device=device, dtype=t)
    module.flatten_parameters()  # .to() leaves the weights in pieces; cuDNN would re-pack them every call
    x = randn(seq, batch, hidden, device=device, dtype=t, seed=8)
    params = {
        "cell": cell,
        "seq_len": seq,
        "batch": batch,
        "hidden": hidden,
        "layers": layers,
        "packed": packed,
    }
    lengths = None
    if packed:  # a variable-length batch: lengths from seq down to seq/4
        lengths = torch.linspace(seq, max(seq // 4, 1), batch).round().to(torch.int64)
        params["lengths_sum"] = int(lengths.sum())
    steps = float(lengths.sum()) if lengths is not None else float(seq * batch)
    flops = 2.0 * layers * steps * GATES[cell] * hidden * (2 * hidden)

    def forward() -> torch.Tensor:
        inp = pack_padded_sequence(x, lengths, enforce_sorted=True) if lengths is not None else x
        out: torch.Tensor = module(inp)[0]
        return out.data if lengths is not None else out

    return Built(forward, params, flops, None, [module, x])
