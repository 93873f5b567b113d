"""qualify's rounds as library code: which rounds it asks for, and when it stops, through a fake run."""

from __future__ import annotations

import dataclasses

from harness import qualify
from harness.backends import gpu_access
from harness.executors.runs import CellOutcome
from harness.plan.axes import CudnnSource
from harness.plan.model import Cell, Plan
from harness.report.folders import Undecided
from harness.suite.settings import SuiteSettings

BASE, OTHER = Cell("installed", CudnnSource("bundled")), Cell("installed", CudnnSource("disabled"))
PLAN = Plan("p", "local", (BASE, OTHER), BASE.id, ({},), SuiteSettings(workloads=("relu", "gemm")), 5.0)


def _outcome(cell: Cell, kept: bool = False, stage: str | None = None) -> CellOutcome:
    return CellOutcome(cell.id, 1, "failed" if stage else "ok", stage, 0.0, 1, kept=kept, stage=stage)


def test_the_first_rounds_run_the_whole_plan_and_a_finished_folder_measured_nothing(tmp_path):
    asked = []

    def run(plan, rounds):
        asked.append((plan, rounds))
        return [_outcome(BASE, kept=True), _outcome(OTHER, kept=True)]

    done = qualify.run_rounds(dataclasses.replace(PLAN, rounds=2), tmp_path, True, run, print)
    assert asked == [(dataclasses.replace(PLAN, rounds=2), range(1, 3))]  # plan.json: the whole plan
    assert not done.measured and not done.stopped


def test_nothing_could_run_stops_before_a_later_round(tmp_path):
    asked = []

    def run(plan, rounds):
        asked.append(rounds)
        return [_outcome(BASE, stage=gpu_access.STAGE), _outcome(OTHER, stage=gpu_access.STAGE)]

    done = qualify.run_rounds(dataclasses.replace(PLAN, rounds=7), tmp_path, False, run, print)
    assert asked == [range(1, 4)] and done.stopped and done.measured


def test_a_later_round_runs_exactly_the_undecided_rows_in_their_cells():
    still = Undecided((BASE.id,), (("gemm", "bf16"), ("relu", "fp32")), 2)
    narrowed = qualify.undecided_only(PLAN, still)
    assert narrowed.cells == (BASE,) and narrowed.baseline_id == PLAN.baseline_id
    assert narrowed.suite.rows == ("gemm:bf16", "relu:fp32")
    assert narrowed.suite.workloads == ("gemm", "relu") and narrowed.suite.dtypes == ("bf16", "fp32")
    assert narrowed.suite.time_budget_s == PLAN.suite.time_budget_s  # every other setting as it was
