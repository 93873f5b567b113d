"""A multi-layer LSTM forward pass (cuDNN's RNN path on the GPU).

In bf16 the time includes cuDNN re-packing the weights at every call: torch's
``flatten_parameters`` does nothing for bf16 (``torch.backends.cudnn.CUDNN_TENSOR_DTYPES`` lacks it),
so every bf16 ``nn.LSTM`` on cuDNN pays this, and torch warns about it in the cell's log.
"""

from __future__ import annotations

import torch

from harness.suite.workloads import DTYPES, Built, pick, randn


def build(workload_id: str, profile: str, device: str, dtype: str) -> Built:
    seq, batch, hidden = pick(profile, (16, 4, 64), (64, 32, 512))
    layers = 2
    t = DTYPES[dtype]
    torch.manual_seed(7)  # the LSTM's own initialisation
    lstm = torch.nn.LSTM(hidden, hidden, num_layers=layers).to(device=device, dtype=t)
    lstm.flatten_parameters()  # .to() leaves the weights in pieces; cuDNN would re-pack them every call
    x = randn(seq, batch, hidden, device=device, dtype=t, seed=8)
    # 4 gates, each an input and a hidden matrix product per step and layer
    flops = 2.0 * layers * seq * batch * 4 * hidden * (2 * hidden)
    params = {"seq_len": seq, "batch": batch, "hidden": hidden, "layers": layers}
    return Built(lambda: lstm(x), params, flops, None, [lstm, x])
