"""The suite's settings, each with its default, defined once: what a matrix's ``suite:`` section says.

The orchestrator holds them in its plan (plan.json's ``suite``; resume keys on that document) and hands
them to the suite as command-line words (``to_argv``); the suite reads the same words back through the
options ``add_arguments`` declares (``from_args``). Standard library only: the suite imports this inside
a cell.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any, Literal, get_args

Profile = Literal["smoke", "default", "full", "atlas"]
Device = Literal["auto", "cuda", "cpu"]


# How long each measurement samples. The spread of round medians, which decides verdicts, does not shrink
# with longer sampling, so on a GPU timed_share raises a measurement's min_time and time budget only as far
# as its process needs (suite/timing/share.py); min_time_s is nvbench's 0.5 s and the time budget 1 s, the
# lengths where no share is asked (a CPU). On a GPU a row's median averages the places its windows put it
# in memory, so a row is timed in ``windows`` windows and more, up to ``windows_max``, while its windows
# disagree (suite/timing/windows.py). ``windows_max`` is 3 since suite 0.19: up to 8 windows bought an A/A of
# 0.96 % where 3 gave 1.00 %, at 1.5x the process's time. docs/method.md gives the measurements behind them.
@dataclass(frozen=True)
class SuiteSettings:
    """What the suite measures and how long it samples each measurement."""

    profile: Profile = "smoke"
    device: Device = "auto"
    dtypes: tuple[str, ...] = ("fp32_default", "bf16")
    time_budget_s: float = 1.0  # an upper bound on sampling time per measurement
    min_time_s: float = 0.5  # measured time before the noise target may stop sampling
    timed_share: float = 0.3  # on a GPU, the share of the process's wall time timed work should fill
    workloads: tuple[str, ...] = ()  # none: the profile's
    rows: tuple[str, ...] = ()  # workload:dtype pairs, exactly these (none: every workload x dtype)
    # where the suite runs on a CPU (device cpu, or auto on a host without a GPU): exactly these rows instead,
    # unless ``rows`` names some. A CPU's A/A check measures the rows whose speed a process does not keep
    # (docs/method.md, "The CPU self-check"); none: the same rows as on a GPU
    cpu_rows: tuple[str, ...] = ()
    numerics: bool = True  # check each measurement against an fp64 reference
    what_ran: bool = True  # profile one extra call per measurement: the operators and kernels that ran
    windows: int = 3  # on a GPU, the least windows a row is timed in
    windows_max: int = 3  # on a GPU, the most (at most ``windows``: every row exactly ``windows``)
    window_target: float = 0.002  # a row's windows stop once their mean's relative standard error is this
    placement_pad_mib: int = 0  # on a GPU, each window first holds a pad of 0 to this many MiB (0: none)

    def __post_init__(self) -> None:
        if self.windows < 1:
            raise ValueError(f"windows must be at least 1, not {self.windows}")
        if self.placement_pad_mib < 0:
            raise ValueError(f"placement_pad_mib must be at least 0, not {self.placement_pad_mib}")

    def to_json(self) -> dict[str, object]:
        """The settings as plan.json holds them: the first six always, the lists only where given, the
        checks only where turned off, the windows only where not the default (so a matrix's suite section
        and its plan key resume alike)."""
        document: dict[str, object] = {
            "profile": self.profile,
            "device": self.device,
            "dtypes": list(self.dtypes),
            "time_budget_s": self.time_budget_s,
            "min_time_s": self.min_time_s,
            "timed_share": self.timed_share,
        }
        if self.workloads:
            document["workloads"] = list(self.workloads)
        if self.rows:
            document["rows"] = list(self.rows)
        if self.cpu_rows:
            document["cpu_rows"] = list(self.cpu_rows)
        if not self.numerics:
            document["numerics"] = False
        if not self.what_ran:
            document["what_ran"] = False
        for name in WINDOW_FIELDS:
            if getattr(self, name) != getattr(DEFAULTS, name):
                document[name] = getattr(self, name)
        return document

    def rows_on(self, device: str) -> tuple[str, ...]:
        """The workload:dtype pairs named for a process on ``device`` (empty: the profile's rows)."""
        return self.rows or (self.cpu_rows if device == "cpu" else ())

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> SuiteSettings:
        """Settings from a document the schema checked (a matrix's ``suite:``, plan.json's ``suite``); what
        it leaves out keeps its default. Numbers stay as written (3, not 3.0), as the resume key reads
        them."""
        given = {f.name: raw[f.name] for f in fields(cls) if f.name in raw}
        for name in ("dtypes", "workloads", "rows", "cpu_rows"):
            if name in given:
                given[name] = tuple(given[name])
        return cls(**given)

    def to_argv(self) -> list[str]:
        """The suite's command-line words for these settings (``add_arguments`` reads them back)."""
        words = [
            "--profile",
            self.profile,
            "--device",
            self.device,
            "--dtypes",
            ",".join(self.dtypes),
            "--time-budget-s",
            str(self.time_budget_s),
        ]
        if self.workloads:
            words += ["--workloads", ",".join(self.workloads)]
        if self.rows:
            words += ["--rows", ",".join(self.rows)]
        if self.cpu_rows:
            words += ["--cpu-rows", ",".join(self.cpu_rows)]
        words += ["--min-time-s", str(self.min_time_s), "--timed-share", str(self.timed_share)]
        if not self.numerics:
            words.append("--no-numerics")
        if not self.what_ran:
            words.append("--no-what-ran")
        for name in WINDOW_FIELDS:
            if getattr(self, name) != getattr(DEFAULTS, name):
                words += ["--" + name.replace("_", "-"), str(getattr(self, name))]
        return words

    @staticmethod
    def add_arguments(parser: argparse.ArgumentParser) -> None:
        """The suite's options for these settings, each defaulting to the field's default; ``from_args``
        makes the settings from what they parsed."""
        default = SuiteSettings()
        parser.add_argument("--profile", choices=get_args(Profile), default=default.profile)
        parser.add_argument("--device", choices=get_args(Device), default=default.device)
        parser.add_argument(
            "--dtypes",
            type=_words,
            default=default.dtypes,
            help="precision modes, any of fp32_default,fp32,tf32,bf16,fp16 (harness.suite.precision)",
        )
        parser.add_argument(
            "--workloads", type=_words, default=default.workloads, help="comma-separated ids (default: all)"
        )
        parser.add_argument(
            "--rows",
            type=_words,
            default=default.rows,
            help="workload:dtype pairs to measure, not every workload x dtype (a late round: its undecided "
            "rows)",
        )
        parser.add_argument(
            "--cpu-rows",
            type=_words,
            default=default.cpu_rows,
            help="workload:dtype pairs to measure where the suite runs on a CPU, unless --rows names some",
        )
        parser.add_argument(
            "--time-budget-s",
            type=float,
            default=default.time_budget_s,
            help="sampling time limit per measurement",
        )
        parser.add_argument(
            "--min-time-s",
            type=float,
            default=default.min_time_s,
            help="measured time before the noise target may stop sampling (nvbench: 0.5)",
        )
        parser.add_argument(
            "--timed-share",
            type=float,
            default=default.timed_share,
            help="on a GPU, sample longer where timed work would be under this share of the process's wall "
            "time",
        )
        parser.add_argument(
            "--no-numerics",
            dest="numerics",
            action="store_false",
            help="skip the fp64 reference and repeat checks",
        )
        parser.add_argument(
            "--no-what-ran",
            dest="what_ran",
            action="store_false",
            help="skip the profiled call that records the operators and kernels",
        )
        _window_arguments(parser, default)

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> SuiteSettings:
        """The settings the options of ``add_arguments`` parsed."""
        return cls(**{f.name: getattr(args, f.name) for f in fields(cls)})


def _window_arguments(parser: argparse.ArgumentParser, default: SuiteSettings) -> None:
    """The options of how a GPU row is spread over windows (``WINDOW_FIELDS``)."""
    parser.add_argument(
        "--windows",
        type=int,
        default=default.windows,
        help="on a GPU, the least windows (passes over the rows) a row is timed in",
    )
    parser.add_argument(
        "--windows-max",
        type=int,
        default=default.windows_max,
        help="on a GPU, the most windows a row is timed in, while its windows' medians disagree",
    )
    parser.add_argument(
        "--window-target",
        type=float,
        default=default.window_target,
        help="on a GPU, a row gets no more windows once the relative standard error of its windows' "
        "mean median is under this",
    )

    parser.add_argument(
        "--placement-pad-mib",
        type=int,
        default=default.placement_pad_mib,
        help="on a GPU, each window first holds a pad of 0 to this many MiB, so that the row's windows "
        "lie in different places in memory (0: no pad)",
    )


DEFAULTS = SuiteSettings()
WINDOW_FIELDS = ("windows", "windows_max", "window_target", "placement_pad_mib")


def _words(text: str) -> tuple[str, ...]:
    """A comma-separated list, empty parts left out."""
    return tuple(word for word in text.split(",") if word)
