"""qualify's rounds as library code: which rounds it asks for, and when it stops, through a fake run."""

from __future__ import annotations

import dataclasses
import json
import shutil

import pytest

from harness.backends.docker import gpu_access
from harness.executors.runs import CellOutcome
from harness.plan.axes import CudnnSource
from harness.plan.model import Cell, Plan
from harness.report.pipeline import Undecided
from harness.suite.settings import SuiteSettings
from harness.workflows import qualify
from tests.conftest import timed_on_a_busy_host
from tests.evidence import TORCH_AXIS_CPU_CUT

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
    assert asked == [range(1, 2)] and done.stopped and done.measured  # round 1 alone: the plan may be a CPU's


def test_a_later_round_runs_exactly_the_undecided_rows_in_their_cells():
    still = Undecided((BASE.id,), (("gemm", "bf16"), ("relu", "fp32")), 2)
    narrowed = qualify.undecided_only(PLAN, still)
    assert narrowed.cells == (BASE,) and narrowed.baseline_id == PLAN.baseline_id
    assert narrowed.suite.rows == ("gemm:bf16", "relu:fp32")
    assert narrowed.suite.workloads == ("gemm", "relu") and narrowed.suite.dtypes == ("bf16", "fp32")
    assert narrowed.suite.time_budget_s == PLAN.suite.time_budget_s  # every other setting as it was


@pytest.mark.slow
def test_rows_a_busy_host_spoiled_are_not_run_again_and_then_the_rounds_stop(tmp_path):
    # the committed CPU rounds of two cells, one run of round 1 on a busy host: every row of both cells
    # is spoiled by it for good (a spoiled round stays in the folder), so no later round runs, and on a
    # CPU round 1 runs alone, so the rounds stop after it
    results = tmp_path / "results"
    shutil.copytree(TORCH_AXIS_CPU_CUT / "results", results)
    plan = dataclasses.replace(Plan.from_json(json.loads((results / "plan.json").read_text())), rounds=11)
    busy = sorted(results.glob("*.r1.json.gz"))[0]
    timed_on_a_busy_host(busy)
    asked, said = [], []

    def run(plan, rounds):
        asked.append(rounds)
        return [CellOutcome(c.id, r, "ok", None, 0.0, 1, kept=True) for c in plan.cells for r in rounds]

    done = qualify.run_rounds(plan, results, False, run, said.append)
    assert asked == [range(1, 2)], said
    assert done.first == done.last == 1 and not done.stopped and done.asked == "round 1 of every row"
    assert "were timed on a busy or stalled host" in done.busy and "load 3.1" in done.busy
    # it says the rounds the folder holds (3, all kept), not the one round it asked for (issue 41's walk)
    assert said == [f"stopped after 3 rounds: {done.busy}"] and done.busy.endswith(
        "(after 3 rounds) are not run"
    )
    # the same folder with its round 1 quiet and a round 2 on a busy host, which the run makes: rounds 2-3
    # run, then the rounds stop
    shutil.copy(TORCH_AXIS_CPU_CUT / "results" / busy.name, busy)
    held = tmp_path / "held"
    held.mkdir()
    for later in [*results.glob("*.r2.json.gz"), *results.glob("*.r3.json.gz")]:
        later.rename(held / later.name)
    second = sorted(held.glob("*.r2.json.gz"))[0]
    timed_on_a_busy_host(second)

    def run_later(plan, rounds):
        for r in rounds:
            for made in held.glob(f"*.r{r}.json.gz"):
                made.rename(results / made.name)
        return run(plan, rounds)

    asked.clear(), said.clear()
    done = qualify.run_rounds(plan, results, False, run_later, said.append)
    assert asked == [range(1, 2), range(2, 4)] and done.first == done.last == 3
    assert said == [f"stopped after 3 rounds: {done.busy}"] and "load 3.1" in done.busy


@pytest.mark.slow
def test_when_no_cells_environment_can_be_made_qualify_stops_after_round_1(tmp_path, monkeypatch):
    # issue 41's walk: every cell's install failed in round 1, and rounds 2 and 3 tried the same installs
    from tests.conftest import run_cli

    wheelhouse = tmp_path / "wheelhouse"
    wheelhouse.mkdir()
    _empty_wheel(wheelhouse)  # a wheelhouse without torch
    (tmp_path / "m.yaml").write_text(
        "schema_version: 1\nname: never\nbackend: local\n"
        "axes: {torch: ['0.0.1', '0.0.2'], cudnn: [bundled]}\n"
        "suite: {workloads: [relu], dtypes: [fp32], time_budget_s: 0.02, device: cpu}\n"
        "baseline: {torch: '0.0.1'}\nrounds: 5\n"
    )
    monkeypatch.setenv("HARNESS_CACHE", str(tmp_path / "cache"))
    done = run_cli("qualify", "--matrix", "m.yaml", "--wheelhouse", str(wheelhouse), cwd=tmp_path)
    # nothing ran, so nothing is judged: a run that could not complete (3), never the gate's regression (1)
    assert done.returncode == 3, done.stdout + done.stderr
    assert "outcome: infrastructure-failure (exit 3)" in done.stdout
    assert "no run could start, so no later round is run: torch==0.0.1 cannot be found in the" in done.stderr
    assert "round 1: FAILED" in done.stdout and "round 2" not in done.stdout
    # the environment's build is said without -v
    assert "creating the environment for torch 0.0.1" in done.stdout


def _empty_wheel(folder):
    """A wheel of an empty distribution, ``empty`` 0."""
    import zipfile

    info = "empty-0.dist-info"
    files = {
        f"{info}/METADATA": "Metadata-Version: 2.1\nName: empty\nVersion: 0\n",
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    files[f"{info}/RECORD"] = "".join(f"{name},,\n" for name in files) + f"{info}/RECORD,,\n"
    with zipfile.ZipFile(folder / "empty-0-py3-none-any.whl", "w") as wheel:
        for name, text in files.items():
            wheel.writestr(name, text)


@pytest.mark.slow
def test_a_later_round_asks_the_rows_undecided_before_it_not_after_the_folders_last_round(tmp_path):
    # issue 41's second walk: qualify on a folder it had finished judged round 4's rows on every round the
    # folder held (11), asked round 4 for other rows than it held, and measured it again, at every re-run
    from harness import jsonio
    from harness.report import pipeline

    results = tmp_path / "results"
    shutil.copytree(TORCH_AXIS_CPU_CUT / "results", results)
    plan = dataclasses.replace(Plan.from_json(json.loads((results / "plan.json").read_text())), rounds=5)
    before_4 = pipeline.undecided(plan, [results])
    for source in sorted(results.glob("*.r[12].json.gz")):  # rounds 4 and 5: rounds 1 and 2 again, a day on
        doc = jsonio.read(source)
        doc["run"]["round"] += 3
        for key in ("started_at", "finished_at"):
            doc[key] = doc[key].replace("2026-11-24", "2026-11-25")
        target = source.with_name(source.name.replace(".r1.", ".r4.").replace(".r2.", ".r5."))
        target.write_text(json.dumps(doc))
    after_5 = pipeline.undecided(plan, [results])
    assert before_4 is not None and after_5 is not None and before_4.rows != after_5.rows  # 4 rows, then 3
    asked: dict[int, tuple[str, ...]] = {}

    def run(plan, rounds):
        for r in rounds:
            asked[r] = plan.suite.rows
        return [CellOutcome(c.id, r, "ok", None, 0.0, 1, kept=True) for c in plan.cells for r in rounds]

    qualify.run_rounds(plan, results, False, run, lambda line: None)
    assert asked[4] == tuple(f"{w}:{d}" for w, d in before_4.rows)


def test_a_rounds_line_counts_rows_and_comparisons_apart():
    # walk 3: "6 rows still undecided; running conv2d_r50_1x1, lstm, gemm" named 3 rows (each in 2 cells)
    from harness.report.pipeline import Undecided
    from harness.workflows.qualify import _undecided

    rows = (("conv2d_r50_1x1", "fp32_default"), ("lstm", "fp32_default"), ("gemm", "fp32_default"))
    assert _undecided(Undecided(("base", "a", "b"), rows, 6)) == (
        "6 comparisons still undecided (3 rows, in 3 cells with the baseline)"
    )
    assert _undecided(Undecided(("base", "a"), rows[:1], 1)) == "1 row still undecided"
    assert _undecided(Undecided(("base", "a"), rows, 3)) == "3 rows still undecided"
