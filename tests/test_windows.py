"""A row is timed in windows spread across its process: on a CPU the contended ones are set aside, on a
GPU every one is kept (its median averages where its memory lay)."""

from __future__ import annotations

import platform

import pytest

from harness.suite import rows
from harness.suite.settings import SuiteSettings
from harness.suite.timing import windows
from harness.suite.timing.share import TimedShare
from harness.suite.timing.summary import summarize
from harness.suite.timing.timer import Timer
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


@pytest.mark.slow
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


def test_on_a_gpu_every_window_is_kept_and_what_each_discarded_is_counted():
    first = [1.00e-5, 1.01e-5, 1.00e-5]
    moved = [1.02e-5, 1.03e-5, 1.02e-5]  # 2 % apart: another placement in memory, not another tenant
    entry = windows.merge(
        [_window(first, throttled_discarded=1), _window(moved, throttled_discarded=2), _window(first)],
        tolerance=None,
    )
    assert entry["samples_s"] == first + moved + first and entry["contended_discarded"] == 0
    assert entry["throttled_discarded"] == 3 and entry["warmup_calls"] == 9
    default = SuiteSettings()
    gpu = windows.for_device("cuda")  # since suite 0.19, every row in exactly 3 windows
    assert gpu == windows.Windows(default.windows, None, default.windows_max, default.window_target)
    assert gpu.passes == gpu.expected == default.windows == 3
    adaptive = windows.for_device("cuda", SuiteSettings(windows_max=8))  # suite 0.18's: 3, up to 8
    assert adaptive.passes == 8 and adaptive.expected == 4
    fixed = windows.for_device("cuda", SuiteSettings(windows=4, windows_max=2))  # at most the least: fixed
    assert fixed.passes == 4 and fixed.expected == 4
    cpu = windows.for_device("cpu", SuiteSettings(windows=1))  # a CPU's windows are its own
    assert cpu == windows.Windows(windows.WINDOWS, windows.TOLERANCE) and cpu.expected == windows.WINDOWS


def test_each_row_is_timed_in_windows_the_first_recording_what_the_later_ones_do_not():
    knobs = {"cudnn_benchmark": False, "deterministic": False, "tf32": False}
    cells = [(knobs, pair) for pair in (("relu", "fp32"), ("gemm", "fp32"), ("relu", "fp64"))]
    plan = windows.Windows(3, None)  # a GPU's plan, on a CPU
    settings = SuiteSettings(profile="smoke", device="cpu", time_budget_s=0.06)
    assert rows.windows_measured(cells, plan) == 9
    process = TimedShare(0.5, rows.windows_measured(cells, plan))
    done = dict(rows.measure_windows(rows.Row(settings, "cpu", Timer("cpu"), None, process, plan), cells))
    assert sorted(done) == [0, 1, 2]
    for index in (0, 1):
        entry = done[index]
        assert len(entry["window_medians_s"]) == 3 and entry["contended_discarded"] == 0
        assert entry["stats"]["n"] == len(entry["samples_s"]) and entry["host_time_per_call_s"] is not None
        assert "what_ran" in entry
    # a row that cannot run here is not tried again in the later windows: the share counts it once
    assert done[2]["status"] == "unsupported" and process.done == 7 and process.left == 0


def test_a_later_windows_fixed_costs_are_not_paid_back_by_longer_sampling():
    knobs = {"cudnn_benchmark": False, "deterministic": False, "tf32": False}
    settings = SuiteSettings(profile="smoke", device="cpu", time_budget_s=0.02)
    paid = {}
    for first in (True, False):
        process = TimedShare(0.5, 2)
        row = rows.Row(settings, "cpu", Timer("cpu"), None, process, windows.Windows(3, None))
        window = rows.Window(settings, 0 if first else 1, 3)
        entry = rows.measure_shared(row, rows.Which("relu", "fp32", knobs), window)
        phases = entry["phases_s"]
        kept = rows.RECORDS if first else rows.RECORDS + rows.REPEATED
        assert process.records_s == pytest.approx(sum(phases.get(p, 0.0) for p in kept))
        paid[first] = entry
    assert paid[False]["host_time_per_call_s"] is None and "what_ran" not in paid[False]
    assert paid[True]["host_time_per_call_s"] is not None


def test_memory_a_row_could_not_give_back_is_a_warning_only_where_it_grows():
    gib = 1024**3
    rows_held = [
        {"workload": "gemm", "dtype": "fp32", "memory_stranded_bytes": 10 * gib},
        {"workload": "relu", "dtype": "fp32", "status": "unsupported"},
        {"workload": "conv", "dtype": "bf16", "memory_stranded_bytes": 10 * gib},
    ]
    assert rows.stranded_growth(rows_held) is None  # the same from the first row on: every row had it
    assert rows.stranded_growth([]) is None
    rows_held.append({"workload": "sdpa", "dtype": "bf16", "memory_stranded_bytes": 40 * gib})
    warning = rows.stranded_growth(rows_held)
    assert warning is not None and "from 10.0 GiB" in warning and "40.0 GiB after sdpa bf16" in warning


def test_a_row_gets_another_window_while_its_windows_medians_disagree():
    plan = windows.Windows(3, None, 6, 0.002)
    assert windows.wants_another([1.0, 1.0], plan)  # under the least, however alike
    assert not windows.wants_another([1.0, 1.001, 0.999], plan)  # standard error 0.058 %: quiet
    assert windows.wants_another([1.0, 1.02, 0.98], plan)  # 1.15 %: noisy
    assert windows.wants_another([1.0, 1.02, 0.98, 1.0, 1.01], plan)  # 0.71 % still
    assert not windows.wants_another([1.0, 1.02, 0.98, 1.0, 1.01, 0.99], plan)  # the most
    assert not windows.wants_another([1.0, 1.02, 0.98], windows.Windows(3, None))  # a fixed count
    assert windows.wants_another([1.0], windows.Windows(1, None, 3, 0.002))  # one window: no spread yet
    assert not windows.wants_another([1.0, 1.0004], windows.Windows(1, None, 3, 0.002))


def test_further_windows_go_to_the_rows_that_ask_for_them_and_the_share_counts_each():
    knobs = {"cudnn_benchmark": False, "deterministic": False, "tf32": False}
    cells = [(knobs, pair) for pair in (("relu", "fp32"), ("gelu", "fp32"), ("relu", "fp64"))]
    settings = SuiteSettings(profile="smoke", device="cpu", time_budget_s=0.02)
    for target, least, most in ((0.0, 2, 4), (1.0, 2, 4)):  # every row noisy / every row quiet enough
        plan = windows.Windows(least, None, most, target)
        assert plan.expected == 3 and rows.windows_measured(cells, plan) == 9
        process = TimedShare(0.5, rows.windows_measured(cells, plan))
        row = rows.Row(settings, "cpu", Timer("cpu"), None, process, plan)
        done = dict(rows.measure_windows(row, cells))
        want = most if target == 0.0 else least
        assert [len(done[i]["window_medians_s"]) for i in (0, 1)] == [want, want]
        assert done[2]["status"] == "unsupported"  # measured once, never again
        assert process.done == 2 * want + 1 and process.left == 0
