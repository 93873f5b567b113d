"""The workload catalog: every family's specs by id, in the families' order, and what each profile runs.

Kept free of torch so that ``python -m harness.suite list`` works on the orchestrator's host. Ids are
stable: a workload's id names the same computation in every suite version that has it (a change of
shape gets a new id). Variants are generated, not typed out: ``.cl`` is the channels_last layout of a
4-D workload, ``_bwd`` a backward pass, ``_s<N>`` an attention sequence length.
"""

from __future__ import annotations

from harness.suite.contract import Family, WorkloadSpec
from harness.suite.workloads import FAMILIES

CATALOG: dict[str, WorkloadSpec] = {spec.id: spec for family in FAMILIES for spec in family.SPECS}
FAMILY: dict[str, Family] = {family.__name__.rsplit(".", 1)[-1]: family for family in FAMILIES}


def for_profile(profile: str) -> list[str]:
    """The workloads a profile runs when the matrix names none."""
    return [spec.id for spec in CATALOG.values() if profile in spec.profiles]


def rows_of(workloads: tuple[str, ...], profile: str, dtypes: tuple[str, ...]) -> list[tuple[str, str]]:
    """A run's (workload, dtype) rows: each named workload in every dtype asked for, or, where none is
    named, the profile's workloads in the dtypes asked for, narrowed in the default profile to those a
    workload names for it (``WorkloadSpec.default_dtypes``)."""
    if workloads:
        return [(w, d) for w in workloads for d in dtypes]
    return [
        (spec.id, d)
        for spec in CATALOG.values()
        if profile in spec.profiles
        for d in dtypes
        if profile != "default" or not spec.default_dtypes or d in spec.default_dtypes
    ]
