"""Probes: what this process loaded and ran on, read from the process itself (cuDNN, NCCL, mapped files,
the host, the GPU, the environment, the kernels a call ran)."""
