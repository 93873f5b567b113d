"""Sections that compare a group with itself: cuDNN's autotuner off against on, and multi-GPU workloads
across world sizes."""

from __future__ import annotations

from pathlib import Path

from harness.report.analysis import stats
from harness.report.analysis.model import Analysis, View
from harness.report.sections import table_values
from harness.report.sections.context import SectionContext, listed
from harness.report.writers.document import Section, verdict
from harness.results.documents import round_of
from harness.suite import precision


def autotuning(ctx: SectionContext) -> list[Section]:
    return listed(_autotuning(ctx.analysis, ctx.letters))


def _autotuning(analysis: Analysis, letters: dict[str, str]) -> Section | None:
    tuned = analysis.autotuning
    if tuned.empty:
        return None
    rows = tuple(
        (
            str(r["workload"]),
            str(r["mode"]),
            str(r["knobs"]),
            letters.get(str(r["group"]), str(r["group"])),
            table_values.number(r["ratio"], ".3f"),
            stats.interval_text(r["ci_low"], r["ci_high"]),
            f"{r['rounds_off']}+{r['rounds_on']}" + (" (samples)" if r["basis"] == "samples" else ""),
            verdict(str(r["verdict"])),
            str(r["picked_off"] or ""),
            str(r["picked_on"] or ""),
            {"same": "same kernels", "changed": "other kernels", "varies": "differs between rounds"}.get(
                str(r["pick"]), ""
            ),
        )
        for r in tuned.to_dict("records")
    )
    return Section(
        "Auto-tuning: cudnn_benchmark off -> on",
        "Within each group, the same workload measured with cuDNN's autotuner off and on (the other knobs "
        "equal), judged like a verdict row with 'off' as the baseline: the ratio is on / off, below 1 "
        "when autotuning is faster. Each side names the largest kernel it ran; where the rounds picked "
        "differently, each pick with its count of rounds (the autotuner decides per process).",
        (
            "workload",
            "mode",
            "knobs",
            "group",
            "on / off",
            "interval",
            "rounds",
            "verdict",
            "picked (off)",
            "picked (on)",
            "pick",
        ),
        rows,
    )


def scaling(ctx: SectionContext) -> list[Section]:
    return listed(_scaling(ctx.view, ctx.analysis, ctx.out_dir, ctx.letters))


def _scaling(view: View, analysis: Analysis, out_dir: Path, letters: dict[str, str]) -> Section | None:
    """Multi-GPU workloads (DDP): step time and samples/s per world size, and the scaling efficiency."""
    rows = []
    for group in view.groups:
        for doc, file in analysis.docs.get(group, []):
            for m in doc["measurements"]:
                scaling = m.get("scaling") if m["status"] == "ok" else None
                if not scaling:
                    continue
                efficiency = scaling["efficiency"]
                per_size = zip(
                    scaling["world_sizes"], scaling["median_step_s"], scaling["samples_per_s"], strict=True
                )
                rows.append(
                    (
                        letters.get(group, group),
                        round_of(doc),
                        m["workload"],
                        precision.label(m["dtype"], bool(m["knobs"]["tf32"])),
                        "; ".join(
                            f"{size}: {table_values.duration(step)}, {rate:,.0f}/s"
                            for size, step, rate in per_size
                        ),
                        table_values.link(f"{efficiency:.3f}", file, out_dir, efficiency, "number")
                        if efficiency is not None
                        else table_values.link("one GPU", file, out_dir),
                    )
                )
    if not rows:
        return None
    return Section(
        "Multi-GPU scaling",
        "Workloads that run one process per GPU, measured at each world size with the "
        "same batch per process: the median step time and samples per second for each, and the scaling "
        "efficiency t(1) / t(N) (1.0: N GPUs give N times the samples per second of one).",
        ("group", "round", "workload", "mode", "world size: step, samples/s", "efficiency"),
        tuple(rows),
    )
