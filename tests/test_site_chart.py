"""The site's charts (issue 60, items 6 and 11): y ticks a reader can read, lines that never pass over a
release that was not measured, and a cuDNN column per cell a CPU or a disabled cuDNN makes. On the real
functions and committed results; the pages themselves are checked in tests/test_site.py."""

from __future__ import annotations

import itertools
import math

import pytest

from harness import jsonio
from harness.history.facts import cudnn_of
from harness.site.chart import Scale, gaps
from tests.evidence import GPU_LOCAL_CUDNN_SOURCES, SITE_CPU


def _round(value: float) -> bool:
    """1, 2, 2.5 or 5 times a power of ten."""
    mantissa = value / 10 ** math.floor(math.log10(value))
    return any(math.isclose(mantissa, m, rel_tol=1e-6) for m in (1, 2, 2.5, 5, 10))


@pytest.mark.parametrize(
    ("low", "high"), [(30.9e-6, 35.88e-6), (114.7e-6, 115.3e-6), (2.02e-3, 2.41e-3), (0.9, 1.7), (1e-5, 1e-5)]
)
def test_linear_y_ticks_fall_on_round_steps_in_one_unit_and_cover_the_values(low, high):
    scale = Scale.over(low, high)
    assert not scale.log and 3 <= len(scale.ticks) <= 7
    steps = {round(b - a, 15) for a, b in itertools.pairwise(scale.ticks)}
    assert len({round(s / min(steps), 6) for s in steps}) == 1 and _round(min(steps))
    assert scale.low <= low and scale.high >= high
    labels = scale.labels()
    assert len({label.split()[1] for label in labels}) == 1  # one unit
    assert len({len(label.split()[0].partition(".")[2]) for label in labels}) == 1  # one number of decimals
    if low == 30.9e-6:  # the axis read 30.9 ... 35.88 µs
        assert labels == ["30 µs", "31 µs", "32 µs", "33 µs", "34 µs", "35 µs", "36 µs"]


def test_a_log_axis_ticks_at_one_two_and_five_times_a_power_of_ten():
    scale = Scale.over(5e-6, 800e-6)
    assert scale.log and len(scale.ticks) >= 4 and all(_round(t) for t in scale.ticks)
    assert scale.labels()[:3] == ["5 µs", "10 µs", "20 µs"]


def test_a_line_breaks_where_a_release_between_two_measured_ones_was_not_measured():
    releases = ["9.14.0", "9.19.0", "9.20.0", "9.24.0", "9.28.1", "disabled"]
    assert gaps(["9.14.0", "9.24.0", "9.28.1"], releases) == [
        ("9.14.0", "9.24.0", ["9.19.0", "9.20.0"]),
        ("9.24.0", "9.28.1", []),
    ]
    # a column that is no release is joined to none: cuDNN disabled is no step along the releases
    assert gaps(["9.28.1", "disabled"], releases) == []
    assert gaps(["bundled", "disabled"], ["bundled", "disabled"]) == []


def test_a_cell_that_disables_cudnn_and_a_cpu_builds_cells_are_columns_of_their_own():
    gpu = {
        jsonio.read(f)["cell"]["id"].split("_")[1]: cudnn_of(jsonio.read(f))
        for f in sorted((GPU_LOCAL_CUDNN_SOURCES / "results").glob("*.json.gz"))
    }
    # on the H100, the disabled cell loaded 9.19.0 too: before, it was drawn in the bundled cell's column
    assert gpu == {"cudnn-bundled": "9.19.0", "cudnn-disabled": "disabled", "cudnn-system-auto": "9.14.0"}
    cpu = {cudnn_of(jsonio.read(f)) for f in (SITE_CPU / "quiet").glob("*.json.gz")}
    assert cpu == {"bundled", "disabled"}  # torch 2.13.0+cpu loads no cuDNN: before, both read "unknown"
