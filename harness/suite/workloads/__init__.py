"""The workload families: each module holds its workloads' specs and their builder (``suite.contract``).

``FAMILIES`` is their order in the catalog, and so in a run and a report. Importing this package, or any
family in it, does not import torch.
"""

from __future__ import annotations

from harness.suite.workloads import attention, conv, ddp, elementwise, faults, gemm, norm, rnn, training

FAMILIES = (conv, norm, elementwise, rnn, attention, gemm, training, ddp, faults)
