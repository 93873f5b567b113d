"""What a workload is, and what a workload family owes the suite.

A family is a module of ``harness/suite/workloads/`` that holds, side by side:

- ``SPECS``: its workloads (``WorkloadSpec``): a stable id, what it computes, its dtypes, the profiles
  that run it, and its parameters;
- ``build(spec, profile, device, dtype) -> Built``: a ready-to-time call, which the suite times,
  checks for numerics (unless the spec says ``numerics=False``) and measures for memory;
- or, for workloads that start their own processes (one per GPU), ``measure(spec, profile, device,
  dtype, knobs, time_budget_s) -> dict`` instead: the suite then builds nothing and records what it returns.

A workload that cannot run here (a dtype, a device, a missing package, a backend torch cannot use)
raises ``Unsupported``: the measurement is recorded as unsupported, not as an error. Importing a family
must not import torch (``python -m harness.suite list`` runs where there is none): builders import it
when called.

Adding a workload: its spec and its builder in its family's module, and a new ``SUITE_VERSION`` when it
changes what a profile runs (the version is what reports compare; resume keys on the suite's source).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar, runtime_checkable

from harness.suite.document import Knobs

ALL_DTYPES = ("fp32_default", "fp32", "tf32", "bf16", "fp16")  # precision modes (``precision``)
PROFILES = ("smoke", "default", "full", "atlas")
EVERY_PROFILE = ("smoke", "default", "full")  # every profile but the atlas, which measures layer families
LARGER_PROFILES = ("default", "full")  # what a workload runs in unless it is part of the smoke test
ATLAS_PROFILES = ("full", "atlas")  # a network's layers (``workloads.layers``)

T = TypeVar("T")


class Unsupported(Exception):
    """This workload cannot run here; the message says why (recorded as ``status: unsupported``)."""


@dataclass(frozen=True)
class WorkloadSpec:
    id: str  # stable: the same computation in every suite version that has it (a new shape, a new id)
    family: str  # the module of harness.suite.workloads that builds it
    description: str
    dtypes: tuple[str, ...] = ALL_DTYPES
    profiles: tuple[str, ...] = LARGER_PROFILES  # the profiles that run it when a matrix names no workloads
    # the dtypes the default profile's run measures it in (empty: every dtype the run asks for); a
    # network's layer joins that profile in the dtype and layout its users train in (``workloads.layers``)
    default_dtypes: tuple[str, ...] = ()
    params: dict[str, Any] = field(default_factory=dict)
    gpus: str = "one"  # "all": runs its own process per GPU, so its cell gets every GPU and runs alone
    numerics: bool = True  # whether its output is checked against fp64 (not for a step that changes weights)
    # the family row that sums it up in a report (``conv fwd NCHW``, ``model``); empty: its family's name
    group: str = ""

    @property
    def summary_group(self) -> str:
        """The family row of a report's release summary that this workload counts in."""
        return self.group or self.family


@dataclass
class Built:
    """A ready-to-time call plus what it computes, for throughput figures."""

    fn: Callable[[], Any]
    params: dict[str, Any]
    flops: float | None = None  # floating-point operations per call
    bytes: float | None = None  # minimum bytes moved per call (inputs read + outputs written)
    keep: list[Any] = field(default_factory=list)  # tensors the call closes over
    grad: bool = False  # the call runs autograd (not timed under inference_mode)


class Family(Protocol):
    """A module of ``suite.workloads``: its specs, and either ``BuildsCalls`` or ``MeasuresItself``."""

    SPECS: Sequence[WorkloadSpec]


@runtime_checkable
class BuildsCalls(Protocol):
    """A family whose calls the suite times."""

    def build(self, spec: WorkloadSpec, profile: str, device: str, dtype: str) -> Built: ...


@runtime_checkable
class MeasuresItself(Protocol):
    """A family whose workloads start their own processes: ``measure`` replaces build-and-time."""

    def measure(
        self,
        spec: WorkloadSpec,
        profile: str,
        device: str,
        dtype: str,
        knobs: Knobs,
        time_budget_s: float,
    ) -> dict[str, object]: ...


def pick(profile: str, smoke: T, default: T, full: T | None = None) -> T:
    """The value of a size for ``profile`` (``full`` falls back to ``default``; the atlas measures
    ``default``'s sizes)."""
    if profile == "smoke":
        return smoke
    return full if profile == "full" and full is not None else default
