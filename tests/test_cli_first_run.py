"""A first run as a newcomer makes it (issue 32): a starter matrix from ``init``, every mistake in a matrix
told at once, a mistyped report row answered with the nearest one."""

from __future__ import annotations

import pytest
import yaml

from harness.plan import starter
from tests.conftest import GPU_REPORT, REPO, run_cli


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


def test_init_never_overwrites_a_matrix_unless_forced(tmp_path):
    mine = tmp_path / "sweep.yaml"
    mine.write_text("name: mine\n")
    done = run_cli("init", "--matrix", str(mine))
    assert done.returncode == 2 and "already exists; pass --force" in done.stderr, done.stderr
    assert mine.read_text() == "name: mine\n"
    done = run_cli("init", "--matrix", str(mine), "--force")
    assert done.returncode == 0 and mine.read_text() == starter.STARTER, done.stderr
    assert run_cli("plan", "--matrix", str(mine)).returncode == 0


def test_init_refuses_a_folder_and_replaces_a_link_not_what_it_points_at(tmp_path):
    done = run_cli("init", "--matrix", str(tmp_path))
    assert done.returncode == 2 and "already exists" in done.stderr
    done = run_cli("init", "--matrix", str(tmp_path), "--force")
    assert done.returncode == 2 and "is a folder" in done.stderr and "Traceback" not in done.stderr
    target = tmp_path / "elsewhere.txt"
    target.write_text("keep me\n")
    link = tmp_path / "matrix.yaml"
    link.symlink_to(target)
    assert run_cli("init", cwd=tmp_path).returncode == 2  # a link is something already there
    assert run_cli("init", "--force", cwd=tmp_path).returncode == 0
    assert target.read_text() == "keep me\n" and not link.is_symlink()
    assert link.read_text() == starter.STARTER


@pytest.mark.parametrize(
    ("row", "says"),
    [
        (("--workload", "conv2d_r50_3x33", "--dtype", "bf16"), "did you mean --workload conv2d_r50_3x3?"),
        (("--workload", "conv2d_r50_3x3", "--dtype", "bf61"), "did you mean --dtype bf16?"),
        (
            ("--workload", "sdpa", "--dtype", "bf16", "--knobs", "benchmark=0 deterministic=0 tf32=1"),
            "did you mean --knobs 'benchmark=0 deterministic=0 tf32=0'?",
        ),
        (("--workload", "sdpa", "--dtype", "bf16", "--candidate", "dissabled"), "--candidate disabled?"),
    ],
)
def test_repro_of_a_mistyped_row_suggests_the_nearest_instead_of_listing_every_row(tmp_path, row, says):
    out = tmp_path / "repro"
    done = run_cli("repro", "--results", str(GPU_REPORT / "results"), *row, "--out", str(out))
    assert done.returncode == 2 and says in done.stderr, done.stderr
    assert len(done.stderr.splitlines()) == 1 and "torch2.11.0" not in done.stderr  # no list of rows
    assert not out.exists() or not any(out.iterdir())
