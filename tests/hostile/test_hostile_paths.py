"""Paths the harness makes inside an output folder, and the size of a refusal (issue 31, round three).

- ``compare`` cell by cell never writes through a link planted at ``--out/<cell id>``, and holds the lock of
  ``--out`` itself while it writes the cells: two compares into one folder never mix it (gap 2, minor 4).
- ``run --backend slurm`` never writes its tasks, batch script or task output through a ``slurm/`` or
  ``slurm/logs`` link planted in the results folder (gap 3).
- A reproducer never copies its build context (CA bundle, wheelhouse) through a link planted in its
  folder, and keeps the copies current (gap 4).
- ``report`` on a result file with a long but valid name writes its measurement files, not a traceback
  (gap 7).
- A refused option is never echoed whole: a 100 KB value makes a refusal of a few lines (minor 2).

Each test here failed before its fix.
"""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path

import pytest

from harness.backends.docker import dockerfile
from harness.backends.packages import PackageSource
from harness.errors import InputError
from harness.results import folder
from harness.workflows import repro
from tests.conftest import run_cli, untouched
from tests.evidence import GPU_LOCAL_ROUNDS
from tests.hostile import test_hostile_artifacts as artifacts

fake_slurm = artifacts.fake_slurm  # stub sbatch, squeue, scontrol and scancel first on PATH

CELLS = sorted({p.name.split(".r")[0] for p in GPU_LOCAL_ROUNDS.glob("*.json.gz")})
PLANTED = "is a link where the harness keeps a"


def _two_sides(tmp_path: Path) -> tuple[Path, Path]:
    """GPU_LOCAL_ROUNDS split as the audit did: rounds 1 and 2 of every cell in A, round 3 in B."""
    a, b = tmp_path / "A", tmp_path / "B"
    for side, rounds in ((a, (".r1.", ".r2.")), (b, (".r3.",))):
        side.mkdir()
        shutil.copy(GPU_LOCAL_ROUNDS / folder.PLAN_FILE, side)
        for path in GPU_LOCAL_ROUNDS.glob("*.json.gz"):
            if any(r in path.name for r in rounds):
                shutil.copy(path, side)
    return a, b


# ---- compare, cell by cell (gap 2, minor 4) ----------------------------------------------------------


@pytest.mark.slow
def test_compare_cell_by_cell_never_writes_through_a_cell_folder_planted_as_a_link(tmp_path, outside):
    a, b = _two_sides(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    for cell in CELLS:
        (out / cell).symlink_to(outside, target_is_directory=True)
    done = run_cli("compare", str(a), str(b), "--out", str(out))
    assert done.returncode == 2, done.stdout[-2000:] + done.stderr[-2000:]
    assert any(f"{cell}: {PLANTED} folder of its own" in done.stderr for cell in CELLS), done.stderr
    assert "Traceback" not in done.stderr
    untouched(outside)


@pytest.mark.slow
def test_compare_cell_by_cell_holds_the_lock_of_its_whole_folder(tmp_path):
    a, b = _two_sides(tmp_path)
    out = tmp_path / "out"
    with folder.locked(out):  # what another compare into the same --out holds while it writes its cells
        done = run_cli("compare", str(a), str(b), "--out", str(out))
    assert done.returncode == 3, done.stdout[-2000:] + done.stderr[-2000:]
    assert "is being written by pid" in done.stderr and "Traceback" not in done.stderr
    assert not [p for p in out.iterdir() if p.name != folder.LOCK_FILE]  # no cell of this one written
    done = run_cli("compare", str(a), str(b), "--out", str(out))
    assert done.returncode in (0, 1), done.stdout[-2000:] + done.stderr[-2000:]
    assert sorted(p.name for p in out.iterdir()) == sorted([folder.LOCK_FILE, *CELLS])
    assert all((out / cell / "report.md").is_file() for cell in CELLS)


# ---- slurm/ in a results folder (gap 3) --------------------------------------------------------------


@pytest.mark.parametrize("planted", ["slurm", "slurm/logs"])
def test_a_slurm_folder_planted_as_a_link_is_refused_before_anything_is_submitted(
    tmp_path, outside, fake_slurm, planted
):
    out = tmp_path / "results"
    (out / planted).parent.mkdir(parents=True)
    (out / planted).symlink_to(outside, target_is_directory=True)
    matrix = artifacts.slurm_matrix(tmp_path)
    done = run_cli("run", "--backend", "slurm", "--matrix", str(matrix), "--out", str(out))
    assert done.returncode == 2, done.stdout[-2000:] + done.stderr[-2000:]
    assert f"{planted}: {PLANTED} folder of its own" in done.stderr and "Traceback" not in done.stderr
    assert not fake_slurm.exists()  # sbatch never ran: no task output sent outside either
    untouched(outside)


# ---- a reproducer's build context (gap 4) ------------------------------------------------------------

WHEEL = "torch-2.11.0+cu130-cp312-cp312-linux_x86_64.whl"


def _build_inputs(tmp_path: Path) -> dockerfile.BuildOptions:
    wheelhouse = tmp_path / "wheelhouse-given"
    wheelhouse.mkdir()
    (wheelhouse / WHEEL).write_bytes(b"a wheel\n")
    ca_bundle = tmp_path / "ca-given.pem"
    ca_bundle.write_text("a CA bundle\n")
    return dockerfile.BuildOptions(PackageSource(wheelhouse=wheelhouse), ca_bundle=ca_bundle)


@pytest.mark.parametrize(
    ("planted", "target"),
    [
        ("ca-bundle.pem", "planted.pem"),  # dangling: exists() said no, and the copy created it outside
        ("ca-bundle.pem", "precious.txt"),
        ("wheelhouse", "."),
        (f"wheelhouse/{WHEEL}", "planted.whl"),
        (f"wheelhouse/{WHEEL}", "precious.txt"),
    ],
)
def test_a_reproducers_build_context_is_never_copied_through_a_planted_link(
    tmp_path, outside, planted, target
):
    out = tmp_path / "repro"
    (out / planted).parent.mkdir(parents=True)
    (out / planted).symlink_to(outside / target)
    with pytest.raises(InputError, match=PLANTED):
        repro._write_dockerfile(out, artifacts.BUNDLED, "baseline", _build_inputs(tmp_path))
    untouched(outside)


def test_a_reproducers_build_context_is_copied_once_and_kept_current(tmp_path):
    out = tmp_path / "repro"
    out.mkdir()
    (out / "ca-bundle.pem").write_text("an earlier reproducer's CA bundle\n")
    options = _build_inputs(tmp_path)
    written = repro._write_dockerfile(out, artifacts.BUNDLED, "baseline", options)
    assert written == [out / "baseline.Dockerfile", out / f"wheelhouse/{WHEEL}", out / "ca-bundle.pem"]
    assert (out / "ca-bundle.pem").read_text() == "a CA bundle\n"
    assert (out / "wheelhouse" / WHEEL).read_bytes() == b"a wheel\n"
    # the other side's Dockerfile finds the same bytes in place: nothing copied twice
    assert repro._write_dockerfile(out, artifacts.BUNDLED, "candidate", options) == [
        out / "candidate.Dockerfile"
    ]


# ---- report: a long result file name (gap 7) ---------------------------------------------------------


@pytest.mark.slow
def test_a_long_result_file_name_gets_its_measurement_files_not_a_traceback(tmp_path):
    results = tmp_path / "results"
    shutil.copytree(GPU_LOCAL_ROUNDS, results)
    long_names = ["a" * 240 + ".json.gz", "é" * 120 + ".json.gz"]  # 248 bytes each: valid names
    for name, cell in zip(long_names, CELLS, strict=False):
        (results / f"{cell}.r1.json.gz").rename(results / name)
    before = sorted(p.name for p in results.iterdir())
    out = tmp_path / "report"
    # absolute: verdict.json names each result by its path, over 300 characters here (its schema held
    # them to 300, a traceback at the schema check)
    done = run_cli("report", "--results", str(results), "--out", str(out))
    assert len(str(results / long_names[0])) > 300
    assert done.returncode in (0, 1), done.stdout[-2000:] + done.stderr[-2000:]
    assert "Traceback" not in done.stderr and (out / "report.md").is_file(), done.stderr[-3000:]
    extracts = [p.name for p in (out / "measurements").iterdir()]
    assert all(len(name.encode()) <= 255 and name.endswith(folder.MEASUREMENT_SUFFIX) for name in extracts)
    for name in long_names:  # each long name's measurements are there, under its first 100 bytes
        start = name.encode()[:100].decode() + "-"
        assert any(extract.startswith(start) for extract in extracts), name
    assert sorted(p.name for p in results.iterdir()) == before  # nothing written beside the results


@pytest.mark.slow
def test_a_long_result_name_that_is_refused_is_quarantined_not_a_traceback(tmp_path):
    """A refused result is moved into quarantine/ with its problems beside it: a name near the 255-byte
    limit keeps its start and a digest there, so '.problems.txt' and '.N' still fit."""
    results = tmp_path / "results"
    shutil.copytree(GPU_LOCAL_ROUNDS, results)
    for n in (1, 2):  # a .json.gz and a plain .json
        name = "a" * 237 + (".json.gz" if n == 1 else ".json")
        (results / name).write_bytes(gzip.compress(b'{"broken": true}') if n == 1 else b'{"broken": true}')
    done = run_cli("report", "--results", str(results), "--out", str(tmp_path / "report"))
    assert done.returncode in (0, 1) and "Traceback" not in done.stderr, done.stdout + done.stderr[-3000:]
    moved = sorted(p.name for p in (results / folder.QUARANTINE).iterdir())
    assert len(moved) == 4 and all(len(name.encode()) <= 255 for name in moved), moved
    assert sum(name.endswith(".problems.txt") for name in moved) == 2, moved
    assert all(name.startswith("a" * 100) for name in moved), moved


# ---- the size of a refused option (minor 2) ----------------------------------------------------------

LONG = "x " * 50_000  # 100 KB: one argument may hold 128 KB


@pytest.mark.parametrize(
    "args",
    [
        ("run", "--matrix", "m.yaml", "--slurm-partition", LONG),
        ("run", "--matrix", "m.yaml", "--slurm-account", LONG),
        ("run", "--matrix", "m.yaml", "--slurm-time", LONG),
        ("run", "--matrix", "m.yaml", "--timeout-s", LONG),
        ("images", "--dry-run", "--matrix", "m.yaml", "--index-url", f"https://x.org/{LONG}"),
        ("report", "--results", "r", LONG),  # argparse's own message: an unrecognized argument
    ],
)
def test_a_refused_option_is_never_echoed_whole(tmp_path, args):
    done = run_cli(*args, cwd=tmp_path)
    assert done.returncode == 2, done.stderr[-2000:]
    assert len(done.stderr) < 5000 and "characters more" in done.stderr, done.stderr[-2000:]
    assert "Traceback" not in done.stderr
