"""lab/tools/calls.py: what a lease carries, cut into device calls."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

pytestmark = pytest.mark.lab  # the lab's tools, studies and claims (tests/lab/)


def calls(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "lab.tools.calls", *args], cwd=REPO, capture_output=True, text=True, timeout=60
    )


def release(deltas: Path, version: str, sizes: dict[str, int]) -> None:
    folder = deltas / version
    folder.mkdir(parents=True)
    (folder / "FROM").write_text("9.19.0.56\n")
    for name, size in sizes.items():
        (folder / name).write_bytes(b"x" * size)


def test_each_call_holds_at_most_its_cap_and_a_later_group_comes_after_the_earlier(tmp_path):
    deltas = tmp_path / "deltas"
    release(deltas, "9.10.0.1", {"a.patch": 600, "b.patch": 300})
    release(deltas, "9.9.0.1", {"a.patch": 500})
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    (wheels / "torch-1-py3-none-any.whl").write_bytes(b"w" * 900)
    (wheels / "notes.txt").write_text("not a wheel")
    done = calls("cut", str(tmp_path / "out"), "0.001", f"cds:{deltas}", "|", f"wh:{wheels}")
    assert done.returncode == 0, done.stderr
    laid = {
        call.name: sorted(str(f.relative_to(call)) for f in call.rglob("*") if f.is_file())
        for call in sorted((tmp_path / "out").iterdir())
    }
    for call in (tmp_path / "out").iterdir():
        assert sum(f.stat().st_size for f in call.rglob("*") if f.is_file()) <= 1000
    carried = sorted(f for files in laid.values() for f in files)
    releases = [f"cd/9.10.0.1/{f}" for f in ("FROM", "a.patch", "b.patch")]
    releases += [f"cd/9.9.0.1/{f}" for f in ("FROM", "a.patch")]
    assert carried == sorted([*releases, "wh/torch-1-py3-none-any.whl"])
    assert laid[max(laid)] == ["wh/torch-1-py3-none-any.whl"]  # the group after '|' comes last
    assert "3 calls" in done.stdout


def test_a_file_larger_than_a_call_or_an_unknown_spec_is_refused_and_nothing_is_laid(tmp_path):
    deltas = tmp_path / "deltas"
    release(deltas, "9.10.0.1", {"a.patch": 2000})
    out = tmp_path / "out"
    big = calls("cut", str(out), "0.001", f"cd:{deltas / '9.10.0.1'}")
    assert big.returncode == 2
    assert "a.patch (0.0 MB) is larger than a call; resplit it" in big.stderr
    assert not out.exists()
    odd = calls("cut", str(out), "1", f"zip:{deltas}")
    assert odd.returncode == 2
    assert "'zip:" in odd.stderr and "a SPEC starts wh:, wd:, cd: or cds:" in odd.stderr


def test_a_cap_that_leaves_no_room_for_the_tree_is_refused(tmp_path):
    done = calls("cut", str(tmp_path / "out"), "60", "cds:/nonexistent", "--tree-mib", "19.9")
    assert done.returncode == 2
    assert "passes 64 MiB" in done.stderr


def test_resplit_cuts_a_release_file_into_pieces_it_counts(tmp_path):
    deltas = tmp_path / "deltas"
    release(deltas, "9.10.0.1", {"a.patch": 2500})
    done = calls("resplit", "0.001", str(deltas / "9.10.0.1"))
    assert done.returncode == 0, done.stderr
    pieces = sorted(p.name for p in (deltas / "9.10.0.1").glob("a.patch.part-*"))
    assert pieces == ["a.patch.part-00", "a.patch.part-01", "a.patch.part-02"]
    assert (deltas / "9.10.0.1" / "a.patch.parts").read_text() == "3\n"
    joined = b"".join((deltas / "9.10.0.1" / p).read_bytes() for p in pieces)
    assert joined == b"x" * 2500
