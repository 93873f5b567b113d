"""Render merged results: a Markdown report (tabulate) and the long-form CSV.

Every number in the report comes from a result file in the results folder, which the report
names, so anyone can re-render and check it (``python -m harness report``).
"""

from __future__ import annotations

import datetime as dt
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
from tabulate import tabulate

from harness import compare, jsonio
from harness.matrix import Plan
from harness.results import LoadedResults


@dataclass(frozen=True)
class Rendered:
    markdown: Path
    csv: Path
    failed_cells: tuple[str, ...]
    missing_cells: tuple[str, ...]


def render(plan: Plan, loaded: LoadedResults, results_dir: Path, out_dir: Path) -> Rendered:
    frame = compare.long_form(loaded)
    by_id = {doc["cell"]["id"]: (doc, file) for doc, file in zip(loaded.documents, loaded.files, strict=True)}
    failed = tuple(cid for cid, (doc, _) in by_id.items() if doc["status"] != "ok")
    missing = tuple(c.id for c in plan.cells if c.id not in by_id)
    link_base = os.path.relpath(results_dir, out_dir)
    sections = [
        _header(plan, loaded, results_dir),
        _cells_section(plan, by_id, link_base),
        _problems_section(by_id, failed, missing, loaded),
        _results_section(plan, frame),
        _numerics_section(plan, frame),
        _environment_section(plan, by_id),
    ]
    markdown = out_dir / "report.md"
    csv = out_dir / "results.csv"
    jsonio.write_text_atomic(markdown, "\n\n".join(s for s in sections if s) + "\n")
    jsonio.write_text_atomic(csv, frame.to_csv(index=False))
    return Rendered(markdown, csv, failed, missing)


def _header(plan: Plan, loaded: LoadedResults, results_dir: Path) -> str:
    baseline = plan.cell(plan.baseline_id)
    return "\n".join(
        [
            f"# {plan.name}: {len(plan.cells)} cells against {compare.cell_label(baseline.to_json())}",
            "",
            f"Rendered {dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M} UTC by `python -m harness report` from "
            f"`{results_dir}` ({len(loaded.documents)} valid result files, {len(loaded.quarantined)} quarantined). "
            f"Matrix `{plan.source}` (sha256 `{plan.matrix_sha256[:12]}`), suite profile `{plan.suite['profile']}`.",
            "",
            "Times are the median of per-call samples (CUDA events with the L2 cache flushed on a GPU; "
            "a synchronized host clock on the CPU). Speedup = baseline median / cell median: above 1 is faster. "
            f"Rows marked ▼ are slower than the baseline by more than the threshold ({plan.regression_pct:g}% "
            "unless set per workload); this issue's report applies no significance test, so treat a mark as a "
            "lead to re-run, not a verdict.",
        ]
    )


def _cells_section(plan: Plan, by_id: dict[str, Any], link_base: str) -> str:
    rows = []
    for cell in plan.cells:
        doc, file = by_id.get(cell.id, (None, None))
        cudnn = (doc or {}).get("cudnn") or {}
        rows.append(
            [
                cell.id + (" (baseline)" if cell.id == plan.baseline_id else ""),
                compare.cell_label(cell.to_json()),
                doc["status"] if doc else "missing",
                (doc or {}).get("device", ""),
                cudnn.get("runtime_version") or ("none" if doc else ""),
                "\n".join(cudnn.get("loaded_dirs", [])) or ("none" if doc else ""),
                cudnn.get("verification", ""),
                f"[{file}]({link_base}/{file})" if file else "",
            ]
        )
    return "## Cells\n\n" + _table(
        rows,
        [
            "cell",
            "torch / cuDNN asked for",
            "status",
            "device",
            "cuDNN torch reported",
            "cuDNN library dir loaded",
            "check",
            "result file",
        ],
    )


def _problems_section(
    by_id: dict[str, Any], failed: tuple[str, ...], missing: tuple[str, ...], loaded: LoadedResults
) -> str:
    parts = []
    if failed:
        rows = [
            [cid, by_id[cid][0]["failure"]["stage"], by_id[cid][0]["failure"]["reason"]] for cid in failed
        ]
        parts.append("## Failed cells\n\n" + _table(rows, ["cell", "stage", "reason"]))
    if missing:
        parts.append("## Missing cells\n\nNo result file for: " + ", ".join(f"`{m}`" for m in missing))
    if loaded.quarantined:
        rows = [
            [q.name, "\n".join(q.problems[:5]) + (" …" if len(q.problems) > 5 else "")]
            for q in loaded.quarantined
        ]
        parts.append("## Quarantined result files (not merged)\n\n" + _table(rows, ["file", "problems"]))
    warnings = [[cid, w] for cid, (doc, _) in by_id.items() for w in doc.get("warnings", [])]
    if warnings:
        parts.append("## Warnings\n\n" + _table(warnings, ["cell", "warning"]))
    return "\n\n".join(parts)


def _results_section(plan: Plan, frame: pd.DataFrame) -> str:
    table = compare.medians(frame, plan)
    if table.empty:
        return "## Results\n\nNo measurement succeeded in any cell."
    ratios = compare.speedups(table, plan.baseline_id)
    labels = {c.id: f"{chr(65 + i)}" for i, c in enumerate(c for c in plan.cells if c.id in table.columns)}
    legend = "\n".join(
        f"- **{labels[c.id]}** = `{c.id}`: {compare.cell_label(c.to_json())}"
        + (" — **baseline**" if c.id == plan.baseline_id else "")
        for c in plan.cells
        if c.id in labels
    )
    rows = []
    for key, medians in table.iterrows():
        workload, dtype, knobs = key  # type: ignore[misc]
        limit = 1 / (1 + compare.threshold_pct(plan, workload) / 100)
        row = [workload, dtype, knobs]
        for cell_id in table.columns:
            value = medians[cell_id]
            if isinstance(value, float) and math.isnan(value):
                row.append("—")
                continue
            text = _duration(value)
            if cell_id != plan.baseline_id and cell_id in ratios and not math.isnan(ratios.at[key, cell_id]):
                ratio = ratios.at[key, cell_id]
                text += f" ({ratio:.2f}×{' ▼' if ratio < limit else ''})"
            row.append(text)
        rows.append(row)
    headers = ["workload", "dtype", "knobs", *(labels[c] for c in table.columns)]
    unsupported = (
        frame[frame["status"].isin(["unsupported", "error"])] if "status" in frame else frame.iloc[0:0]
    )
    notes = ""
    if not unsupported.empty:
        notes = "\n\n### Not measured\n\n" + _table(
            unsupported[["cell_id", "workload", "dtype", "knobs", "status", "error"]].values.tolist(),
            ["cell", "workload", "dtype", "knobs", "status", "error"],
        )
    return (
        "## Results: median time per call (speedup vs baseline)\n\n"
        + legend
        + "\n\n"
        + _table(rows, headers)
        + notes
    )


def _numerics_section(plan: Plan, frame: pd.DataFrame) -> str:
    summary = compare.numerics_summary(frame, plan)
    if summary.empty:
        return ""
    text = (
        "## Numerics\n\nEvery measurement's outputs against the same workload built in fp64 (relative RMSE, with a "
        "per-dtype sanity tolerance), two calls compared bit for bit, NaNs counted, and an output digest compared "
        "with the baseline cell's.\n\n"
        + _table(
            summary.values.tolist(),
            [
                "cell",
                "checked",
                "not bitwise repeatable",
                "outside tolerance",
                "with NaN",
                "same digest as baseline",
            ],
        )
    )
    flagged = frame[frame["bitwise_repeatable"].eq(False) | frame["within_tolerance"].eq(False)
                    | frame["nan_count"].fillna(0).gt(0)]  # fmt: skip
    if not flagged.empty:
        rows = [[r.cell_id, r.workload, r.dtype, r.knobs, f"{r.rel_rmse:.2e}" if r.rel_rmse == r.rel_rmse else "",
                 "no" if r.bitwise_repeatable is False else "yes", "no" if r.within_tolerance is False else "yes",
                 int(r.nan_count or 0)] for r in flagged.itertuples()]  # fmt: skip
        text += "\n\n### Flagged measurements\n\n" + _table(
            rows,
            [
                "cell",
                "workload",
                "dtype",
                "knobs",
                "rel. RMSE vs fp64",
                "bitwise repeatable",
                "within tolerance",
                "NaN",
            ],
        )
    return text


def _environment_section(plan: Plan, by_id: dict[str, Any]) -> str:
    rows = []
    for cell in plan.cells:
        doc = by_id.get(cell.id, (None, None))[0]
        env = (doc or {}).get("environment")
        if not env:
            continue
        gpu = env.get("gpu") or {}
        smi = gpu.get("nvidia_smi") or {}
        cudnn = doc.get("cudnn") or {}
        rows.append(
            [
                cell.id,
                env["torch"]["version"],
                env["torch"].get("cuda") or "none",
                f"{cudnn.get('runtime_version') or 'none'} (built for {cudnn.get('compile_version') or 'none'})",
                "\n".join(cudnn.get("loaded_libraries", [])) or "none",
                gpu.get("name", "none (CPU)"),
                gpu.get("driver_version") or "",
                smi.get("clocks.max.sm", ""),
                env["python"]["version"],
                env["host"].get("os", ""),
                env["host"].get("cpu_model") or "",
                ", ".join(f"{k}={v}" for k, v in sorted(env.get("env", {}).items())) or "",
            ]
        )
    if not rows:
        return ""
    return "## Environment per cell\n\n" + _table(
        rows,
        [
            "cell",
            "torch",
            "CUDA",
            "cuDNN runtime",
            "cuDNN files mapped",
            "GPU",
            "driver",
            "max SM clock",
            "Python",
            "OS",
            "CPU",
            "environment variables",
        ],
    )


def _duration(seconds: float) -> str:
    if seconds >= 1:
        return f"{seconds:.3f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.3f} ms"
    return f"{seconds * 1e6:.1f} µs"


def _table(rows: list[list[Any]], headers: list[str]) -> str:
    """A GitHub table whose cells can never break it: pipes escaped, line breaks as <br>."""

    def clean(value: Any) -> str:
        text = "" if value is None or (isinstance(value, float) and math.isnan(value)) else str(value)
        return text.replace("\\", "\\\\").replace("|", "\\|").replace("\r", "").replace("\n", "<br>")

    return tabulate(
        [[clean(v) for v in row] for row in rows],
        headers=[clean(h) for h in headers],
        tablefmt="github",
        disable_numparse=True,
    )
