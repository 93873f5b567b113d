"""What a backend is: it realizes a Cell and runs the suite in it, writing one result document per run.

A backend never raises for a cell that fails: the failure is written as a result with
``status: failed``, its reason and its log tail, and the matrix goes on.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Protocol

from harness.plan.model import Cell, Plan
from harness.suite.document import Identity, ResultDocument


class Backend(Protocol):
    name: str

    def run_cell(
        self,
        cell: Cell,
        plan: Plan,
        result_path: Path,
        log_path: Path,
        round_index: int = 1,
        gpus: tuple[str, ...] = (),
    ) -> ResultDocument:
        """Run the suite for ``cell`` (its ``round_index``-th independent process); write and return its
        result.

        ``gpus``: the only GPU ids the run may see (empty: the backend's default). Called from
        several threads at once when runs go concurrently on several GPUs.
        """
        ...

    def stop(self) -> None:
        """From another thread: end every run in flight; each raises KeyboardInterrupt and writes nothing."""
        ...

    def identity(self, cell: Cell, plan: Plan) -> Identity:
        """What a kept result must have been made with: suite version and settings, image or interpreter."""
        ...

    def sweep(self, results_dir: Path) -> list[str]:
        """Clean up what a killed run into ``results_dir`` left running; say what was removed."""
        ...


def needs_gpu(cell: Cell, plan: Plan) -> bool:
    """Whether the cell's suite runs on a GPU: not for a CPU build of torch, nor a CPU-only suite."""
    return not (cell.torch.endswith("+cpu") or plan.suite.device == "cpu")


def suite_arguments(
    cell: Cell, plan: Plan, out: str, expect: Mapping[str, object], round_index: int = 1
) -> list[str]:
    """``python -m harness.suite`` arguments that run ``plan``'s suite for ``cell`` into ``out``.

    The fp64 reference and numerics run in a cell's first round only: they do not change from process
    to process, and they took a fifth of a process's time (issue 19)."""
    settings = plan.suite if round_index == 1 else dataclasses.replace(plan.suite, numerics=False)
    return [
        "run",
        "--out",
        out,
        "--cell",
        json.dumps({"id": cell.id, **cell.to_json()}),
        "--expect-cudnn",
        json.dumps(expect),
        "--knobs",
        json.dumps(list(plan.knob_sets)),
        *settings.to_argv(),
    ]
