"""``harness init``: a first ``matrix.yaml``, every key explained where it is set.

The wheel ships no matrix, so the starter lives here, in the package: the repository's own smoke matrix
(it runs anywhere: no GPU or Docker engine needed) with a comment on each key and the optional keys
shown commented out. tests/test_cli_first_run.py checks that it loads as the repository's does. Written
anywhere but a ``matrix.yaml``, it is named after its file, so that its results and reports never share
``results/smoke/`` and ``reports/smoke/`` with the repository's own matrix.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from harness import jsonio
from harness.errors import InputError, Problem

STARTER = """\
# A version matrix: which PyTorch x cuDNN combinations to measure, and how to judge them.
# This one runs anywhere (no Docker engine needed), on the torch of the Python that runs the harness.
# On a GPU it judges NVIDIA's system cuDNN and PyPI's newest cuDNN against the cuDNN torch ships, where
# this host has them; on a CPU (where cuDNN is not used) cuDNN as torch ships it against cuDNN disabled:
# an A/A check of the harness.
#   harness plan --matrix matrix.yaml      lists the cells, and those left out here with why; runs nothing
#   harness qualify --matrix matrix.yaml   runs every cell and judges it against the baseline

schema_version: 1            # the matrix format; this harness reads 1
name: smoke                  # names results/<name>/ and reports/<name>/ (a-z, 0-9, '_', '.', '-')
# One line on what the matrix asks, shown with its plan and reports.
description: PyTorch's cuDNN against NVIDIA's system cuDNN and PyPI's newest on a GPU; an A/A check on a CPU.

# local: the suite runs in a Python on this host (torch: installed, or a version in an environment of
# its own); docker: one image per cell (torch: VERSION+VARIANT such as '2.11.0+cu130', or PyPI's VERSION
# with a named base_image; python: '3.12').
backend: local

# The axes: every combination of their values is a cell (each cell is one environment).
axes:
  torch: [installed]         # installed | VERSION (PyPI) | VERSION+cpu / +cu130 (PyTorch's index) | image
  # cuDNN sources: bundled (torch's own) | disabled | {wheel: '9.12.0.46'} (PyPI's nvidia-cudnn-cuNN) |
  # {wheel: newest} (the newest in the index, or in the run's --wheelhouse) | {system: auto | VERSION | /dir}
  # (NVIDIA's). A mapping may add terms: device: cuda | cpu (a cell only where the suite runs there) and
  # optional: true (left out, and named with why, where this host cannot make it); {disabled: true, ...}.
  cudnn:
    - bundled                                        # the baseline: the cuDNN torch ships
    - {system: auto, device: cuda, optional: true}   # NVIDIA's system cuDNN, the newest installed
    - {wheel: newest, device: cuda, optional: true}  # nvidia-cudnn-cuNN's newest release
    - {disabled: true, device: cpu}                  # on a CPU: the A/A check
  # base_image: [auto]       # docker: the nvidia/cuda image matching the torch build, or an image reference
  # python: [installed]      # installed (local) or '3.12' (in quotes: YAML reads 3.10 as 3.1)

# Run knobs vary inside each run of a cell (they never cost an image): true, false or both.
knobs:
  cudnn_benchmark: [false]   # torch.backends.cudnn.benchmark: let cuDNN's autotuner pick algorithms
  # deterministic: [false]   # torch.backends.cudnn.deterministic
  # tf32: [false]            # TF32 matmuls and convolutions on Ampere and later

# What runs in each cell ('python -m harness.suite list' names every workload).
suite:
  profile: smoke             # smoke (small shapes, seconds) | default | full | atlas (every distinct layer
                             # of ResNet-50, U-Net and a transformer block, and their training steps)
  device: auto               # auto (the GPU where there is one) | cuda | cpu
  # precision modes: fp32_default (fp32 under torch's own flags: TF32 in cuDNN convolutions) | fp32 (TF32
  # off) | tf32 (TF32 everywhere) | bf16 | fp16
  dtypes: [fp32_default, bf16]
  cpu_rows:                  # on a CPU (where the A/A check runs): exactly these workload:dtype rows,
    - conv2d_r50_7x7s2:fp32_default  # whose speed stays the same from one process to the next
    - conv2d_r50_1x1:fp32_default    # convolutions (oneDNN)
    - batchnorm2d:fp32_default       # normalization
    - maxpool2d:fp32_default         # pooling
    - lstm:fp32_default              # a recurrent layer
    - sdpa:fp32_default              # attention
    - gemm:fp32_default              # a matrix product
  time_budget_s: 0.2         # at most this long sampling each measurement
  # workloads: [conv2d_r50_3x3, sdpa]   # only these, instead of the profile's
  # rows: [conv2d_r50_3x3:fp32, conv2d_r50_3x3.cl:bf16]   # exactly these workload:dtype rows
  # numerics: true           # check each result against an fp64 reference
  # what_ran: true           # record the operators and kernels that ran (one profiled call)

# Independent processes per cell, interleaved (A B B A ...). qualify runs 3 a cell first; a row those
# leave undecided gets more, up to this many, in processes that measure only such rows. Below 7 a side a
# row is judged by Welch's t test on its round medians, at 7 by the Mann-Whitney U test.
rounds: 11

# The cell every other cell is judged against: axis values that match exactly one cell.
baseline: {cudnn: bundled}

# When a difference is a verdict: slower or faster beyond the threshold, else same or inconclusive.
thresholds:
  regression_pct: 5          # a row is slower or faster only beyond this change (%)
  cpu_regression_pct: 10     # on a CPU (the A/A check): two processes of one code differ by several %
  # alpha: 0.002             # significance level of each row's test: Welch's t on the log round medians
  #                          # with 3 to 6 rounds a side, the exact Mann-Whitney U test from 7
  # per_workload: {lstm: 10}  # a threshold of its own for a noisy workload (%)

# Cells to leave out of the product, or to add to it (a cell: torch, cudnn, base_image, python).
# rules:
#   exclude:
#     - {torch: '2.13.0+cpu', cudnn: {wheel: '9.12.0.46'}}
#   include:
#     - {torch: '2.11.0+cu130', cudnn: {wheel: '9.14.0.64'}, python: '3.12'}

# slurm: {partition: gpu, time: '01:00:00', gpus: 1}   # how 'run --backend slurm' asks for each task
# docker: {gpu_access: toolkit}                        # toolkit | cdi | devices
"""


DEFAULT_NAME = "smoke"  # the starter's, as the repository's matrix.yaml names itself


def name_for(path: Path) -> str:
    """The matrix name a starter written to ``path`` gets: ``smoke`` in a ``matrix.yaml``, else its file's
    stem as the schema's slug allows (lower case; other characters become '-'), ``smoke`` where none is
    left."""
    if path.name == "matrix.yaml":
        return DEFAULT_NAME
    slug = re.sub(r"[^a-z0-9_.-]+", "-", path.stem.lower()).lstrip("_.-")[:64]
    return slug or DEFAULT_NAME


def text(path: Path) -> str:
    """The starter as written to ``path``: its name and its header's commands follow the file (the name
    quoted where YAML would read it as something else than that text, such as ``true`` or ``1e5``)."""
    import yaml

    name = name_for(path)
    if yaml.safe_load(name) != name:
        name = f"'{name}'"
    shown = shlex.quote(str(path))
    if not shown.isprintable():  # a line break in the file's name would end the comment it stands in
        shown = "FILE"
    body = STARTER.replace("--matrix matrix.yaml", f"--matrix {shown}")
    return body.replace(f"name: {DEFAULT_NAME}      ", f"name: {name:<11}", 1)


def write(path: Path, force: bool) -> Path:
    """The starter written to ``path``: refused where a file is already there, unless ``force``."""
    if (path.exists() or path.is_symlink()) and not force:
        raise InputError(
            [
                Problem(
                    str(path),
                    "--matrix",
                    "already exists; pass --force to replace it, or --matrix NEW.yaml to write another",
                )
            ]
        )
    if path.is_dir():
        raise InputError([Problem(str(path), "--matrix", "is a folder; name a file, e.g. DIR/matrix.yaml")])
    try:  # replaces a link itself (--force), never the file it points at
        jsonio.write_text_atomic(path, text(path))
    except OSError as exc:
        raise InputError([Problem(str(path), "--matrix", f"cannot write: {exc.strerror or exc}")]) from None
    return path
