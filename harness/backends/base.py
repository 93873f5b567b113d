"""What a backend is: it realizes a Cell and runs the suite in it, giving back each run's document and facts.

A backend never raises for a cell that fails: the failure comes back as a document with
``status: failed`` and its reason (its log tail is added where the result is written), and the matrix
goes on. The result file is written by the caller, through ``results.folder.write_result``.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from harness.plan.axes import CudnnExpectation
from harness.plan.model import Cell, Plan
from harness.suite.document import Identity, RunRecord, SuiteResult


@dataclass(frozen=True)
class FinishedRun:
    """What one run of the suite gave: its document and the facts of the run."""

    document: SuiteResult  # what the suite wrote, or the failed result the backend made for it
    run: RunRecord  # the backend's record: command, exit code, wall time, identity, image or environment


class Backend(Protocol):
    name: str

    def run_cell(
        self,
        cell: Cell,
        plan: Plan,
        results_dir: Path,
        round_index: int = 1,
        gpus: tuple[str, ...] = (),
    ) -> FinishedRun:
        """Run the suite for ``cell`` (its ``round_index``-th independent process), its log and scratch in
        ``results_dir``; return what it gave, for ``folder.write_result``.

        ``gpus``: the only GPU ids the run may see (empty: the backend's default). Called from
        several threads at once when runs go concurrently on several GPUs.
        """
        ...

    def stop(self) -> None:
        """From another thread: end every run in flight; each raises KeyboardInterrupt and gives nothing."""
        ...

    def identity(self, cell: Cell, plan: Plan) -> Identity:
        """What a kept result must have been made with: suite version and settings, image or interpreter."""
        ...

    def sweep(self, results_dir: Path) -> list[str]:
        """Clean up what a killed run into ``results_dir`` left running; say what was removed."""
        ...

    def prepare(self, cells: tuple[Cell, ...], plan: Plan, results_dir: Path) -> None:
        """Make what ``cells``' runs need (environments, cuDNN releases, images) before any run is timed, so
        that no install or build loads the host during a round; what fails is left for that cell's run to
        report, as it would without this."""
        ...


def needs_gpu(cell: Cell, plan: Plan) -> bool:
    """Whether the cell's suite runs on a GPU: not for a CPU build of torch, nor a CPU-only suite."""
    return not (cell.torch.endswith("+cpu") or plan.suite.device == "cpu")


def suite_arguments(
    cell: Cell, plan: Plan, out: str, expect: CudnnExpectation, round_index: int = 1
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
        json.dumps(expect.to_json()),
        "--knobs",
        json.dumps(list(plan.knob_sets)),
        *settings.to_argv(),
    ]
