"""Reports that never contradict their own numbers, and end their answer with what to do next (issue 32).

A row's times are what its test compares and its ratio divides exactly those; the Method section and the
rounds column name the test each row used; the repro README describes the row's own timer; every report
says which cell to ship (or that none is shown better), how to decide its inconclusive rows and what it
costs, and the reproducer command of each regression.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from tests.conftest import REPO, run_cli
from tests.evidence import GPU_DOCKER, GPU_LOCAL_ROUNDS, GPU_VERDICTS, RELEASE_ATLAS, TORCH_AXIS_CPU_CUT

VERDICT_SHARDS = [GPU_VERDICTS / f"results-shard{i}" for i in (1, 2, 3)]  # 7 rounds
CPU_AXIS = TORCH_AXIS_CPU_CUT / "results"  # 3 rounds, every row inconclusive
UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0}


def _report(tmp_path: Path, *dirs: Path) -> Path:
    out = tmp_path / "report"
    done = run_cli("report", *(a for d in dirs for a in ("--results", str(d))), "--out", str(out))
    assert done.returncode in (0, 1), done.stdout + done.stderr
    return out


def _section(text: str, title: str) -> str:
    return text.split(f"## {title}\n", 1)[1].split("\n## ", 1)[0]


def _seconds(cell: str) -> float:
    number, unit = re.match(r"\[?([0-9.]+) (ns|us|µs|ms|s)\b", cell).groups()  # type: ignore[union-attr]
    return float(number) * UNITS[unit]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("dirs", "test", "center"),
    [
        ([GPU_LOCAL_ROUNDS], "welch-tost", "geometric mean"),
        (VERDICT_SHARDS, "mann-whitney", "median"),
    ],
)
def test_the_times_shown_are_what_the_ratio_divides(tmp_path, dirs, test, center):
    out = _report(tmp_path, *dirs)
    rows = [r for r in json.loads((out / "verdict.json").read_text())["comparisons"] if r.get("ratio")]
    assert rows and {r["test"] for r in rows} == {test} and {r["center"] for r in rows} == {center}
    for r in rows:
        assert r["candidate_s"] / r["baseline_s"] == pytest.approx(r["ratio"], rel=1e-9), r
    text = (out / "report.md").read_text()
    section = _section(text, "Verdicts against the baseline")
    first = section[section.index("| workload") :].split("\n\n", 1)[0]  # the verdict table alone
    table = [ln.split(" | ") for ln in first.splitlines()]
    header = [c.strip("| ") for c in table[0]]
    checked = 0
    for cells in table[2:]:
        row = dict(zip(header, (c.strip("| ") for c in cells), strict=False))
        if row.get("baseline", "—") == "—" or not row.get("time ratio"):
            continue
        shown = _seconds(row["candidate"]) / _seconds(row["baseline"])
        assert shown == pytest.approx(float(row["time ratio"]), rel=0.01), row  # 3-4 digits shown
        assert row["rounds"].endswith("Welch" if test == "welch-tost" else "MW")
        checked += 1
    assert checked == len(rows)
    method = _section(text, "Method, sources and the gate's summary")
    assert "Welch's t" in method and "Mann-Whitney" in method and "1 − 2α" in method
    compare = run_cli("compare", str(dirs[0]), str(GPU_DOCKER / "results"), "--only", "bundled")
    if compare.returncode in (0, 1):  # the terminal's A -> B are the same statistic as its change
        for line in compare.stdout.splitlines()[2:]:
            times = re.search(
                r"([0-9.]+ (?:ns|us|ms|s)) -> ([0-9.]+ (?:ns|us|ms|s))\s+([0-9.]+)x (slower|faster)", line
            )
            if times:
                ratio = _seconds(times[2]) / _seconds(times[1])
                factor = float(times[3])
                assert (ratio if times[4] == "slower" else 1 / ratio) == pytest.approx(factor, abs=0.011), (
                    line
                )


def test_no_document_that_does_not_exist_is_cited():
    cited = [p for p in (REPO / "harness").rglob("*.py") if "measurement.md" in p.read_text()]
    assert not cited


@pytest.mark.slow
def test_the_repro_readme_describes_the_rows_own_timer(tmp_path):
    out = tmp_path / "repro"
    done = run_cli(
        "repro",
        "--results",
        str(CPU_AXIS),
        "--workload",
        "gelu",
        "--dtype",
        "fp32",
        "--candidate",
        "2.13",
        "--out",
        str(out),
    )
    assert done.returncode == 0, done.stdout + done.stderr
    readme = (out / "README.md").read_text()
    assert "time.perf_counter" in readme and "CUDA events" not in readme and "L2 flush" not in readme
    assert "Welch's t" in readme and "99.6% interval" in readme


@pytest.mark.slow
def test_a_report_with_regressions_ends_its_answer_with_their_reproducers(tmp_path):
    out = _report(tmp_path, GPU_LOCAL_ROUNDS)
    text = (out / "report.md").read_text()
    steps = _section(text, "What to do next")
    assert "**keep it**" in steps and "would regress" in steps
    assert f"python -m harness repro \\\n    --results {GPU_LOCAL_ROUNDS} \\\n    --workload" in steps
    assert text.index("## What to do next") < text.index("## Method")  # the end of the answer
    assert "What to do next" in (out / "summary.md").read_text()


@pytest.mark.slow
def test_the_cell_to_ship_is_named_with_the_rows_that_were_measured(tmp_path):
    # the atlas's lease 18 on an H100, two of its 17 cells: 9.26.0.51 is faster than bundled in one of the
    # matrix's 3 rows and the same in two; the advice says it rests on 3 rows, not on the profile
    lease = RELEASE_ATLAS / "remaining-path"
    for side, cell in (("a", "bundled"), ("b", "wheel-9.26.0.51")):
        (tmp_path / side).mkdir()
        for path in [lease / "plan.json", *lease.glob(f"*cudnn-{cell}_*")]:
            shutil.copy(path, tmp_path / side)
    done = run_cli("compare", str(tmp_path / "a"), str(tmp_path / "b"), "--out", str(tmp_path / "report"))
    assert done.returncode == 0, done.stdout + done.stderr
    steps = " ".join(_section((tmp_path / "report" / "report.md").read_text(), "What to do next").split())
    assert re.search(r"\*\*Ship B: [^*]+\*\*: of the 3 rows measured, 1 faster than \*\*A: ", steps), steps
    assert "none slower or undecided" in steps and "rows not measured here are not judged" in steps


@pytest.mark.slow
def test_inconclusive_rows_get_the_command_that_decides_them_and_its_cost(tmp_path):
    out = _report(tmp_path, CPU_AXIS)
    # report.md wraps prose at any space, so where a line breaks depends on tmp_path's length
    steps = " ".join(_section((out / "report.md").read_text(), "What to do next").split())
    assert "No cell is shown better" in steps
    matrix = (TORCH_AXIS_CPU_CUT / "matrix.yaml").relative_to(REPO)  # as its results name it
    assert f"python -m harness qualify --matrix {matrix} --out" in steps
    assert "`rounds: 7`" in steps and re.search(r"about \d+ more processes, \d+ (s|min) at most", steps)


@pytest.mark.slow
def test_an_a_a_comparison_says_to_keep_the_baseline(tmp_path):
    args = ("--cell", "bundled", "--out", str(tmp_path / "aa"))  # one cell of two shards of one matrix
    done = run_cli("compare", str(VERDICT_SHARDS[0]), str(VERDICT_SHARDS[1]), *args)
    assert done.returncode == 0, done.stderr
    steps = _section((tmp_path / "aa" / "report.md").read_text(), "What to do next")
    assert "No cell is shown better" in steps and "would regress" not in steps


def test_compare_help_says_which_test_judges_a_row():
    shown = run_cli("compare", "--help").stdout
    assert "Welch's t" in shown and "Mann-Whitney U" in shown and "1 - 2 alpha" in shown


@pytest.mark.slow
def test_qualify_on_a_finished_folder_says_nothing_was_left_to_decide(tmp_path, write_matrix):
    matrix = write_matrix(
        "schema_version: 1\nname: done\nbackend: local\naxes: {torch: [installed], cudnn: [bundled, "
        "disabled]}\nsuite: {workloads: [relu], dtypes: [fp32], time_budget_s: 0.02}\nrounds: 3\n"
        "baseline: {cudnn: bundled}\n"
    )
    args = (
        "qualify",
        "--matrix",
        str(matrix),
        "--out",
        str(tmp_path / "r"),
        "--report-out",
        str(tmp_path / "q"),
    )
    first = run_cli(*args)
    assert first.returncode in (0, 1), first.stdout + first.stderr
    assert "nothing was left to decide" not in first.stdout
    again = run_cli(*args)
    assert again.returncode == first.returncode, again.stdout + again.stderr
    assert "every run asked (" in again.stdout and "is already in" in again.stdout  # nothing measured again
    if "a busy host spoiled these rows" in again.stdout + again.stderr:  # a loaded machine: --fresh, not more
        assert "--fresh' moves these rounds aside" in again.stdout + again.stderr
    else:
        assert "nothing was left to decide" in again.stdout and "raise 'rounds:'" in again.stdout


ATLAS_PATH = RELEASE_ATLAS / "remaining-path"  # lease 18, H100s: 17 cells, 3 rows


def _lease_of_three(tmp_path: Path, left_out: list[dict[str, object]]) -> Path:
    """Lease 18's results of three cells (bundled 9.19.0, PyPI's 9.26.0.51 and 9.28.1.4), in a folder whose
    plan.json is the lease's narrowed to them, with ``left_out`` and what ``{wheel: newest}`` chose as a
    planning host would have written them."""
    results = tmp_path / "results"
    results.mkdir()
    kept = ("cudnn-bundled", "cudnn-wheel-9.26.0.51", "cudnn-wheel-9.28.1.4")
    plan = json.loads((ATLAS_PATH / "plan.json").read_text())
    plan["cells"] = [c for c in plan["cells"] if c["id"].split("_")[1] in kept]
    plan["left_out"] = left_out
    newest = next(c["id"] for c in plan["cells"] if "9.28.1.4" in c["id"])
    how = "the newest nvidia-cudnn-cu13 (of 5 releases) in the wheelhouse /var/tmp/wheelhouse"
    plan["chosen"] = [{"cell": newest, "written": {"wheel": "newest"}, "how": how}]
    (results / "plan.json").write_text(json.dumps(plan))
    for cell in plan["cells"]:
        for path in ATLAS_PATH.glob(f"{cell['id']}.r*.json.gz"):
            shutil.copy(path, results)
    return results


@pytest.mark.slow
def test_the_first_screen_answers_which_cudnn_this_host_should_use(tmp_path):
    # issue 58: the answer comes first, in cuDNN's own names and versions and the rows' precision modes
    out = _report(tmp_path, GPU_LOCAL_ROUNDS)
    text = (out / "report.md").read_text()
    assert text.index("## Which cuDNN for this host") < text.index("## Scorecard")
    answer = " ".join(_section(text, "Which cuDNN for this host").split())
    assert answer.startswith(
        "On this **NVIDIA H100 80GB HBM3**, for these 15 rows in fp32 (TF32 off) and bf16: **keep PyTorch's "
        "cuDNN 9.19.0** (A, the baseline): no other is shown better."
    ), answer
    assert (
        "- B: **NVIDIA's system cuDNN 9.14.0**: slower in 1 row (sdpa bf16, 1.53x slower), faster in 1 row"
        in answer
    )
    assert "- C: **cuDNN disabled**: slower in 7 rows (4 fp32 (TF32 off), 3 bf16; largest: conv2d" in answer
    assert "Left out" not in answer  # that plan left nothing out


@pytest.mark.slow
def test_a_release_shown_better_is_the_answer_and_what_was_left_out_is_named_with_why(tmp_path):
    why = "no system cuDNN found in /usr/lib/x86_64-linux-gnu or the ld.so cache"
    system = {"torch": "installed", "cudnn": {"system": "auto"}, "base_image": "auto", "python": "installed"}
    results = _lease_of_three(tmp_path, [{"cell": system, "why": why}])
    out = _report(tmp_path, results)
    text = (out / "report.md").read_text()
    answer = " ".join(_section(text, "Which cuDNN for this host").split())
    assert (
        "for these 3 rows in fp32 (TF32 on) and bf16: **use PyPI's cuDNN 9.26.0.51** (B): faster than "
        "**PyTorch's cuDNN 9.19.0** (A, the baseline) in 1 of them, slower in none, none undecided." in answer
    )
    assert (
        "- C: **PyPI's cuDNN 9.28.1.4**: slower in 1 row (conv2d_unet_mid_b_bwd_weight fp32 (TF32 on)"
        in answer
    )
    assert (  # how the plan chose it
        "undecided in 1 row (wheel: newest: the newest nvidia-cudnn-cu13 (of 5 releases) in the "
        "wheelhouse /var/tmp/wheelhouse)." in answer
    )
    assert (
        "**Left out on this host** (named, not run, not failed): NVIDIA's system cuDNN (system: auto): "
        f"{why}." in answer
    )
    steps = " ".join(_section(text, "What to do next").split())
    assert "The plan left out 1 cell of the matrix on this host" in steps
    assert "install NVIDIA's cuDNN for torch's CUDA (Debian's libcudnn9-cuda-NN)" in steps
    assert "The plan left out 1 cell" in (out / "summary.md").read_text()  # what a pull request reads
