"""A first run as a newcomer makes it (issue 32): a starter matrix from ``init``, every mistake in a matrix
told at once, a mistyped report row answered with the nearest one."""

from __future__ import annotations

import pytest
import yaml

from harness.plan import starter
from tests.conftest import REPO, cli_in_process, run_cli
from tests.evidence import GPU_LOCAL_CUDNN_SOURCES


def test_init_writes_a_commented_starter_that_plans_as_the_repositorys_matrix(tmp_path):
    done = run_cli("init", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    written = tmp_path / "matrix.yaml"
    assert written.read_text() == starter.STARTER
    assert "plan --matrix matrix.yaml" in done.stdout and "qualify --matrix matrix.yaml" in done.stdout
    # every key it sets is explained where it is set: on its line, or on the comment line above it
    lines = written.read_text().splitlines()
    for above, line in zip(["#", *lines], lines, strict=False):
        if line.strip() and not line.lstrip().startswith("#"):
            assert "#" in line or above.lstrip().startswith("#"), line
    assert yaml.safe_load(written.read_text()) == yaml.safe_load((REPO / "matrix.yaml").read_text())
    planned = run_cli("plan", "--matrix", "matrix.yaml", cwd=tmp_path)
    assert planned.returncode == 0, planned.stderr
    assert "2 cells x 1 knob sets, backend local" in planned.stdout


@pytest.mark.slow
def test_init_names_a_matrix_after_its_file_so_it_never_shares_the_default_jobs_folders(tmp_path):
    # a newcomer's 'init --matrix mine.yaml' beside the repository's matrix.yaml (name: smoke) wrote into
    # results/smoke/ and reports/smoke/ and mixed the two plans' rounds
    done = run_cli("init", "--matrix", "mine.yaml", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    written = (tmp_path / "mine.yaml").read_text()
    assert yaml.safe_load(written)["name"] == "mine"
    assert "#   harness plan --matrix mine.yaml " in written and "matrix.yaml" not in written
    odd = tmp_path / "My Sweep 2.YAML"
    assert run_cli("init", "--matrix", str(odd)).returncode == 0
    assert yaml.safe_load(odd.read_text())["name"] == "my-sweep-2"
    for stem, name in (("true", "true"), ("1e5", "1e5"), ("__", "smoke")):  # YAML would read true as a bool
        path = tmp_path / f"{stem}.yaml"
        assert run_cli("init", "--matrix", str(path)).returncode == 0
        assert yaml.safe_load(path.read_text())["name"] == name
        assert run_cli("plan", "--matrix", str(path)).returncode == 0
    broken = tmp_path / "line\nbreak.yaml"
    assert run_cli("init", "--matrix", str(broken)).returncode == 0
    assert yaml.safe_load(broken.read_text())["name"] == "line-break"  # the header's comment stays one line


def test_init_never_overwrites_a_matrix_unless_forced(tmp_path):
    mine = tmp_path / "sweep.yaml"
    mine.write_text("name: mine\n")
    done = cli_in_process("init", "--matrix", str(mine))
    assert done.returncode == 2 and "already exists; pass --force" in done.stderr, done.stderr
    assert mine.read_text() == "name: mine\n"
    done = run_cli("init", "--matrix", str(mine), "--force")
    assert done.returncode == 0 and mine.read_text() == starter.text(mine), done.stderr
    assert run_cli("plan", "--matrix", str(mine)).returncode == 0


def test_init_refuses_a_folder_and_replaces_a_link_not_what_it_points_at(tmp_path):
    done = cli_in_process("init", "--matrix", str(tmp_path))
    assert done.returncode == 2 and "already exists" in done.stderr
    done = cli_in_process("init", "--matrix", str(tmp_path), "--force")
    assert done.returncode == 2 and "is a folder" in done.stderr and "Traceback" not in done.stderr
    target = tmp_path / "elsewhere.txt"
    target.write_text("keep me\n")
    link = tmp_path / "matrix.yaml"
    link.symlink_to(target)
    assert cli_in_process("init", cwd=tmp_path).returncode == 2  # a link is something already there
    assert run_cli("init", "--force", cwd=tmp_path).returncode == 0
    assert target.read_text() == "keep me\n" and not link.is_symlink()
    assert link.read_text() == starter.STARTER


@pytest.mark.slow
@pytest.mark.parametrize(
    ("row", "says"),
    [
        (("--workload", "conv2d_r50_3x33", "--dtype", "bf16"), "--workload: conv2d_r50_3x33 bf16: "),
        (("--workload", "conv2d_r50_3x33", "--dtype", "bf16"), "did you mean conv2d_r50_3x3?"),
        (("--workload", "conv2d_r50_3x3", "--dtype", "bf61"), "--dtype: conv2d_r50_3x3 bf61: "),
        (("--workload", "conv2d_r50_3x3", "--dtype", "bf61"), "did you mean bf16?"),
        (
            ("--workload", "sdpa", "--dtype", "bf16", "--knobs", "benchmark=0 deterministic=0 tf32=1"),
            "--knobs: sdpa bf16: matches no row with a ratio; did you mean 'benchmark=0 deterministic=0 "
            "tf32=0'?",
        ),
        (("--workload", "sdpa", "--dtype", "bf16", "--candidate", "dissabled"), "did you mean disabled?"),
        (("--workload", "sdpa", "--dtype", "bf16", "--candidate", "dissabled"), "--candidate: sdpa bf16"),
    ],
)
def test_repro_of_a_mistyped_row_suggests_the_nearest_instead_of_listing_every_row(tmp_path, row, says):
    out = tmp_path / "repro"
    done = cli_in_process(
        "repro", "--results", str(GPU_LOCAL_CUDNN_SOURCES / "results"), *row, "--out", str(out)
    )
    assert done.returncode == 2 and says in done.stderr, done.stderr
    assert len(done.stderr.splitlines()) == 1 and "torch2.11.0" not in done.stderr  # no list of rows
    assert not out.exists() or not [p for p in out.iterdir() if p.name != ".lock"]  # .lock: held while it ran


def errors(done) -> list[str]:
    return [line for line in done.stderr.splitlines() if line.startswith("error: ")]


def test_three_independent_mistakes_in_a_matrix_are_three_errors_in_one_run(write_matrix):
    path = write_matrix("""
schema_version: 1
name: three
backend: local
axes: {torch: [installed], cudnn: [bundled, disabled], base_image: ['nvidia/cuda:12.8.0-runtime-ubuntu24.04']}
suite: {workloads: [relu, conv2d_r50_3x33], dtypes: [fp32]}
rounds: 0
baseline: {cudnn: bundled}
""")
    done = cli_in_process("plan", "--matrix", str(path))
    assert done.returncode == 2
    lines = errors(done)
    assert len(lines) == 3, done.stderr
    assert f"{path}:4: axes.base_image:" in lines[0] and "needs backend: docker" in lines[0]
    assert f"{path}:5: suite.workloads[1]:" in lines[1] and "did you mean 'conv2d_r50_3x3'" in lines[1]
    assert f"{path}:6: rounds:" in lines[2] and "less than the minimum of 1" in lines[2]


def test_a_broken_part_is_told_once_and_what_does_not_depend_on_it_still_checked(write_matrix):
    # the cudnn axis is wrong, so no cell (nor the baseline among them) can be made; the workloads still can
    path = write_matrix("""
schema_version: 1
name: parts
axes: {torch: [installed], cudnn: [bundeld]}
suite: {workloads: [rleu], dtypes: [fp32]}
thresholds: {per_workload: {sdpaa: 10}, regression_pct: -1}
baseline: {cudnn: bundled}
""")
    done = cli_in_process("plan", "--matrix", str(path))
    lines = errors(done)
    assert done.returncode == 2 and len(lines) == 4, done.stderr
    assert "axes.cudnn[0]: 'bundeld' is not allowed; did you mean 'bundled'?" in lines[0]
    assert "suite.workloads[0]: unknown workload 'rleu'; did you mean 'relu'?" in lines[1]
    assert {"thresholds.per_workload.sdpaa", "thresholds.regression_pct"} == {
        line.split(": ")[2] for line in lines[2:]
    }
    assert "baseline" not in done.stderr


def test_every_yaml_fault_of_a_matrix_is_told_at_once(write_matrix):
    path = write_matrix("""
schema_version: 1
name: twice
name: again
axes: {torch: [installed], cudnn: [bundled]}
suite: {time_budget_s: .inf}
1: one
baseline: {cudnn: bundled}
baseline: {cudnn: disabled}
""")
    done = cli_in_process("plan", "--matrix", str(path))
    lines = errors(done)
    assert done.returncode == 2 and len(lines) == 4, done.stderr
    assert f"{path}:3: invalid YAML: duplicate key 'name' (first defined on line 2)" in lines[0]
    assert f"{path}:5: invalid YAML: '.inf' is not a finite number" in lines[1]
    assert f"{path}:6: invalid YAML: key '1' is not text" in lines[2]
    assert f"{path}:8: invalid YAML: duplicate key 'baseline'" in lines[3]


def test_a_matrix_with_a_thousand_mistakes_lists_the_first_twenty(write_matrix):
    names = ", ".join(f"nosuch{i}" for i in range(1000))
    path = write_matrix(f"""
schema_version: 1
name: many
axes: {{torch: [installed], cudnn: [bundled]}}
suite: {{workloads: [{names}]}}
baseline: {{cudnn: bundled}}
""")
    done = cli_in_process("plan", "--matrix", str(path))
    lines = errors(done)
    assert done.returncode == 2 and len(lines) == 21, done.stderr[-500:]
    assert lines[-1].endswith("and 980 more problems, not listed")
