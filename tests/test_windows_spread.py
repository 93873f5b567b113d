"""What a measurement's windows say of the GPU's speeds: their spread, and whether it ran at two (issue 62).
Given values, as a frame's cells or a result's fields hold them; no GPU."""

from __future__ import annotations

import math

import numpy as np
import pytest

from harness.suite.timing import windows


def test_the_spread_is_the_slowest_window_over_the_fastest():
    assert windows.spread([1.0e-4, 1.1e-4, 1.05e-4]) == pytest.approx(0.1)
    for none in (None, [], [1e-4], "1e-4", [0.0, 1e-4]):  # no windows, one, or no time
        assert windows.spread(none) is None


@pytest.mark.parametrize(
    ("apart", "capped", "expected"),
    [
        (0.06, 40, True),  # windows 6 % apart while the power limit dropped samples, at 5 %
        (0.05, 1, True),  # as far as the threshold
        (0.049, 40, False),  # under it
        (0.20, 0, False),  # windows apart, but the power limit dropped nothing: placement, not speed
        (np.float64(0.06), np.int64(40), True),  # numpy's scalars, as a frame may hold them
        (None, 40, False),
        (0.06, None, False),
        (math.nan, 40, False),  # a frame's missing cell
        (0.06, math.nan, False),
    ],
)
def test_two_speeds_need_windows_as_far_apart_as_the_threshold_and_samples_the_power_limit_dropped(
    apart, capped, expected
):
    assert windows.two_speeds(apart, capped, 5.0) is expected
