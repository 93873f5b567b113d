"""The suite's settings: one definition, read back the same from the command line and from plan.json."""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json

import pytest

from harness.plan.axes import CudnnSource
from harness.plan.model import Cell, Plan
from harness.suite.settings import SuiteSettings

# every field away from its default, each kind of value a field takes
CHANGED = {
    "profile": "full",
    "device": "cpu",
    "dtypes": ("bf16", "fp16", "tf32"),
    "time_budget_s": 3,  # a matrix's integer stays one (the resume key reads it as written)
    "min_time_s": 0.0,
    "timed_share": 0.0,
    "workloads": ("relu", "sdpa"),
    "rows": ("relu:bf16", "sdpa:fp16"),
    "cpu_rows": ("gemm:fp32_default", "lstm:fp32_default"),
    "numerics": False,
    "what_ran": False,
    "windows": 5,
    "windows_max": 2,
    "window_target": 0.01,
    "placement_pad_mib": 512,
}


def _parsed(words: list[str]) -> SuiteSettings:
    parser = argparse.ArgumentParser()
    SuiteSettings.add_arguments(parser)
    return SuiteSettings.from_args(parser.parse_args(words))


def test_every_field_is_covered_here():
    assert set(CHANGED) == {f.name for f in dataclasses.fields(SuiteSettings)}
    assert all(getattr(SuiteSettings(), name) != value for name, value in CHANGED.items())


@pytest.mark.parametrize("name", sorted(CHANGED))
def test_each_field_round_trips_through_the_suites_command_line(name):
    settings = dataclasses.replace(SuiteSettings(), **{name: CHANGED[name]})
    assert _parsed(settings.to_argv()) == settings


@pytest.mark.parametrize("name", sorted(CHANGED))
def test_each_field_round_trips_through_its_document(name):
    settings = dataclasses.replace(SuiteSettings(), **{name: CHANGED[name]})
    document = json.loads(json.dumps(settings.to_json()))
    assert SuiteSettings.from_json(document) == settings
    assert SuiteSettings.from_json(document).to_json() == document


def test_all_fields_at_once_and_the_defaults_round_trip():
    for settings in (SuiteSettings(), SuiteSettings(**CHANGED)):
        assert _parsed(settings.to_argv()) == settings
        assert SuiteSettings.from_json(settings.to_json()) == settings
    assert _parsed([]) == SuiteSettings()  # the suite's defaults are the settings' defaults


def test_the_document_is_the_one_plan_json_always_held():
    """The six always written, lists where given, the checks only where off, the windows only where not
    the default: the resume key of a folder made before the settings were typed is unchanged where the
    defaults it held are (suite 0.20's default dtypes put fp32 under torch's defaults first)."""
    assert SuiteSettings().to_json() == {
        "profile": "smoke",
        "device": "auto",
        "dtypes": ["fp32_default", "bf16"],
        "time_budget_s": 1.0,
        "min_time_s": 0.5,
        "timed_share": 0.3,
    }
    section = {"workloads": ["relu"], "dtypes": ["fp32"], "time_budget_s": 3, "numerics": False}
    assert SuiteSettings.from_json(section).to_json() == {**SuiteSettings().to_json(), **section}
    assert json.dumps(SuiteSettings.from_json(section).to_json()["time_budget_s"]) == "3"


def test_the_resume_key_is_the_hash_of_the_same_document():
    section = {"workloads": ["relu"], "dtypes": ["fp32"], "time_budget_s": 0.05, "what_ran": False}
    knobs = ({"cudnn_benchmark": False, "deterministic": False, "tf32": False},)
    cell = Cell("installed", CudnnSource("bundled"))
    plan = Plan("p", "local", (cell,), cell.id, knobs, SuiteSettings.from_json(section), 5.0)
    before = {  # what the key hashed when the plan held the matrix's section over the defaults as a dict
        "suite": {
            "profile": "smoke",
            "device": "auto",
            "dtypes": ["fp32", "bf16"],
            "time_budget_s": 1.0,
            "min_time_s": 0.5,
            "timed_share": 0.3,
            **section,
        },
        "knob_sets": list(knobs),
    }
    expected = hashlib.sha256(json.dumps(before, sort_keys=True).encode()).hexdigest()
    assert plan.suite_settings_sha256 == expected


def test_a_window_count_under_one_is_refused():
    with pytest.raises(ValueError, match="windows must be at least 1"):
        SuiteSettings(windows=0)
