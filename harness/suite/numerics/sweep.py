"""The numerics pass: every timed row checked against an fp64 reference, once every row is timed.

A process with numerics (a cell's first round) then times its rows in the same state as one without
(docs/method.md). Each row is built again; every dtype of a workload is checked against one fp64
reference (its inputs are drawn in fp32 whatever the dtype), held while that workload's rows run.
"""

from __future__ import annotations

import json
import time
from typing import Any

from harness.suite.catalog import CATALOG, FAMILY
from harness.suite.contract import BuildsCalls, Built, Unsupported, WorkloadSpec
from harness.suite.document import Knobs, Measurement, Numerics
from harness.suite.precision import flags, tf32_in_effect
from harness.suite.rows import error_text


def numerics_pass(measurements: list[Measurement], profile: str, device: str) -> None:
    """The numerics of every measured row, each row built again. A row whose check fails is an error."""
    import contextlib

    import torch

    from harness.suite.numerics import check
    from harness.suite.precision import tf32_asked
    from harness.suite.workloads.tensors import apply_knobs

    for entry in measurements:
        spec = CATALOG[entry["workload"]]
        family = FAMILY[spec.family]
        if entry["status"] != "ok" or not spec.numerics or not isinstance(family, BuildsCalls):
            continue
        knobs, dtype = entry["knobs"], entry["dtype"]
        start = time.perf_counter()
        apply_knobs(knobs, tf32=tf32_asked(dtype, knobs["tf32"]))
        try:
            built = family.build(spec, profile, device, dtype)
            with contextlib.nullcontext() if built.grad else torch.inference_mode():
                entry["numerics"] = _numerics(family, spec, profile, device, dtype, knobs, built, check)
            del built
        except Exception as exc:
            entry["status"] = "error"
            entry["error"] = error_text(exc, device, f"{entry['workload']} {dtype}'s numerics")
        finally:
            if device == "cuda":
                with contextlib.suppress(Exception):
                    torch.cuda.empty_cache()
        spent = time.perf_counter() - start
        entry["phases_s"]["numerics"] = spent
        entry["wall_s"] += spent
    _references.clear()
    check.release()


# the fp64 reference of the workload whose rows run now, computed once for all its dtypes
_references: dict[str, tuple[list[Any] | None, str | None]] = {}


def _numerics(
    family: BuildsCalls,
    spec: WorkloadSpec,
    profile: str,
    device: str,
    dtype: str,
    knobs: Knobs,
    built: Built,
    check: Any,
) -> Numerics:
    import torch

    key = json.dumps([spec.id, profile, device, knobs], sort_keys=True)
    if key not in _references:
        _references.clear()  # rows run a workload's dtypes one after another: one reference held at a time
        _references[key] = _reference(family, spec, profile, device, check)
    expected, note = _references[key]
    tf32 = tf32_in_effect(flags(), dtype, knobs["tf32"])  # as the pass's apply_knobs just set them
    found: Numerics
    try:
        found = check.check(built.fn, expected, dtype, tf32)
    except torch.OutOfMemoryError:
        found = check.check(built.fn, None, dtype, tf32)
        note = "the fp64 reference did not fit in GPU memory"
    if note:
        found["reference_error"] = note
    return found


def _reference(
    family: BuildsCalls, spec: WorkloadSpec, profile: str, device: str, check: Any
) -> tuple[list[Any] | None, str | None]:
    """The fp64 reference's outputs, or None and why there are none."""
    import torch

    try:
        reference = family.build(spec, profile, device, "fp64").fn
    except (Unsupported, RuntimeError, NotImplementedError) as exc:
        return None, f"no fp64 reference: {str(exc).splitlines()[0][:200]}"
    try:
        return check.outputs(reference), None
    except torch.OutOfMemoryError:
        return None, "the fp64 reference did not fit in GPU memory"
    finally:
        del reference
