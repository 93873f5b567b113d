"""A row the GPU ran at two speeds under its power limit is recorded on the row and in the report, and is
called slower or faster only where the GPU's switching between them cannot make the change (issue 62).

Real H200 rounds (the release atlas: cuDNN 9.19 bundled against the 9.28.0 wheel, three rounds a side),
one candidate round of a row the atlas calls slower rewritten as the GPU's two speeds would leave it: its
windows apart, samples dropped under the power limit.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from harness import jsonio
from tests.conftest import run_cli
from tests.evidence import RELEASE_ATLAS

ROW = ("conv2d_r50_7x7s2_bwd_data.cl", "bf16")  # slower in 9.28.0, 1.11x over three rounds a side
CANDIDATE = "torch-installed_cudnn-wheel-9.28.0.42_82ddff143c"


def _sides(root: Path) -> tuple[Path, Path]:
    a, b = root / "a", root / "b"
    for side, stem in ((a, "torch-installed_cudnn-bundled_2ecb882014"), (b, CANDIDATE)):
        side.mkdir()
        for path in sorted((RELEASE_ATLAS / "results").glob(f"{stem}.r*.json.gz")):
            shutil.copy(path, side)
    return a, b


def _plant(path: Path, apart: float, capped: int) -> None:
    """The row's windows ``apart`` (the slowest over the fastest, less 1), ``capped`` samples dropped."""
    doc = jsonio.read(path)
    (m,) = [m for m in doc["measurements"] if (m["workload"], m["dtype"]) == ROW]
    fastest = min(m["samples_s"])  # the fastest window's median lies among the samples
    m["window_medians_s"] = [fastest, fastest * (1 + apart), fastest]
    m["power_capped_discarded"] = capped
    jsonio.write_atomic(path, doc)


def _row(a: Path, b: Path, out: Path) -> dict[str, object]:
    done = run_cli("compare", str(a), str(b), "--out", str(out))
    assert done.returncode in (0, 1), done.stdout + done.stderr
    (row,) = [
        r for r in jsonio.read(out / "verdict.json")["comparisons"] if (r["workload"], r["dtype"]) == ROW
    ]
    return row


@pytest.mark.slow
def test_a_row_the_gpu_ran_at_two_speeds_is_recorded_and_never_called_slower_for_what_they_explain(tmp_path):
    a, b = _sides(tmp_path)
    assert _row(a, b, tmp_path / "before")["verdict"] == "slower"  # 1.11x, its interval above 1.09
    _plant(b / f"{CANDIDATE}.r2.json.gz", apart=0.15, capped=40)
    row = _row(a, b, tmp_path / "after")
    assert row["verdict"] == "inconclusive" and row["ratio"] is not None  # the ratio is kept, not judged
    assert row["two_speeds"] == (
        "in the candidate's round 2 its windows came 15.0% apart while the power limit held the clock "
        "(40 samples dropped)"
    )
    assert "the GPU ran it at two speeds, 15.0% apart: in the candidate's round 2" in str(row["reason"])
    # the atlas's own rounds hold 4 such rows already, each inconclusive: the report counts this one too
    before, after = (_two_speeds_said(tmp_path / name / "report.md") for name in ("before", "after"))
    assert (before, after) == (4, 5)


@pytest.mark.slow
def test_a_change_beyond_the_gap_between_the_two_speeds_keeps_its_verdict_and_says_them(tmp_path):
    a, b = _sides(tmp_path)
    _plant(b / f"{CANDIDATE}.r2.json.gz", apart=0.06, capped=40)
    row = _row(a, b, tmp_path / "report")
    assert row["verdict"] == "slower" and float(str(row["ci_low"])) >= 1.06
    assert str(row["reason"]).endswith(f"; the GPU ran it at two speeds: {row['two_speeds']}")


def _two_speeds_said(report: Path) -> int:
    first = report.read_text().split("## Read this first", 1)[1].split("\n## ", 1)[0]
    found = re.search(
        r"(\d+) rows ran at two speeds on the GPU \(windows as far apart as their threshold while the power "
        r"limit held the clock\): slower or faster only beyond that gap or by the rank test of 7 rounds a "
        r"side; their reasons say where\.",
        first,
    )
    assert found, first
    return int(found.group(1))


@pytest.mark.slow
@pytest.mark.parametrize(
    ("apart", "capped"),
    [(0.15, 0), (0.02, 40)],
    ids=["windows-apart-without-the-power-limit", "the-power-limit-with-windows-under-the-threshold"],
)
def test_windows_apart_or_a_power_limit_alone_leave_the_verdict(tmp_path, apart, capped):
    a, b = _sides(tmp_path)
    _plant(b / f"{CANDIDATE}.r2.json.gz", apart=apart, capped=capped)
    row = _row(a, b, tmp_path / "report")
    assert row["verdict"] == "slower" and row["two_speeds"] is None


@pytest.mark.slow
def test_five_rounds_a_side_all_apart_are_no_verdict_where_the_gap_reaches_the_change(tmp_path):
    # one H100, cuDNN 9.24.1.1 against 9.25.1.1, 5 rounds each: mid_b's weight gradient in TF32 ran at two
    # speeds in two of 9.25.1.1's rounds (windows up to 14.8 % apart). Every round of 9.25.1.1 (277 to 282
    # us) lies below every round of 9.24.1.1 (318 to 321 us), but a GPU switching between two speeds puts
    # 5 rounds a side apart in 2 of C(10, 5) orders (0.8 %, above alpha 0.002), and Welch's t reads the
    # rounds as spread about one value: inconclusive, the ratio (0.875x) kept
    a, b = tmp_path / "a", tmp_path / "b"
    for side, release in ((a, "9.24.1.1"), (b, "9.25.1.1")):
        side.mkdir()
        for path in (RELEASE_ATLAS / "remaining-path").glob(f"*wheel-{release}_*.json.gz"):
            shutil.copy(path, side)
    done = run_cli("compare", str(a), str(b), "--out", str(tmp_path / "report"))
    assert done.returncode in (0, 1), done.stdout + done.stderr
    (row,) = [
        r
        for r in jsonio.read(tmp_path / "report" / "verdict.json")["comparisons"]
        if (r["workload"], r["dtype"]) == ("conv2d_unet_mid_b_bwd_weight", "tf32")
    ]
    assert (row["verdict"], row["test"]) == ("inconclusive", "welch-tost")
    assert (row["rounds_baseline"], row["rounds_candidate"]) == (5, 5) and row["ratio"] < 0.88
    assert str(row["two_speeds"]).startswith("in the candidate's round 2 its windows came 10.1% apart")
    assert "two speeds, 14.8% apart" in str(row["reason"])  # the widest gap, round 4's
