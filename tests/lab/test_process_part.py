"""lab/studies/process_part.py: issue 45's second lease read from its committed window medians, and the
placement pad the lease's pad matrix asked of the suite."""

from __future__ import annotations

import subprocess
import sys

import pytest

from harness.suite.rows import PAD_STEP_MIB, Which, Window, pad_mib, placement_pad
from harness.suite.settings import SuiteSettings
from lab.studies import process_part
from tests.conftest import REPO
from tests.evidence import AA_H100

pytestmark = pytest.mark.lab  # the lab's studies and claims (tests/lab/)

PLACEMENT = AA_H100 / "placement"


def test_the_committed_output_is_what_the_committed_tables_print():
    output = (PLACEMENT / "output.txt").read_text()
    command = output.splitlines()[0].removeprefix("$ ").split()
    assert command[:3] == ["python", "-m", "lab.studies.process_part"]
    done = subprocess.run(
        [sys.executable, *command[1:]], cwd=REPO, capture_output=True, text=True, check=True
    )
    assert done.stdout == output.split("\n", 1)[1]
    # what the lease's README reads from it
    assert "beyond 1.96 in 6.2% of pairs (the windows' spread alone: 10.9%)" in output
    assert "A/A |ratio - 1|, every pair: p50 0.128%, p95 0.762%" in output
    assert "A/A |ratio - 1|, every pair: p50 0.173%, p95 1.169%" in output


def test_two_processes_apart_by_their_windows_spread_alone_count_as_no_process_part():
    def windows(process: str, medians: tuple[float, ...]) -> process_part.Windows:
        return process_part.Windows("no pad", "relu fp32", process, medians, sorted(medians)[1])

    # the same four windows in each process: 0 standard errors apart; one process 10 % slower: far apart
    same = process_part.figures([windows("a", (100, 101, 99, 100)), windows("b", (100, 101, 99, 100))])
    apart = process_part.figures([windows("a", (100, 101, 99, 100)), windows("b", (110, 111, 109, 110))])
    assert same["no pad"].z == [0.0] and same["no pad"].aa == {"relu fp32": [0.0]}
    assert apart["no pad"].z[0] > 10 and round(apart["no pad"].aa["relu fp32"][0], 6) == 10.0
    # 3 + 3 degrees of freedom: Student's t puts about 9 % beyond 1.96, not the normal's 5 %
    assert 0.08 < apart["no pad"].expected[0] < 0.11


def test_a_windows_pad_is_drawn_from_the_row_and_the_window_alike_in_every_process():
    settings = SuiteSettings(placement_pad_mib=1024)
    which = Which("gemm", "fp16", {"cudnn_benchmark": False, "deterministic": False, "tf32": False})
    pads = [pad_mib(which, Window(settings, nth)) for nth in range(8)]
    assert pads == [pad_mib(which, Window(settings, nth)) for nth in range(8)]
    assert all(0 <= pad <= 1024 and pad % PAD_STEP_MIB == 0 for pad in pads) and len(set(pads)) > 1
    assert pad_mib(which, Window(SuiteSettings(), 3)) == 0  # the default: no pad
    assert placement_pad(which, Window(settings, 1), "cpu") is None  # only a GPU's memory is padded
