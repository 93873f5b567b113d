"""The lab's evidence the tests read: one name for each study folder of lab/evidence/ that a test uses, and
for each of the small fixtures made for the tests from evidence that left the tree (tests/fixtures/).

Tests never build a path into lab/evidence/ themselves; they import the folder they read from here, so a move
of the evidence is one edit in this module. Each study's README (lab/evidence/<study>/README.md, or the
table in lab/evidence/README.md) says what ran and what it claims; tests/lab/ checks those claims, and the
other tests use the results as realistic input. A fixture's README says where it comes from and what was cut.
"""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

LAB = REPO / "lab" / "evidence"
"""Every study's folder: for a test that searches all the committed results for one of a kind."""

AA_H100 = LAB / "aa-h100"
"""Issue 45's A/A leases (suites 0.18, 0.19): benchmarks/aa_profile.py's and process_part.py's tables and
printouts (windows3/, placement/)."""

GPU_DOCKER = LAB / "gpu-docker"
"""Issue 14: the docker backend on an H100 (results/, 7 rounds a cell), the same cells on the local backend
(local/) and backend_agreement's printout (agreement.txt)."""

GPU_LOCAL_ROUNDS = GPU_DOCKER / "local"
"""gpu-docker's local-backend rounds: 3 a cell, judged by Welch's t (below the 7 Mann-Whitney needs)."""

GPU_FAULTS = LAB / "gpu-faults"
"""Issue 6: a device-side assert in each of two GPU cells (results/, both runs failed), and their report
beside them (report.md, verdict.json: made before reports recorded their results)."""

GPU_LOCAL_CUDNN_SOURCES = LAB / "gpu-local-cudnn-sources"
"""One H100, torch 2.11.0+cu130 on the local backend: bundled cuDNN 9.19 (baseline), NVIDIA's system 9.14
and cuDNN disabled; its matrix.yaml and results/ (one result a cell, with plan.json)."""

GPU_MULTI = LAB / "gpu-multi"
"""Issue 7: one GPU against two on a 2 x H200 host (multi_gpu's printout) and DDP at world sizes 1 and 2."""

GPU_VERDICTS = LAB / "gpu-verdicts"
"""Issue 5: 8 workloads x fp32 (TF32 off)/bf16, 7 interleaved rounds of three local cells on an H100, run
in shards (results-shard1..3 here) merged into one report."""

HOST_CUDNN_H200 = LAB / "host-cudnn-h200"
"""Issue 58: PyTorch's bundled cuDNN against NVIDIA's system cuDNN and PyPI's wheel, on one H200."""

MAIN_JOB_H200 = LAB / "main-job-h200"
"""Issue 58: the README's main job (harness qualify on the embedded default) on a GPU host."""

PRECISION_MODES = LAB / "precision-modes"
"""Issue 58: the atlas's located steps again in PyTorch's default precision on one H200, suite 0.20
(step-a/, step-b/: results that record each row's math flags)."""

RELEASE_ATLAS = LAB / "release-atlas"
"""Issue 40: torch 2.11 against cuDNN 9.19 ... 9.28, layer by layer and at model level, on H100s and H200s:
results/, the leases' result folders (stem-bf16/, remaining-path/, step-d4a-e4b/, step-e4b/, ...) and the
committed renders of those whose results left the tree (*-report/)."""

SITE_CPU = LAB / "site-cpu"
"""Issue 60: torch 2.13.0+cpu, cuDNN bundled and disabled (no cuDNN loaded), 3 rounds on a quiet host
(quiet/, one measurement stalled) and 3 on a busy one (busy/, load 2.6 on 2 cores): the site's CPU columns
and spoiled rounds."""

TORCH_AXIS_H100 = LAB / "torch-axis-h100"
"""Torch builds x cuDNN sources on one H100, each build in an environment of its own (results/, each cell's
`nccl` record; t215/report: torch 2.15.0's committed render)."""

TORCH_BUILD_DOCKER = LAB / "torch-build-docker"
"""Issue 40 item 5: torch 2.11.0 built from a wheelhouse through the docker backend (docker/), against the
local backend (local/), on one H100."""

TORCH_DEFAULTS = LAB / "torch-defaults"
"""Issue 58: the torch axis in PyTorch's default precision on one H200: 2.14.1 (t214/) and 2.15.0 (t215/),
each against 2.11.0+cu130."""

TORCH_AXIS_CPU_CUT = REPO / "tests" / "fixtures" / "torch-axis-cpu"
"""The retired study torch-axis-cpu (PyPI's torch 2.12.0 against 2.13.0 on a CPU, each in its own
environment), cut for the tests: its matrix.yaml and results/, 3 rounds a build, 4 rows (maxpool2d fp32 and
bf16, gelu fp32, gemm fp32), every one inconclusive. Not a cuDNN comparison."""
