"""A CPU row is timed in windows spread across its process; the contended ones are set aside."""

from __future__ import annotations

import platform

import pytest

from harness.suite import windows
from harness.suite.summary import summarize
from tests.test_suite import run_suite


def _window(samples: list[float], **extra: object) -> dict:
    return {
        "status": "ok",
        "workload": "relu",
        "dtype": "fp32",
        "samples_s": samples,
        "stats": summarize(samples),
        "stop_reason": "time_budget",
        "wall_s": 0.1,
        "sampling_wall_s": 0.08,
        "warmup_calls": 3,
        "phases_s": {"sampling": 0.08, "warmup": 0.01},
        "first_call_s": 0.5,
        **extra,
    }


def test_windows_within_the_tolerance_of_the_fastest_are_kept_and_the_others_counted():
    fast = [1.00e-5, 1.01e-5, 1.00e-5]
    near = [1.01e-5, 1.015e-5, 1.01e-5]  # 1 % above the fastest: the host's own speed
    slow = [1.3e-5, 1.31e-5, 1.3e-5, 1.32e-5]  # 30 % above: another tenant had the core
    entry = windows.merge([_window(slow, gbps=1.0), _window(fast), _window(near)])
    assert entry["samples_s"] == fast + near
    assert entry["stats"] == summarize(fast + near)
    assert entry["contended_discarded"] == len(slow)
    assert entry["window_medians_s"] == [summarize(w)["median"] for w in (slow, fast, near)]
    assert entry["first_call_s"] == 0.5  # the records of the first window, where the first call was
    assert entry["wall_s"] == pytest.approx(0.3) and entry["phases_s"]["sampling"] == pytest.approx(0.24)
    # rates follow the row's median
    assert entry["gbps"] == pytest.approx(summarize(slow)["median"] / entry["stats"]["median"])


def test_a_window_that_failed_is_the_row():
    failed = {"status": "error", "workload": "relu", "dtype": "fp32", "error": "RuntimeError: boom"}
    assert windows.merge([_window([1e-5] * 5), failed, _window([1e-5] * 5)]) == failed


def test_the_cpu_suite_times_each_row_in_windows(tmp_path):
    done, doc = run_suite(
        tmp_path, "--device", "cpu", "--workloads", "relu,gemm", "--dtypes", "fp32", "--time-budget-s", "0.06"
    )
    assert done.returncode == 0, done.stderr
    if platform.libc_ver()[0] == "glibc":  # freed memory stays in the process, as the allocator says
        assert doc["host"]["allocator"].startswith("glibc: mmap threshold 32 MiB, no trim")
    for entry in doc["measurements"]:
        medians = entry["window_medians_s"]
        assert len(medians) == windows.WINDOWS
        kept = [m for m in medians if m <= min(medians) * (1 + windows.TOLERANCE)]
        assert len(kept) >= 1 and entry["stats"]["n"] == len(entry["samples_s"])
        assert entry["contended_discarded"] >= 0 and "what_ran" in entry
