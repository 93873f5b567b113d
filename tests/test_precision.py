"""Precision modes (harness/suite/precision.py): what each mode sets, what a measurement records, the names a
reader sees."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from harness.suite import precision
from tests.conftest import harness_env
from tests.test_suite import run_suite

# PyTorch's own flags (cudnn.allow_tf32, matmul.allow_tf32), as a fresh process of every 2.x build has them
PYTORCH_DEFAULTS = (True, False)


def test_a_reader_never_sees_a_bare_fp32():
    assert precision.label("fp32_default") == "fp32 (torch defaults)"
    assert precision.label("fp32") == "fp32 (TF32 off)"
    assert precision.label("tf32") == "fp32 (TF32 on)"
    assert precision.label("fp32", tf32_knob=True) == precision.label("fp32_default", tf32_knob=True)
    assert precision.label("bf16", tf32_knob=True) == "bf16"  # no fp32 math to speak of
    assert all(precision.label(mode) != "fp32" for mode in precision.MODES)


def test_each_mode_asks_for_tf32_on_off_or_the_builds_own_flags():
    assert precision.tf32_asked("fp32_default", tf32_knob=False) is None
    assert precision.tf32_asked("fp32", tf32_knob=False) is False
    assert precision.tf32_asked("tf32", tf32_knob=False) is True
    assert precision.tf32_asked("fp32_default", tf32_knob=True) is True


@pytest.mark.slow
def test_the_builds_defaults_come_back_after_another_mode_changed_them():
    """In a fresh process: torch's own flags, then TF32 off, on, and the defaults again, as a suite process
    sets them row by row."""
    script = """
import json, torch
from harness.suite import precision
start = precision.flags()
precision.set_tf32(False); off = precision.flags()
precision.set_tf32(True); on = precision.flags()
precision.set_tf32(None); back = precision.flags()
print(json.dumps([start, off, on, back]))
"""
    done = subprocess.run(
        [sys.executable, "-c", script], env=harness_env(), capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    start, off, on, back = json.loads(done.stdout)
    # read in that fresh process, not this one: another test may have set them here
    assert (start["cudnn_allow_tf32"], start["matmul_allow_tf32"]) == PYTORCH_DEFAULTS
    assert (off["cudnn_allow_tf32"], off["matmul_allow_tf32"]) == (False, False)
    assert (on["cudnn_allow_tf32"], on["matmul_allow_tf32"]) == (True, True)
    assert (back["cudnn_allow_tf32"], back["matmul_allow_tf32"]) == PYTORCH_DEFAULTS
    assert back["float32_matmul_precision"] == start["float32_matmul_precision"]


@pytest.mark.slow
def test_every_measurement_records_the_flags_its_mode_ran_under(tmp_path):
    done, doc = run_suite(
        tmp_path,
        "--workloads",
        "conv2d_r50_3x3,gemm",
        "--dtypes",
        "fp32,fp32_default,tf32",
        "--time-budget-s",
        "0.02",
    )
    assert done.returncode == 0, done.stderr
    expected = {"fp32": (False, False), "fp32_default": PYTORCH_DEFAULTS, "tf32": (True, True)}
    seen = {m["dtype"] for m in doc["measurements"]}
    assert seen == set(expected)
    for m in doc["measurements"]:
        assert m["status"] == "ok", m
        flags = m["math_flags"]
        assert (flags["cudnn_allow_tf32"], flags["matmul_allow_tf32"]) == expected[m["dtype"]], m["dtype"]
        # fp32 storage with TF32 possible is held to TF32's tolerance, TF32 off to fp32's
        tf32 = precision.tf32_in_effect(flags, m["dtype"], False)
        assert m["numerics"]["tolerance_rel_rmse"] == (5e-3 if tf32 else 1e-5)
