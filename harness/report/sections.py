"""The report's sections, in the order a reader meets them, built once as data for every writer."""

from __future__ import annotations

import datetime as dt
import hashlib
import os
from pathlib import Path
from typing import Any

import pandas as pd

from harness.report import answer, frames, markdown, next_steps, stats
from harness.report.frames import KEYS
from harness.report.model import VERDICT_ORDER, Analysis, Document, Kind, Section, Value, View, verdict
from harness.report.verdicts import change_kind
from harness.results import folder
from harness.results.documents import LoadedResults, round_of

# what every verdict row's numbers are, said once where the rows are shown (and in the Method section)
STATISTIC_NOTE = (
    "Each side's time is what its row's test compares, and the ratio divides exactly those two times: "
    "with 3 to 6 rounds a side (**Welch**), the geometric mean of the round medians, with the 1 − 2α "
    "interval of the ratio (99.6 % at α = 0.002); with 7 or more (**MW**, the Mann-Whitney U test), the "
    "median of the round medians, with a 99 % bootstrap interval; with one round a side (**samples**), "
    "that process's median sample. A time links to the result file of the round nearest it."
)
MEASUREMENTS = "measurements"  # the report's folder of one-measurement files that numbers link to


def document(
    view: View, analysis: Analysis, loaded: LoadedResults, out_dir: Path, sources: list[Path]
) -> Document:
    """The whole report for ``out_dir`` (links are relative to it)."""
    letters = view.letters
    extracts: dict[str, tuple[str, int]] = {}
    sections = [
        answer.scorecard(view, analysis),
        Section("Time ratio heatmap", figure="heatmap"),  # the HTML page's plot of every row
        *_series_sections(view, analysis),
        answer.read_first(view, analysis),
        next_steps.section(view, analysis, sources, view.matrix),
        _method(view, analysis, loaded, sources),
        _what_changed(analysis, letters),
        _cells(view, analysis, out_dir, letters),
        *_problems(analysis, loaded),
        *_verdict_sections(view, analysis, out_dir, letters, extracts),
        _autotuning(analysis, letters),
        *_numerics_sections(view, analysis, letters),
        _beyond_tolerance(analysis, letters),
        _scaling_section(view, analysis, out_dir, letters),
        _environment(view, analysis, letters),
    ]
    title = f"{view.name}: {len(view.groups)} groups against {view.labels.get(view.baseline, view.baseline)}"
    environment = markdown.inline(answer.environment_line(view, analysis), markdown.MAX_LINE)
    header = environment + "\n\n" + answer.outcome_line(analysis)
    return Document(title, header, tuple(s for s in sections if s is not None), extracts)


_MARKS = {"slower": " ▼", "faster": " ▲", "same": " ↔", "failed": " ✗", "ran again": " ✓"}


def _series_sections(view: View, analysis: Analysis) -> list[Section]:
    """Across releases (each row's ratio to the baseline, releases in order) and where each change began."""
    series = analysis.series
    if series is None:
        return []
    began = {(c.workload, c.dtype, c.knobs, c.after): c.verdict for c in series.changes}
    rows = []
    for entry in series.ratios.to_dict("records"):
        key = (entry["workload"], entry["dtype"], entry["knobs"])
        cells: list[Any] = [*key]
        for label in series.labels:
            ratio = entry[label]
            if ratio is None or pd.isna(ratio):
                cells.append("")
                continue
            mark = _MARKS.get(began.get((*key, label), ""), "")
            cells.append(Value(f"{ratio:.3f}{mark}", float(ratio), "number"))
        rows.append(tuple(cells))
    axis = "cuDNN" if series.axis.axis == "cudnn" else "torch"
    off = [markdown.inline(view.labels.get(c, c)) for c in series.axis.off_axis]
    intro = (
        f"Each row's time as a ratio to the baseline ({markdown.inline(series.baseline_label)}), the {axis} "
        "releases in order. "
        "▼ / ▲ marks the release where the row became slower / faster than the release before it (the same "
        "statistics as every verdict, the earlier release as the baseline); ↔ where other kernels ran at "
        "the same time; ✗ / ✓ where the row stopped / started running."
        + (f" Off the axis, in the tables below: {', '.join(off)}." if off else "")
    )
    across = Section(f"Across {axis} releases", intro, (*KEYS, *series.labels), tuple(rows))
    changes = Section(
        "Where each change began",
        "Each change, at the first pair of neighbouring releases between which the row changed: "
        "`row: release -> next release, what ran differently, ratio of the two`."
        if series.changes
        else "No row changed between two neighbouring releases.",
        ("change",) if series.changes else (),
        tuple((c.line(series.ratios["knobs"].nunique() > 1),) for c in series.changes),
    )
    return [across, changes]


def _method(view: View, analysis: Analysis, loaded: LoadedResults, sources: list[Path]) -> Section:
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
            "process cannot separate a change from process-to-process variation.",
            "",
            markdown.fenced("\n".join(gate.lines)),
        ]
    )
    return Section("Method, sources and the gate's summary", intro, collapsed=True)


def _link(
    text: str, file: str | None, out_dir: Path, number: float | None = None, kind: Kind = "text"
) -> Value:
    """A value that links to the result file it came from (relative to the report)."""
    return Value(text, number, kind, os.path.relpath(file, out_dir) if file else None)


def _time(
    seconds: float,
    file: str | None,
    out_dir: Path,
    measurement: Any = None,
    extracts: dict[str, tuple[str, int]] | None = None,
) -> Value:
    """A duration that links to the measurement it came from (its own small file), else its result file."""
    if file and extracts is not None and measurement is not None and bool(pd.notna(measurement)):
        name = Path(file).name.removesuffix(".gz").removesuffix(".json")
        # shards hold files of the same name; a name that is not UTF-8 hashes as the bytes it was
        digest = hashlib.sha256(file.encode(errors="surrogateescape")).hexdigest()[:8]
        href = f"{MEASUREMENTS}/{name}-{digest}-m{int(measurement)}{folder.MEASUREMENT_SUFFIX}"
        extracts[href] = (file, int(measurement))
        return Value(_duration(seconds), seconds, "duration", href)
    return _link(_duration(seconds), file, out_dir, seconds, "duration")


def _number(value: Any, form: str) -> Value | str:
    """A finite number shown as ``form`` (a format spec), sortable by its value; '' where there is none."""
    return Value(format(value, form), float(value), "number") if stats.finite(value) else ""


def _cells(view: View, analysis: Analysis, out_dir: Path, letters: dict[str, str]) -> Section:
    rows = []
    for group in view.groups:
        entries = analysis.docs.get(group, [])
        ok = [(d, f) for d, f in entries if d["status"] == "ok"]
        doc = ok[0][0] if ok else (entries[0][0] if entries else None)
        cudnn: dict[str, Any] = dict(doc["cudnn"]) if doc and "cudnn" in doc else {}
        files = [_link(f"r{round_of(d)}", f, out_dir) for d, f in entries]
        rows.append(
            (
                letters[group],
                group + (" (baseline)" if group == view.baseline else ""),
                view.labels.get(group, group),
                f"{len(ok)}/{len(entries)} ok" + (f", {view.rounds} asked" if view.rounds else ""),
                doc.get("device", "") if doc else "",
                cudnn.get("runtime_version") or ("none" if doc else ""),
                "\n".join(cudnn.get("loaded_dirs", [])),
                cudnn.get("verification", ""),
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


def _problems(analysis: Analysis, loaded: LoadedResults) -> list[Section]:
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


def _center_entry(
    frame: pd.DataFrame, group: str, key: tuple[str, str, str], center: Any
) -> tuple[float, str, Any] | None:
    """A side's time as its row's test compares it (``center``, what the ratio divides), linked to the
    result file of the round nearest it."""
    rows = frame[
        (frame["group"] == group)
        & (frame["status"] == "ok")
        & (frame["workload"] == key[0])
        & (frame["dtype"] == key[1])
        & (frame["knobs"] == key[2])
    ]
    if rows.empty or not stats.finite(center):
        return None
    row = rows.loc[(rows["median_s"] - center).abs().idxmin()]
    return float(center), str(row["file"]), row.get("measurement")


def _verdict_sections(
    view: View,
    analysis: Analysis,
    out_dir: Path,
    letters: dict[str, str],
    extracts: dict[str, tuple[str, int]],
) -> list[Section]:
    timing = analysis.timing
    if timing.empty or timing["verdict"].notna().sum() == 0:
        return [Section("Verdicts", "No comparison: no measurement succeeded on both sides.")]
    judged = timing[timing["verdict"].notna()].copy()
    judged["order"] = judged["verdict"].map(VERDICT_ORDER)
    judged = judged.sort_values(["order", "ratio"], ascending=[True, False])
    frame = analysis.frame
    recorded = "what_ran" in judged and judged["what_ran"].notna().any()  # results made with what_ran
    one_knob_set = judged["knobs"].nunique() == 1  # then stated once, above the table
    rows = []
    for r in judged.itertuples():
        key = (r.workload, r.dtype, r.knobs)
        base = _center_entry(frame, view.baseline, key, r.baseline_s)
        mine = _center_entry(frame, r.group, key, r.candidate_s)
        interval = stats.interval_text(r.ci_low, r.ci_high)
        rows.append(
            (
                r.workload,
                r.dtype,
                *([] if one_knob_set else [r.knobs]),
                letters.get(r.group, r.group),
                verdict(r.verdict),
                _number(r.ratio, ".3f"),
                interval,
                _time(base[0], base[1], out_dir, base[2], extracts) if base else "—",
                _time(mine[0], mine[1], out_dir, mine[2], extracts) if mine else "—",
                _number(r.p_value, ".2g"),
                stats.rounds_text(r.rounds_baseline, r.rounds_candidate, r.test),
                *([_ran_text(r.what_ran, r.ran_change, r.ran_baseline)] if recorded else []),
                "" if r.verdict == "same" else (r.reason or ""),
            )
        )
    legend = "; ".join(
        f"**{letters[g]}** = {markdown.inline(view.labels.get(g, g))}"
        + (" (baseline)" if g == view.baseline else "")
        for g in view.groups
    )
    section = Section(
        "Verdicts against the baseline",
        legend
        + f". {STATISTIC_NOTE}"
        + (
            f" Every row ran with knobs {markdown.code(str(judged['knobs'].iloc[0]))}."
            if one_knob_set
            else ""
        ),
        (
            "workload",
            "dtype",
            *([] if one_knob_set else ["knobs"]),
            "vs",
            "verdict",
            "time ratio",
            "interval",
            "baseline",
            "candidate",
            "p",
            "rounds",
            *(["what ran"] if recorded else []),
            "why",
        ),
        tuple(rows),
        plots_after=True,
        filterable=True,
    )
    out = [section]
    host = _host_section(view, analysis, out_dir, letters, extracts)
    if host:
        out.append(host)
    return out


def _ran_text(ran: Any, change: Any, baseline: Any) -> str:
    if ran == "same":
        return f"same: {baseline}" if isinstance(baseline, str) else "same kernels"
    return str(change) if ran in ("changed", "varies") else ""


def _what_changed(analysis: Analysis, letters: dict[str, str]) -> Section | None:
    """Rows grouped by what changed in what ran: a dispatch change reads apart from a slower kernel."""
    timing = analysis.timing
    if timing.empty or "what_ran" not in timing:
        return None
    changed = timing[timing["what_ran"].isin(["changed", "varies"])]
    if changed.empty:
        return None
    rows = []
    # grouped by the kind of change; the detail shows where all rows of a kind share it
    kinds = changed["ran_change"].astype(str).map(change_kind)
    for kind, group in changed.groupby(kinds, sort=False):
        details = group["ran_change"].unique()
        change = details[0] if len(details) == 1 else kind
        verdicts = ", ".join(f"{n} {v}" for v, n in group["verdict"].value_counts().items())
        where = ", ".join(
            f"{r.workload} {r.dtype} ({letters.get(r.group, r.group)})" for r in group.head(6).itertuples()
        )
        rows.append(
            (
                str(change),
                len(group),
                verdicts,
                where + (f" and {len(group) - 6} more" if len(group) > 6 else ""),
            )
        )
    same = int((timing["what_ran"] == "same").sum())
    return Section(
        "What changed",
        f"Rows whose sides ran different kernels (operators on a CPU), grouped by the change; {same} rows "
        "ran the same kernels on both sides, so their verdicts are about those kernels' speed. A changed "
        "row's verdict is about the change: another backend or algorithm chosen, not one kernel slower.",
        ("what ran, baseline -> candidate", "rows", "verdicts", "rows (group)"),
        tuple(rows),
    )


def _autotuning(analysis: Analysis, letters: dict[str, str]) -> Section | None:
    tuned = analysis.autotuning
    if tuned.empty:
        return None
    rows = tuple(
        (
            str(r["workload"]),
            str(r["dtype"]),
            str(r["knobs"]),
            letters.get(str(r["group"]), str(r["group"])),
            _number(r["ratio"], ".3f"),
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
            "dtype",
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


def _host_section(
    view: View,
    analysis: Analysis,
    out_dir: Path,
    letters: dict[str, str],
    extracts: dict[str, tuple[str, int]],
) -> Section | None:
    frame = analysis.frame
    if "host_s" not in frame or frame["host_s"].isna().all():
        return None
    ok = frame[(frame["status"] == "ok") & frame["host_s"].notna()]
    rows = []
    for (group, *key), runs in ok.groupby(["group", *KEYS], sort=False):
        run = frames.lower_median_row(runs, "host_s")  # one file's own value
        rows.append(
            (
                *key,
                letters.get(group, group),
                _time(run["median_s"], run["file"], out_dir, run.get("measurement"), extracts),
                _time(run["host_s"], run["file"], out_dir, run.get("measurement"), extracts),
                _number(run["host_s"] / run["median_s"], ".2f"),
            )
        )
    return Section(
        "Host time per call",
        "Host wall time per call over blocks of back-to-back calls (warm L2, "
        "synchronized only at block ends), beside the device time of the same round. A ratio well above 1 "
        "marks a host-bound workload, where framework overhead rather than cuDNN sets the pace.",
        ("workload", "dtype", "knobs", "group", "device time", "host time", "host / device"),
        tuple(rows),
        level=3,
    )


def _scaling_section(
    view: View, analysis: Analysis, out_dir: Path, letters: dict[str, str]
) -> Section | None:
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
                        m["dtype"],
                        "; ".join(
                            f"{size}: {_duration(step)}, {rate:,.0f}/s" for size, step, rate in per_size
                        ),
                        _link(f"{efficiency:.3f}", file, out_dir, efficiency, "number")
                        if efficiency is not None
                        else _link("one GPU", file, out_dir),
                    )
                )
    if not rows:
        return None
    return Section(
        "Multi-GPU scaling",
        "Workloads that run one process per GPU, measured at each world size with the "
        "same batch per process: the median step time and samples per second for each, and the scaling "
        "efficiency t(1) / t(N) (1.0: N GPUs give N times the samples per second of one).",
        ("group", "round", "workload", "dtype", "world size: step, samples/s", "efficiency"),
        tuple(rows),
    )


def _numerics_sections(view: View, analysis: Analysis, letters: dict[str, str]) -> list[Section]:
    num = analysis.numerics
    if num.empty:
        return []
    summary = []
    for key, rows in num.groupby("group", sort=False):
        group = str(key)
        summary.append(
            (
                letters.get(group, group),
                group,
                len(rows),
                int((rows["numerics"] == "worse").sum()),
                int((rows["numerics"] == "unchecked").sum()),
                f"{int(rows['same_digest'].sum())}/{len(rows)}",
                int((~rows["repeatable_baseline"]).sum()),
                int((~rows["repeatable_candidate"]).sum()),
            )
        )
    out = [
        Section(
            "Numerics against the baseline",
            "Per measurement, the error against the same workload in fp64 (relative RMSE, worst round) in "
            "the candidate "
            "may grow to m x the baseline's + tol/10 (m = 2 for fp32/TF32, 3 for bf16/fp16; tol 1e-4 fp32, "
            "1e-3 "
            "TF32/fp16, 1e-2 bf16: TorchDynamo's rule); more NaNs than the baseline "
            "also fail. "
            "Output digests are compared bit for bit; 'not repeatable' counts measurements whose two calls "
            "differed.",
            (
                "",
                "group",
                "compared",
                "worse",
                "unchecked",
                "same digest as baseline",
                "not repeatable (baseline)",
                "not repeatable (candidate)",
            ),
            tuple(summary),
        )
    ]
    flagged = num[num["numerics"] != "ok"]
    if not flagged.empty:
        flagged_rows = tuple(
            (
                letters.get(r.group, r.group),
                r.workload,
                r.dtype,
                r.knobs,
                r.numerics,
                _number(r.rel_rmse_baseline, ".2e"),
                _number(r.rel_rmse_candidate, ".2e"),
                r.reason,
            )
            for r in flagged.itertuples()
        )
        out.append(
            Section(
                "Numerics: flagged",
                "",
                (
                    "group",
                    "workload",
                    "dtype",
                    "knobs",
                    "numerics",
                    "rel. RMSE baseline",
                    "rel. RMSE candidate",
                    "why",
                ),
                flagged_rows,
                level=3,
            )
        )
    return out


def _beyond_tolerance(analysis: Analysis, letters: dict[str, str]) -> Section | None:
    beyond = analysis.beyond_tolerance
    if beyond.empty:
        return None
    rows = tuple(
        (
            letters.get(str(r["group"]), str(r["group"])),
            str(r["workload"]),
            str(r["dtype"]),
            str(r["knobs"]),
            f"{r['rounds_beyond']}/{r['rounds']}",
            _number(r["rel_rmse"], ".2e"),
            _number(r["tolerance"], ".0e"),
            f"{r['nan']} NaN, {r['inf']} Inf" if r["nan"] or r["inf"] else "",
        )
        for r in beyond.to_dict("records")
    )
    return Section(
        "Numerics beyond tolerance",
        "Measurements whose error against fp64 (relative RMSE) is beyond the tolerance the suite holds "
        "their precision to (fp32 1e-5, TF32 5e-3, bf16 1.6e-2, fp16 1e-3; fp32 with the tf32 knob on is "
        "held to TF32's), or that gave NaN or Inf outputs, in any group, the baseline's included. The "
        "gate fails a candidate row beyond its tolerance only where every baseline round is within it "
        "(the switch put it there); beyond it on both sides is listed here and not gated, since the "
        "switch did not change it: the workload's error or its tolerance needs a look.",
        ("group", "workload", "dtype", "knobs", "rounds beyond", "worst rel. RMSE", "tolerance", "NaN/Inf"),
        rows,
    )


def _environment(view: View, analysis: Analysis, letters: dict[str, str]) -> Section | None:
    """One row per distinct environment of a group: the rounds that ran in it listed together."""
    rounds: dict[tuple[Any, ...], list[int]] = {}
    for group in view.groups:
        for doc, _ in analysis.docs.get(group, []):
            env = doc.get("environment")
            if not env:
                continue
            gpu = env["gpu"] or {}
            cudnn: dict[str, Any] = dict(doc["cudnn"]) if "cudnn" in doc else {}
            rounds.setdefault(
                (
                    letters[group],
                    env["torch"]["version"],
                    env["torch"].get("cuda") or "none",
                    f"{cudnn.get('runtime_version') or 'none'} (built for "
                    f"{cudnn.get('compile_version') or 'none'})",
                    "\n".join(cudnn.get("loaded_libraries", [])) or "none",
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
    rows = [(key[0], _rounds_text(numbers), *key[1:]) for key, numbers in rounds.items()]
    if not rows:
        return None
    uuids = answer.gpu_uuids(analysis)
    # Two GPUs of one model differ by more than two processes on one GPU (suite 0.4 on two H100s: A/A
    # p95 1.9 %; suite 0.5 on one: 0.74 %, reports/gpu-aa-0.5), so a reader must know when runs were spread.
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


def _rounds_text(numbers: list[int]) -> str:
    """[1, 2, 3, 5] -> 'r1-r3, r5'; where shards repeat round numbers, how many runs."""
    if len(set(numbers)) != len(numbers):
        return f"{len(numbers)} runs"
    spans: list[list[int]] = []
    for n in sorted(numbers):
        if spans and n == spans[-1][1] + 1:
            spans[-1][1] = n
        else:
            spans.append([n, n])
    return ", ".join(f"r{a}" if a == b else f"r{a}-r{b}" for a, b in spans)


def _duration(seconds: float) -> str:
    if seconds >= 1:
        return f"{seconds:.3f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.3f} ms"
    return f"{seconds * 1e6:.1f} µs"
