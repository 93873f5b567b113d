"""Merge validated results into pandas tables (long form, raw samples) and say which results may be
compared."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import pandas as pd

from harness.plan.axes import AXES
from harness.plan.model import Cell
from harness.report.analysis import math_flags
from harness.results.documents import LoadedResults, round_of
from harness.suite import precision
from harness.suite.document import CellRecord, Knobs, Numerics, ResultDocument, WhatRan
from harness.suite.timing import windows

KEYS = ["workload", "dtype", "knobs"]
# a row's key as a table holds it: its mode's name beside its id
NAMED = ["workload", "dtype", "mode", "knobs"]
RAN_SEPARATOR = "\t"  # between the names in a what-ran signature: one line in results.csv


def knob_label(knobs: Knobs) -> str:
    return " ".join(
        f"{k}={int(v)}"
        for k, v in (
            ("benchmark", knobs["cudnn_benchmark"]),
            ("deterministic", knobs["deterministic"]),
            ("tf32", knobs["tf32"]),
        )
    )


def mode(dtype: object, knobs: object) -> str:
    """A row's precision mode as a reader names it (``precision.label``): its dtype, and the tf32 knob as
    its knob label (``knob_label``) says it. Never a bare "fp32", whose math depends on flags."""
    return precision.label(str(dtype), "tf32=1" in str(knobs))


def with_mode(table: pd.DataFrame) -> pd.DataFrame:
    """``table`` (rows keyed by dtype and knobs) with a ``mode`` column beside ``dtype``: the machine id for
    programs, the name for readers."""
    if "mode" in table or not {"dtype", "knobs"} <= set(table.columns):
        return table
    named: pd.DataFrame = table.copy()
    modes = [mode(d, k) for d, k in zip(named["dtype"], named["knobs"], strict=True)]
    named.insert(list(named.columns).index("dtype") + 1, "mode", modes)
    return named


def cell_label(cell: CellRecord) -> str:
    """The cell's label (``Cell.label``) from a result's record of it."""
    return Cell.from_json(cell).label


def long_form(loaded: LoadedResults) -> pd.DataFrame:
    """One row per measurement (and one per failed cell), every number in seconds."""
    rows = []
    for doc, file in zip(loaded.documents, loaded.files, strict=True):
        cell = doc["cell"]
        common: dict[str, object] = {
            "group": cell["id"],
            "cell_id": cell["id"],
            "round": round_of(doc),
            "cell": cell_label(cell),
            **{a.column: a.text(a.read(cell.get(a.name, a.default))) for a in AXES if a.column},
            "cudnn_runtime": doc["cudnn"]["runtime_version"] if "cudnn" in doc else None,
            "device": doc.get("device"),
            "cell_status": doc["status"],
            "file": file,
        }
        host = doc.get("host")
        busy = f"the host was busy ({host['why']})" if host and host["busy"] else None
        failure = doc["failure"]
        if doc["status"] != "ok":
            rows.append({**common, "status": "cell_failed", "error": failure["reason"] if failure else None})
            continue
        for index, m in enumerate(doc["measurements"]):
            stats: dict[str, object] = dict(m.get("stats") or {})
            rows.append(
                {
                    **common,
                    "measurement": index,  # its place in the file's measurements: what a link points at
                    "workload": m["workload"],
                    "dtype": m["dtype"],
                    "mode": precision.label(m["dtype"], bool(m["knobs"]["tf32"])),
                    "knobs": knob_label(m["knobs"]),
                    **{k: m["knobs"][k] for k in ("cudnn_benchmark", "deterministic", "tf32")},
                    "math_flags": math_flags.text(_recorded(m)),  # suite 0.20; None before
                    "status": m["status"],
                    "error": m.get("error"),
                    "median_s": stats.get("median"),
                    "min_s": stats.get("min"),
                    "q1_s": stats.get("q1"),
                    "q3_s": stats.get("q3"),
                    "max_s": stats.get("max"),
                    "n": stats.get("n"),
                    "rel_iqr": stats.get("rel_iqr"),
                    "first_call_s": m.get("first_call_s"),
                    "stop_reason": m.get("stop_reason"),
                    "timer": m.get("timer"),
                    "clock": m.get("clock"),  # a CPU's: wall or thread_cpu (suite 0.17)
                    "tflops": m.get("tflops"),
                    "gbps": m.get("gbps"),
                    "host_s": m.get("host_time_per_call_s"),
                    **_numerics_columns(m.get("numerics")),
                    **_what_ran_columns(m.get("what_ran")),
                    "what_ran_error": m.get("what_ran_error"),
                    "stalled": m.get("stalled") or busy,  # a busy host spoils every row of its run
                    "window_spread": windows.spread(m.get("window_medians_s")),
                    "power_capped": m.get("power_capped_discarded"),
                }
            )
    frame: pd.DataFrame = pd.DataFrame(rows)
    return frame


def _recorded(measurement: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The math flags a measurement recorded (suite 0.20), or None."""
    found = measurement.get("math_flags")
    return found if isinstance(found, Mapping) else None


def _numerics_columns(numerics: Numerics | None) -> dict[str, object]:
    if not numerics:
        return {}
    return {
        "rel_rmse": numerics.get("rel_rmse"),
        "within_tolerance": numerics.get("within_tolerance"),
        "tolerance": numerics.get("tolerance_rel_rmse"),
        "bitwise_repeatable": numerics.get("bitwise_repeatable"),
        "nan_count": numerics.get("nan_count"),
        "inf_count": numerics.get("inf_count"),
        "digest": numerics.get("digest"),
    }


def _what_ran_columns(ran: WhatRan | None) -> dict[str, object]:
    """What one profiled call ran: ``ran`` is its signature (the kernels on a GPU, else the operators),
    equal between two measurements exactly when the same things ran; ``top_kernel`` the largest."""
    if not ran:
        return {}
    kernels = ran.get("kernels")
    names = sorted({k["name"] for k in kernels} if kernels else {o["name"] for o in ran["operators"]})
    return {
        "ran": RAN_SEPARATOR.join(names),
        "top_kernel": kernels[0]["name"] if kernels else None,
        "attention_backend": ran["attention_backend"],
        "cudnn_used": ran["cudnn_used"] or any(_cudnn_kernel(k["name"]) for k in kernels or ()),
    }


# Kernels only cuDNN ships whose names do not say "cudnn": its legacy convolution engines. The suite
# looks for "cudnn" in a name; a convolution's backward reaches no cudnn operator, so without these a
# cuDNN wgrad_alg0_engine reads as not cuDNN.
CUDNN_KERNEL_PREFIXES = (
    "wgrad_alg",
    "dgrad_alg",
    "dgrad2d_alg",
    "implicit_convolve_sgemm",
    "explicit_convolve_sgemm",
    "precomputed_convolve_sgemm",
    "fft2d_r2c",
    "fft2d_c2r",
    "winograd",
)


def _cudnn_kernel(kernel: str) -> bool:
    return short_kernel(kernel).startswith(CUDNN_KERNEL_PREFIXES)


def short_kernel(kernel: str) -> str:
    """A kernel's name without its template arguments and parameters: what tells algorithms apart."""
    name = kernel.removeprefix("void ").replace("(anonymous namespace)::", "").split("(")[0]
    return (name.split("<")[0] or name).strip()[:80]


def samples(loaded: LoadedResults) -> dict[tuple[str, str, str, str], list[float]]:
    """(file, workload, dtype, knobs) -> that measurement's raw samples in seconds."""
    out: dict[tuple[str, str, str, str], list[float]] = {}
    for doc, file in zip(loaded.documents, loaded.files, strict=True):
        for m in doc["measurements"]:
            if m["status"] == "ok" and "samples_s" in m:
                out[(file, m["workload"], m["dtype"], knob_label(m["knobs"]))] = m["samples_s"]
    return out


def comparability_key(doc: ResultDocument) -> dict[str, str]:
    """What must be equal for two results to be compared: suite version, profile, GPU model, driver."""
    env = doc.get("environment")
    gpu = (env["gpu"] if env else None) or {}
    host = env["host"] if env else {}
    return {
        "suite version": str(doc.get("suite_version")),
        "suite profile": str(doc.get("profile")),
        "device": gpu.get("name") or f"CPU {host.get('cpu_model') or 'unknown'}",
        "driver": gpu.get("driver_version") or "none",
    }


def build_key(doc: ResultDocument) -> dict[str, str]:
    """What must be equal among the runs of one cell (or one side of a compare): the torch and cuDNN that ran.
    An ``installed`` cell's shards from hosts with different torch builds are different cells in truth."""
    env, cudnn = doc.get("environment"), doc.get("cudnn")
    return {
        "torch build": str(env["torch"].get("version") if env else None),
        "cuDNN runtime": str(cudnn["runtime_version"] if cudnn else None),
    }


def comparability_problems(loaded: LoadedResults, group_of_file: dict[str, str] | None = None) -> list[str]:
    """Why these results must not be merged into one comparison (empty when they may be). The suite, GPU and
    driver must agree across all; the torch and cuDNN builds within each group (a cell, or a compare's
    side)."""
    ok = [  # a failed run has no numbers to compare
        (doc, file) for doc, file in zip(loaded.documents, loaded.files, strict=True) if doc["status"] == "ok"
    ]
    groups: dict[str, list[tuple[ResultDocument, str]]] = {}
    for doc, file in ok:
        groups.setdefault(group_of_file[file] if group_of_file else doc["cell"]["id"], []).append((doc, file))
    problems = _differing(ok, comparability_key, "")
    for group, entries in groups.items():
        problems += _differing(entries, build_key, f" within {group}")
    return problems


def _differing(
    entries: list[tuple[ResultDocument, str]], key: Callable[[ResultDocument], dict[str, str]], where: str
) -> list[str]:
    seen: dict[str, dict[str, list[str]]] = {}
    for doc, file in entries:
        for field, value in key(doc).items():
            seen.setdefault(field, {}).setdefault(value, []).append(file)
    problems = []
    for field, values in seen.items():
        if len(values) > 1:
            listing = "; ".join(
                f"{value!r} in {', '.join(files[:3])}{' …' if len(files) > 3 else ''}"
                for value, files in values.items()
            )
            problems.append(
                f"results differ in {field}{where} ({listing}): timings from different {field}s are not "
                "comparable; report them separately or re-run one side"
            )
    return problems


def lower_median_row(rows: pd.DataFrame, column: str) -> pd.Series[Any]:
    """The row holding the lower median of ``column``: one result file's own value, so a number can link to
    the file it came from. Ties go to the file whose path sorts first, so the link never depends on the
    sort algorithm or the order files were read in."""
    # numpy's stable sort by value, then file (NaN last, as sort_values puts it): a tenth of sort_values'
    # time, which a report of thousands of rows paid once a row
    order = np.lexsort((rows["file"].to_numpy(dtype=object), rows[column].to_numpy(dtype=float)))
    row: pd.Series[Any] = rows.iloc[int(order[(len(rows) - 1) // 2])]
    return row


def keys_of(frame: pd.DataFrame) -> list[tuple[str, str, str]]:
    """Each (workload, dtype, knobs) of ``frame`` once, in the order first met."""
    return list(dict.fromkeys(zip(frame["workload"], frame["dtype"], frame["knobs"], strict=True)))


def rows_of(frame: pd.DataFrame, key: tuple[str, str, str]) -> pd.DataFrame:
    """``frame``'s rows of one (workload, dtype, knobs)."""
    rows: pd.DataFrame = frame[
        (frame["workload"] == key[0]) & (frame["dtype"] == key[1]) & (frame["knobs"] == key[2])
    ]
    return rows


def by_key(frame: pd.DataFrame) -> Callable[[tuple[str, str, str]], pd.DataFrame]:
    """``rows_of`` for every key of ``frame``: the frame split once, each key's rows then found at once. A
    mask over the whole frame per key made a report quadratic in its measurements (15,000: minutes)."""
    empty = frame.iloc[0:0]
    if frame.empty:
        return lambda key: empty
    groups: dict[Any, pd.DataFrame] = dict(iter(frame.groupby(KEYS, sort=False, dropna=False)))
    return lambda key: groups.get(key, empty)


def known(value: Any) -> bool:
    """Whether a frame's cell holds a value: None and NaN (pandas' fill for a missing cell) do not."""
    return value is not None and not (isinstance(value, float) and math.isnan(value))


# ATen operators named for the implementation behind a generic one (aten::convolution -> mkldnn, cudnn...)
IMPLEMENTATION_PREFIXES = (
    "aten::cudnn_",
    "aten::miopen_",
    "aten::mkldnn_",
    "aten::_slow_",
    "aten::slow_",
    "aten::_nnpack_",
    "aten::thnn_",
    "aten::_scaled_dot_product_",
    "aten::_cudnn_",
    "aten::_mkldnn_",
)


def ran_name(rows: pd.DataFrame) -> str | None:
    """What ``rows`` (rounds of one measurement) ran, named: the largest kernel (on a CPU, the operators
    whose names say the implementation), with how many rounds ran each where they differ."""
    if "ran" not in rows or rows["ran"].isna().any():
        return None
    names: Counter[str] = Counter()
    tops = rows["top_kernel"] if "top_kernel" in rows else [None] * len(rows)
    for top, ran in zip(tops, rows["ran"], strict=True):  # column by column: to_dict made a dict a round
        names[short_kernel(top) if isinstance(top, str) else _operators(ran)] += 1
    if len(names) == 1:
        return next(iter(names))
    return "; ".join(f"{name} ({count} of {len(rows)} rounds)" for name, count in names.most_common())


def _operators(signature: Any) -> str:
    """On a CPU: the operators whose names say which implementation ran, else the first few."""
    names = str(signature).split(RAN_SEPARATOR)
    chosen = [n for n in names if n.startswith(IMPLEMENTATION_PREFIXES)] or names[:3]
    rest = len(names) - len(chosen)
    return ", ".join(chosen) + (f" (+{rest} other operators)" if rest else "")
