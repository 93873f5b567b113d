"""The numerics verdicts: each candidate row's error against fp64 beside the baseline's, and every
measurement beyond the tolerance it recorded for its precision."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from harness.report.analysis.frames import NAMED, by_key, keys_of, known, mode

# Numerics gate (TorchDynamo's `same`): the candidate's error against fp64 may grow to multiplier x
# baseline error + tolerance / 10.
NUMERICS_MULTIPLIER = {"fp32_default": 2.0, "fp32": 2.0, "tf32": 2.0, "bf16": 3.0, "fp16": 3.0}
NUMERICS_TOLERANCE = {"fp32_default": 1e-3, "fp32": 1e-4, "tf32": 1e-3, "bf16": 1e-2, "fp16": 1e-3}


def numerics(frame: pd.DataFrame, baseline: str, groups: Sequence[str]) -> pd.DataFrame:
    """Per (group, workload, dtype, knobs): error drift against fp64, the dtype's tolerance, digests,
    determinism, NaNs, and the gate's reading of them.

    Worse (the gate fails) when the candidate has more NaNs than the baseline; or is beyond the tolerance
    its measurement recorded for its precision while every baseline round is within it (the switch made
    it so); or its error grew past ``NUMERICS_MULTIPLIER`` x the baseline's + ``NUMERICS_TOLERANCE`` / 10.
    Beyond tolerance on both sides is reported, not gated: the switch did not change it."""
    none: pd.DataFrame = pd.DataFrame()
    if "rel_rmse" not in frame:
        return none
    checked = frame[frame["digest"].notna()]
    base_all = checked[checked["group"] == baseline]
    rows = []
    for group in groups:
        if group == baseline:
            continue
        mine_all = checked[checked["group"] == group]
        base_of, mine_of = by_key(base_all), by_key(mine_all)
        for key in keys_of(mine_all):
            base, mine = base_of(key), mine_of(key)
            if base.empty:
                continue
            dtype = key[1]
            a, b = base["rel_rmse"].max(), mine["rel_rmse"].max()  # the worst round counts
            allowed = NUMERICS_MULTIPLIER[dtype] * a + NUMERICS_TOLERANCE[dtype] / 10
            nan_a, nan_b = int(base["nan_count"].fillna(0).max()), int(mine["nan_count"].fillna(0).max())
            beyond = _beyond(base), _beyond(mine)
            tolerance = _tolerance(mine)
            verdict, reason = "ok", ""
            if nan_b > nan_a:
                verdict, reason = "worse", f"{nan_b} NaN outputs where the baseline has {nan_a}"
            elif beyond[1] and not beyond[0]:
                verdict = "worse"
                reason = (
                    f"beyond its tolerance: error vs fp64 {b:.2e} > {scientific(tolerance)} in "
                    f"{beyond[1]} of {len(mine)} rounds; every baseline round is within it ({a:.2e})"
                )
            elif known(a) and known(b) and b > allowed:
                verdict = "worse"
                reason = (
                    f"error vs fp64 {b:.2e} > {NUMERICS_MULTIPLIER[dtype]:g} x {a:.2e} "
                    f"+ {NUMERICS_TOLERANCE[dtype] / 10:g}"
                )
            elif not (known(a) and known(b)):
                verdict, reason = "unchecked", "no fp64 reference on one side"
            elif beyond[0] and beyond[1]:
                reason = (
                    f"beyond its tolerance {scientific(tolerance)} on both sides: not changed by the switch"
                )
            rows.append(
                {
                    "group": group,
                    **_named(key),
                    "numerics": verdict,
                    "reason": reason,
                    "rel_rmse_baseline": a,
                    "rel_rmse_candidate": b,
                    "allowed": allowed,
                    "tolerance": tolerance,
                    "beyond_tolerance": _sides(beyond),
                    "same_digest": set(mine["digest"]) == set(base["digest"])
                    and len(set(base["digest"])) == 1,
                    "repeatable_baseline": bool(base["bitwise_repeatable"].all()),
                    "repeatable_candidate": bool(mine["bitwise_repeatable"].all()),
                    "nan_baseline": nan_a,
                    "nan_candidate": nan_b,
                }
            )
    table: pd.DataFrame = pd.DataFrame(rows)
    return table


def beyond_tolerance(frame: pd.DataFrame, groups: Sequence[str]) -> pd.DataFrame:
    """Every measurement (baseline included) beyond the tolerance it recorded for its precision, or
    with NaN or Inf outputs: one row per (group, workload, dtype, knobs) with how many rounds were."""
    columns = ["group", *NAMED, "rounds_beyond", "rounds", "rel_rmse", "tolerance", "nan", "inf"]
    none: pd.DataFrame = pd.DataFrame(columns=columns)
    if "within_tolerance" not in frame:
        return none
    checked = frame[frame["within_tolerance"].notna()]
    rows = []
    for group in groups:
        mine_all = checked[checked["group"] == group]
        mine_of = by_key(mine_all)
        for key in keys_of(mine_all):
            mine = mine_of(key)
            if _beyond(mine):
                rows.append(
                    {
                        "group": group,
                        **_named(key),
                        "rounds_beyond": _beyond(mine),
                        "rounds": len(mine),
                        "rel_rmse": mine["rel_rmse"].max(),
                        "tolerance": _tolerance(mine),
                        "nan": int(mine["nan_count"].fillna(0).max()),
                        "inf": int(mine["inf_count"].fillna(0).max()) if "inf_count" in mine else 0,
                    }
                )
    table: pd.DataFrame = pd.DataFrame(rows, columns=columns)
    return table


def _named(key: tuple[str, str, str]) -> dict[str, str]:
    """A row's key as columns, its mode's name beside its dtype."""
    workload, dtype, knobs = key
    return {"workload": workload, "dtype": dtype, "mode": mode(dtype, knobs), "knobs": knobs}


def _beyond(rows: pd.DataFrame) -> int:
    """Rounds whose measurement says it is beyond its tolerance (None: the result does not say)."""
    if "within_tolerance" not in rows:
        return 0
    return int((rows["within_tolerance"] == False).sum())  # noqa: E712 (None is neither)


def _tolerance(rows: pd.DataFrame) -> float | None:
    values = rows["tolerance"].dropna() if "tolerance" in rows else pd.Series(dtype=float)
    return float(values.max()) if not values.empty else None


def _sides(beyond: tuple[int, int]) -> str | None:
    return {(True, True): "both", (True, False): "baseline", (False, True): "candidate"}.get(
        (bool(beyond[0]), bool(beyond[1]))
    )


def scientific(value: float | None) -> str:
    return f"{value:.0e}" if value is not None else "its tolerance"
