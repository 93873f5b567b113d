"""The sections about the runs themselves: how the rows were judged and where the results came from
(method), the groups and their result files, the runs and files set aside, and the environment each run
had."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

from harness.report.analysis import math_flags
from harness.report.analysis.model import Analysis, View
from harness.report.sections import answer, table_values
from harness.report.sections.context import SectionContext, listed
from harness.report.writers import markdown
from harness.report.writers.document import Section
from harness.results.documents import LoadedResults, round_of
from harness.suite import precision


def method(ctx: SectionContext) -> list[Section]:
    return [_method(ctx.view, ctx.analysis, ctx.loaded, ctx.sources), *listed(_modes(ctx))]


def _method(view: View, analysis: Analysis, loaded: LoadedResults, sources: tuple[Path, ...]) -> Section:
    """How the rows were judged, where the results came from, and the gate's summary: below the answer."""
    gate = analysis.gate
    intro = "\n".join(
        [
            f"Rendered {dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M} UTC by `python -m harness` from "
            + ", ".join(markdown.code(str(s)) for s in sources)
            + f" ({len(loaded.documents)} valid result files, {len(loaded.quarantined)} quarantined"
            + (f", {len(loaded.duplicates)} duplicates counted once" if loaded.duplicates else "")
            + f"); {f'matrix {markdown.code(view.matrix)} ({view.note})' if view.matrix else view.note}.",
            "",
            "Each row compares a group with the baseline over the per-round medians of independent "
            "processes (above 1 is slower). With 3 to 6 rounds a side a row is judged by Welch's t test "
            "on the logarithms of the round medians (its ratio: of their geometric means) and, for "
            "**same**, by an equivalence test (TOST: the 1 − 2α interval inside the threshold); with 7 or "
            "more by a two-sided Mann-Whitney U test (its ratio: of their medians) and a 99 % bootstrap "
            "interval. The rounds column names the test each row used. A row is **slower** only when "
            f"p < {view.alpha:g} and the ratio reaches the threshold ({view.default_pct:g}% unless set per "
            "workload); **same** when the whole interval lies inside the threshold; otherwise "
            "**inconclusive**, which is not a pass. With one round per side the ratio and interval come "
            "from that one process's raw samples (basis `samples`) and the row stays inconclusive: one "
            "process cannot separate a change from process-to-process variation." + _clocks(analysis),
            "",
            markdown.fenced("\n".join(gate.lines)),
        ]
    )
    return Section("Method, sources and the gate's summary", intro, collapsed=True)


FLAGS = "`torch.backends.cudnn.allow_tf32` and `torch.backends.cuda.matmul.allow_tf32`"
# what each precision mode is, by the id its rows carry (the tf32 knob makes an fp32 mode ``tf32``)
MEANING = {
    precision.DEFAULT_FP32: "fp32 under the torch build's own flags, untouched: PyTorch's default lets cuDNN "
    "convolutions (and RNNs) use TF32 and keeps matrix products in full fp32, so this is what a user who "
    "sets nothing runs",
    "fp32": f"TF32 off everywhere: the suite sets {FLAGS} False (what the suite's `fp32` has always meant, "
    "in results before suite 0.20 too)",
    "tf32": f"fp32 storage with TF32 allowed everywhere, matrix products too: the suite sets {FLAGS} True "
    "(the `tf32` mode, or an fp32 mode with the tf32 knob on)",
    "bf16": "training steps autocast to bf16 (AMP), layers take it as their input; TF32 off for what "
    "autocast keeps in fp32",
    "fp16": "training steps autocast to fp16 (AMP), layers take it as their input; TF32 off for what "
    "autocast keeps in fp32",
}


def _modes(ctx: SectionContext) -> Section | None:
    """What each precision mode of these rows means, and the math flags each group ran it with (recorded
    since suite 0.20; before, what the mode asked). Where a mode's flags differ between groups, a note
    says so above the table, unfolded: those rows compare math as well as cuDNN."""
    frame = ctx.analysis.frame
    if frame.empty or "workload" not in frame:
        return None
    measured = frame[frame["workload"].notna()]
    ids = dict.fromkeys(
        "tf32" if knob and dtype in precision.FP32_STORAGE else str(dtype)
        for dtype, knob in zip(measured["dtype"], measured["tf32"], strict=True)
    )
    order = list(precision.MODES)
    said = [
        f"- **{precision.label(i)}** (`{i}`): {MEANING[i]}"
        for i in sorted(ids, key=lambda i: order.index(i) if i in order else len(order))
        if i in MEANING
    ]
    found = math_flags.from_frame(frame, ctx.view.groups)
    differ = math_flags.differing(found, ctx.letters)
    intro = ["Precision modes (a row's `dtype` is its mode's id):", *said]
    if differ:
        intro += [
            "",
            "**Note: the math differs between the cells compared.** Where a mode ran with other flags in "
            "some cells than in others, its rows compare the math as well as cuDNN, not cuDNN alone:",
            *(f"- {markdown.inline(line)}" for line in differ),
        ]
    intro += ["", "The math flags each group ran each mode with:"]
    rows = tuple(_flags_row(m, ctx.letters) for m in found)
    headers = ("mode", "groups", "TF32 in cuDNN", "TF32 in matrix products", "float32 matmul precision")
    return Section(
        "Precision modes and math flags",
        "\n".join(intro),
        (*headers, "fp32_precision", "recorded") if rows else (),
        rows,
        level=3,
        collapsed=not differ,
    )


def _flags_row(found: math_flags.ModeMath, letters: dict[str, str]) -> tuple[str, ...]:
    math = found.math
    return (
        found.mode,
        ", ".join(letters.get(g, g) for g in found.groups),
        "on" if math.cudnn_tf32 else "off",
        "on" if math.matmul_tf32 else "off",
        math.matmul_precision or "",
        math.newer,
        "yes" if math.recorded else "no (suite before 0.20): as the mode asked",
    )


CLOCKS = {
    "wall": "wall time (`perf_counter`); each result keeps the same calls' thread CPU time beside it "
    "(`thread_cpu_stats`), which a busy host moved as much (lab/evidence/busy-host/)",
    "thread_cpu": "the thread's own CPU time (`thread_time`), which preemption does not inflate; each result "
    "keeps the same calls' wall time beside it (`wall_stats`)",
}


def _clocks(analysis: Analysis) -> str:
    """The sentence that says which clock the CPU rows were judged in (the measurements' ``clock``)."""
    frame = analysis.frame
    found = sorted({str(c) for c in frame["clock"] if isinstance(c, str)}) if "clock" in frame else []
    if not found:
        return ""
    said = "; ".join(CLOCKS.get(c, markdown.code(c)) for c in found)
    return f" CPU rows are timed in {said}."


def groups(ctx: SectionContext) -> list[Section]:
    """The groups (cells) and their result files (``cells``)."""
    return [cells(ctx.view, ctx.analysis, ctx.out_dir, ctx.letters)]


def cells(view: View, analysis: Analysis, out_dir: Path, letters: dict[str, str]) -> Section:
    rows = []
    for group in view.groups:
        entries = analysis.docs.get(group, [])
        ok = [(d, f) for d, f in entries if d["status"] == "ok"]
        doc = ok[0][0] if ok else (entries[0][0] if entries else None)
        cudnn = doc.get("cudnn") if doc else None
        by_round = sorted(entries, key=lambda entry: round_of(entry[0]))  # r2 before r10, as numbers
        files = [table_values.link(f"r{round_of(d)}", f, out_dir) for d, f in by_round]
        rows.append(
            (
                letters[group],
                group + (" (baseline)" if group == view.baseline else ""),
                view.labels.get(group, group),
                f"{len(ok)}/{len(entries)} ok" + (f", {view.rounds} asked" if view.rounds else ""),
                doc.get("device", "") if doc else "",
                (cudnn.get("runtime_version") if cudnn else None) or ("none" if doc else ""),
                "\n".join(cudnn.get("loaded_dirs", []) if cudnn else []),
                cudnn.get("verification", "") if cudnn else "",
                files,
            )
        )
    return Section(
        "Groups (cells)",
        "",
        (
            "",
            "id",
            "torch / cuDNN asked for",
            "rounds",
            "device",
            "cuDNN torch reported",
            "cuDNN library dir loaded",
            "check",
            "result files",
        ),
        tuple(rows),
    )


def problems(ctx: SectionContext) -> list[Section]:
    analysis, loaded = ctx.analysis, ctx.loaded
    out = []
    if analysis.gate.failed_runs:
        out.append(
            Section(
                "Failed runs",
                "These runs failed: nothing they measured before failing is compared; "
                "they make the outcome an infrastructure failure unless a regression outranks it.",
                ("run",),
                tuple((r,) for r in analysis.gate.failed_runs),
            )
        )
    if loaded.quarantined:
        rows = tuple((q.name, "\n".join(q.problems[:5])) for q in loaded.quarantined)
        out.append(Section("Quarantined result files (not merged)", "", ("file", "problems"), rows))
    if loaded.duplicates:
        rows = tuple((d.name, d.same_as) for d in loaded.duplicates)
        out.append(
            Section(
                "Duplicate result files (counted once)",
                "These files hold a run already read from "
                "another file (same cell, same start and finish): a copy is not another round.",
                ("file", "the same run as"),
                rows,
            )
        )
    if analysis.outside:
        out.append(
            Section(
                "Result files of cells not in the plan (not compared)",
                "plan.json does not list "
                "these cells (the matrix was edited, or the files came from elsewhere).",
                ("file", "cell"),
                analysis.outside,
            )
        )
    warnings = sorted({(g, w) for g, e in analysis.docs.items() for d, _ in e for w in d.get("warnings", [])})
    if warnings:
        out.append(Section("Warnings", "", ("group", "warning"), tuple(warnings)))
    return out


def environment(ctx: SectionContext) -> list[Section]:
    return listed(_environment(ctx.view, ctx.analysis, ctx.letters))


def _environment(view: View, analysis: Analysis, letters: dict[str, str]) -> Section | None:
    """One row per distinct environment of a group: the rounds that ran in it listed together."""
    rounds: dict[tuple[Any, ...], list[int]] = {}
    for group in view.groups:
        for doc, _ in analysis.docs.get(group, []):
            env = doc.get("environment")
            if not env:
                continue
            gpu = env["gpu"] or {}
            cudnn = doc.get("cudnn")
            rounds.setdefault(
                (
                    letters[group],
                    env["torch"]["version"],
                    env["torch"].get("cuda") or "none",
                    f"{(cudnn.get('runtime_version') if cudnn else None) or 'none'} (built for "
                    f"{(cudnn.get('compile_version') if cudnn else None) or 'none'})",
                    "\n".join(cudnn.get("loaded_libraries", []) if cudnn else []) or "none",
                    gpu.get("name", "none (CPU)"),
                    str(gpu.get("uuid") or "")[:8],
                    gpu.get("driver_version") or "",
                    (gpu.get("nvidia_smi") or {}).get("clocks.max.sm", ""),
                    env["python"]["version"],
                    env["host"].get("os", ""),
                    env["host"].get("cpu_model") or "",
                    doc.get("suite_version"),
                ),
                [],
            ).append(round_of(doc))
    rows = [(key[0], table_values.rounds_text(numbers), *key[1:]) for key, numbers in rounds.items()]
    if not rows:
        return None
    uuids = answer.gpu_uuids(analysis)
    # Two GPUs of one model differ by more than two processes on one GPU (docs/method.md has the A/A
    # figures), so a reader must know when runs were spread.
    intro = (
        f"These runs used {len(uuids)} physical GPUs (GPU id column): the differences between them are "
        "part of every comparison here, and A/A noise across GPUs is larger than on one."
        if len(uuids) > 1
        else ""
    )
    return Section(
        "Environment of every run",
        intro,
        (
            "group",
            "rounds",
            "torch",
            "CUDA",
            "cuDNN runtime",
            "cuDNN files mapped",
            "GPU",
            "GPU id",
            "driver",
            "max SM clock",
            "Python",
            "OS",
            "CPU",
            "suite",
        ),
        tuple(rows),
    )
